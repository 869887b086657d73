// The JPEG reader on libjpeg(-turbo)'s own API, scanline by scanline: grayscale stays one channel,
// YCbCr/RGB come as RGB, CMYK/YCCK become RGB as stb and the TurboJPEG path make them (Adobe's
// inverted ink: R = C * K / 255). ISLOW DCT and fancy upsampling, the defaults tjDecompress2 uses,
// so the pixels equal TurboJPEG's bit for bit. A single-scan (baseline) file streams with one
// row buffer; a progressive or multi-scan file is gathered by libjpeg as whole-image DCT
// coefficients at open (about two bytes a sample), so it is checked against limits.max_pixels.
// The file's quality and subsampling come with its info (jpeg_common.hpp: coding_of).
#ifdef TF_HAVE_LIBJPEG
#include "jpeg_reader.hpp"

#include <cerrno>
#include <cstring>
#include <memory>
#include <span>

#include <fmt/format.h>

#include "codec_checks.hpp"
#include "jpeg_common.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::io::jpeg {

namespace {

// stb's CMYK -> RGB (as codec_turbojpeg.cpp): rounded C * K / 255 on Adobe's inverted ink.
unsigned char mul255(unsigned x, unsigned y) {
  const unsigned t = x * y + 128;
  return static_cast<unsigned char>((t + (t >> 8)) >> 8);
}

class JpegReader final : public ImageReader {
 public:
  // `scale` (1, 2, 4 or 8): libjpeg's DCT scaling, the image 1/scale a side (rounded up); the
  // inverse DCT makes the smaller image from the same coefficients, for a fraction of the work.
  JpegReader(const std::string& path, const Limits& limits, int scale = 1) : path_(path), limits_(limits) {
    JpegReadState& s = state_;
    s.file = std::fopen(path.c_str(), "rb");
    if (!s.file) throw Error(ErrorKind::Io, fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
    install(s.err);
    s.cinfo.err = &s.err.pub;
    j_decompress_ptr cinfo = &s.cinfo;
    if (!jpeg_ok(s.err, [&] { jpeg_create_decompress(cinfo); })) fail();
    s.created = true;
    s.progress.progress_monitor = on_progress;
    s.cinfo.progress = &s.progress;
    std::FILE* file = s.file;
    bool multi_scan = false;
    if (!jpeg_ok(s.err, [&] {
          jpeg_stdio_src(cinfo, file);
          jpeg_save_markers(cinfo, JPEG_APP0 + 1, 0xFFFF);
          jpeg_save_markers(cinfo, JPEG_APP0 + 2, 0xFFFF);
          jpeg_read_header(cinfo, TRUE);
          multi_scan = jpeg_has_multiple_scans(cinfo);
        }))
      fail();

    // Before any pixel memory (the header's sizes are at most 65535 a side).
    Limits check = limits;
    if (!multi_scan) check.max_pixels = limits.max_stream_pixels;
    codec_checks::check_pixel_limit(path, s.cinfo.image_width, s.cinfo.image_height, check);

    const J_COLOR_SPACE space = s.cinfo.jpeg_color_space;
    cmyk_ = space == JCS_CMYK || space == JCS_YCCK;
    const int channels = space == JCS_GRAYSCALE ? 1 : 3;
    s.cinfo.out_color_space = space == JCS_GRAYSCALE ? JCS_GRAYSCALE : cmyk_ ? JCS_CMYK : JCS_RGB;
    s.cinfo.dct_method = JDCT_ISLOW;
    s.cinfo.do_fancy_upsampling = TRUE;
    s.cinfo.scale_num = 1;
    s.cinfo.scale_denom = static_cast<unsigned int>(scale);
    read_metadata();
    info_.jpeg = coding_of(cinfo, true);
    if (!jpeg_ok(s.err, [&] { jpeg_start_decompress(cinfo); })) fail();
    if (static_cast<int>(s.cinfo.output_components) != (cmyk_ ? 4 : channels) || s.cinfo.output_width == 0 ||
        s.cinfo.output_height == 0)
      throw Error(ErrorKind::Decode, fmt::format("{}: JPEG of {} components", path, s.cinfo.output_components));

    info_.width = static_cast<int>(s.cinfo.output_width);
    info_.height = static_cast<int>(s.cinfo.output_height);
    info_.format = Format{PixelType::U8, channels};
    info_.stored_channels = channels;
    info_.codec = "libjpeg";
    info_.access = RowAccess::Sequential;
    if (cmyk_) {
      info_.note = "CMYK JPEG converted to RGB";
      ink_.resize(static_cast<std::size_t>(info_.width) * 4);
    }
    if (scale == 1) add_levels();
  }

  std::unique_ptr<ImageReader> open_level(int index) const override {
    if (index < 0 || index >= static_cast<int>(scales_.size()))
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("{}: no reduced level {} ({} levels)", path_, index, scales_.size()));
    return std::make_unique<JpegReader>(path_, limits_, scales_[static_cast<std::size_t>(index)]);
  }

  void read_rows(int y, const ImageView& rows) override {
    codec_checks::check_rows_request(path_, info_, y, rows);
    if (failed_) throw Error(ErrorKind::Decode, fmt::format("{}: cannot read on after an error", path_));
    if (y != next_row_)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("{}: JPEG rows come in order: row {} asked, row {} is next", path_, y, next_row_));
    j_decompress_ptr cinfo = &state_.cinfo;
    if (!cmyk_) {
      pointers_.resize(static_cast<std::size_t>(rows.height));
      for (int r = 0; r < rows.height; ++r) pointers_[r] = reinterpret_cast<JSAMPROW>(rows.row(r));
      JSAMPARRAY out = pointers_.data();
      const JDIMENSION want = static_cast<JDIMENSION>(rows.height);
      if (!jpeg_ok(state_.err, [&] {
            for (JDIMENSION done = 0; done < want;) done += jpeg_read_scanlines(cinfo, out + done, want - done);
          }))
        fail();
    } else {
      JSAMPROW ink = ink_.data();
      for (int r = 0; r < rows.height; ++r) {
        if (!jpeg_ok(state_.err, [&] {
              while (jpeg_read_scanlines(cinfo, &ink, 1) != 1) {
              }
            }))
          fail();
        const unsigned char* in = ink_.data();
        auto* out = reinterpret_cast<unsigned char*>(rows.row(r));
        for (int x = 0; x < info_.width; ++x, in += 4, out += 3) {
          out[0] = mul255(in[0], in[3]);
          out[1] = mul255(in[1], in[3]);
          out[2] = mul255(in[2], in[3]);
        }
      }
    }
    next_row_ += rows.height;
    // The end: libjpeg reads on to the end-of-image marker, so a file cut after its last
    // scanline's data is refused too (as the whole-image decoders refuse it).
    if (next_row_ == info_.height && !jpeg_ok(state_.err, [&] { jpeg_finish_decompress(cinfo); })) fail();
  }

 private:
  [[noreturn]] void fail() {
    failed_ = true;
    throw Error(ErrorKind::Decode, fmt::format("{}: {}", path_, message_of(state_.err)));
  }

  // 1/2, 1/4 and 1/8 a side, as libjpeg sizes them (rounded up); a tiny image has fewer.
  void add_levels() {
    LevelSize last{info_.width, info_.height};
    for (int scale = 2; scale <= 8; scale *= 2) {
      const LevelSize l{(info_.width + scale - 1) / scale, (info_.height + scale - 1) / scale};
      if (l == last) continue;
      info_.levels.push_back(l);
      scales_.push_back(scale);
      last = l;
    }
  }

  void read_metadata() {
    if (!read_jpeg_metadata(state_.err, &state_.cinfo, info_.metadata)) fail();
  }

  std::string path_;
  Limits limits_;
  std::vector<int> scales_;  // of info_.levels
  JpegReadState state_;
  std::vector<JSAMPROW> pointers_;
  std::vector<unsigned char> ink_;  // one CMYK row
  bool cmyk_ = false;
  bool failed_ = false;
  int next_row_ = 0;
};

}  // namespace

std::unique_ptr<ImageReader> jpeg_open(const std::string& path, const Limits& limits) {
  return std::make_unique<JpegReader>(path, limits);
}

}  // namespace tf::io::jpeg

namespace tf {

JpegStreamInfo jpeg_stream_info(std::span<const unsigned char> bytes, const std::string& name) {
  using namespace io::jpeg;
  JpegReadState s;
  install(s.err);
  s.cinfo.err = &s.err.pub;
  j_decompress_ptr cinfo = &s.cinfo;
  auto fail = [&] { throw Error(ErrorKind::Decode, fmt::format("{}: {}", name, message_of(s.err))); };
  if (!jpeg_ok(s.err, [&] { jpeg_create_decompress(cinfo); })) fail();
  s.created = true;
  const unsigned char* data = bytes.data();
  const auto size = static_cast<unsigned long>(bytes.size());
  if (!jpeg_ok(s.err, [&] {
        jpeg_mem_src(cinfo, data, size);
        jpeg_save_markers(cinfo, JPEG_APP0 + 1, 0xFFFF);
        jpeg_save_markers(cinfo, JPEG_APP0 + 2, 0xFFFF);
        jpeg_read_header(cinfo, TRUE);
      }))
    fail();
  JpegStreamInfo info;
  if (jpeg_has_multiple_scans(cinfo))
    for (int c = 0; c < cinfo->num_components; ++c) {  // libjpeg's whole-image coefficient arrays (jdcoefct.c)
      const jpeg_component_info& k = cinfo->comp_info[c];
      const auto round_up = [](JDIMENSION n, int m) { return static_cast<std::size_t>((n + m - 1) / m * m); };
      info.coefficient_bytes += round_up(k.width_in_blocks, k.h_samp_factor) *
                                round_up(k.height_in_blocks, k.v_samp_factor) * DCTSIZE2 * sizeof(JCOEF);
    }
  info.width = static_cast<int>(cinfo->image_width);
  info.height = static_cast<int>(cinfo->image_height);
  info.components = cinfo->num_components;
  info.progressive = cinfo->progressive_mode != 0;
  info.precision = cinfo->data_precision;
  info.cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
  info.gray = cinfo->jpeg_color_space == JCS_GRAYSCALE;
  if (!read_jpeg_metadata(s.err, cinfo, info.metadata)) fail();
  info.coding = coding_of(cinfo, true);
  return info;
}

}  // namespace tf
#endif  // TF_HAVE_LIBJPEG
