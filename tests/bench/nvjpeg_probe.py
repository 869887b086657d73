"""What one GPU's JPEG hardware can do alone: the limit the photo batch is measured against.

    python3 tests/bench/nvjpeg_probe.py IN_DIR [--files 200] [--batches 8,32,100] [--quality 90]

Through torchvision's nvJPEG calls (the hardware decoder for batched decodes on A100/H100/H200,
CUDA encoding), on files held in memory: no file I/O, no filter. Decode: `decode_jpeg(list,
device="cuda")` in batches of each size; encode: `encode_jpeg(list)` of the decoded images at the
given quality (the streams left on the GPU, and copied to the host: what a batch must write); and
the two overlapped, as a pipeline would run them: one thread decodes batches of 32 while another
encodes the previous ones and copies the streams to the host, each on its own CUDA stream. Times are
CUDA-synchronised wall clock after one warm-up batch, the median of three passes over the files.
Prints one JSON object with Gpix/s for each.

    python3 tests/bench/nvjpeg_probe.py IN_DIR --every-gpu [--batches 32]

The same on every GPU at once: a process a GPU (CUDA_VISIBLE_DEVICES), each measuring only after all have
loaded torch and the files, so that the measurements overlap; prints {"gpus": N, "each": [one object a GPU]}.
What one GPU does alone against what each does beside the others says whether the machine (host memory,
PCIe, CPU) scales with its GPUs.

    python3 tests/bench/nvjpeg_probe.py IN_DIR --startup

The start-up floor of a process that decodes on every GPU instead: after torch's import, the seconds
to a context on each GPU (a thread each), then to each GPU's first batched decode of 8 files (a
thread each, all at once: nvJPEG's handles and hardware states), as JSON.
"""
import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time

import torch
import torchvision
from torchvision.io import decode_jpeg, encode_jpeg


def timed(fn, passes=3):
    fn()  # warm-up
    torch.cuda.synchronize()
    times = []
    for _ in range(passes):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def startup(data):
    """Seconds to every GPU's context, then to every GPU's first hardware decode, a thread per GPU."""
    n = torch.cuda.device_count()
    t0 = time.perf_counter()
    ends = {}

    def run_all(fn):
        threads = [threading.Thread(target=fn, args=(d,)) for d in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def context(d):
        torch.ones(1, device=f"cuda:{d}").sum().item()
    run_all(context)
    t1 = time.perf_counter()

    def first_decode(d):
        decode_jpeg(data[:8], device=f"cuda:{d}")
        torch.cuda.synchronize(d)
        ends[d] = time.perf_counter() - t1
    run_all(first_decode)
    return {"gpus": n, "device": torch.cuda.get_device_name(0), "contexts_s": t1 - t0,
            "first_decode_each_gpu_s": [round(ends[d], 3) for d in range(n)],
            "first_decode_every_gpu_s": time.perf_counter() - t1}


def every_gpu(a):
    """A process a GPU, released together once every one has loaded; their JSON objects, in GPU order."""
    argv = [sys.executable, os.path.abspath(__file__), a.input, "--files", str(a.files), "--batches", a.batches,
            "--quality", str(a.quality), "--after-go"]
    children = [subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                 env={**os.environ, "CUDA_VISIBLE_DEVICES": str(d)})
                for d in range(torch.cuda.device_count())]
    for c in children:
        if c.stdout.readline().strip() != "ready":
            raise SystemExit("a probe process did not start")
    for c in children:
        c.stdin.write("go\n")
        c.stdin.flush()
    each = []
    for c in children:
        out, _ = c.communicate()
        lines = [x for x in out.splitlines() if x.startswith("{")]
        each.append(json.loads(lines[-1]) if lines else {"error": f"exit {c.returncode}"})
    print(json.dumps({"gpus": len(children), "each": each}))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--batches", default="8,32,100")
    ap.add_argument("--quality", type=int, default=90)
    ap.add_argument("--startup", action="store_true", help="the start-up floor on every GPU instead")
    ap.add_argument("--every-gpu", action="store_true", help="the probe on every GPU at once, a process each")
    ap.add_argument("--after-go", action="store_true", help=argparse.SUPPRESS)  # --every-gpu's children
    a = ap.parse_args()
    if a.every_gpu:
        return every_gpu(a)
    names = sorted(f for f in os.listdir(a.input) if f.lower().endswith((".jpg", ".jpeg")))[: a.files]
    data = [torchvision.io.read_file(os.path.join(a.input, f)) for f in names]
    if a.startup:
        print(json.dumps(startup(data)))
        return 0
    dev = torch.device("cuda")
    first = decode_jpeg(data[:1], device=dev)[0]
    if a.after_go:  # loaded and warm: say so, then wait for the others
        print("ready", flush=True)
        sys.stdin.readline()
    pixels = first.shape[1] * first.shape[2] * len(data)  # the probe's files share one size
    out = {"device": torch.cuda.get_device_name(0), "files": len(data), "size": [first.shape[2], first.shape[1]],
           "decode_gpix_per_s": {}, "torchvision": torchvision.__version__}
    for b in [int(x) for x in a.batches.split(",")]:
        def decode_all():
            for i in range(0, len(data), b):
                decode_jpeg(data[i : i + b], device=dev)
        out["decode_gpix_per_s"][str(b)] = pixels / timed(decode_all) / 1e9
    images = []
    for i in range(0, len(data), 32):
        images += decode_jpeg(data[i : i + 32], device=dev)

    def encode_all():
        for i in range(0, len(images), 32):
            encode_jpeg(images[i : i + 32], quality=a.quality)
    out["encode_gpix_per_s"] = pixels / timed(encode_all) / 1e9

    def encode_to_host():
        for i in range(0, len(images), 32):
            for stream in encode_jpeg(images[i : i + 32], quality=a.quality):
                stream.cpu()
    out["encode_to_host_gpix_per_s"] = pixels / timed(encode_to_host) / 1e9

    def overlapped():
        # torchvision's ops release the GIL while they run, so the two threads overlap on the GPU.
        ready = queue.Queue(maxsize=2)

        def decoder():
            with torch.cuda.stream(torch.cuda.Stream()):
                for i in range(0, len(data), 32):
                    batch = decode_jpeg(data[i : i + 32], device=dev)
                    torch.cuda.current_stream().synchronize()
                    ready.put(batch)
            ready.put(None)

        def encoder():
            with torch.cuda.stream(torch.cuda.Stream()):
                while (batch := ready.get()) is not None:
                    for stream in encode_jpeg(batch, quality=a.quality):
                        stream.cpu()

        threads = [threading.Thread(target=decoder), threading.Thread(target=encoder)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    out["decode_then_encode_overlapped_gpix_per_s"] = pixels / timed(overlapped) / 1e9
    print(json.dumps(out))


if __name__ == "__main__":
    sys.exit(main())
