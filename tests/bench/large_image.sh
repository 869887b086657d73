#!/usr/bin/env bash
# One large image end to end, next to libvips in the same run: whole-process wall time and peak
# resident memory of `tilefilter apply` and of `vips copy` (codecs only) / `vips gaussblur` on the
# same file. Includes decode, filtering and encode; the devices are whatever DEVICES names (default:
# all GPUs, else the CPU). PNG gets a smaller image: vips (and libpng) deflate it on one thread.
# Usage: tests/bench/large_image.sh [SIZE=20000] [WORKDIR=/tmp/tf-large] [DEVICES=all] [PNG_SIZE=8000]
# Programs: TILEFILTER (default build/app/cli/tilefilter) and VIPS (default vips; Debian
# libvips-tools), each a command line (a bundle's run.sh works). FORMATS picks the inputs
# (default "tif jpg png").
set -euo pipefail
size=${1:-20000}; work=${2:-/tmp/tf-large}; devices=${3:-all}; png_size=${4:-8000}
read -r -a tf <<<"${TILEFILTER:-$(cd "$(dirname "$0")/../.." && pwd)/build/app/cli/tilefilter}"
read -r -a vips <<<"${VIPS:-vips}"
mkdir -p "$work"
have_vips=1; "${vips[@]}" --version >/dev/null 2>&1 || { have_vips=0; echo "note: no vips (apt-get install libvips-tools)" >&2; }

measure() {  # label command...: one line "label  wall s  peak MB" (the child's own peak, from rusage)
  local label=$1; shift
  python3 - "$label" "$@" <<'PY'
import resource, subprocess, sys, time
t = time.monotonic()
r = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
wall = time.monotonic() - t
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
status = "" if r.returncode == 0 else f"  FAILED ({r.returncode}): {r.stderr.strip()[:200]}"
print(f"{sys.argv[1]:<52} {wall:8.2f} s {peak:8.0f} MB{status}", flush=True)
PY
}

echo "# ${size}x${size} RGB8 (PNG ${png_size}x${png_size}), gaussian:sigma=3, devices=$devices, $(nproc) cores, $(date -u +%F)"
read -r -a formats <<<"${FORMATS:-tif jpg png}"
for ext in "${formats[@]}"; do
  case $ext in
    tif) "${tf[@]}" generate "$work/in.tif" --size "${size}x${size}" --compression deflate ;;
    jpg) "${tf[@]}" generate "$work/in.jpg" --size "${size}x${size}" --quality 90 ;;
    png) "${tf[@]}" generate "$work/in.png" --size "${png_size}x${png_size}" ;;
    *) echo "large_image.sh: unknown format $ext" >&2; exit 2 ;;
  esac
done
for ext in "${formats[@]}"; do
  measure "tilefilter apply $ext (gaussian sigma=3)" "${tf[@]}" apply "$work/in.$ext" "$work/tf-out.$ext" -f gaussian:sigma=3 --devices "$devices"
  measure "tilefilter apply $ext (identity: codecs only)" "${tf[@]}" apply "$work/in.$ext" "$work/tf-id.$ext" -f identity --devices "$devices"
  if [ $have_vips = 1 ]; then
    opts=""; [ $ext = tif ] && opts="[compression=deflate,predictor=horizontal]"; [ $ext = jpg ] && opts="[Q=95]"
    measure "vips copy $ext$opts" "${vips[@]}" copy "$work/in.$ext" "$work/vips-copy.$ext$opts"
    measure "vips gaussblur $ext$opts" "${vips[@]}" gaussblur "$work/in.$ext" "$work/vips-blur.$ext$opts" 3
  fi
  # One line from tilefilter itself: where the time went (decode / devices / encode busy time).
  "${tf[@]}" apply "$work/in.$ext" "$work/tf-out.$ext" -f gaussian:sigma=3 --devices "$devices" 2>/dev/null | sed 's/^/  split: /'
done
