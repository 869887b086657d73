#!/usr/bin/env python3
"""The TIFF variants (and PNG/JPEG oddities) other tools write, each read, read and written, or refused
with its reason: the table of docs/formats.md, kept as a test.

Every variant is made afresh in a temporary folder by the tool that writes it in the wild (vips,
ImageMagick, libtiff's tools, OpenCV, exiftool; a few that no tool here writes are put together by
hand), from images `tilefilter generate` makes, then filtered with
`tilefilter apply IN OUT --filter gaussian:sigma=1`. The outcome must be the documented one:
  read          apply succeeds and writes OUT
  read+written  the same, and OUT keeps the input's compression (or says why not on stderr)
  refused: R    apply fails and its message names the file and the reason R
Where it makes sense the pixels are checked too: the variant decoded by tilefilter (the identity
filter into an uncompressed TIFF) against the image it was made from, through vips, within the
codec's loss. A variant whose tool is not installed is skipped with the reason; the test as a whole
exits 77 (ctest's SKIP_RETURN_CODE) only when no tool is there at all.

  tiff_variants.py TILEFILTER                 run the table
  tiff_variants.py TILEFILTER --markdown      print it as docs/formats.md shows it
"""
import concurrent.futures
import os
import shutil
import struct
import subprocess
import sys
import tempfile

W, H = 203, 141  # odd sizes: partial strips, tiles and MCUs everywhere

OPENCV = """
import sys, cv2, numpy as np
src = cv2.imread(sys.argv[1], cv2.IMREAD_COLOR)
cv2.imwrite(sys.argv[2], src.astype(np.float32) / 255)      # 3-channel float: SGILog (LogLuv)
cv2.imwrite(sys.argv[3], src[:, :, 1].astype(np.float32) / 255)  # 1-channel float
cv2.imwrite(sys.argv[4], src.astype(np.uint16) * 257)        # 16-bit
"""

# name, maker, command (a list; {src} RGB u8 PNG, {gray} gray u8 PNG, {src16} RGB u16 TIFF, {f32} RGB f32
# TIFF, {out} the variant), expected outcome, pixel check (None, or the largest mean absolute difference
# from the source, in 8-bit levels, and which source), what docs/formats.md says about it.
VARIANTS = [
    # ---- libvips
    ("JPEG, YCbCr", "vips", ["vips", "copy", "{src}", "{out}[compression=jpeg,Q=90]"], "read+written", (3, "src"),
     "written as JPEG again (quality from --quality, or --compression jpeg:Q)"),
    ("JPEG, RGB (no YCbCr)", "vips", ["vips", "copy", "{src}", "{out}[compression=jpeg,Q=90,rgbjpeg]"],
     "read+written", (3, "src"), "written as YCbCr JPEG"),
    ("tiled 128x128 + pyramid", "vips", ["vips", "copy", "{src}", "{out}[tile,tile-width=128,tile-height=128,pyramid]"],
     "read+written", (0, "src"), "levels used by the GUI; the output is strips unless --tiff-pyramid"),
    ("pyramid in SubIFDs", "vips", ["vips", "copy", "{src}", "{out}[tile,pyramid,subifd,compression=deflate]"],
     "read+written", (0, "src"), ""),
    ("predictor 2 (horizontal), LZW", "vips", ["vips", "copy", "{src}", "{out}[compression=lzw,predictor=horizontal]"],
     "read+written", (0, "src"), ""),
    ("predictor 3 (floating point), deflate", "vips",
     ["vips", "copy", "{f32}", "{out}[compression=deflate,predictor=float]"], "read+written", (0, "f32"), ""),
    ("BigTIFF", "vips", ["vips", "copy", "{src}", "{out}[bigtiff]"], "read+written", (0, "src"),
     "the output is classic TIFF unless --bigtiff or past 4 GB"),
    ("WebP in TIFF", "vips", ["vips", "copy", "{src}", "{out}[compression=webp,Q=90]"], "read+written", (3, "src"),
     "WebP is not written: deflate, with a note"),
    ("1-bit gray", "vips", ["vips", "copy", "{gray}", "{out}[bitdepth=1]"], "read+written", None,
     "delivered as 8-bit 0/255"),
    ("2-bit gray", "vips", ["vips", "copy", "{gray}", "{out}[bitdepth=2]"], "read+written", None,
     "delivered as 8-bit (levels x 85)"),
    ("4-bit gray", "vips", ["vips", "copy", "{gray}", "{out}[bitdepth=4]"], "read+written", None,
     "delivered as 8-bit (levels x 17)"),
    # ---- ImageMagick
    ("JPEG, RGB, one strip", "imagemagick", ["convert", "{src}", "-compress", "jpeg", "-quality", "90", "{out}"],
     "read+written", (3, "src"), ""),
    ("CMYK", "imagemagick", ["convert", "{src}", "-colorspace", "CMYK", "{out}"], "refused: CMYK (separated) TIFF is not supported",
     None, "convert to RGB with its ICC profile first (vips icc_transform)"),
    ("CIE L*a*b*", "imagemagick", ["convert", "{src}", "-colorspace", "Lab", "{out}"],
     "refused: CIE L*a*b* TIFF is not supported", None, ""),
    ("palette (16 colours)", "imagemagick", ["convert", "{src}", "-colors", "16", "-type", "Palette", "{out}"],
     "read+written", None, "delivered as RGB u8; written as RGB"),
    ("tiled 64x64, planar (separate planes)", "imagemagick",
     ["convert", "{src}", "-interlace", "plane", "-define", "tiff:tile-geometry=64x64", "{out}"], "read+written",
     (0, "src"), "written contiguous"),
    ("big-endian (MM)", "imagemagick", ["convert", "{src16}", "-define", "tiff:endian=msb", "{out}"], "read+written",
     (0, "src16"), ""),
    ("multi-page (3 pages)", "imagemagick", ["convert", "{src}", "{gray}", "{src}", "{out}"], "read+written", (0, "src"),
     "the first page; a note says so"),
    ("gray + alpha", "imagemagick", ["convert", "{gray}", "-alpha", "set", "-channel", "A", "-evaluate", "set", "60%",
                                     "+channel", "{out}"], "read+written", None, "delivered as RGBA, written as gray+alpha"),
    ("CCITT group 4 (bilevel fax)", "imagemagick", ["convert", "{gray}", "-monochrome", "-compress", "group4", "{out}"],
     "read+written", None, "CCITT is not written: deflate, with a note"),
    ("PackBits", "imagemagick", ["convert", "{src}", "-compress", "RLE", "{out}"], "read+written", (0, "src"), ""),
    ("16-bit float (half)", "imagemagick",
     ["convert", "{src}", "-define", "quantum:format=floating-point", "-depth", "16", "{out}"],
     "refused: 16-bit floating-point samples are not supported", None, ""),
    ("32-bit float", "imagemagick", ["convert", "{src}", "-define", "quantum:format=floating-point", "-depth", "32",
                                     "{out}"], "read+written", None, "delivered as f32"),
    # ---- libtiff's tools
    ("JPEG, YCbCr 4:2:0", "libtiff-tools", ["tiffcp", "-c", "jpeg:90", "-r", "16", "{src8tif}", "{out}"], "read+written", (3, "src"),
     ""),
    ("JPEG, RGB", "libtiff-tools", ["tiffcp", "-c", "jpeg:r:90", "-r", "16", "{src8tif}", "{out}"], "read+written", (3, "src"), ""),
    ("tiled 32x32, planar, LZW + predictor 2", "libtiff-tools",
     ["tiffcp", "-t", "-w", "32", "-l", "32", "-p", "separate", "-c", "lzw:2", "{src8tif}", "{out}"], "read+written",
     (0, "src"), ""),
    ("big-endian, BigTIFF", "libtiff-tools", ["tiffcp", "-B", "-8", "{src16}", "{out}"], "read+written", (0, "src16"),
     ""),
    ("12-bit JPEG", "python", ["handmade:jpeg12"], "refused: 12-bit JPEG compression is not supported", None,
     "no tool here writes one (Debian's libtiff is 8-bit JPEG only); the tags are written by hand"),
    ("old-style JPEG (TIFF 6.0)", "python", ["handmade:ojpeg"],
     "refused: old-style JPEG compression (TIFF 6.0, compression 6) is not supported", None,
     "nothing writes it any more; the file is put together by hand around a JPEG stream"),
    # ---- OpenCV
    ("3-channel float (SGILog LogLuv)", "opencv", ["opencv:0"], "read+written", (1, "src"),
     "libtiff decodes it to float; its CIE XYZ becomes linear RGB; written with deflate (a note says why)"),
    ("1-channel float", "opencv", ["opencv:1"], "read+written", None, ""),
    ("16-bit RGB", "opencv", ["opencv:2"], "read+written", None, ""),
    # ---- exiftool
    ("EXIF orientation 6 in a JPEG", "exiftool", ["exiftool", "-q", "-Orientation#=6", "-o", "{out}", "{srcjpg}"],
     "read+written", None, "pixels as stored, the tag copied (--autorotate turns them)"),
    ("TIFF with EXIF, IPTC, XMP added", "exiftool",
     ["exiftool", "-q", "-Artist=tilefilter", "-XMP:Title=variant", "-IPTC:Keywords=test", "-o", "{out}",
      "{src8tif}"], "read+written", (0, "src"), "Artist and XMP copied; IPTC dropped"),
    # ---- PNG and JPEG oddities
    ("PNG, 16-bit RGB", "vips", ["vips", "copy", "{src16}", "{outpng}"], "read+written", (0, "src16"), ""),
    ("PNG, palette with transparency", "imagemagick",
     ["convert", "{src}", "-alpha", "set", "-colors", "8", "PNG8:{outpng}"], "read+written", None, "delivered as RGBA"),
    ("PNG, interlaced (Adam7)", "imagemagick", ["convert", "{src}", "-interlace", "PNG", "{outpng}"], "read+written",
     (0, "src"), "decoded whole (libpng streams only non-interlaced PNG)"),
    ("JPEG, progressive", "imagemagick", ["convert", "{src}", "-interlace", "JPEG", "-quality", "90", "{outjpg}"],
     "read+written", (3, "src"), ""),
    ("JPEG, CMYK", "imagemagick", ["convert", "{src}", "-colorspace", "CMYK", "-quality", "90", "{outjpg}"],
     "read+written", None, ""),
]

# The compressions tilefilter writes, by their TIFF codes: the output keeps them.
WRITTEN = {1: "none", 5: "lzw", 8: "deflate", 32946: "deflate", 7: "jpeg", 32773: "packbits", 50000: "zstd"}

PACKAGES = {"vips": "libvips-tools", "imagemagick": "imagemagick", "libtiff-tools": "libtiff-tools",
            "opencv": "python3-opencv", "exiftool": "libimage-exiftool-perl", "python": "python3"}


def tool_missing(maker):
    """Why the maker cannot run here, or None."""
    exe = {"vips": "vips", "imagemagick": "convert", "libtiff-tools": "tiffcp", "exiftool": "exiftool"}.get(maker)
    if exe and not shutil.which(exe):
        return f"{exe} not installed (Debian {PACKAGES[maker]})"
    if maker == "opencv" and subprocess.run([python_with_cv2() or "false", "-c", "import cv2"],
                                            capture_output=True).returncode != 0:
        return "python3 has no cv2 (Debian python3-opencv)"
    return None


def python_with_cv2():
    for exe in ["/usr/bin/python3", sys.executable, shutil.which("python3")]:
        if exe and subprocess.run([exe, "-c", "import cv2"], capture_output=True).returncode == 0:
            return exe
    return None


def tiff(path, entries, data, big_endian=False):
    """A classic TIFF: one IFD of (tag, type, values) entries (type 3 SHORT, 4 LONG), then `data`."""
    e = ">" if big_endian else "<"
    entries = sorted(entries)
    ifd_size = 2 + 12 * len(entries) + 4
    data_offset = 8 + ifd_size
    out = (b"MM" if big_endian else b"II") + struct.pack(e + "HI", 42, 8) + struct.pack(e + "H", len(entries))
    extra = b""
    for tag, typ, values in entries:
        values = [data_offset if v == "DATA" else v for v in values]
        packed = b"".join(struct.pack(e + ("H" if typ == 3 else "I"), v) for v in values)
        if len(packed) <= 4:
            out += struct.pack(e + "HHI", tag, typ, len(values)) + packed.ljust(4, b"\0")
        else:  # values after the data
            out += struct.pack(e + "HHII", tag, typ, len(values), data_offset + len(data) + len(extra))
            extra += packed
    out += struct.pack(e + "I", 0)
    with open(path, "wb") as f:
        f.write(out + data + extra)


def handmade(kind, out, tmp):
    if kind == "jpeg12":  # the tags of a 12-bit JPEG TIFF; the strip holds no real JPEG (nothing here codes 12 bits)
        data = bytes(4096)
        tiff(out, [(256, 4, [W]), (257, 4, [H]), (258, 3, [12]), (259, 3, [7]), (262, 3, [1]), (273, 4, ["DATA"]),
                   (277, 3, [1]), (278, 4, [H]), (279, 4, [len(data)])], data)
    elif kind == "ojpeg":  # compression 6 with JPEGInterchangeFormat around a baseline JPEG stream
        with open(os.path.join(tmp, "src.jpg"), "rb") as f:
            data = f.read()
        tiff(out, [(256, 4, [W]), (257, 4, [H]), (258, 3, [8, 8, 8]), (259, 3, [6]), (262, 3, [6]),
                   (273, 4, ["DATA"]), (277, 3, [3]), (278, 4, [H]), (279, 4, [len(data)]), (513, 4, ["DATA"]),
                   (514, 4, [len(data)])], data)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def first_ifd(path):
    """The first IFD of a TIFF (classic or BigTIFF, either byte order) as {tag: [values]}; numbers only."""
    with open(path, "rb") as f:
        b = f.read()
    e = "<" if b[:2] == b"II" else ">"
    big = struct.unpack(e + "H", b[2:4])[0] == 43
    off = struct.unpack(e + ("Q" if big else "I"), b[(8 if big else 4):(16 if big else 8)])[0]
    count = struct.unpack(e + ("Q" if big else "H"), b[off:off + (8 if big else 2)])[0]
    pos, entry, inline = off + (8 if big else 2), (20 if big else 12), (8 if big else 4)
    sizes = {1: "B", 3: "H", 4: "I", 16: "Q"}
    tags = {}
    for _ in range(count):
        tag, typ = struct.unpack(e + "HH", b[pos:pos + 4])
        n = struct.unpack(e + ("Q" if big else "I"), b[pos + 4:pos + 4 + inline])[0]
        if typ in sizes:
            fmt = e + sizes[typ] * n
            size = struct.calcsize(fmt)
            at = pos + 4 + inline
            if size > inline:
                at = struct.unpack(e + ("Q" if big else "I"), b[at:at + inline])[0]
            tags[tag] = list(struct.unpack(fmt, b[at:at + size]))
        pos += entry
    return tags, b, e


def samples(path):
    """The samples of an uncompressed, contiguous, strip TIFF as tilefilter writes it, as floats."""
    tags, b, e = first_ifd(path)
    bits, fmt = tags[258][0], tags.get(339, [1])[0]
    code = {8: "B", 16: "H"}.get(bits, "f" if fmt == 3 else "I")
    data = b"".join(b[o:o + n] for o, n in zip(tags[273], tags[279]))
    return list(struct.unpack(e + code * (len(data) // struct.calcsize(code)), data))


def mean_difference(a, b, scale=1.0):
    x, y = samples(a), samples(b)
    if len(x) != len(y):
        return float("inf")
    return sum(abs(u * scale - v) for u, v in zip(x, y)) / len(x)


def main():
    args = sys.argv[1:]
    if "--markdown" in args:
        print("| Variant | Made by | Outcome | Notes |")
        print("|---|---|---|---|")
        for name, maker, cmd, outcome, _, notes in VARIANTS:
            if cmd[0].startswith("handmade"):
                how = "by hand (`tiff()` in the test)"
            elif cmd[0].startswith("opencv"):
                how = "`cv2.imwrite` (the test's OPENCV script)"
            else:
                how = "`" + " ".join(cmd).replace("|", "\\|") + "`"
            print(f"| {name} | {maker}: {how} | {outcome} | {notes} |")
        return 0
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    tilefilter = os.path.abspath(args[0])
    results = {"ok": 0, "skip": 0, "fail": 0}
    with tempfile.TemporaryDirectory(prefix="tf-variants-") as tmp:
        p = lambda name: os.path.join(tmp, name)  # noqa: E731
        size = f"{W}x{H}"
        for out, extra in [("src.png", []), ("gray.png", ["--channels", "1"]), ("src16.tif", ["--type", "u16"]),
                           ("f32.tif", ["--type", "f32"]), ("src8.tif", []), ("src.jpg", [])]:
            run([tilefilter, "generate", p(out), "--size", size, "--seed", "7", *extra], check=True)
        decode = lambda src, dst: run([tilefilter, "apply", src, dst, "--filter", "identity",  # noqa: E731
                                       "--compression", "none", "-q", "--devices", "cpu"])
        for name in ["src8", "src", "src16", "f32"]:
            decode(p(name + (".png" if name == "src" else ".tif")), p(name + "none.tif")).check_returncode()
        opencv_files = [p("cv-0.tif"), p("cv-1.tif"), p("cv-2.tif")]
        subs = {"src": p("src.png"), "gray": p("gray.png"), "src16": p("src16.tif"), "f32": p("f32.tif"),
                "src8tif": p("src8none.tif"), "srcjpg": p("src.jpg")}
        missing = {maker: tool_missing(maker) for maker in PACKAGES}
        differences = {}
        if not missing["opencv"]:
            run([python_with_cv2(), "-c", OPENCV, p("src.png"), *opencv_files], check=True)

        def one(i):
            name, maker, cmd, outcome, check, _ = VARIANTS[i]
            if missing[maker]:
                return "skip", f"SKIP {name}: {missing[maker]}"
            problem = variant(i, name, maker, cmd, outcome, check)
            if problem:
                return "fail", f"FAIL {name} ({maker}): {problem}"
            return "ok", f"ok   {name} ({maker}): {outcome}{differences.get(i, '')}"

        def variant(i, name, maker, cmd, outcome, check):
            words = " ".join(cmd)
            ext = ".png" if "{outpng}" in words else ".jpg" if ("{outjpg}" in words or "{srcjpg}" in words) else ".tif"
            var = p(f"v{i}{ext}")
            fields = dict(subs, out=var, outpng=var, outjpg=var)
            problem = None
            if cmd[0].startswith("handmade:"):
                handmade(cmd[0].split(":")[1], var, tmp)
            elif cmd[0].startswith("opencv:"):
                shutil.copy(opencv_files[int(cmd[0].split(":")[1])], var)
            else:
                made = run([c.format(**fields) for c in cmd])
                if made.returncode != 0 or not os.path.exists(var):
                    problem = f"{maker} could not make it: {made.stderr.strip()[:300]}"
            out = p(f"o{i}{ext}")
            if not problem:
                got = run([tilefilter, "apply", var, out, "--filter", "gaussian:sigma=1"])
                if outcome.startswith("refused: "):
                    reason = outcome[len("refused: "):]
                    if got.returncode == 0:
                        problem = "was read; expected it refused"
                    elif reason not in got.stderr or var not in got.stderr:
                        problem = f"refused with '{got.stderr.strip()}', expected the file and '{reason}'"
                elif got.returncode != 0 or not os.path.exists(out):
                    problem = f"apply failed: {got.stderr.strip()}"
                elif outcome == "read+written" and ext == ".tif":
                    cin, cout = first_ifd(var)[0].get(259, [1])[0], first_ifd(out)[0].get(259, [1])[0]
                    if cin in WRITTEN and WRITTEN.get(cout) != WRITTEN[cin]:
                        problem = f"compression {cin} in, {cout} out"
                    elif cin not in WRITTEN and (WRITTEN.get(cout) != "deflate" or
                                                 "written with deflate" not in got.stderr):
                        problem = f"compression {cin} in, {cout} out, stderr '{got.stderr.strip()}': expected deflate, a note"
            if not problem and check:
                tolerance, ref = check
                dec = p(f"d{i}.tif")
                decoded = decode(var, dec)
                if decoded.returncode != 0:
                    problem = f"identity decode failed: {decoded.stderr.strip()}"
                else:
                    scale = 255.0 if name.startswith("3-channel float") else 1.0
                    diff = mean_difference(dec, p(ref + "none.tif"), scale)
                    differences[i] = f" (pixels within {diff:.3f} of {ref} on average)"
                    if diff > tolerance:
                        problem = f"pixels differ from {ref} by {diff:.3f} on average (at most {tolerance})"
            return problem

        with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
            for kind, line in pool.map(one, range(len(VARIANTS))):
                print(line, flush=True)
                results[kind] += 1
    print(f"{results['ok']} as documented, {results['fail']} not, {results['skip']} skipped")
    if results["fail"]:
        return 1
    return 77 if results["ok"] == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
