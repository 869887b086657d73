#!/usr/bin/env bash
# Writes the fuzzers' seed corpora: small valid images of every type and format this build writes,
# kernel files and filter specs. Usage: tests/fuzz/make_corpus.sh TILEFILTER_BINARY OUT_DIR
set -euo pipefail
tf=$1; out=$2
mkdir -p "$out/decode" "$out/kernel_file" "$out/filter_spec" "$out/preset"
cp "$(dirname "$0")/../../resources/presets/"*.json "$out/preset/"
i=0
for size in 1x1 7x3 33x17; do
  for ch in 1 3 4; do
    for ext in png jpg bmp tga tif; do "$tf" generate "$out/decode/s$((i++)).$ext" --size $size --channels $ch --seed $i; done
    # The streaming readers' variants: TIFF tiles and every compression, progressive-free JPEG at low quality.
    for c in none lzw deflate zstd; do
      "$tf" generate "$out/decode/s$((i++)).tif" --size $size --channels $ch --seed $i --compression $c 2>/dev/null || true
      "$tf" generate "$out/decode/s$((i++)).tif" --size $size --channels $ch --seed $i --compression $c --tiff-tile 16x16 2>/dev/null || true
    done
    "$tf" generate "$out/decode/s$((i++)).jpg" --size $size --channels $ch --seed $i --quality 40
    for t in u16 f32; do
      for ext in png tif pfm hdr; do "$tf" generate "$out/decode/s$((i++)).$ext" --size $size --channels $ch --type $t --seed $i 2>/dev/null || true; done
    done
  done
done
# TIFF pyramids (reduced-resolution pages, SubIFDs) where vips is installed to write them.
if command -v vips >/dev/null; then
  "$tf" generate "$out/pyramid-src.tif" --size 67x45 --seed 7
  vips tiffsave "$out/pyramid-src.tif" "$out/decode/p$((i++)).tif" --tile --tile-width 16 --tile-height 16 --pyramid
  vips tiffsave "$out/pyramid-src.tif" "$out/decode/p$((i++)).tif" --tile --tile-width 16 --tile-height 16 --pyramid \
    --subifd --compression deflate
  rm "$out/pyramid-src.tif"
fi
printf '1 2 1\n2 4 2\n1 2 1\n' > "$out/kernel_file/k1"
printf '# comment\n0.1, -0.2, 0.3\n0.4,0.5,0.6 # trailing\n' > "$out/kernel_file/k2"
printf '1\n' > "$out/kernel_file/k3"
printf '1e-3 2E+2 -0 +4\n5 6 7 8\n' > "$out/kernel_file/k4"
n=0
for s in box box:radius=3 gaussian:sigma=2 gaussian:sigma=1.5,radius=4 sharpen:amount=0.5 unsharp:sigma=1,amount=2 \
         sobel:dir=x sobel:dir=magnitude laplacian emboss identity; do
  printf '%s' "$s" > "$out/filter_spec/s$((n++))"
done
echo "corpus in $out: $(find "$out" -type f | wc -l) files"
