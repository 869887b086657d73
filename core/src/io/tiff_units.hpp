// The strips and tiles of the libtiff writer (tiff_writer.cpp): the settings they share and the
// tags that describe them, and libtiff's codec for one worker thread (UnitEncoder).
#pragma once

#ifdef TF_HAVE_LIBTIFF
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <tiffio.h>

#include "tiff_common.hpp"

namespace tf::io::tiff {

// The settings every strip/tile of one output shares; unit encoders copy them.
struct UnitSetup {
  int unit_width = 0, unit_height = 0;  // a strip is image-wide; a tile is its tile size
  bool tiled = false;
  int spp = 1, bits = 8, sample_format = SAMPLEFORMAT_UINT, compression = COMPRESSION_NONE, predictor = PREDICTOR_NONE,
      level = -1;
  bool jpeg_rgb = false;         // JPEG: RGB samples (photometric RGB) instead of YCbCr
  int ycbcr_h = 2, ycbcr_v = 2;  // JPEG as YCbCr: the chroma subsampling (2, 2 = 4:2:0)
  int photometric() const {
    if (compression == COMPRESSION_JPEG && spp == 3 && !jpeg_rgb) return PHOTOMETRIC_YCBCR;
    return spp >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK;
  }
};

// The tags that describe the samples and their coding, the same on the file and on every unit encoder.
void set_sample_tags(TIFF* t, const UnitSetup& s);

// libtiff's codec for one worker thread, on a private TIFF in memory: each strip/tile is written
// there as unit 0 with TIFFWriteEncodedStrip/Tile (libtiff applies the predictor and compresses —
// with libdeflate where libtiff was built with it), and the bytes its write procedure receives
// meanwhile are that unit's compressed data, ready for TIFFWriteRawStrip/Tile in the real file.
class UnitEncoder {
 public:
  explicit UnitEncoder(const UnitSetup& s);
  ~UnitEncoder() {
    if (tif_) TIFFCleanup(tif_);  // its directory goes nowhere: the write procedure drops it
  }
  UnitEncoder(const UnitEncoder&) = delete;
  UnitEncoder& operator=(const UnitEncoder&) = delete;

  // Compresses `bytes` of unit data (may be modified: the predictor runs in place) into `out`.
  void encode(std::uint8_t* data, std::size_t bytes, std::vector<std::uint8_t>& out, const std::string& path);

 private:
  static UnitEncoder* self(thandle_t h) { return static_cast<UnitEncoder*>(h); }
  static tmsize_t read_proc(thandle_t, void*, tmsize_t) { return 0; }
  static tmsize_t write_proc(thandle_t h, void* buf, tmsize_t n) {
    UnitEncoder* e = self(h);
    if (e->capture_) {
      const auto* b = static_cast<const std::uint8_t*>(buf);
      e->captured_.insert(e->captured_.end(), b, b + n);
    }
    e->pos_ += static_cast<toff_t>(n);
    e->size_ = std::max(e->size_, e->pos_);
    return n;
  }
  static toff_t seek_proc(thandle_t h, toff_t off, int whence) {
    UnitEncoder* e = self(h);
    e->pos_ = whence == SEEK_SET ? off : whence == SEEK_CUR ? e->pos_ + off : e->size_ + off;
    return e->pos_;
  }
  static int close_proc(thandle_t) { return 0; }
  static toff_t size_proc(thandle_t h) { return self(h)->size_; }
  static int map_proc(thandle_t, void**, toff_t*) { return 0; }
  static void unmap_proc(thandle_t, void*, toff_t) {}

  TIFF* tif_ = nullptr;
  bool tiled_ = false, capture_ = false;
  toff_t pos_ = 0, size_ = 0;
  std::vector<std::uint8_t> captured_;
  TiffMessages msgs_;
};

}  // namespace tf::io::tiff
#endif
