#!/usr/bin/env python3
"""The Python package (`import tilefilter`) against what a Python user would call instead, in one run:
NumPy images against cv2.GaussianBlur and scipy.ndimage.gaussian_filter; the fixed cost of a call on a
64x64 image; tilefilter.dask on a local cluster against tilefilter.filter on the whole array; and on
a GPU, CuPy arrays against cupyx.scipy.ndimage.gaussian_filter and PyTorch's separable depthwise
conv2d. Prints one JSON object (and writes it with --json).

    /usr/bin/python3 tests/bench/python_peers.py [--size 4096] [--dask-size 16384] [--gpu-size 8192]
        [--only numpy,small,dask,gpu] [--cli build/app/cli/tilefilter] [--json out.json]

What each number includes: host (numpy) calls time the call as a user makes it (argument checks, the
library's job, the output's allocation; the image already in memory) with time.perf_counter, median of
N after a warm-up; cv2 and scipy likewise, each on all cores cv2 uses by default (scipy has one).
`small_overhead_us` = a 64x64 RGBA8 call minus the library's own job time for it (the C API's
tf_filter timed from C through ctypes, less the Python wrapper), see `small`. Dask: a graph built and
computed on a LocalCluster of 2 worker processes (1 thread each), chunks 1024^2, against one
tilefilter.filter of the whole array in this process; neither includes making the source array. GPU:
CUDA events around the calls on the current stream, image resident, median of N after warm-up;
cupyx on the uint8 HxWx4 image (mode 'mirror' = reflect101, truncate so the radius is 3 sigma as
ours); PyTorch on float32 1x4xHxW (reflect pad + two depthwise conv1d passes), conversions untimed.
Beside our call (events around one call from an idle GPU: the host's time before the first launch
included): the GPU time of a call when 20 follow each other, the call in place (out= the input), and
the chain's kernels alone on the same image, timed by `tilefilter bench --mode resident` (--cli), each
as a ratio to that kernel, and where a call's host time goes (`host_split`: the whole call, the Python
side with the C call a no-op, the C call alone; perf_counter medians); the issue 44 targets are printed
on stderr, one line a figure.
The PYTHONPATH/TILEFILTER_LIBRARY of a build tree, or an installed package, decide which tilefilter
runs; the JSON names the library's version and the devices it saw.
"""
import argparse
import json
import math
import os
import shutil
import statistics
import sys
import time

import numpy as np

import tilefilter


def median_time(fn, min_runs=3, max_runs=30, budget_s=3.0):
    fn()  # warm-up
    times = []
    t_end = time.perf_counter() + budget_s
    while len(times) < min_runs or (len(times) < max_runs and time.perf_counter() < t_end):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"median_ms": statistics.median(times) * 1e3, "min_ms": min(times) * 1e3, "max_ms": max(times) * 1e3,
            "runs": len(times)}


def gaussian_taps(sigma, radius):
    n = 2 * radius + 1
    t = [math.exp(-0.5 / (sigma * sigma) * (i - (n - 1) * 0.5) ** 2) for i in range(n)]
    s = sum(t)
    return [v / s for v in t]


def bench_numpy(size):
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, (size, size, 4), dtype=np.uint8)
    out = {}
    try:
        import cv2
    except ImportError:
        cv2 = None
    try:
        from scipy import ndimage
    except ImportError:
        ndimage = None
    for sigma in (1.5, 5):
        r = math.ceil(3 * sigma)
        row = {"tilefilter": median_time(lambda: tilefilter.filter(a, f"gaussian:sigma={sigma}"))}
        row["tilefilter_out"] = median_time(
            lambda o=np.empty_like(a): tilefilter.filter(a, f"gaussian:sigma={sigma}", out=o))
        if cv2 is not None:
            row["cv2.GaussianBlur"] = median_time(
                lambda: cv2.GaussianBlur(a, (2 * r + 1, 2 * r + 1), sigma, borderType=cv2.BORDER_REFLECT_101))
            row["cv2_threads"] = cv2.getNumThreads()
        if ndimage is not None:
            row["scipy.ndimage.gaussian_filter"] = median_time(
                lambda: ndimage.gaussian_filter(a, (sigma, sigma, 0), mode="mirror", truncate=r / sigma),
                min_runs=2, max_runs=5)
        t = row["tilefilter"]["median_ms"]
        if "cv2.GaussianBlur" in row:
            row["speed_vs_cv2"] = row["cv2.GaussianBlur"]["median_ms"] / t
        if "scipy.ndimage.gaussian_filter" in row:
            row["speed_vs_scipy"] = row["scipy.ndimage.gaussian_filter"]["median_ms"] / t
        out[f"sigma {sigma}"] = row
    return {"image": f"{size}x{size} RGBA8", "what": "host memory, one call each, output allocated", **out}


def bench_small():
    """The fixed cost of a call: 64x64 RGBA8 sigma 1.5 through tilefilter.filter, through the C API
    directly (ctypes, arguments prepared once), and the gap between them."""
    import ctypes
    from tilefilter import _host, _lib
    from tilefilter._chain import chain_of
    a = np.random.default_rng(2).integers(0, 256, (64, 64, 4), dtype=np.uint8)
    o = np.empty_like(a)
    chain = chain_of(("gaussian:sigma=1.5",))
    opts = _host.options(None, 0, "all", False, None, 0, 0)
    src, dst = _host.describe(a), _host.describe(o)
    c_call = lambda: _lib.lib.tf_filter(chain._handle, ctypes.byref(src), ctypes.byref(dst), ctypes.byref(opts))
    py_call = lambda: tilefilter.filter(a, "gaussian:sigma=1.5")
    n = 2000

    def per_call(fn):
        fn()
        best = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best.append((time.perf_counter() - t0) / n * 1e6)
        return statistics.median(best)

    c_us, py_us = per_call(c_call), per_call(py_call)
    cv2_us = None
    try:
        import cv2
        cv2_us = per_call(lambda: cv2.GaussianBlur(a, (11, 11), 1.5, borderType=cv2.BORDER_REFLECT_101))
    except ImportError:
        pass
    return {"image": "64x64 RGBA8 gaussian sigma 1.5", "tilefilter_filter_us": py_us, "c_api_tf_filter_us": c_us,
            "python_overhead_us": py_us - c_us, "cv2_us": cv2_us,
            "note": "c_api_tf_filter_us is the library's whole job (devices from its pool, scheduler, the "
                    "filtering); python_overhead_us what the binding adds on top"}


def _pin_threads(cores):
    """Every thread of this process onto `cores` (processes started later inherit it)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cores)
        except OSError:
            pass


def bench_dask(size, chunk, workers, cores=None, cpu_only=False):
    """cores: the whole call and the Dask workers on these cores only, the client and the scheduler on
    the others (as on a cluster, whose scheduler has a machine of its own); main() pins the process to
    them before its first tilefilter call (the library counts its cores once). cpu_only: CPU workers
    on both sides."""
    import dask
    import tilefilter.dask as tfd
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, (size, size), dtype=np.uint8)
    elsewhere = set(range(os.cpu_count())) - set(cores) if cores else None
    whole = median_time(lambda: tilefilter.filter(a, "gaussian:sigma=1.5", devices="cpu" if cpu_only else "all"),
                        min_runs=3, max_runs=5)
    res = {"image": f"{size}x{size} u8 gaussian sigma 1.5, chunks {chunk}^2", "workers": workers,
           "cores": sorted(cores) if cores else "all", "devices": "cpu" if cpu_only else "default",
           "tilefilter.filter_whole": whole,
           "note": "dask: the source persisted on the workers beforehand; the result persisted there (not "
                   "gathered); whole: one call in this process on every core (or on --dask-cores); tuned: "
                   "the workers started with tilefilter.dask.WORKER_ENVIRON"}
    run = lambda: _dask_cluster_run(a, chunk, workers, cores, elsewhere, "cpu:1" if cpu_only else None)
    res["default_workers"] = run()
    with dask.config.set({f"distributed.nanny.pre-spawn-environ.{k}": v for k, v in tfd.WORKER_ENVIRON.items()}):
        res["tuned_workers"] = run()
    for k in ("default_workers", "tuned_workers"):
        res[k]["ratio"] = res[k]["tilefilter.dask_persisted"]["median_ms"] / whole["median_ms"]
    return res


def _dask_cluster_run(a, chunk, workers, cores=None, elsewhere=None, devices=None):
    import dask.array as da
    import distributed
    import tilefilter.dask as tfd
    if cores:
        _pin_threads(set(cores))  # the workers, started now, inherit it
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster) as client:
        if elsewhere:
            _pin_threads(elsewhere)  # this process: the client and the scheduler
        d = da.from_array(a, chunks=chunk)
        d = client.persist(d)  # the source's chunks on the workers, as a real array would be
        distributed.wait(d)

        held = len(client.who_has())  # the source's chunks

        def run():
            r = tfd.filter(d, "gaussian:sigma=1.5", devices=devices).persist()
            distributed.wait(r)
            return r

        # A result still held on the workers would be found there by the next run (same keys): each run
        # waits until the previous one's blocks are gone.
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            r = run()
            times.append(time.perf_counter() - t0)
            if len(times) < 5:
                client.cancel(r)
                del r
                while len(client.who_has()) > held:
                    time.sleep(0.01)
        times = times[1:]  # the first run warms the workers (library load, pools)
        dask_t = {"median_ms": statistics.median(times) * 1e3, "min_ms": min(times) * 1e3,
                  "max_ms": max(times) * 1e3, "runs": len(times)}
        same = bool(np.array_equal(r.compute(), tilefilter.filter(a, "gaussian:sigma=1.5")))
    return {"tilefilter.dask_persisted": dask_t, "same_bits": same}


def cuda_median(fn, cp, runs=20, calls=1):
    """CUDA events around `calls` calls from an idle GPU, divided by `calls`; median of `runs` after a
    warm-up. One call: what a user times, the host's time before the first launch included; 20 back to
    back: what the GPU does for a call (the host's time hides behind the GPU's work)."""
    fn()
    cp.cuda.Device().synchronize()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(runs):
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / calls)
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times),
            "runs": runs if calls == 1 else f"{runs} x {calls} calls"}


def host_split_us(a, spec, out, runs=200):
    """Where a call's host time goes before its kernel starts (time.perf_counter, the GPU idle before each
    call; medians in us): the whole call until it returns, the Python side alone (the library's
    tf_filter_device replaced by a no-op), and that C call alone (through ctypes, its arguments made once)."""
    import ctypes
    import cupy as cp
    from tilefilter import _chain, _device, _host, _lib

    def median_us(fn):
        fn()
        times = []
        for _ in range(runs):
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e6)
        cp.cuda.Device().synchronize()
        return statistics.median(times)

    real = _lib.lib.tf_filter_device
    chain = _chain.chain_of((spec,))
    d, o = _device._Described(a), _device._Described(out)
    src, dst = d.image(), o.image()
    opts = _host.options(None, 0.0, "all", False, None, 0, 0)
    res = {"whole_call_us": median_us(lambda: tilefilter.filter(a, spec, out=out)),
           "c_call_us": median_us(lambda: real(chain._handle, ctypes.byref(src), ctypes.byref(dst), d.device,
                                               d.stream or None, ctypes.byref(opts)))}
    _lib.lib.tf_filter_device = lambda *args: 0
    try:
        res["python_side_us"] = median_us(lambda: tilefilter.filter(a, spec, out=out))
    finally:
        _lib.lib.tf_filter_device = real
    return res


def resident_kernel(cli, spec, size, device=0):
    """The chain's kernels alone on the same image, as `tilefilter bench --mode resident` times them
    (CUDA events, median of 20; a process of its own)."""
    import subprocess
    import tempfile
    if not cli:
        return {"skipped": "no tilefilter CLI: set TILEFILTER_CLI or pass --cli"}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.json")
        p = subprocess.run([cli, "bench", "--mode", "resident", "-f", spec, "--size", str(size), "--format", "rgba8",
                            "--devices", str(device), "--repeats", "20", "--json", path],
                           capture_output=True, text=True)
        if p.returncode != 0:
            return {"skipped": f"{cli} bench failed: {p.stderr.strip()[-300:]}"}
        with open(path) as f:
            rows = [r for r in json.load(f)["results"] if r["mode"] == "resident" and r["devices"] == 1]
    r = rows[0]
    return {"median_ms": r["median_s"] * 1e3, "min_ms": r["min_s"] * 1e3, "max_ms": r["max_s"] * 1e3,
            "roofline": r.get("roofline")}


def bench_gpu(size, cli=None):
    try:
        import cupy as cp
    except ImportError:
        return {"skipped": "no cupy"}
    import cupyx.scipy.ndimage as cndi
    rng = np.random.default_rng(4)
    a = cp.asarray(rng.integers(0, 256, (size, size, 4), dtype=np.uint8))
    res = {"image": f"{size}x{size} RGBA8, device-resident", "gpu": cp.cuda.runtime.getDeviceProperties(0)["name"]
           .decode(),
           "targets": "tilefilter (one call, out=) <= 1.15 x resident_kernel; speed_vs_cupyx >= 25 (issue 44)"}
    for sigma in (1.5, 5):
        r = math.ceil(3 * sigma)
        spec = f"gaussian:sigma={sigma}"
        out = cp.empty_like(a)
        b = a.copy()  # filtered into itself, again and again
        row = {"tilefilter": cuda_median(lambda: tilefilter.filter(a, spec, out=out), cp),
               "tilefilter_alloc": cuda_median(lambda: tilefilter.filter(a, spec), cp),
               "tilefilter_in_place": cuda_median(lambda: tilefilter.filter(b, spec, out=b), cp),
               "tilefilter_back_to_back": cuda_median(lambda: tilefilter.filter(a, spec, out=out), cp, runs=5, calls=20),
               "host_split": host_split_us(a, spec, out),
               "resident_kernel": resident_kernel(cli, spec, size, a.device.id),
               "cupyx.gaussian_filter": cuda_median(
                   lambda: cndi.gaussian_filter(a, (sigma, sigma, 0), mode="mirror", truncate=r / sigma), cp,
                   runs=5)}
        row["speed_vs_cupyx"] = row["cupyx.gaussian_filter"]["median_ms"] / row["tilefilter"]["median_ms"]
        if "median_ms" in row["resident_kernel"]:
            kernel = row["resident_kernel"]["median_ms"]
            for k in ("tilefilter", "tilefilter_alloc", "tilefilter_in_place", "tilefilter_back_to_back"):
                row[f"{k}_over_resident"] = row[k]["median_ms"] / kernel
        try:
            import torch
            import torch.nn.functional as F
            x = torch.as_tensor(a, device="cuda").permute(2, 0, 1)[None].float().contiguous()
            taps = torch.tensor(gaussian_taps(sigma, r), device="cuda", dtype=torch.float32)
            kx = taps.view(1, 1, 1, -1).repeat(4, 1, 1, 1)
            ky = taps.view(1, 1, -1, 1).repeat(4, 1, 1, 1)

            def torch_sep():
                p = F.pad(x, (r, r, r, r), mode="reflect")
                return F.conv2d(F.conv2d(p, kx, groups=4), ky, groups=4)

            stream = torch.cuda.current_stream()
            with cp.cuda.ExternalStream(stream.cuda_stream):
                row["torch_separable_conv2d"] = cuda_median(torch_sep, cp)
            row["speed_vs_torch"] = row["torch_separable_conv2d"]["median_ms"] / row["tilefilter"]["median_ms"]
            t = torch.as_tensor(a, device="cuda")
            tout = torch.empty_like(t)
            with cp.cuda.ExternalStream(stream.cuda_stream):
                row["tilefilter_torch_tensor"] = cuda_median(lambda: tilefilter.filter(t, spec, out=tout), cp)
                row["tilefilter_torch_in_place"] = cuda_median(lambda: tilefilter.filter(tout, spec, out=tout), cp)
            if "median_ms" in row["resident_kernel"]:
                row["tilefilter_torch_tensor_over_resident"] = (row["tilefilter_torch_tensor"]["median_ms"] /
                                                                row["resident_kernel"]["median_ms"])
        except ImportError:
            row["torch"] = "not installed"
        res[f"sigma {sigma}"] = row
        print_targets(f"{size}^2 RGBA8 {spec}", row)
    n = sum(1 for d in tilefilter.devices() if d["kind"] == "gpu")
    if n > 1:  # one GPU against bands over all of them; devices="all" splits only the heavy chains
        every = ",".join(str(i) for i in range(n))
        out = cp.empty_like(a)
        for spec in ("gaussian:sigma=1.5", "gaussian:sigma=5", "gaussian:sigma=15", "box:radius=20"):
            res[f"split {spec}"] = {
                "one_gpu_ms": cuda_median(lambda: tilefilter.filter(a, spec, devices="0", out=out), cp)["median_ms"],
                f"gpus_{every}_ms": cuda_median(lambda: tilefilter.filter(a, spec, devices=every, out=out),
                                                cp)["median_ms"],
                "all_ms": cuda_median(lambda: tilefilter.filter(a, spec, devices="all", out=out), cp)["median_ms"]}
    return res


def print_targets(what, row):
    """The figures issue 44 sets targets on, one line each on stderr (stdout stays one JSON object)."""
    ms = lambda k: row[k]["median_ms"] if isinstance(row.get(k), dict) and "median_ms" in row[k] else None
    kernel = ms("resident_kernel")
    lines = [f"{what}:"]
    for k, label in (("tilefilter", "call, out="), ("tilefilter_alloc", "call, fresh array"),
                     ("tilefilter_in_place", "call, in place"), ("tilefilter_back_to_back", "GPU time a call, back to back"),
                     ("tilefilter_torch_tensor", "PyTorch tensor call, out="),
                     ("tilefilter_torch_in_place", "PyTorch tensor call, in place")):
        if ms(k) is not None:
            ratio = f"  {ms(k) / kernel:.2f}x the resident kernel" if kernel else ""
            lines.append(f"  {label:<34} {ms(k):8.3f} ms{ratio}")
    if kernel:
        roof = row["resident_kernel"].get("roofline") or {}
        bound = f" ({100 * roof['share']:.0f}% of its {roof['bound']} ceiling)" if roof else ""
        lines.append(f"  {'resident kernel (tilefilter bench)':<34} {kernel:8.3f} ms{bound}   target: call <= 1.15x")
    else:
        lines.append(f"  resident kernel: {row['resident_kernel'].get('skipped')}")
    h = row.get("host_split")
    if h:
        lines.append(f"  {'host time before the kernel':<34} whole call {h['whole_call_us']:.1f} us, Python side "
                     f"{h['python_side_us']:.1f} us, C call {h['c_call_us']:.1f} us (medians)")
    lines.append(f"  {'cupyx.gaussian_filter':<34} {ms('cupyx.gaussian_filter'):8.3f} ms  "
                 f"{row['speed_vs_cupyx']:.1f}x slower than the call   target: >= 25x")
    print("\n".join(lines), file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--dask-size", type=int, default=16384)
    p.add_argument("--dask-chunk", type=int, default=1024)
    p.add_argument("--dask-workers", type=int, default=2)
    p.add_argument("--dask-cores", help="e.g. 0,1: the whole call and the Dask workers on these cores, the "
                   "client and scheduler on the others (only with --only dask)")
    p.add_argument("--dask-cpu", action="store_true", help="CPU workers for the whole call and the blocks")
    p.add_argument("--gpu-size", type=int, default=8192)
    p.add_argument("--only", default="numpy,small,dask,gpu")
    p.add_argument("--cli", default=os.environ.get("TILEFILTER_CLI") or shutil.which("tilefilter"),
                   help="the tilefilter CLI whose `bench --mode resident` times the kernels alone (default: "
                   "$TILEFILTER_CLI, else tilefilter on PATH)")
    p.add_argument("--json")
    args = p.parse_args()
    if args.dask_cores:  # before the library's first call: it counts the cores it may use once
        _pin_threads({int(c) for c in args.dask_cores.split(",")})
    parts = args.only.split(",")
    result = {"tilefilter": tilefilter.__version__, "python": sys.version.split()[0], "cores": os.cpu_count(),
              "devices": [d["id"] + " " + d["name"] for d in tilefilter.devices()]}
    if "numpy" in parts:
        result["numpy"] = bench_numpy(args.size)
    if "small" in parts:
        result["small"] = bench_small()
    if "dask" in parts:
        cores = [int(c) for c in args.dask_cores.split(",")] if args.dask_cores else None
        result["dask"] = bench_dask(args.dask_size, args.dask_chunk, args.dask_workers, cores, args.dask_cpu)
    if "gpu" in parts:
        result["gpu"] = bench_gpu(args.gpu_size, args.cli)
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
