"""The photo batch people run: a folder of camera-like JPEGs (4000x3000, 4:2:0, quality 90 by default)
through `tilefilter batch` with several settings, next to the torchvision loop (torchvision_peer.py)
and the hardware probe (nvjpeg_probe.py) in the same run. Prints one line per run and a JSON summary.

    python3 tests/bench/photo_batch.py TILEFILTER [--count 2000] [--distinct 100] [--work DIR]
        [--repeats 2] [--run "NAME=ARGS" ...] [--program "NAME=COMMAND" ...] [--ranks NAME=N ...] [--peer] [--probe]
        [--json OUT.json]
        [--stall 60] [--on-stall "cuda-gdb -p {pid} -batch -ex 'thread apply all bt'"]

Photos: `tilefilter generate` makes --distinct different ones (seeds 1..N), hard-linked round to
--count files, all read once so every run reads them from the page cache. Each run: `tilefilter batch IN OUT
--filter gaussian:sigma=1.5 ARGS --report R.json`, timed as a whole process (what `time` shows) with
its peak RSS (wait4's ru_maxrss), beside the report's in-process wall_s; Gpix/s from the report's
megapixels. Outputs are checked against their inputs: the largest size ratio and the subsampling.
The runs take turns, A B A B (--repeats rounds); --program gives a run another build of tilefilter; --ranks
runs NAME as N MPI ranks on this host, rank k with `--devices k` (`mpirun --bind-to none`, MPMD; an MPI build),
its peak RSS then the largest process's.
A run whose output folder gains no file for --stall seconds is killed as stalled, after --on-stall.
"""
import argparse
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))


def make_photos(tf, folder, count, distinct, size, quality):
    names = sorted(f for f in os.listdir(folder) if f.endswith(".jpg")) if os.path.isdir(folder) else []
    if len(names) != count:
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        seeds = range(1, min(distinct, count) + 1)

        def one(seed):
            subprocess.run(tf + ["generate", os.path.join(folder, f"photo_{seed - 1:05d}.jpg"), "--size", size,
                            "--seed", str(seed), "--quality", str(quality), "--subsampling", "420"], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        with ThreadPoolExecutor(os.cpu_count()) as pool:
            list(pool.map(one, seeds))
        for i in range(len(seeds), count):  # hard links: the same bytes to decode, no disk to fill
            os.link(os.path.join(folder, f"photo_{i % len(seeds):05d}.jpg"), os.path.join(folder, f"photo_{i:05d}.jpg"))
    for f in os.listdir(folder):  # into the page cache
        with open(os.path.join(folder, f), "rb") as fh:
            while fh.read(1 << 24):
                pass


def count_files(folder):
    return len(os.listdir(folder)) if os.path.isdir(folder) else 0


def run_process(argv, log, watch=None, stall_s=0, on_stall=""):
    """Whole-process seconds, peak RSS (MB) and exit code of one command (its CPU seconds, user + system,
    in run_process.cpu_s); its output goes to `log`. With `watch` and `stall_s`, a command whose folder
    `watch` gains no file for stall_s seconds is stalled: `on_stall` runs first (its {pid} replaced, its
    output into the log: a debugger's backtraces, say), then the command is killed (exit code -9). The
    watch runs on a thread of its own, so that the time is the process's end as wait4 sees it, not the
    watch's next look."""
    with open(log, "wb") as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        ended = threading.Event()

        def watch_for_stall():
            seen, since = -1, time.perf_counter()
            while not ended.wait(0.5):
                n = count_files(watch)
                if n != seen:
                    seen, since = n, time.perf_counter()
                elif time.perf_counter() - since > stall_s:
                    out.write(f"\nphoto_batch: no new output for {stall_s} s, {n} files written: stalled\n".encode())
                    out.flush()
                    if on_stall:
                        try:
                            subprocess.run(on_stall.replace("{pid}", str(p.pid)), shell=True, stdout=out,
                                           stderr=subprocess.STDOUT, timeout=120)
                        except subprocess.TimeoutExpired:
                            out.write(b"photo_batch: --on-stall did not end in 120 s\n")
                    if not ended.is_set():
                        os.kill(p.pid, signal.SIGKILL)  # not p.kill(): it may reap the process before wait4 sees it
                    return

        watcher = threading.Thread(target=watch_for_stall, daemon=True)
        if watch and stall_s > 0:
            watcher.start()
        pid, status, usage = os.wait4(p.pid, 0)
        whole = time.perf_counter() - t0
        ended.set()
        if watcher.is_alive():
            watcher.join()
    code = os.waitstatus_to_exitcode(status)
    run_process.cpu_s = usage.ru_utime + usage.ru_stime
    run_process.faults = usage.ru_minflt
    return whole, usage.ru_maxrss / 1024.0, code


def mpi_ranks(argv, n):
    """`argv` as n MPI ranks of one process each on this host, rank k with `--devices k` (MPMD)."""
    if os.geteuid() == 0:  # Open MPI refuses root unless told
        os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    cmd = ["mpirun", "--bind-to", "none"]
    for k in range(n):
        cmd += ([":"] if k else []) + ["-n", "1"] + argv + ["--devices", str(k)]
    return cmd


def last_worker(report):
    """Seconds into the process when its last GPU codec worker was ready (the report's start-up steps)."""
    ends = [x["end_s"] for x in report.get("startup", {}).get("steps", []) if "codec lane" in x["what"]]
    return max(ends) if ends else None


def cpu_decode_wait(report):
    """Files decoded on the CPU beside the GPU codecs, and the median of their decode's wall time (the
    report's decode_s: with a tight budget far above its CPU time, the wait for room)."""
    times = [f["decode_s"] for f in report.get("files", []) if f.get("decoder") == "libjpeg"]
    return len(times), (statistics.median(times) if times else None)


def gpu_workers(report):
    """The GPU codec workers once ready: the share of that time their lanes were busy and starved (waiting
    for files), the files a call, all workers together, what their busy time was made of, and each GPU's
    Gpix/s from its first worker's ready to the batch's end; None without workers that became ready."""
    ws = [w for w in report.get("codec", {}).get("workers", []) if w.get("ready_s", -1) >= 0]
    ready = sum(report["wall_s"] - w["ready_s"] for w in ws)
    calls = sum(w["calls"] for w in ws)
    if not ws or ready <= 0 or not calls:
        return None
    busy = sum(w["busy_s"] for w in ws)
    steps = {}
    for w in ws:
        for k, v in w.get("steps", {}).items():
            name = k.removesuffix("_s")
            steps[name] = steps.get(name, 0) + v
    files = report.get("counts", {}).get("files") or 0
    mpix_a_file = report.get("megapixels", 0) / files if files else 0
    gpus = {}
    for w in ws:
        first, n = gpus.get(w["device"], (report["wall_s"], 0))
        gpus[w["device"]] = (min(first, w["ready_s"]), n + w["files"])
    rates = [n * mpix_a_file / 1000 / (report["wall_s"] - first) for first, n in gpus.values() if report["wall_s"] > first]
    return {"busy": busy / ready, "starved": sum(w["starved_s"] for w in ws) / ready,
            "files_a_call": sum(w["files"] for w in ws) / calls,
            "steps": {k: v / busy for k, v in steps.items()} if busy > 0 else {},
            "gpu_gpix_per_s_once_ready": rates}


def lanes(report):
    """Each GPU codec worker's ready time (seconds into the batch) and files, "0.91 s 995 / 1.26 s 766", and the
    files filtered on the CPU devices beside them (device "cpu-fallback"); "" without workers."""
    ws = report.get("codec", {}).get("workers", [])
    text = " / ".join(f"{w['ready_s']:.2f} s {w['files']}" for w in ws if w.get("ready_s", -1) >= 0)
    on_cpu = sum(1 for f in report.get("files", []) if f.get("device") == "cpu-fallback")
    return (f"  lanes ready {text}" if text else "") + (f"  {on_cpu} on CPU devices" if on_cpu else "")


def check_outputs(inp, out):
    worst, n = 0.0, 0
    for f in os.listdir(out) if os.path.isdir(out) else []:
        src = os.path.join(inp, f)
        if f.endswith(".jpg") and os.path.exists(src):
            worst = max(worst, os.path.getsize(os.path.join(out, f)) / os.path.getsize(src))
            n += 1
    return worst, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tilefilter")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--distinct", type=int, default=100)
    ap.add_argument("--size", default="4000x3000")
    ap.add_argument("--quality", type=int, default=90)
    ap.add_argument("--work", default=os.path.join(os.environ.get("TMPDIR", "/tmp"), "tf-photo-batch"))
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--run", action="append", default=[], help="NAME=extra batch arguments (repeatable)")
    ap.add_argument("--program", action="append", default=[],
                    help="NAME=COMMAND: run NAME with another tilefilter (a branch's build, for an A/B)")
    ap.add_argument("--ranks", action="append", default=[],
                    help="NAME=N: run NAME as N MPI ranks, rank k on GPU k (mpirun, MPMD)")
    ap.add_argument("--peer", action="store_true", help="the torchvision loop too (needs torch)")
    ap.add_argument("--probe", action="store_true", help="the hardware probe too (needs torch)")
    ap.add_argument("--stall", type=float, default=60,
                    help="seconds without a new output after which a run counts as stalled and is killed (0: never)")
    ap.add_argument("--on-stall", default="", help="a command run on a stalled run first, {pid} its process")
    ap.add_argument("--json")
    a = ap.parse_args()
    tf = shlex.split(a.tilefilter)  # a path, or a wrapper and its argument ("bundle/run.sh tilefilter")
    inp = os.path.join(a.work, f"in-{a.count}-{a.size}-q{a.quality}")
    out = os.path.join(a.work, "out")
    logs = os.path.join(a.work, "logs")
    os.makedirs(logs, exist_ok=True)
    make_photos(tf, inp, a.count, a.distinct, a.size, a.quality)
    summary = {"count": a.count, "size": a.size, "quality": a.quality, "subsampling": "4:2:0", "cores": os.cpu_count(),
               "runs": {}}
    runs = [r.split("=", 1) for r in a.run] or [["default", ""]]
    programs = {name: shlex.split(cmd) for name, cmd in (p.split("=", 1) for p in a.program)}
    ranks = {name: int(n) for name, n in (r.split("=", 1) for r in a.ranks)}
    rows_of = {name: [] for name, _ in runs}
    for k in range(a.repeats):  # round-robin, A B A B: a drifting machine moves every run alike
        for name, extra in runs:
            rows = rows_of[name]
            shutil.rmtree(out, ignore_errors=True)
            report = os.path.join(logs, f"{name}.json")
            argv = programs.get(name, tf) + ["batch", inp, out, "--filter", "gaussian:sigma=1.5", "--report", report] + shlex.split(extra)
            if name in ranks:
                argv = mpi_ranks(argv, ranks[name])
            whole, rss, code = run_process(argv, os.path.join(logs, f"{name}.log"), out, a.stall, a.on_stall)
            r = json.load(open(report)) if os.path.exists(report) else {}
            worst, n = check_outputs(inp, out)
            cpu_files, cpu_wall = cpu_decode_wait(r)
            workers = gpu_workers(r)
            rows.append({"whole_s": whole, "in_process_s": r.get("wall_s"), "rss_mib": rss, "exit": code,
                         "cpu_s": run_process.cpu_s, "minor_faults": run_process.faults,
                         "gpix_per_s": r.get("megapixels", 0) / 1000 / r["wall_s"] if r.get("wall_s") else None,
                         "ok": r.get("counts", {}).get("ok"), "largest_out_in": worst, "checked": n,
                         "memory_bound": r.get("memory_bound"), "peak_inflight_mb": r.get("peak_inflight_bytes", 0) / 2**20,
                         "gpu_files": r.get("codec", {}).get("files_decoded_on_gpu"),
                         "memory_wait_s": r.get("memory_wait_s"), "last_gpu_worker_ready_s": last_worker(r),
                         "cpu_files": cpu_files, "cpu_decode_wall_median_s": cpu_wall, "gpu_workers": workers})
            if code != 0:
                print(open(os.path.join(logs, f"{name}.log")).read()[-1500:], flush=True)
            print(f"{name:<24} whole {whole:7.2f} s  in-process {r.get('wall_s', float('nan')):7.2f} s  "
                  f"{rows[-1]['gpix_per_s'] or 0:6.2f} Gpix/s  rss {rss:7.0f} MiB  cpu {run_process.cpu_s:6.1f} s  "
                  f"faults {run_process.faults / 1e6:.2f}M  "
                  f"out/in <= {worst:.2f}  exit {code}"
                  + (f"  last GPU worker {rows[-1]['last_gpu_worker_ready_s']:.2f} s" if rows[-1]['last_gpu_worker_ready_s'] else "")
                  + ("  budget-bound" if r.get("memory_bound") else "")
                  + (f"  {cpu_files} on the CPU (decode wall {cpu_wall:.2f} s)" if rows[-1]["gpu_files"] and cpu_files else "")
                  + (f"  GPU workers busy {workers['busy']:.0%} starved {workers['starved']:.0%},"
                     f" {workers['files_a_call']:.1f} files a call" if workers else "")
                  + ("  (busy: " + " ".join(f"{k} {v:.0%}" for k, v in workers["steps"].items() if v >= 0.005) + ")"
                     if workers and workers["steps"] else "")
                  + (f"  a GPU once ready {min(workers['gpu_gpix_per_s_once_ready']):.1f}-"
                     f"{max(workers['gpu_gpix_per_s_once_ready']):.1f} Gpix/s"
                     if workers and workers["gpu_gpix_per_s_once_ready"] else "")
                  + lanes(r),
                  flush=True)
    for name, extra in runs:
        rows = rows_of[name]
        summary["runs"][name] = {"args": extra, "program": " ".join(programs.get(name, tf)), "repeats": rows,
                                 "whole_s_median": statistics.median(x["whole_s"] for x in rows),
                                 "in_process_s_median": statistics.median(x["in_process_s"] or 0 for x in rows)}
    shutil.rmtree(out, ignore_errors=True)
    if a.peer:
        rows = []
        for k in range(a.repeats):
            shutil.rmtree(out, ignore_errors=True)
            log = os.path.join(logs, "torchvision.log")
            whole, rss, code = run_process([sys.executable, os.path.join(HERE, "torchvision_peer.py"), inp, out,
                                            "--quality", str(a.quality)], log)
            lines = [x for x in open(log).read().splitlines() if x.startswith("{")]
            r = json.loads(lines[-1]) if lines else {}
            rows.append({"whole_s": whole, "rss_mib": rss, **r})
            print(f"{'torchvision loop':<24} whole {whole:7.2f} s  in-process {r.get('in_process_s', float('nan')):7.2f} s  "
                  f"{r.get('gpix_per_s', 0):6.2f} Gpix/s  rss {rss:7.0f} MiB  exit {code}", flush=True)
        summary["torchvision"] = rows
        shutil.rmtree(out, ignore_errors=True)
    if a.probe:
        r = subprocess.run([sys.executable, os.path.join(HERE, "nvjpeg_probe.py"), inp, "--quality", str(a.quality)],
                           capture_output=True, text=True)
        lines = [x for x in r.stdout.splitlines() if x.startswith("{")]
        summary["probe"] = json.loads(lines[-1]) if lines else {"error": r.stderr[-2000:]}
        print("probe:", json.dumps(summary["probe"]), flush=True)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(summary, fh, indent=1)


if __name__ == "__main__":
    sys.exit(main())
