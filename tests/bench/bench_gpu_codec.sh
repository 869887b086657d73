#!/usr/bin/env bash
# JPEG batch throughput with the CPU codecs and with the GPUs' (nvJPEG), in one run: tilefilter
# batch on a folder of JPEG photos with --codec cpu, gpu and auto, with no filter and with a 9x9
# Gaussian, on 1 GPU and on every GPU. Prints Mpix/s and images/s (median of REPEATS), how many
# files each GPU codec took, and what bound the run: the CPU codec threads' busy share against the
# GPU codec workers' (the larger names the bound; "kernel" when neither is busy and GPUs filter).
# Every run is timed twice: as a whole process (what `time` shows: start-up, the GPUs' contexts
# and codecs, exit) and in-process (the report's wall_s); rates are given for both.
#
# Usage: tests/bench/bench_gpu_codec.sh [-n COUNT] [-s WxH,...] [-w WORKDIR] [-b TILEFILTER]
#   -n  images (default 200)      -s  sizes, cycled (default 4000x3000,4896x3264,5472x3648,6000x4000)
#   -w  work folder (default ${TMPDIR:-/tmp}/tf-bench-codec)   -b  the tilefilter binary
# Environment: REPEATS (default 2), QUALITY (default 92), PYTHON (default python3), TF_ARGS (more flags).
# Small check: tests/bench/bench_gpu_codec.sh -n 8 -s 640x480
set -euo pipefail

COUNT=200
SIZES=4000x3000,4896x3264,5472x3648,6000x4000
WORK=${TMPDIR:-/tmp}/tf-bench-codec
TF=
while getopts "n:s:w:b:h" opt; do
  case $opt in
    n) COUNT=$OPTARG ;;
    s) SIZES=$OPTARG ;;
    w) WORK=$OPTARG ;;
    b) TF=$OPTARG ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
  esac
done
REPEATS=${REPEATS:-2}
QUALITY=${QUALITY:-92}
PYTHON=${PYTHON:-python3}
TF_ARGS=${TF_ARGS:-}
CORES=$(nproc)
root=$(cd "$(dirname "$0")/../.." && pwd)
if [[ -z $TF ]]; then
  for c in "$root"/build/app/cli/tilefilter "$root"/build-*/app/cli/tilefilter; do
    [[ -x $c ]] && { TF=$c; break; }
  done
fi
[[ -n $TF && -x $TF ]] || { echo "bench_gpu_codec: no tilefilter binary (build first, or pass -b PATH)" >&2; exit 2; }

IN=$WORK/in-$COUNT-${SIZES//[,x]/_}
mkdir -p "$WORK/logs"
if [[ $(find "$IN" -name '*.jpg' 2>/dev/null | wc -l) -ne $COUNT ]]; then
  rm -rf "$IN" && mkdir -p "$IN"
  echo "generating $COUNT JPEGs ($SIZES) in $IN ..."
  IFS=, read -r -a size_list <<<"$SIZES"
  for ((i = 0; i < COUNT; i++)); do
    printf '%s %s/photo_%04d.jpg %d\n' "${size_list[i % ${#size_list[@]}]}" "$IN" "$i" "$((i + 1))"
  done | xargs -P "$CORES" -n 3 sh -c '"$0" generate "$2" --size "$1" --seed "$3" --quality '"$QUALITY" "$TF"
fi
cat "$IN"/*.jpg >/dev/null

gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
device_sets=(cpu all)  # cpu: the CPU workers and codecs alone, the baseline a GPU must beat
if ((gpus > 1)); then device_sets=(cpu 0 all); fi
echo "tilefilter: $TF ($("$TF" --version)); $gpus GPU(s), $CORES cores; $COUNT JPEGs ($SIZES), quality $QUALITY"
# The floor on this machine: what any process pays before its GPUs work (the CUDA runtime alone).
"$TF" startup --runs 3 || true
printf '%-6s %-6s %-11s %8s %8s %9s %9s %9s %8s %8s %8s  %s\n' devices codec filter "proc s" "in s" "Mpix/s" \
  "in Mpix/s" "images/s" "gpu dec" "cpu%" "gpu%" bound
for devs in "${device_sets[@]}"; do
  for filter in none gaussian9x9; do
    for codec in cpu gpu auto; do
      [[ $devs == cpu && $codec != cpu ]] && continue
      flags=(--devices "$devs" --codec "$codec" --quality "$QUALITY")
      [[ $filter == gaussian9x9 ]] && flags+=(--filter gaussian:sigma=1.5,radius=4)
      rows=()
      for ((r = 1; r <= REPEATS; r++)); do
        rm -rf "$WORK/out"
        log=$WORK/logs/$devs-$codec-$filter
        # shellcheck disable=SC2086
        t0=$(date +%s.%N)
        if ! "$TF" batch "$IN" "$WORK/out" "${flags[@]}" --report "$log.json" $TF_ARGS >"$log.log" 2>&1; then
          rows+=("failed")
          break
        fi
        t1=$(date +%s.%N)
        rows+=("$("$PYTHON" - "$log.json" "$t0" "$t1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
proc = float(sys.argv[3]) - float(sys.argv[2])
wall, ok = r["wall_s"], r["counts"]["ok"]
c = r["codec"]
threads = max(1, r["decode"]["threads"] + r["encode"]["threads"])
cpu_busy = 100 * (r["decode"]["thread_s"] + r["encode"]["thread_s"]) / (threads * wall) if wall else 0
gpu_s = sum(f["decode_s"] + f["encode_s"] for f in r["files"] if f["decoder"].startswith("nvjpeg"))
gpu_busy = 100 * gpu_s / (max(1, c["gpu_workers"]) * wall) if wall and c["gpu_workers"] else 0
kernel = sum(d.get("kernel_s", 0) for d in r["devices"])
bound = "CPU codecs" if cpu_busy >= max(gpu_busy, 50) else "GPU codecs" if gpu_busy >= 50 else "kernel/PCIe" if kernel > 0 else "I/O or scheduling"
print(f"{proc:.3f} {wall:.3f} {r['megapixels'] / proc:.1f} {r['megapixels'] / wall:.1f} {ok / proc:.2f} {c['files_decoded_on_gpu']} {cpu_busy:.0f} {gpu_busy:.0f} {bound.replace(' ', '_')}")
EOF
)")
      done
      if [[ ${rows[0]} == failed ]]; then
        printf '%-6s %-6s %-11s failed: %s\n' "$devs" "$codec" "$filter" "$(tail -1 "$log.log")"
        continue
      fi
      # The median run by whole-process time.
      best=$(printf '%s\n' "${rows[@]}" | sort -n | sed -n "$(((${#rows[@]} + 1) / 2))p")
      read -r proc wall mpix in_mpix ips gdec cpub gpub bound <<<"$best"
      printf '%-6s %-6s %-11s %8.2f %8.2f %9.1f %9.1f %9.2f %8s %8s %8s  %s\n' "$devs" "$codec" "$filter" "$proc" "$wall" \
        "$mpix" "$in_mpix" "$ips" "$gdec" "$cpub" "$gpub" "${bound//_/ }"
    done
  done
done
rm -rf "$WORK/out"
echo "proc s: the whole process (what \`time\` shows); in s: the report's wall_s; Mpix/s and images/s from proc s,"
echo "in Mpix/s from in s. gpu dec: files decoded by a GPU codec; cpu%/gpu%: busy share of the CPU codec threads / the GPU codec workers."
