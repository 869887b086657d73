#!/usr/bin/env python3
"""The peers a user would pick instead of TileFilter, timed on the same GPU and workloads as
`tilefilter bench` (8192x8192 RGBA8, device-resident): cupyx.scipy.ndimage and PyTorch (cuDNN).

Run it in the same command as the bench, so that both see the same machine in the same state:
    python3 tests/bench/peers.py [--size 8192] [--json peers.json]
Each timing: CUDA events, warm-up first, median of N runs (N so that a point takes ~2 s, 3..20).
cupyx works on the uint8 HxWx4 image (mode 'mirror' = reflect101) and returns uint8; PyTorch on a
float32 1x4xHxW tensor (reflect padding, then a depthwise conv2d), the format cuDNN wants, with the
conversions left out of the timing (in PyTorch's favour).
"""
import argparse
import json
import math
import statistics
import sys


def gaussian_taps(sigma, radius):
    # OpenCV getGaussianKernel(2R+1, sigma), as core/src/filters/filter.cpp makes it.
    n = 2 * radius + 1
    t = [math.exp(-0.5 / (sigma * sigma) * (i - (n - 1) * 0.5) ** 2) for i in range(n)]
    s = sum(t)
    return [v / s for v in t]


def unsharp_kernel(sigma, amount=1.0):
    r = min(127, math.ceil(3 * sigma))
    g = gaussian_taps(sigma, r)
    n = 2 * r + 1
    return [[-amount * g[y] * g[x] + (1 + amount if x == r and y == r else 0) for x in range(n)] for y in range(n)]


WORKLOADS = [
    ("separable 9 taps", "sep", gaussian_taps(1.33, 4)),
    ("separable 31 taps", "sep", gaussian_taps(5, 15)),
    ("2-D 9x9", "2d", unsharp_kernel(1.3)),
    ("2-D 31x31", "2d", unsharp_kernel(5)),
]


def timed(fn, sync, event):
    """Median seconds of fn() with CUDA events after a warm-up; N runs so a point takes ~2 s."""
    fn()
    sync()
    start, stop = event(), event()
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    first = start_stop_seconds(start, stop)
    n = max(3, min(20, int(2.0 / max(first, 1e-6))))
    times = []
    for _ in range(n):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start_stop_seconds(start, stop))
    return statistics.median(times), min(times), max(times), n


def start_stop_seconds(start, stop):
    ms = start.elapsed_time(stop) if hasattr(start, "elapsed_time") else None
    if ms is None:  # cupy events
        import cupy
        ms = cupy.cuda.get_elapsed_time(start, stop)
    return ms / 1e3


def bench_cupy(size, results):
    import cupy
    import cupyx.scipy.ndimage as ndi
    rng = cupy.random.default_rng(7)
    img = rng.integers(0, 256, size=(size, size, 4), dtype=cupy.uint8)
    event = lambda: cupy.cuda.Event()
    sync = cupy.cuda.Device().synchronize
    for label, kind, taps in WORKLOADS:
        if kind == "sep":
            w = cupy.asarray(taps, dtype=cupy.float32)
            fn = lambda: ndi.correlate1d(ndi.correlate1d(img, w, axis=1, mode="mirror"), w, axis=0, mode="mirror")
        else:
            k = cupy.asarray(taps, dtype=cupy.float32)[:, :, None]
            fn = lambda: ndi.correlate(img, k, mode="mirror")
        med, lo, hi, n = timed(fn, sync, event)
        results.append(dict(peer="cupyx.scipy.ndimage " + cupy.__version__, workload=label, median_s=med, min_s=lo, max_s=hi,
                            runs=n, gigapixels_per_s=size * size / med / 1e9))
        print(f"{results[-1]['peer']:<32} {label:<20} {med * 1e3:10.3f} ms  {lo * 1e3:.3f}-{hi * 1e3:.3f}  "
              f"{results[-1]['gigapixels_per_s']:8.2f} Gpix/s", flush=True)
    del img
    cupy.get_default_memory_pool().free_all_blocks()


def bench_torch(size, results):
    import torch
    import torch.nn.functional as F
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(7)
    x = torch.randint(0, 256, (1, 4, size, size), generator=g, device=dev).to(torch.float32)
    event = lambda: torch.cuda.Event(enable_timing=True)
    sync = torch.cuda.synchronize
    for label, kind, taps in WORKLOADS:
        with torch.no_grad():
            if kind == "sep":
                t = torch.tensor(taps, dtype=torch.float32, device=dev)
                r = (len(taps) - 1) // 2
                wr = t.view(1, 1, 1, -1).repeat(4, 1, 1, 1)
                wc = t.view(1, 1, -1, 1).repeat(4, 1, 1, 1)
                fn = lambda: F.conv2d(F.conv2d(F.pad(x, (r, r, r, r), mode="reflect"), wr, groups=4), wc, groups=4)
            else:
                k = torch.tensor(taps, dtype=torch.float32, device=dev)
                r = (k.shape[0] - 1) // 2
                w = k.view(1, 1, k.shape[0], k.shape[1]).repeat(4, 1, 1, 1)
                fn = lambda: F.conv2d(F.pad(x, (r, r, r, r), mode="reflect"), w, groups=4)
            med, lo, hi, n = timed(fn, sync, event)
        results.append(dict(peer="PyTorch " + torch.__version__ + " (cuDNN)", workload=label, median_s=med, min_s=lo,
                            max_s=hi, runs=n, gigapixels_per_s=size * size / med / 1e9))
        print(f"{results[-1]['peer']:<32} {label:<20} {med * 1e3:10.3f} ms  {lo * 1e3:.3f}-{hi * 1e3:.3f}  "
              f"{results[-1]['gigapixels_per_s']:8.2f} Gpix/s", flush=True)
    del x
    torch.cuda.empty_cache()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    results = []
    print(f"peers, {args.size}x{args.size} RGBA8, device-resident, CUDA events, median", flush=True)
    for name, fn in (("cupyx", bench_cupy), ("torch", bench_torch)):
        try:
            fn(args.size, results)
        except Exception as e:  # a missing peer must not hide the other one
            print(f"{name}: not measured ({type(e).__name__}: {e})", file=sys.stderr, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(size=args.size, results=results), f, indent=2)


if __name__ == "__main__":
    main()
