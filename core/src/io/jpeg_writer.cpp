// The JPEG writer on libjpeg(-turbo)'s own API, one scanline at a time: as tjCompress2 (same quality
// tables, DCT method; RGBA written as its RGB) with the quality and subsampling of jpeg_quality /
// jpeg_subsampling (io.hpp); and the metadata markers written into another encoder's stream.
#ifdef TF_HAVE_LIBJPEG
#include "jpeg_writer.hpp"

#include <algorithm>
#include <memory>
#include <span>

#include <fmt/format.h>

#include "codec_checks.hpp"
#include "formats.hpp"
#include "jpeg_common.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/util/atomic_write.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::io::jpeg {

namespace {

class JpegWriter final : public ImageWriter {
 public:
  JpegWriter(const std::string& path, int width, int height, Format format, const Metadata& metadata,
             const WriteOptions& options)
      : width_(width), height_(height), format_(format), file_(path) {
    codec_checks::check_writer_args(path, "JPEG", jpeg_can_write, format, width, height, JPEG_MAX_DIMENSION);

    const JpegMarkers markers = options.strip ? JpegMarkers{} : jpeg_markers(metadata);
    const std::vector<unsigned char>&exif_marker = markers.exif, &xmp_marker = markers.xmp, &icc = markers.icc;

    const int c = format.channels;
    const int quality = jpeg_quality(options);
    const std::pair<int, int> luma = luma_sampling(jpeg_subsampling(options, c == 1 ? 1 : 3));
    const int luma_h = luma.first, luma_v = luma.second;  // plain ints: clang 14 captures no structured binding
    JpegWriteState& s = state_;
    install(s.err);
    s.cinfo.err = &s.err.pub;
    j_compress_ptr cinfo = &s.cinfo;
    if (!jpeg_ok(s.err, [&] { jpeg_create_compress(cinfo); })) fail();
    s.created = true;
    std::FILE* stream = file_.stream();
    if (!jpeg_ok(s.err, [&] {
          jpeg_stdio_dest(cinfo, stream);
          cinfo->image_width = static_cast<JDIMENSION>(width);
          cinfo->image_height = static_cast<JDIMENSION>(height);
          // RGBX: the fourth byte is skipped, so RGBA is written as its RGB (as TurboJPEG's path).
          cinfo->input_components = c;
          cinfo->in_color_space = c == 1 ? JCS_GRAYSCALE : c == 3 ? JCS_EXT_RGB : JCS_EXT_RGBX;
          jpeg_set_defaults(cinfo);
          jpeg_set_quality(cinfo, quality, TRUE);
          // As tjCompress2: the accurate DCT from quality 96, the fast one below.
          cinfo->dct_method = quality >= 96 ? JDCT_ISLOW : JDCT_FASTEST;
          jpeg_set_colorspace(cinfo, c == 1 ? JCS_GRAYSCALE : JCS_YCbCr);
          cinfo->comp_info[0].h_samp_factor = luma_h;
          cinfo->comp_info[0].v_samp_factor = luma_v;
          for (int i = 1; i < cinfo->num_components; ++i) {
            cinfo->comp_info[i].h_samp_factor = 1;
            cinfo->comp_info[i].v_samp_factor = 1;
          }
          jpeg_start_compress(cinfo, TRUE);
          if (!exif_marker.empty())
            jpeg_write_marker(cinfo, JPEG_APP0 + 1, exif_marker.data(), static_cast<unsigned>(exif_marker.size()));
          if (!xmp_marker.empty())
            jpeg_write_marker(cinfo, JPEG_APP0 + 1, xmp_marker.data(), static_cast<unsigned>(xmp_marker.size()));
          if (!icc.empty()) jpeg_write_icc_profile(cinfo, icc.data(), static_cast<unsigned>(icc.size()));
        }))
      fail();
  }

  void write_rows(const ImageView& rows) override {
    codec_checks::check_rows_continue(file_.target(), rows, width_, height_, format_, next_row_, failed_);
    pointers_.resize(static_cast<std::size_t>(rows.height));
    for (int r = 0; r < rows.height; ++r) pointers_[r] = reinterpret_cast<JSAMPROW>(rows.row(r));
    JSAMPARRAY in = pointers_.data();
    const JDIMENSION count = static_cast<JDIMENSION>(rows.height);
    j_compress_ptr cinfo = &state_.cinfo;
    if (!jpeg_ok(state_.err, [&] {
          for (JDIMENSION done = 0; done < count;) done += jpeg_write_scanlines(cinfo, in + done, count - done);
        }))
      fail();
    next_row_ += rows.height;
  }

  void finish() override {
    if (failed_) throw Error(ErrorKind::Io, fmt::format("{}: cannot finish after an error", file_.target()));
    if (next_row_ != height_)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("{}: {} of {} rows written", file_.target(), next_row_, height_));
    j_compress_ptr cinfo = &state_.cinfo;
    if (!jpeg_ok(state_.err, [&] { jpeg_finish_compress(cinfo); })) fail();
    state_.release();
    file_.commit();
  }

 private:
  [[noreturn]] void fail() {
    failed_ = true;
    throw Error(ErrorKind::Io, fmt::format("{}: cannot write JPEG ({})", file_.target(), message_of(state_.err)));
  }

  int width_, height_;
  Format format_;
  AtomicFile file_;
  JpegWriteState state_;  // after file_: destroyed before the temporary file is removed
  std::vector<JSAMPROW> pointers_;
  bool failed_ = false;
  int next_row_ = 0;
};

}  // namespace

std::unique_ptr<ImageWriter> jpeg_create(const std::string& path, int width, int height, Format format,
                                         const Metadata& metadata, const WriteOptions& options) {
  return std::make_unique<JpegWriter>(path, width, height, format, metadata, options);
}

}  // namespace tf::io::jpeg

namespace tf {

std::vector<unsigned char> jpeg_with_metadata(std::span<const unsigned char> jpeg, const Metadata& metadata) {
  std::vector<unsigned char> out;
  jpeg_with_metadata(jpeg, metadata, out);
  return out;
}

void jpeg_with_metadata(std::span<const unsigned char> jpeg, const Metadata& metadata,
                        std::vector<unsigned char>& out) {
  using namespace io::jpeg;
  if (jpeg.size() < 4 || jpeg[0] != 0xFF || jpeg[1] != 0xD8)
    throw Error(ErrorKind::Decode, "not a JPEG stream (no start-of-image marker)");
  // After SOI and a JFIF APP0 that directly follows it, where libjpeg writes its markers too.
  std::size_t at = 2;
  if (jpeg.size() >= at + 4 && jpeg[at] == 0xFF && jpeg[at + 1] == 0xE0) {
    const std::size_t length = (static_cast<std::size_t>(jpeg[at + 2]) << 8) | jpeg[at + 3];
    if (at + 2 + length > jpeg.size()) throw Error(ErrorKind::Decode, "JPEG stream cut inside its APP0 marker");
    at += 2 + length;
  }
  const JpegMarkers markers = jpeg_markers(metadata);
  out.assign(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(at));
  auto segment = [&](unsigned char marker, std::span<const unsigned char> head, std::span<const unsigned char> body) {
    const std::size_t length = 2 + head.size() + body.size();
    out.insert(out.end(), {0xFF, marker, static_cast<unsigned char>(length >> 8), static_cast<unsigned char>(length)});
    out.insert(out.end(), head.begin(), head.end());
    out.insert(out.end(), body.begin(), body.end());
  };
  if (!markers.exif.empty()) segment(0xE1, {}, markers.exif);
  if (!markers.xmp.empty()) segment(0xE1, {}, markers.xmp);
  // ICC.1 B.4: "ICC_PROFILE\0", then the chunk's number (from 1) and the count, in APP2 markers.
  constexpr unsigned char kIccName[] = "ICC_PROFILE";  // with its NUL: 12 bytes
  constexpr std::size_t kIccChunk = kMaxMarkerData - sizeof kIccName - 2;
  const std::size_t chunks = (markers.icc.size() + kIccChunk - 1) / kIccChunk;
  if (chunks > 0 && chunks <= 255)
    for (std::size_t c = 0; c < chunks; ++c) {
      std::vector<unsigned char> head(kIccName, kIccName + sizeof kIccName);
      head.push_back(static_cast<unsigned char>(c + 1));
      head.push_back(static_cast<unsigned char>(chunks));
      const std::size_t from = c * kIccChunk, n = std::min(kIccChunk, markers.icc.size() - from);
      segment(0xE2, head, std::span(markers.icc).subspan(from, n));
    }
  out.insert(out.end(), jpeg.begin() + static_cast<std::ptrdiff_t>(at), jpeg.end());
}

}  // namespace tf
#endif  // TF_HAVE_LIBJPEG
