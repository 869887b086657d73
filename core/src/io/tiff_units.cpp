// The strips and tiles of the libtiff writer (tiff_units.hpp).
#include "tiff_units.hpp"

#ifdef TF_HAVE_LIBTIFF
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <tiffio.h>

#include "tiff_common.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::io::tiff {

// The tags that describe the samples and their coding, the same on the file and on every unit encoder.
void set_sample_tags(TIFF* t, const UnitSetup& s) {
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, s.spp);
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, s.bits);
  TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, s.sample_format);
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, s.photometric());
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  if (s.spp == 2 || s.spp == 4) {
    const std::uint16_t extra[1] = {EXTRASAMPLE_UNASSALPHA};
    TIFFSetField(t, TIFFTAG_EXTRASAMPLES, 1, extra);
  }
  TIFFSetField(t, TIFFTAG_COMPRESSION, s.compression);
  if (s.predictor != PREDICTOR_NONE) TIFFSetField(t, TIFFTAG_PREDICTOR, s.predictor);
  if (s.compression == COMPRESSION_JPEG) {
    TIFFSetField(t, TIFFTAG_JPEGTABLESMODE, 0);  // every unit carries its own tables
    if (s.photometric() == PHOTOMETRIC_YCBCR) {
      float reference[6] = {0, 255, 128, 255, 128, 255};  // full-range YCbCr, as libjpeg codes it
      TIFFSetField(t, TIFFTAG_YCBCRSUBSAMPLING, s.ycbcr_h, s.ycbcr_v);
      TIFFSetField(t, TIFFTAG_REFERENCEBLACKWHITE, reference);
    }
  }
}

UnitEncoder::UnitEncoder(const UnitSetup& s) : tiled_(s.tiled) {
#if TIFFLIB_VERSION >= 20221213
  TIFFOpenOptions* o = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(o, on_tiff_error, &msgs_);
  TIFFOpenOptionsSetWarningHandlerExtR(o, on_tiff_warning, &msgs_);
  tif_ = TIFFClientOpenExt("memory", "w", this, read_proc, write_proc, seek_proc, close_proc, size_proc, map_proc,
                           unmap_proc, o);
  TIFFOpenOptionsFree(o);
#else
  tif_ = TIFFClientOpen("memory", "w", this, read_proc, write_proc, seek_proc, close_proc, size_proc, map_proc,
                        unmap_proc);
#endif
  if (!tif_) throw Error(ErrorKind::Internal, "libtiff could not make an in-memory TIFF");
  TIFF* t = tif_;
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(s.unit_width));
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(s.unit_height));
  set_sample_tags(t, s);
  if (s.compression == COMPRESSION_JPEG) {
    TIFFSetField(t, TIFFTAG_JPEGQUALITY, s.level);
    if (s.photometric() == PHOTOMETRIC_YCBCR) TIFFSetField(t, TIFFTAG_JPEGCOLORMODE, JPEGCOLORMODE_RGB);
  }
  if (s.level >= 0 && s.compression == COMPRESSION_ADOBE_DEFLATE)
    TIFFSetField(t, TIFFTAG_ZIPQUALITY, std::min(s.level, 12));
  if (s.level >= 1 && s.compression == COMPRESSION_ZSTD) TIFFSetField(t, TIFFTAG_ZSTD_LEVEL, std::min(s.level, 22));
  if (s.tiled) {
    TIFFSetField(t, TIFFTAG_TILEWIDTH, static_cast<std::uint32_t>(s.unit_width));
    TIFFSetField(t, TIFFTAG_TILELENGTH, static_cast<std::uint32_t>(s.unit_height));
  } else {
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, static_cast<std::uint32_t>(s.unit_height));
  }
}

void UnitEncoder::encode(std::uint8_t* data, std::size_t bytes, std::vector<std::uint8_t>& out,
                         const std::string& path) {
  captured_.clear();
  msgs_.clear();
  capture_ = true;
  const tmsize_t n = tiled_ ? TIFFWriteEncodedTile(tif_, 0, data, static_cast<tmsize_t>(bytes))
                            : TIFFWriteEncodedStrip(tif_, 0, data, static_cast<tmsize_t>(bytes));
  capture_ = false;
  if (n < 0) fail(ErrorKind::Internal, path, reason(msgs_, "memory", "libtiff could not compress a strip"));
  out.swap(captured_);
}

}  // namespace tf::io::tiff
#endif
