// A TIFF directory as the libtiff reader (tiff_reader.cpp) delivers it: its tags read and checked step
// by step (size, sample type, colour model, strips or tiles, the data the file holds), and nothing
// allocated for pixels before the file is known to hold them; then which stored sample goes where.
#pragma once

#ifdef TF_HAVE_LIBTIFF
#include <cstdint>
#include <string>
#include <vector>

#include <tiffio.h>

#include "tiff_common.hpp"
#include "tilefilter/io/io.hpp"

namespace tf::io::tiff {

// Where one stored sample goes in the delivered pixel.
struct Target {
  int sample;   // within the unit's samples (0 for a separate plane)
  int channel;  // in the delivered pixel
  bool invert;
};

class TiffLayout {
 protected:
  explicit TiffLayout(std::string path) : path_(std::move(path)) {}

  // Reads the directory `t` is on into the fields below and `info` (size, format, stored channels,
  // compression, codec). Throws tf::Error naming the file and the reason.
  void read_layout(TIFF* t, const Limits& limits, TiffMessages& msgs, ImageInfo& info);

  std::string path_;
  int W_ = 0, H_ = 0;
  PixelType type_ = PixelType::U8;
  int bps_ = 8, spp_ = 1;
  bool invert_ = false, palette_ = false, jpeg_rgb_ = false, separate_ = false, tiled_ = false, identity_ = false;
  bool sgilog_ = false, xyz_ = false;  // SGILog decoded to float; LogLuv's XYZ turned into RGB
  std::vector<std::uint8_t> pal_;      // 256 x RGB
  int uw_ = 0, uh_ = 0, across_ = 1, chunk_rows_ = 1, planes_ = 1, unit_samples_ = 1;
  std::uint64_t row_stride_ = 0;
  std::vector<std::vector<Target>> targets_;  // per plane

 private:
  // The TIFF tags the reader's checks start from.
  struct Tags {
    std::uint16_t bps = 1, spp = 1, sfmt = SAMPLEFORMAT_UINT, photo = PHOTOMETRIC_MINISBLACK,
                  planar = PLANARCONFIG_CONTIG, comp = COMPRESSION_NONE;
  };

  void read_size(TIFF* t, const Limits& limits);
  Tags read_tags(TIFF* t, ImageInfo& info);
  void read_sample_type(const Tags& g);
  // The colours the samples stand for (1 or 3); a palette's colormap is read here.
  int read_colour_model(TIFF* t, const Tags& g);
  void read_palette(TIFF* t, int spp, int bps);
  // Units (strips or tiles), rows of units ("chunk rows"), planes; returns the number of units.
  std::uint64_t plan_units(TIFF* t, const Tags& g);
  // Data that can plausibly hold the pixels it claims, before anything is allocated: the strip/tile
  // bytes that lie inside the file, times the most the compression can expand.
  void check_data_held(TIFF* t, std::uint64_t units, int comp, TiffMessages& msgs);
  // Which stored sample goes where.
  void map_samples_to_channels(int colors, bool alpha, int out_channels);
};

}  // namespace tf::io::tiff
#endif
