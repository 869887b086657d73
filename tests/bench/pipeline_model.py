#!/usr/bin/env python3
"""A model of a host-resident strip job: how much of the copy rate the tiling can reach.

Each device has one upload and one download stream (first in, first out) and LANES lanes. A lane
holds one strip at a time: it queues the strip's upload, LATENCY after the upload ends (kernel and
the host seeing it) queues its download, and PICK after the download ends takes the next strip.
A copy of B bytes takes OVERHEAD + B / RATE (a download: B / (RATE * DOWN_RATIO)). Every copy time
is drawn within +-JITTER of that.

Prints the median job time over SEEDS runs and its share of the ideal (every byte at the slower
direction's rate on every device, both directions at once). Not in the model: halo rows, the job's start on the host, and
the faster rate of one direction alone. So it compares tilings with each other; it does not
predict a job's absolute rate. docs/performance.md ("Why the head stays") compares it with
measurements.

  python3 tests/bench/pipeline_model.py                       # 1 and 2 devices, strip heights
  python3 tests/bench/pipeline_model.py --devices 2 --rate 38 --rows 256,192,128 --end-split
  python3 tests/bench/pipeline_model.py --devices 2 --rate 38 --down-ratio 1.2 --rows 256,128 --end-split
"""
import argparse
import heapq
import random
import statistics


def job_ms(devices, lanes, rows, height, row_mb, rate, overhead_ms, latency_ms, pick_ms, jitter, seed,
           end_split=False, min_rows=32, down_rate=None):
    """One job's time in ms. end_split: a lane that takes the last queued strip takes its top half."""
    rnd = random.Random(seed)
    queue = [min(rows, height - y) for y in range(0, height, rows)]
    up_free = [0.0] * devices
    down_free = [0.0] * devices
    end = 0.0

    def copy_ms(strip_rows, r=rate):
        return (overhead_ms + strip_rows * row_mb / r) * (1 + rnd.uniform(-jitter, jitter))

    events = [(0.0, d * lanes + lane, d, "pick", 0) for d in range(devices) for lane in range(lanes)]
    heapq.heapify(events)
    order = len(events)
    while events:
        t, _, d, stage, strip_rows = heapq.heappop(events)
        if stage == "pick":
            if not queue:
                continue
            strip_rows = queue.pop(0)
            if end_split and not queue and strip_rows >= 2 * min_rows:
                top = (strip_rows // 2 + 31) // 32 * 32
                queue.append(strip_rows - top)
                strip_rows = top
            up_free[d] = max(t, up_free[d]) + copy_ms(strip_rows)
            heapq.heappush(events, (up_free[d] + latency_ms, order, d, "download", strip_rows))
        else:
            down_free[d] = max(t, down_free[d]) + copy_ms(strip_rows, down_rate or rate)
            end = max(end, down_free[d])
            heapq.heappush(events, (down_free[d] + pick_ms, order, d, "pick", 0))
        order += 1
    return end


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--devices", default="1,2", help="device counts to model (default 1,2)")
    p.add_argument("--rate", default="50,38",
                   help="GB/s each way per device while both directions run, one per device count (default 50,38)")
    p.add_argument("--down-ratio", type=float, default=1.0,
                   help="downloads' rate over uploads' (default 1; two H100s of one host: 1.2)")
    p.add_argument("--rows", default="512,384,256,192,128,64", help="strip heights to compare")
    p.add_argument("--size", default="8192x8192", help="image WxH (default 8192x8192)")
    p.add_argument("--pixel-bytes", type=int, default=4, help="bytes a pixel (default 4, RGBA8)")
    p.add_argument("--lanes", type=int, default=6, help="lanes a device (default 6)")
    p.add_argument("--overhead-us", type=float, default=4.0, help="fixed cost of a copy in us (default 4)")
    p.add_argument("--latency-us", type=float, default=25.0, help="upload end to download queued (default 25)")
    p.add_argument("--pick-us", type=float, default=5.0, help="download end to the next upload queued (default 5)")
    p.add_argument("--jitter", type=float, default=0.08, help="relative spread of a copy's time (default 0.08)")
    p.add_argument("--seeds", type=int, default=100, help="runs a point (default 100)")
    p.add_argument("--end-split", action="store_true", help="also model halving the job's last strips")
    a = p.parse_args()
    width, height = (int(v) for v in a.size.split("x"))
    row_mb = width * a.pixel_bytes / 1e6
    counts = [int(v) for v in a.devices.split(",")]
    rates = [float(v) for v in a.rate.split(",")]
    for count, rate in zip(counts, rates):
        ideal = height * row_mb / min(rate, rate * a.down_ratio) / count
        for end_split in [False, True] if a.end_split else [False]:
            cells = []
            for rows in (int(v) for v in a.rows.split(",")):
                t = statistics.median(
                    job_ms(count, a.lanes, rows, height, row_mb, rate, a.overhead_us / 1e3, a.latency_us / 1e3,
                           a.pick_us / 1e3, a.jitter, seed, end_split, down_rate=rate * a.down_ratio)
                    for seed in range(a.seeds))
                cells.append(f"{rows} rows {t:.3f} ms {ideal / t * 100:5.1f}%")
            rates_text = (f"{rate:g} GB/s each way" if a.down_ratio == 1 else
                          f"{rate:g} GB/s up, {rate * a.down_ratio:g} down")
            print(f"{count} device(s), {rates_text}{', last strips halved' if end_split else ''}: "
                  + " | ".join(cells))


if __name__ == "__main__":
    main()
