"""The photo batch as a PyTorch user writes it: torchvision's nvJPEG decode of a list of files on the
GPU, a depthwise separable Gaussian (the same taps as `gaussian:sigma=S`), torchvision's nvJPEG
encode, files written. One GPU. Prints one JSON object.

    python3 tests/bench/torchvision_peer.py IN_DIR OUT_DIR [--sigma 1.5] [--batch 32] [--quality 90]

in_process_s: from the first file read to the last file written, after `import torch` and a CUDA
warm-up (a small decode and encode first, so the nvJPEG handles are made); whole-process time is
what the caller measures around it. The filter runs in float32 with reflect-101 borders (OpenCV's
default, TileFilter's `mirror`) and rounds to nearest; its bits are not TileFilter's (no claim).
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torchvision
from torchvision.io import decode_jpeg, encode_jpeg


def gaussian_taps(sigma):
    radius = math.ceil(3 * sigma)
    x = torch.arange(-radius, radius + 1, dtype=torch.float64)
    k = torch.exp(-(x * x) / (2 * sigma * sigma))
    return (k / k.sum()).to(torch.float32), radius


def blur(batch_u8, taps, radius):
    # batch_u8: N x C x H x W uint8 on the GPU. Row pass then column pass, depthwise.
    n, c, h, w = batch_u8.shape
    x = batch_u8.to(torch.float32)
    kx = taps.view(1, 1, 1, -1).repeat(c, 1, 1, 1)
    ky = taps.view(1, 1, -1, 1).repeat(c, 1, 1, 1)
    x = torch.nn.functional.pad(x, (radius, radius, 0, 0), mode="reflect")
    x = torch.nn.functional.conv2d(x, kx, groups=c)
    x = torch.nn.functional.pad(x, (0, 0, radius, radius), mode="reflect")
    x = torch.nn.functional.conv2d(x, ky, groups=c)
    return x.round_().clamp_(0, 255).to(torch.uint8)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--sigma", type=float, default=1.5)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--quality", type=int, default=90)
    a = ap.parse_args()
    files = sorted(f for f in os.listdir(a.input) if f.lower().endswith((".jpg", ".jpeg")))
    os.makedirs(a.output, exist_ok=True)
    dev = torch.device("cuda")
    taps, radius = gaussian_taps(a.sigma)
    taps = taps.to(dev)
    # Warm-up: CUDA context, nvJPEG decoder and encoder handles.
    first = torchvision.io.read_file(os.path.join(a.input, files[0]))
    warm = decode_jpeg([first], device=dev)
    encode_jpeg([blur(warm[0][None], taps, radius)[0]], quality=a.quality)
    torch.cuda.synchronize()

    t0 = time.perf_counter()
    pixels = 0
    for i in range(0, len(files), a.batch):
        names = files[i : i + a.batch]
        data = [torchvision.io.read_file(os.path.join(a.input, f)) for f in names]
        images = decode_jpeg(data, device=dev)
        same = all(im.shape == images[0].shape for im in images)
        outs = list(blur(torch.stack(images), taps, radius)) if same else [blur(im[None], taps, radius)[0] for im in images]
        encoded = encode_jpeg(outs, quality=a.quality)
        for f, e in zip(names, encoded):
            with open(os.path.join(a.output, f), "wb") as fh:
                fh.write(e.cpu().numpy().tobytes())
        pixels += sum(im.shape[1] * im.shape[2] for im in images)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    print(json.dumps({"tool": "torchvision", "torch": torch.__version__, "torchvision": torchvision.__version__,
                      "files": len(files), "batch": a.batch, "in_process_s": wall,
                      "gpix_per_s": pixels / wall / 1e9, "device": torch.cuda.get_device_name(0)}))


if __name__ == "__main__":
    sys.exit(main())
