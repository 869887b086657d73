#!/usr/bin/env bash
# One large image end to end, next to libvips in the same run: whole-process wall time and peak
# resident memory (GNU time) of `tilefilter apply` and of `vips copy` (codecs only) / `vips
# gaussblur` on the same file. Includes decode, filtering and encode; the devices are whatever
# `--devices` names (default: all GPUs, else the CPU).
# Usage: tests/bench/large_image.sh [SIZE=20000] [WORKDIR=/tmp/tf-large] [DEVICES=all]
# Needs: a built build/app/cli/tilefilter; `vips` (Debian libvips-tools) for the comparison.
set -euo pipefail
size=${1:-20000}; work=${2:-/tmp/tf-large}; devices=${3:-all}
tf=${TILEFILTER:-$(cd "$(dirname "$0")/../.." && pwd)/build/app/cli/tilefilter}
mkdir -p "$work"
have_vips=0; command -v vips >/dev/null && have_vips=1
[ $have_vips = 1 ] || echo "note: vips not found (apt-get install libvips-tools): tilefilter only" >&2

measure() {  # label command...: prints "label wall_s peak_MB"
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o "$work/time.txt" "$@" >"$work/out.log" 2>&1 || { echo "$label FAILED"; cat "$work/out.log"; return 1; }
  read -r wall kib <"$work/time.txt"
  printf '%-44s %8.2f s %8.0f MB\n' "$label" "$wall" "$((kib / 1024))"
}

echo "# ${size}x${size} RGB8, gaussian:sigma=3, devices=$devices, $(nproc) cores, $(date -u +%F)"
"$tf" generate "$work/in.tif" --size "${size}x${size}" --compression deflate
"$tf" generate "$work/in.png" --size "${size}x${size}"
"$tf" generate "$work/in.jpg" --size "${size}x${size}" --quality 90
for ext in tif png jpg; do
  measure "tilefilter apply $ext -> $ext" "$tf" apply "$work/in.$ext" "$work/tf-out.$ext" -f gaussian:sigma=3 --devices "$devices"
  measure "tilefilter apply $ext (identity: codecs only)" "$tf" apply "$work/in.$ext" "$work/tf-id.$ext" -f identity --devices "$devices"
  if [ $have_vips = 1 ]; then
    opts=""; [ $ext = tif ] && opts="[compression=deflate]"; [ $ext = jpg ] && opts="[Q=95]"
    measure "vips copy $ext -> $ext$opts" vips copy "$work/in.$ext" "$work/vips-copy.$ext$opts"
    measure "vips gaussblur $ext -> $ext$opts" vips gaussblur "$work/in.$ext" "$work/vips-blur.$ext$opts" 3
  fi
done
