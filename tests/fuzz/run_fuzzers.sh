#!/usr/bin/env bash
# Builds the fuzzers (clang, `fuzz` preset) and runs each for SECONDS (default 20) from a fresh seed
# corpus plus the committed regression inputs. Crashes land in build-fuzz/crashes and fail the run, as
# do temporary files that OpenCV leaves behind.
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-20}
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"
corpus=build-fuzz/corpus
rm -rf "$corpus" && tests/fuzz/make_corpus.sh build/app/cli/tilefilter "$corpus"
rm -rf build-fuzz/crashes && mkdir -p build-fuzz/crashes  # only this run's findings
# OpenCV decodes some formats (PFM) through a temporary file, and leaves it where a file makes it throw.
export OPENCV_TEMP_PATH=$PWD/build-fuzz/opencv-temp
rm -rf "$OPENCV_TEMP_PATH" && mkdir -p "$OPENCV_TEMP_PATH"
status=0
for f in decode kernel_file filter_spec preset; do
  [ -x build-fuzz/tests/fuzz/fuzz_$f ] || continue
  dirs=("$corpus/$f")
  [ -d "tests/fuzz/regressions/$f" ] && dirs+=("tests/fuzz/regressions/$f")
  echo "fuzz_$f: ${seconds}s"
  build-fuzz/tests/fuzz/fuzz_$f -max_total_time="$seconds" -rss_limit_mb=2048 -artifact_prefix=build-fuzz/crashes/$f- \
    -print_final_stats=1 "${dirs[@]}" 2>&1 | grep -E 'stat::number_of_executed_units|cov:.*DONE|==[0-9]+==ERROR|runtime error|SUMMARY|Done' || status=1
done
if [ -n "$(ls -A "$OPENCV_TEMP_PATH")" ]; then
  echo "OpenCV left $(ls -A "$OPENCV_TEMP_PATH" | wc -l) temporary files (an input made it throw mid-decode)"
  status=1
fi
if ls build-fuzz/crashes/* >/dev/null 2>&1; then echo "fuzzers found crashes:"; ls build-fuzz/crashes; exit 1; fi
exit $status
