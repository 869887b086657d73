#!/usr/bin/env bash
# Large kernels (issue 12): 4000x3000 RGB8 gaussian sigma=5 (31 taps a pass) against sigma=150
# (901 taps a pass). GPU: `tilefilter bench` (kernels on a device-resident image, and end to end
# from pinned host memory). CPU: `tilefilter apply --devices cpu` on an uncompressed TIFF, whole
# process wall time (decode and encode of an uncompressed TIFF are a small part of it), median of 3.
# box:radius=500 (1001 taps a side) shows the O(1) integer box sums.
#
# Then large_kernels_peers.py beside it: OpenCV (cv2.GaussianBlur, cv2.blur) and `vips gaussblur`
# on the same image and cores, with tilefilter's whole-process CPU and GPU figures, in the same run.
#
# Usage: tests/bench/large_kernels.sh [TILEFILTER=build/app/cli/tilefilter] [WORKDIR=/tmp/tf-large]
#   GPU=0 skips the GPU part, CPU=0 the CPU part, PEERS=0 the peers (they need python3 with numpy
#   and cv2; VIPS names the vips program); REPEATS sets the bench's timed runs (default 5).
set -euo pipefail
tf=${1:-build/app/cli/tilefilter}
work=${2:-/tmp/tf-large}
mkdir -p "$work"
specs=(gaussian:sigma=5 gaussian:sigma=150 box:radius=500)

if [ "${GPU:-1}" != 0 ]; then
  args=()
  for s in "${specs[@]}"; do args+=(--filter "$s"); done
  "$tf" bench --size 4000x3000 --format rgb8 --repeats "${REPEATS:-5}" "${args[@]}"
fi

# Whole processes (what `time` shows: start-up, decode, filter, encode, exit) beside the bench's
# in-process kernel figures above: the CPU backend, and the GPUs where GPU is not 0.
device_sets=()
[ "${CPU:-1}" = 0 ] || device_sets+=(cpu)
[ "${GPU:-1}" = 0 ] || device_sets+=(gpu)
if [ ${#device_sets[@]} -gt 0 ]; then
  "$tf" generate "$work/in.tif" --size 4000x3000 --channels 3 --compression none
fi
for devices in "${device_sets[@]}"; do
  echo "--devices $devices ($(nproc) cores), 4000x3000 RGB8, tilefilter apply whole-process wall time (median of 3):"
  for s in "${specs[@]}"; do
    times=()
    for _ in 1 2 3; do
      t0=$(date +%s.%N)
      "$tf" apply "$work/in.tif" "$work/out.tif" --filter "$s" --devices "$devices" --compression none -q
      t1=$(date +%s.%N)
      times+=("$(awk "BEGIN { print $t1 - $t0 }")")
    done
    median=$(printf '%s\n' "${times[@]}" | sort -g | sed -n 2p)
    printf '  %-20s %8.3f s  (runs: %s)\n' "$s" "$median" "${times[*]}"
  done
done

if [ "${PEERS:-1}" != 0 ]; then
  peers=(--no-bench --workdir "$work")
  [ "${GPU:-1}" != 0 ] || peers+=(--no-gpu)
  [ -z "${VIPS:-}" ] || peers+=(--vips "$VIPS")
  python3 "$(dirname "$0")/large_kernels_peers.py" "$tf" "${peers[@]}"
fi
