#!/usr/bin/env bash
# The Debian package installed on the machine for real, as CI (root on Debian 12) can: `cpack -G
# DEB`, `dpkg -i` (apt-get when a dependency is missing), the desktop entry and the icon where a
# desktop looks for them, the installed tilefilter and tilefilter-gui run from PATH outside the
# source tree, then `dpkg --purge`, after which none of the files `dpkg -L` listed may remain.
# The package is removed on every way out (trap), so a failing step never leaves it installed.
# Usage: test_package_root.sh BUILD_DIR   exit 77 (skipped) without root, dpkg or apt-get, or when
# a tilefilter package is already installed (it is someone else's: never replaced or removed here).
set -euo pipefail
build=$(cd "$1" && pwd)
skip() { echo "skipped: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root to install the package (the scratch-root test covers the rest)"
for tool in dpkg dpkg-deb apt-get cpack; do command -v "$tool" >/dev/null || skip "$tool is not installed"; done
if dpkg-query -W -f='${Status}' tilefilter 2>/dev/null | grep -q 'installed'; then
  skip "a tilefilter package is already installed on this machine"
fi

tmp=$(mktemp -d)
installed=0
cleanup() {
  # dpkg may be busy with another installation for a moment: wait for its lock.
  if [ "$installed" = 1 ]; then
    apt-get -o DPkg::Lock::Timeout=60 -y -qq purge tilefilter >"$tmp/purge.log" 2>&1 ||
      dpkg --purge tilefilter >>"$tmp/purge.log" 2>&1 || cat "$tmp/purge.log" >&2
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

(cd "$build" && cpack -G DEB -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1) || { cat "$tmp/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$tmp"/pkg/tilefilter_*.deb)
echo "package: $(basename "$deb")"

installed=1  # from here on the trap removes whatever part of it got installed
if ! dpkg -i "$deb" >"$tmp/install.log" 2>&1; then
  # A missing dependency: apt resolves it from the machine's sources.
  apt-get -o DPkg::Lock::Timeout=60 -y -qq install "$deb" >>"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; fail "neither dpkg -i nor apt-get install took the package"; }
fi
dpkg-query -W -f='${Status}\n' tilefilter | grep -q 'install ok installed' || fail "dpkg does not list it as installed"
dpkg -L tilefilter | sort -u >"$tmp/files"
echo "installed $(wc -l <"$tmp/files") paths"

for f in /usr/bin/tilefilter /usr/bin/tilefilter-gui /usr/lib/libtilefilter.so.0 /usr/include/tilefilter/tilefilter.h \
  /usr/lib/python3/dist-packages/tilefilter/__init__.py /usr/share/applications/tilefilter-gui.desktop \
  /usr/share/icons/hicolor/scalable/apps/tilefilter.svg /usr/share/tilefilter/presets/soft-focus.json; do
  [ -e "$f" ] || fail "missing $f"
  grep -qx "$f" "$tmp/files" || fail "$f is not dpkg's"
done
grep -q '^Exec=tilefilter-gui' /usr/share/applications/tilefilter-gui.desktop || fail "desktop entry Exec"
grep -q '^Icon=tilefilter$' /usr/share/applications/tilefilter-gui.desktop || fail "desktop entry Icon"
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate /usr/share/applications/tilefilter-gui.desktop || fail "desktop-file-validate"
fi

mkdir "$tmp/work"
cd "$tmp/work"  # nothing of the source or build tree is at hand from here
export QT_QPA_PLATFORM=offscreen XDG_DATA_HOME="$tmp/data" XDG_CONFIG_HOME="$tmp/config"
[ "$(command -v tilefilter)" = /usr/bin/tilefilter ] || fail "tilefilter on PATH is $(command -v tilefilter)"
tilefilter apply /usr/share/tilefilter/samples/chart.png out.png --preset soft-focus --devices cpu -q ||
  fail "installed tilefilter apply --preset soft-focus"
[ -s out.png ] || fail "tilefilter apply wrote nothing"
# The Python package and its library from /usr, for Debian's python3 (-B: no __pycache__ for dpkg to miss).
if [ "${TF_SANITIZED:-0}" = 1 ]; then
  echo "python3 -c 'import tilefilter': left out (a sanitizer build's library needs its runtime preloaded)"
else
  first=$(/usr/bin/python3 -B -I -c "import tilefilter; print(tilefilter.filters()[:1])") ||
    fail "python3 -c 'import tilefilter'"
  grep -q "'name': 'box'" <<<"$first" || fail "tilefilter.filters(): $first"
fi
tilefilter-gui --version | grep -qx "presets: /usr/share/tilefilter/presets" || fail "GUI presets not from /usr"
tilefilter-gui /usr/share/tilefilter/samples/chart.png --filter gaussian:sigma=2 --devices cpu \
  --screenshot shot.png >/dev/null || fail "installed tilefilter-gui --screenshot"
[ "$(head -c 8 shot.png | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "screenshot is not a PNG"
cd /

installed=0
dpkg --purge tilefilter >"$tmp/purge.log" 2>&1 || { installed=1; cat "$tmp/purge.log"; fail "dpkg --purge"; }
! dpkg-query -W -f='${Status}' tilefilter 2>/dev/null | grep -q 'installed' || fail "still listed after purge"
left=$(while read -r f; do
  # Folders the system owns (/usr, /usr/share/icons/…) stay; every file and every folder of our own goes.
  if [ -d "$f" ] && [ -n "$(dpkg -S "$f" 2>/dev/null)" ]; then continue; fi
  if [ -e "$f" ] && ! { [ -d "$f" ] && [ -n "$(ls -A "$f")" ]; }; then echo "$f"; fi
done <"$tmp/files")
[ -z "$left" ] || fail "left behind after purge: $left"
echo "installed with dpkg, ran from PATH, purged: nothing left"
