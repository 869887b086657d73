#!/usr/bin/env bash
# Packs TileFilter programs built on a Debian 12 machine so they run on a GPU machine that has the
# NVIDIA driver but none of their other libraries (no Qt, no OpenCV, no fonts): the programs, every
# shared library they load except the C/C++ runtime and CUDA's driver, runtime, cuFFT and nvJPEG libraries
# (the GPU machine brings its own; TileFilter links the CUDA runtime statically anyway, and libcufft
# alone is larger than the 64 MiB the device machines take), and — when a
# program links Qt — Qt's offscreen platform plugin, its image-format plugins, the DejaVu fonts and
# a fontconfig file, so the GUI renders windows and charts with text to PNG without a display
# (--screenshot, --bench-plot).
#
# Usage:
#   tools/device-bundle.sh OUT.tar.xz PROGRAM...
#     e.g. cmake --preset gpu-bundle && cmake --build --preset gpu-bundle
#          tools/device-bundle.sh .device/tf.tar.xz build-gpu/app/cli/tilefilter \
#            build-gpu/app/gui/tilefilter-gui build-gpu/tests/tf_gpu_tests
#   On the GPU machine:
#     tar xJf tf.tar.xz && bundle/run.sh tilefilter devices
#     bundle/run.sh tilefilter-gui --screenshot shot.png ...   (Qt runs offscreen there)
#
# Build for the GPU's architecture (-DCMAKE_CUDA_ARCHITECTURES=90, or a list that includes it, for
# H100/H200; the gpu-bundle preset does that, and leaves OpenCV out: with OpenCV, whose imgcodecs
# pulls in GDAL and its friends, the CLI alone packs to about 47 MB (the device machines take 64 MiB)
# and xz takes minutes. Keep OUT in a git-ignored folder such as .device/.
set -euo pipefail

if [ $# -lt 2 ]; then
  sed -n '2,22p' "$0" >&2
  exit 2
fi
out=$1; shift
for bin in "$@"; do
  [ -f "$bin" ] && [ -x "$bin" ] || { echo "device-bundle: $bin: not an executable file" >&2; exit 2; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
b=$work/bundle
mkdir -p "$b/bin" "$b/lib"

# Libraries the GPU machine provides itself: the C/C++ runtime (newer there), the NVIDIA driver and
# CUDA's own libraries (libcufft and libnvjpeg from its toolkit, /usr/local/cuda/lib64: run.sh looks there;
# a build against .deps/nvjpeg, the gpu-bundle preset's TF_NVJPEG_ROOT, finds it through LD_LIBRARY_PATH here),
# and OpenMPI's (the machine's own OpenMPI 4 and mpirun run an MPI build: same libmpi.so.40 interface).
skip='^$|libc\.so|libm\.so|libdl\.so|libpthread|librt\.so|libgcc_s|libstdc\+\+|ld-linux|libcuda\.so|libcudart|libcufft|libnvjpeg|libnvidia|libmpi\.|libopen-rte|libopen-pal|libhwloc|libevent|libpmix'
add_deps() {
  ldd "$1" | grep -v -E "$skip" | awk '$3 != "" {print $3}' | while read -r lib; do
    [ -f "$b/lib/$(basename "$lib")" ] || cp -L "$lib" "$b/lib/"
  done
}

qt=0
for bin in "$@"; do
  cp "$bin" "$b/bin/"
  add_deps "$bin"
  if ldd "$bin" | grep -q libQt6; then qt=1; fi
done

if [ $qt = 1 ]; then
  plugins=/usr/lib/x86_64-linux-gnu/qt6/plugins
  mkdir -p "$b/plugins/platforms" "$b/fonts"
  cp -L "$plugins/platforms/libqoffscreen.so" "$b/plugins/platforms/"
  add_deps "$plugins/platforms/libqoffscreen.so"
  if [ -d "$plugins/imageformats" ]; then cp -rL "$plugins/imageformats" "$b/plugins/"; fi
  cp /usr/share/fonts/truetype/dejavu/DejaVuSans*.ttf "$b/fonts/"
  cat > "$b/fonts.conf" <<'XML'
<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir prefix="relative">fonts</dir><cachedir>/tmp/bundle-fontcache</cachedir></fontconfig>
XML
fi

cat > "$b/run.sh" <<'SH'
#!/usr/bin/env bash
# run.sh PROGRAM [ARGS...]: runs bin/PROGRAM with the bundled libraries (Qt offscreen when bundled).
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if [ -d /usr/local/cuda/lib64 ]; then export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/local/cuda/lib64; fi
if [ -d "$here/plugins" ]; then
  export QT_PLUGIN_PATH=$here/plugins QT_QPA_PLATFORM=${QT_QPA_PLATFORM:-offscreen} FONTCONFIG_FILE=$here/fonts.conf
  export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp/runtime-$(id -u)}
  mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
fi
prog=${1:?usage: run.sh PROGRAM [ARGS...]}; shift
exec "$here/bin/$prog" "$@"
SH
chmod +x "$b/run.sh"

mkdir -p "$(dirname "$out")"
tar -C "$work" -cJf "$out" bundle
echo "$out: $(du -h "$out" | cut -f1)"
