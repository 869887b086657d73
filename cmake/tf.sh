#!/usr/bin/env bash
# The README's two commands:
#   cmake/tf.sh run    install what is missing, build, run the main job on the bundled samples
#                      (opens the GUI when there is a display, else filters the samples in batch)
#   cmake/tf.sh test   install what is missing, build, run every test: the release suite, the CPU
#                      suite under ASan+UBSan, the concurrency tests under TSan, and each fuzzer
#                      for a short while (TF_QUICK=1 runs the release suite only)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
verb=${1:-}
case "$verb" in run|test|build|deps) ;; *) echo "usage: cmake/tf.sh run|test" >&2; exit 2 ;; esac

packages=(build-essential cmake ninja-build pkg-config git
  libstb-dev libturbojpeg0-dev libtiff-dev libpng-dev libjpeg62-turbo-dev libexif-dev libzstd-dev zlib1g-dev
  libcli11-dev libfmt-dev nlohmann-json3-dev libgtest-dev libfftw3-dev
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev
  qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev fonts-dejavu-core xvfb xauth
  clang libclang-rt-14-dev clang-format python3 dpkg-dev file ccache
  libopenmpi-dev openmpi-bin libhwy-dev
  python3-numpy python3-pytest python3-dask python3-distributed python3-scipy
  libtiff-tools libvips-tools imagemagick python3-opencv libimage-exiftool-perl)  # tests/core/tiff_variants.py makes its files with them

install_deps() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "tf.sh: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# Every C/C++/CUDA source (headers .h .hpp .cuh included) as .clang-format lays it out (column limit
# 120); the first check of `test`.
check_format() {
  local files
  files=$(git ls-files '*.cpp' '*.hpp' '*.h' '*.c' '*.cu' '*.cuh' 2>/dev/null ||
          find app core kernels tests tools \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.c' -o -name '*.cu' -o -name '*.cuh' \))
  echo "tf.sh: clang-format --dry-run --Werror on $(echo "$files" | wc -l) files"
  echo "$files" | xargs clang-format --dry-run --Werror
}

# `run` builds only the programs (the command line tool and, with Qt, the GUI); `test` builds all.
build() {
  cmake --preset release
  if [ "$verb" = run ]; then
    local targets=(tilefilter)
    # grep reads all of it: with pipefail, grep -q's early exit would fail cmake with SIGPIPE
    cmake --build --preset release --target help | grep '^tilefilter-gui:' >/dev/null && targets+=(tilefilter-gui)
    cmake --build --preset release -j "$(nproc)" --target "${targets[@]}"
  else
    cmake --build --preset release -j "$(nproc)"
  fi
}

# A compiler cache where Debian's ccache is installed (install_deps installs it, so this comes after):
# a second `run` or `test`, or a build in another clone of the same folder tree, recompiles only what
# changed. Each preset keeps its own flags, so presets share objects only where their compile lines
# agree; what saves the most is that each stage builds only what it runs (the build presets' targets).
use_ccache() {
  command -v ccache >/dev/null || return 0
  export CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache CMAKE_CUDA_COMPILER_LAUNCHER=ccache
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(dirname "$here")}" CCACHE_NOHASHDIR=1
}

# Each stage's wall time, printed when it ends (CI's log shows where the time goes).
stage_start=$SECONDS
stage_done() {
  echo "tf.sh: $1 took $((SECONDS - stage_start)) s"
  stage_start=$SECONDS
}

install_deps
[ "$verb" = deps ] && exit 0
use_ccache
if [ "$verb" = test ]; then
  check_format
  python3 tools/include_graph.py  # the folders' include graph has no cycle
  python3 tools/check_citations.py  # every "contract N" names docs/design.md
fi
stage_done "checks"
build
stage_done "release build"
case "$verb" in
  test)
    ctest --preset release -j "$(nproc)"
    stage_done "release tests"
    [ "${TF_QUICK:-0}" = 1 ] && exit 0
    # The build presets name the targets: asan builds what its CTest runs (tf_tests), tsan the suites of
    # its filtered tests (tf_tsan_tests), fuzz the four fuzzers (tf_fuzzers).
    for preset in asan tsan; do
      echo "tf.sh: $preset build and tests"
      cmake --preset "$preset" >/dev/null
      cmake --build --preset "$preset" -j "$(nproc)"
      stage_done "$preset build"
      ctest --preset "$preset" -j "$(nproc)"
      stage_done "$preset tests"
    done
    echo "tf.sh: fuzzers (short run)"
    tests/fuzz/run_fuzzers.sh "${TF_FUZZ_SECONDS:-15}"
    stage_done "fuzz build and run"
    ;;
  run)
    if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ] && [ -x build/app/gui/tilefilter-gui ]; then
      exec build/app/gui/tilefilter-gui "resources/samples/$(ls resources/samples | grep -m1 -E '\.(png|jpg)$')"
    fi
    mkdir -p out/samples
    build/app/cli/tilefilter devices
    build/app/cli/tilefilter batch resources/samples out/samples --filter unsharp:sigma=2,amount=1.5 --report out/samples/report.json
    echo "tf.sh: filtered the samples into $here/out/samples (report: out/samples/report.json)"
    ;;
esac
