#!/usr/bin/env bash
# Batch throughput on a folder of JPEG photos (codecs included: this is decode + filter + encode,
# files read from the page cache and written to WORKDIR). In one run:
#   tilefilter batch   with no filter (decode + encode only), a 9x9 Gaussian
#                      (gaussian:sigma=1.5,radius=4) and a 31x31 custom (non-separable) kernel;
#   OpenCV on the CPU  the same three in python3 cv2, one process per core (cv2.setNumThreads(1)),
#                      imread -> GaussianBlur / filter2D (BORDER_REFLECT_101) -> imwrite.
# Prints, per variant, the median of REPEATS runs (and min-max): Mpix/s, images/s, the ratio to
# the same tool without a filter (target for tilefilter: >= 0.85) and tilefilter / OpenCV.
#
# Usage: tests/bench/bench_batch.sh [-n COUNT] [-s WxH,WxH,...] [-d DEVICES] [-w WORKDIR] [-b TILEFILTER]
#   -n  images (default 200)
#   -s  sizes, cycled (default 4000x3000,4896x3264,5472x3648,6000x4000: 12-24 Mpix)
#   -d  tilefilter --devices (default all: every GPU, else the CPU)
#   -w  work folder (default ${TMPDIR:-/tmp}/tf-bench-batch; the images are kept for the next run)
#   -b  the tilefilter binary (default: build/app/cli/tilefilter or build-*/app/cli/tilefilter)
# Environment: PYTHON (default python3), REPEATS (default 3), QUALITY (JPEG quality, default 95),
#   JOBS (OpenCV processes, default: the cores), TF_ARGS (more tilefilter batch flags, e.g. "-j 32").
# Small check: tests/bench/bench_batch.sh -n 6 -s 640x480,800x600 -d cpu
set -euo pipefail

COUNT=200
SIZES=4000x3000,4896x3264,5472x3648,6000x4000
DEVICES=all
WORK=${TMPDIR:-/tmp}/tf-bench-batch
TF=
while getopts "n:s:d:w:b:h" opt; do
  case $opt in
    n) COUNT=$OPTARG ;;
    s) SIZES=$OPTARG ;;
    d) DEVICES=$OPTARG ;;
    w) WORK=$OPTARG ;;
    b) TF=$OPTARG ;;
    *) sed -n '2,22p' "$0"; exit 2 ;;
  esac
done
PYTHON=${PYTHON:-python3}
REPEATS=${REPEATS:-3}
QUALITY=${QUALITY:-95}
CORES=$(nproc)
JOBS=${JOBS:-$CORES}
TF_ARGS=${TF_ARGS:-}

root=$(cd "$(dirname "$0")/../.." && pwd)
if [[ -z $TF ]]; then
  for c in "$root"/build/app/cli/tilefilter "$root"/build-*/app/cli/tilefilter; do
    [[ -x $c ]] && { TF=$c; break; }
  done
fi
[[ -n $TF && -x $TF ]] || { echo "bench_batch: no tilefilter binary (build first, or pass -b PATH)" >&2; exit 2; }
TF=$(cd "$(dirname "$TF")" && pwd)/$(basename "$TF")
command -v "$PYTHON" >/dev/null || { echo "bench_batch: $PYTHON not found (it reads the JSON reports)" >&2; exit 2; }

IN=$WORK/in-$COUNT-${SIZES//[,x]/_}
mkdir -p "$WORK"

# ---- the photos: made by tilefilter itself, kept between runs ----
if [[ $(find "$IN" -name '*.jpg' 2>/dev/null | wc -l) -ne $COUNT ]]; then
  rm -rf "$IN"
  mkdir -p "$IN"
  echo "generating $COUNT JPEGs ($SIZES) in $IN ..."
  IFS=, read -r -a size_list <<<"$SIZES"
  for ((i = 0; i < COUNT; i++)); do
    printf '%s %s/photo_%04d.jpg %d\n' "${size_list[i % ${#size_list[@]}]}" "$IN" "$i" "$((i + 1))"
  done | xargs -P "$CORES" -n 3 sh -c '"$0" generate "$2" --size "$1" --seed "$3" --quality 92' "$TF"
fi
cat "$IN"/*.jpg >/dev/null  # into the page cache: every tool reads from memory

# ---- a 31x31 kernel that is not separable (so it runs as one 961-tap 2-D convolution) ----
K31=$WORK/k31.txt
awk 'BEGIN {
  r = 15; s = 0
  for (y = -r; y <= r; y++) for (x = -r; x <= r; x++) { k[y, x] = exp(-(x*x + y*y) / 128.0) * (1 + 0.5 * cos(x * y / 20.0)); s += k[y, x] }
  for (y = -r; y <= r; y++) { line = ""; for (x = -r; x <= r; x++) line = line sprintf("%s%.8g", x > -r ? " " : "", k[y, x] / s); print line }
}' >"$K31"

variants=(none gaussian9x9 custom31x31)
tf_filter() {
  case $1 in
    none) ;;
    gaussian9x9) echo "--filter gaussian:sigma=1.5,radius=4" ;;
    custom31x31) echo "--filter custom:file=$K31" ;;
  esac
}

# Median and range of a list of numbers: "median min max".
stats() { "$PYTHON" -c 'import sys, statistics as s; v = [float(x) for x in sys.argv[1:]]; print(s.median(v), min(v), max(v))' "$@"; }

declare -A WALL MPIX IMAGES RANGE
OUT=$WORK/out
LOGS=$WORK/logs
mkdir -p "$LOGS"

echo "tilefilter: $TF ($("$TF" --version)), devices: $DEVICES"
"$TF" devices 2>/dev/null | sed 's/^/  /' || true
"$TF" startup --runs 3 2>/dev/null | sed 's/^/  /' || true
for v in "${variants[@]}"; do
  walls=() procs=()
  for ((r = 1; r <= REPEATS; r++)); do
    rm -rf "$OUT"
    t0=$(date +%s.%N)
    # shellcheck disable=SC2046,SC2086
    "$TF" batch "$IN" "$OUT" $(tf_filter "$v") --devices "$DEVICES" --quality "$QUALITY" --report "$LOGS/tf-$v.json" $TF_ARGS \
      >"$LOGS/tf-$v.log" 2>&1 || { echo "tilefilter batch $v failed:"; cat "$LOGS/tf-$v.log"; exit 1; }
    procs+=("$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }')")
    read -r wall mpix ok < <("$PYTHON" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["wall_s"], r["megapixels"], r["counts"]["ok"])' "$LOGS/tf-$v.json")
    walls+=("$wall")
  done
  read -r med lo hi < <(stats "${walls[@]}")
  read -r pmed plo phi < <(stats "${procs[@]}")
  WALL[tf-$v]=$med MPIX[tf-$v]=$mpix IMAGES[tf-$v]=$ok RANGE[tf-$v]="$lo-$hi"
  printf '  tilefilter %-12s %8.2f s in-process (%s), %8.2f s whole process (%s, what `time` shows)\n' "$v" "$med" \
    "$(printf '%.2f-%.2f' "$lo" "$hi")" "$pmed" "$(printf '%.2f-%.2f' "$plo" "$phi")"
done
rm -rf "$OUT"

# ---- OpenCV on the CPU, all cores, same script run ----
HAVE_CV=0
if "$PYTHON" -c 'import cv2' 2>/dev/null; then
  HAVE_CV=1
  CV_SCRIPT=$WORK/opencv_batch.py
  cat >"$CV_SCRIPT" <<'EOF'
# The peer: read, filter, write each JPEG with OpenCV, one process per core.
import multiprocessing as mp, os, sys, time
import cv2, numpy as np

def init():
    cv2.setNumThreads(1)

def work(args):
    src, dst, variant, kernel_path, quality = args
    img = cv2.imread(src, cv2.IMREAD_UNCHANGED)
    if variant == "gaussian9x9":
        img = cv2.GaussianBlur(img, (9, 9), 1.5, borderType=cv2.BORDER_REFLECT_101)
    elif variant == "custom31x31":
        k = np.loadtxt(kernel_path, dtype=np.float32)
        img = cv2.filter2D(img, -1, k, borderType=cv2.BORDER_REFLECT_101)
    if not cv2.imwrite(dst, img, [cv2.IMWRITE_JPEG_QUALITY, quality]):
        raise RuntimeError("imwrite failed: " + dst)
    return img.shape[0] * img.shape[1]

if __name__ == "__main__":
    src_dir, out_dir, variant, kernel_path, quality, jobs = sys.argv[1:7]
    os.makedirs(out_dir, exist_ok=True)
    files = sorted(f for f in os.listdir(src_dir) if f.endswith(".jpg"))
    tasks = [(os.path.join(src_dir, f), os.path.join(out_dir, f), variant, kernel_path, int(quality)) for f in files]
    with mp.Pool(int(jobs), initializer=init) as pool:
        t0 = time.perf_counter()
        pixels = sum(pool.imap_unordered(work, tasks, chunksize=1))
        wall = time.perf_counter() - t0
    print(wall, pixels / 1e6, len(files))
EOF
  echo "OpenCV $("$PYTHON" -c 'import cv2; print(cv2.__version__)') on $JOBS processes"
  for v in "${variants[@]}"; do
    walls=()
    for ((r = 1; r <= REPEATS; r++)); do
      rm -rf "$OUT"
      read -r wall mpix n < <("$PYTHON" "$CV_SCRIPT" "$IN" "$OUT" "$v" "$K31" "$QUALITY" "$JOBS")
      walls+=("$wall")
    done
    read -r med lo hi < <(stats "${walls[@]}")
    WALL[cv-$v]=$med MPIX[cv-$v]=$mpix IMAGES[cv-$v]=$n RANGE[cv-$v]="$lo-$hi"
    printf '  opencv     %-12s %8.2f s (%s)\n' "$v" "$med" "$(printf '%.2f-%.2f' "$lo" "$hi")"
  done
  rm -rf "$OUT"
else
  echo "OpenCV pipeline skipped: $PYTHON has no cv2 (apt install python3-opencv, or PYTHON=/usr/bin/python3)"
fi

# ---- the table ----
echo
echo "batch of $COUNT JPEGs ($SIZES), quality $QUALITY, $CORES cores; median of $REPEATS, codecs included"
printf '%-11s %-12s %9s %9s %9s %10s %10s\n' tool variant "wall s" "Mpix/s" "images/s" "vs none" "tf/opencv"
for tool in tf cv; do
  [[ $tool == cv && $HAVE_CV == 0 ]] && continue
  for v in "${variants[@]}"; do
    k=$tool-$v
    "$PYTHON" - "$tool" "$v" "${WALL[$k]}" "${MPIX[$k]}" "${IMAGES[$k]}" "${WALL[$tool-none]}" "${WALL[cv-$v]:-0}" "${WALL[tf-$v]}" <<'EOF'
import sys
tool, v, wall, mpix, images, wall_none, wall_cv, wall_tf = sys.argv[1:9]
wall, mpix, images, wall_none, wall_cv, wall_tf = map(float, (wall, mpix, images, wall_none, wall_cv, wall_tf))
vs_none = wall_none / wall
ratio = f"{wall_cv / wall_tf:10.2f}" if tool == "tf" and wall_cv > 0 else f"{'':>10}"
name = "tilefilter" if tool == "tf" else "opencv"
print(f"{name:<11} {v:<12} {wall:9.2f} {mpix / wall:9.1f} {images / wall:9.2f} {vs_none:10.2f} {ratio}")
EOF
  done
done
echo "vs none: throughput relative to the same tool with no filter (tilefilter target >= 0.85)."
echo "tf/opencv: tilefilter throughput / OpenCV throughput for the same variant (> 1: tilefilter faster)."
echo
echo "tilefilter codecs and devices (gaussian9x9 run):"
sed -n '/^devices:/,/^encode:/p' "$LOGS/tf-gaussian9x9.log" | sed 's/^/  /' || true
"$PYTHON" - "$LOGS/tf-none.json" "$LOGS/tf-gaussian9x9.json" "$LOGS/tf-custom31x31.json" <<'EOF'
import json, sys
for path in sys.argv[1:]:
    r = json.load(open(path))
    d, e = r["decode"], r["encode"]
    dec, enc = d["megapixels_per_s_per_core"], e["megapixels_per_s_per_core"]
    codecs = sorted({f["decoder"] for f in r["files"] if f["decoder"]}) , sorted({f["encoder"] for f in r["files"] if f["encoder"]})
    print(f"  {path.rsplit('tf-', 1)[1][:-5]:<12} decode {dec:6.1f} Mpix/s per core ({d['threads']} threads, {','.join(codecs[0])}), "
          f"encode {enc:6.1f} Mpix/s per core ({e['threads']} threads, {','.join(codecs[1])}), failed {r['counts']['failed']}")
EOF
for v in gaussian9x9 custom31x31; do
  "$PYTHON" - "${WALL[tf-none]}" "${WALL[tf-$v]}" "$v" <<'EOF'
import sys
a, b = map(float, sys.argv[1:3])
print(f"target {sys.argv[3]}: {a / b:.2f} of the no-filter throughput -> {'met' if a / b >= 0.85 else 'NOT met'} (>= 0.85)")
EOF
done
