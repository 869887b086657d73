#!/usr/bin/env python3
"""Large kernels (issue 12) against peers, in one run on one machine: OpenCV's cv2.GaussianBlur and
cv2.blur (in-process, all cores) and `vips gaussblur` (whole process, file in and out) on the same
4000x3000 RGB8 image as tilefilter's GPU (`bench`: device-resident and from host) and CPU-backend
(`apply --devices cpu`, whole process) figures, for gaussian sigma=5, sigma=150 and box radius=500.

Kernel sizes match ours: a gaussian of sigma s has 2 ceil(3 s) + 1 taps a side (cv2 ksize the same;
vips --min-ampl exp(-4.5), whose mask keeps taps down to 3 sigma), a box of radius r 2 r + 1.
Borders: reflect-101 everywhere (ours and OpenCV's default; vips extends by copying the edge, which
costs the same). Whole-process figures include decoding and encoding an uncompressed TIFF (about
36 MB each way) and, for tilefilter on a GPU, creating the CUDA context.

Usage: tests/bench/large_kernels_peers.py TILEFILTER [--vips VIPS] [--workdir DIR] [--repeats N]
       (tests/bench/large_kernels.sh runs it last unless PEERS=0)
Needs python3 with numpy and cv2 (opencv-python-headless); skips vips when it is missing.
"""
import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

SIZE = (4000, 3000)
SPECS = [("gaussian", 5), ("gaussian", 150), ("box", 500)]


def spec_name(kind, value):
    return f"gaussian:sigma={value}" if kind == "gaussian" else f"box:radius={value}"


def taps(kind, value):
    return 2 * math.ceil(3 * value) + 1 if kind == "gaussian" else 2 * value + 1


def median_time(fn, repeats):
    fn()  # warm-up: thread pools, page faults, kernel tables
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tilefilter")
    ap.add_argument("--vips", default=shutil.which("vips"))
    ap.add_argument("--workdir", default="/tmp/tf-large-peers")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-gpu", action="store_true", help="skip tilefilter's GPU figures")
    ap.add_argument("--no-bench", action="store_true", help="skip `tilefilter bench` (large_kernels.sh ran it)")
    args = ap.parse_args()
    import cv2  # noqa: E402 (only this script needs it)

    os.makedirs(args.workdir, exist_ok=True)
    src = os.path.join(args.workdir, "in.tif")
    out = os.path.join(args.workdir, "out.tif")
    tf = args.tilefilter
    run([tf, "generate", src, "--size", f"{SIZE[0]}x{SIZE[1]}", "--channels", "3", "--compression", "none"])
    img = cv2.imread(src, cv2.IMREAD_UNCHANGED)
    assert img is not None and img.shape == (SIZE[1], SIZE[0], 3), img.shape
    cores = os.cpu_count()
    cv2.setNumThreads(cores)
    print(f"4000x3000 RGB8, {cores} CPU cores, OpenCV {cv2.__version__}, "
          f"{'vips ' + args.vips if args.vips else 'no vips'}; medians of {args.repeats}")

    if not args.no_gpu and not args.no_bench:
        cmd = [tf, "bench", "--size", f"{SIZE[0]}x{SIZE[1]}", "--format", "rgb8"]
        for kind, value in SPECS:
            cmd += ["--filter", spec_name(kind, value)]
        print("$ " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)

    rows = []
    for kind, value in SPECS:
        name, n = spec_name(kind, value), taps(kind, value)
        row = {"filter": name, "taps": n}
        if kind == "gaussian":
            row["cv2"] = median_time(lambda: cv2.GaussianBlur(img, (n, n), value, borderType=cv2.BORDER_REFLECT_101),
                                     args.repeats)[0]
        else:
            row["cv2"] = median_time(lambda: cv2.blur(img, (n, n), borderType=cv2.BORDER_REFLECT_101), args.repeats)[0]
        if args.vips and kind == "gaussian":
            vips_cmd = [args.vips, "gaussblur", src, out, str(value), "--min-ampl", f"{math.exp(-4.5):.6f}"]
            row["vips"] = median_time(lambda: run(vips_cmd), args.repeats)[0]
        for devices in ["cpu"] + ([] if args.no_gpu else ["gpu"]):
            apply = [tf, "apply", src, out, "--filter", name, "--devices", devices, "--compression", "none", "-q"]
            row[f"tf_{devices}"] = median_time(lambda: run(apply), args.repeats)[0]
        rows.append(row)
        print(f"  {name:20s} {n:5d} taps  " + "  ".join(
            f"{k} {v * 1000:9.1f} ms" for k, v in row.items() if k not in ("filter", "taps")), flush=True)
    print("cv2: in-process; vips and tf_*: whole process (TIFF in and out; tf_gpu includes CUDA start-up)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
