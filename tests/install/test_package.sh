#!/usr/bin/env bash
# The Debian package as a user gets it, without root: `cpack -G DEB` in the build folder, the .deb
# unpacked with `dpkg -x` into a scratch root, then tilefilter and tilefilter-gui run from there
# (offscreen), finding their presets and samples under that prefix, not in the source tree.
# Usage: test_package.sh BUILD_DIR      exit 77 (skipped) without dpkg-deb
set -euo pipefail
build=$(cd "$1" && pwd)
command -v dpkg-deb >/dev/null || { echo "skipped: dpkg-deb is not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$tmp"/pkg/tilefilter_*.deb)
echo "package: $(basename "$deb"), $(du -k "$deb" | cut -f1) KiB"

# Dependencies are Debian runtime packages (found by dpkg-shlibdeps, plus Qt's plugins).
depends=$(dpkg-deb -f "$deb" Depends)
for want in libc6 libstdc++6 libqt6core6 libqt6widgets6 libqt6charts6 qt6-qpa-plugins libqt6svg6; do
  grep -q "\b$want\b" <<<"$depends" || fail "Depends lacks $want: $depends"
done
# Removing it leaves nothing: every file is dpkg's to remove, under /usr, with no maintainer script
# that could create others. The one exception is what CPack adds for a shared library in /usr/lib
# (libtilefilter.so.0, the C API): a postinst and a postrm that run ldconfig and nothing else.
outside=$(dpkg-deb -c "$deb" | awk '{print $6}' | grep -v '^\./usr/' | grep -v '^\./$' || true)
[ -z "$outside" ] || fail "files outside /usr: $outside"
dpkg-deb -e "$deb" "$tmp/control"
for script in preinst postinst prerm postrm; do
  [ -e "$tmp/control/$script" ] || continue
  body=$(grep -v -E '^(#!/bin/sh|set -e|if \[ "\$1" = "(configure|remove)" \]; then|\s*ldconfig|fi|)$' "$tmp/control/$script" || true)
  [ -z "$body" ] || fail "maintainer script $script does more than ldconfig: $body"
done

dpkg -x "$deb" "$tmp/root"
prefix="$tmp/root/usr"
for f in bin/tilefilter bin/tilefilter-gui share/applications/tilefilter-gui.desktop \
  share/icons/hicolor/scalable/apps/tilefilter.svg share/tilefilter/presets/soft-focus.json \
  share/tilefilter/samples/chart.png lib/libtilefilter.so.0 include/tilefilter/tilefilter.h \
  lib/python3/dist-packages/tilefilter/__init__.py; do
  [ -e "$prefix/$f" ] || fail "missing $f"
done
grep -q '^Exec=tilefilter-gui' "$prefix/share/applications/tilefilter-gui.desktop" || fail "desktop entry Exec"
grep -q '^Icon=tilefilter$' "$prefix/share/applications/tilefilter-gui.desktop" || fail "desktop entry Icon"

cd "$tmp"  # nothing of the source or build tree is at hand from here
export QT_QPA_PLATFORM=offscreen XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config"
# The CLI: a bundled preset by name, found under the prefix beside bin/.
"$prefix/bin/tilefilter" apply "$prefix/share/tilefilter/samples/chart.png" "$tmp/out.png" \
  --preset soft-focus --devices cpu -q || fail "tilefilter apply --preset soft-focus"
[ -s "$tmp/out.png" ] || fail "tilefilter apply wrote nothing"
# The Python package on the C library, both from the prefix (the package finds <prefix>/lib itself).
if [ "${TF_SANITIZED:-0}" = 1 ]; then
  echo "python3 -c 'import tilefilter': left out (a sanitizer build's library needs its runtime preloaded)"
elif [ -x /usr/bin/python3 ]; then
  first=$(PYTHONPATH="$prefix/lib/python3/dist-packages" /usr/bin/python3 -c \
    "import tilefilter; assert tilefilter.__file__.startswith('$prefix'), tilefilter.__file__; print(tilefilter.filters()[:1])") ||
    fail "python3 -c 'import tilefilter' from the prefix"
  grep -q "'name': 'box'" <<<"$first" || fail "tilefilter.filters() from the prefix: $first"
fi
# The GUI: its samples and presets from the prefix, then a job and a screenshot.
version=$("$prefix/bin/tilefilter-gui" --version)
echo "$version"
real_prefix=$(cd "$prefix" && pwd -P)
grep -qx "presets: $real_prefix/share/tilefilter/presets" <<<"$version" || fail "GUI presets not from the prefix"
grep -qx "samples: $real_prefix/share/tilefilter/samples" <<<"$version" || fail "GUI samples not from the prefix"
"$prefix/bin/tilefilter-gui" "$prefix/share/tilefilter/samples/chart.png" --filter gaussian:sigma=2 --devices cpu \
  --screenshot "$tmp/shot.png" >/dev/null || fail "tilefilter-gui --screenshot"
[ "$(head -c 8 "$tmp/shot.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "screenshot is not a PNG"
echo "installed package works: tilefilter apply and tilefilter-gui --screenshot from $prefix"
