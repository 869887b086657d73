"""What the host itself moves as more processes ask at once: a check on whether the machine, not the GPUs,
sets the photo batch's pace when several GPUs run.

    python3 tests/bench/host_probe.py DIR [--gib 1] [--procs 1,2,4,8] [--rounds 2]

For each count P, P processes at once each fill GIB GiB of newly mapped memory (the first touch: pages the
kernel, and under a VM the hypervisor, must supply), fill it again (memory already touched), then free it;
then P processes each write a GIB-GiB file into DIR in 2 MiB writes (the page cache, as a batch's outputs),
and the files are removed. Prints the aggregate GB/s of each, a line a count and round. Needs NumPy.
"""
import argparse
import os
import time
from multiprocessing import Pool

import numpy as np


def fill(gib):
    n = int(gib * 2**30)
    t0 = time.perf_counter()
    a = np.empty(n, np.uint8)
    a.fill(1)
    t1 = time.perf_counter()
    a.fill(2)
    t2 = time.perf_counter()
    del a
    return t0, t1, t2


def write(args):
    folder, k, gib = args
    block = os.urandom(2 << 20)
    t0 = time.perf_counter()
    with open(os.path.join(folder, f"host_probe_{k}"), "wb") as f:
        for _ in range(int(gib * 512)):
            f.write(block)
    return t0, time.perf_counter()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--gib", type=float, default=1)
    ap.add_argument("--procs", default="1,2,4,8")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    for rnd in range(1, a.rounds + 1):
        for p in (int(x) for x in a.procs.split(",")):
            gb = p * a.gib * 2**30 / 1e9
            with Pool(p) as pool:
                r = pool.map(fill, [a.gib] * p)
            first = gb / (max(x[1] for x in r) - min(x[0] for x in r))
            again = gb / (max(x[2] for x in r) - min(x[1] for x in r))
            with Pool(p) as pool:
                w = pool.map(write, [(a.dir, k, a.gib) for k in range(p)])
            writes = gb / (max(x[1] for x in w) - min(x[0] for x in w))
            for k in range(p):
                os.remove(os.path.join(a.dir, f"host_probe_{k}"))
            print(f"round {rnd} procs {p:2d}: first touch {first:6.1f} GB/s  touched {again:6.1f} GB/s  "
                  f"file writes {writes:6.1f} GB/s", flush=True)


if __name__ == "__main__":
    main()
