// JPEG on libjpeg(-turbo)'s own API, scanline by scanline. Reading: grayscale stays one channel,
// YCbCr/RGB come as RGB, CMYK/YCCK become RGB as stb and the TurboJPEG path make them (Adobe's
// inverted ink: R = C * K / 255). ISLOW DCT and fancy upsampling, the defaults tjDecompress2 uses,
// so the pixels equal TurboJPEG's bit for bit. A single-scan (baseline) file streams with one
// row buffer; a progressive or multi-scan file is gathered by libjpeg as whole-image DCT
// coefficients at open (about two bytes a sample), so it is checked against limits.max_pixels.
// Writing matches tjCompress2 (same quality tables, DCT method; RGBA written as its RGB) with the
// quality and subsampling of jpeg_quality / jpeg_subsampling (io.hpp), one scanline at a time. A
// file's quality is estimated from its quantisation tables (estimate_jpeg_quality).
//
// libjpeg reports errors through error_exit, which must not return: it longjmps back to the
// setjmp in jpeg_ok() around each call into libjpeg; no C++ exception crosses libjpeg's frames.
// Warnings that mean missing or wrong pixels (data cut short, bad Huffman codes, ...) are treated
// as errors, the ones that leave every pixel decoded are ignored, as the TurboJPEG path does.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "formats.hpp"

#ifdef TF_HAVE_LIBJPEG
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <vector>

// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

#include "atomic_file.hpp"
#include "codec_checks.hpp"
#include "metadata.hpp"
#include "tilefilter/util/error.hpp"
#endif

namespace tf::io {

namespace {

bool jpeg_sniff(std::span<const unsigned char> head) {
  return head.size() >= 3 && head[0] == 0xFF && head[1] == 0xD8 && head[2] == 0xFF;
}

bool jpeg_extension(const std::string& ext) { return ext == ".jpg" || ext == ".jpeg"; }

bool jpeg_can_write(const Format& format, std::string* why) {
  const bool ok =
      format.type == PixelType::U8 && (format.channels == 1 || format.channels == 3 || format.channels == 4);
  if (!ok && why) *why = fmt::format("JPEG holds 8-bit pixels, not {}", to_string(format));
  return ok;
}

#ifdef TF_HAVE_LIBJPEG

constexpr unsigned char kXmpPrefix[] = "http://ns.adobe.com/xap/1.0/";  // with its NUL: 29 bytes
constexpr std::size_t kXmpPrefixSize = sizeof kXmpPrefix;
constexpr std::size_t kMaxMarkerData = 65533;  // a marker's length field counts itself
constexpr int kMaxScans = 500;                 // as TurboJPEG's TJFLAG_LIMITSCANS: a progressive-scan bomb guard

struct JpegError {
  jpeg_error_mgr pub;  // first: libjpeg's err pointer is cast back to this struct
  std::jmp_buf* jump = nullptr;
  const char* what = nullptr;  // "truncated JPEG" for a warning taken as an error; null for errors
  char text[JMSG_LENGTH_MAX + 32] = {};
};

[[noreturn]] void jump_back(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  if (!e->jump) std::abort();  // a libjpeg call outside jpeg_ok(): a bug here, never input
  std::longjmp(*e->jump, 1);
}

[[noreturn]] void on_error_exit(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  if (cinfo->err->msg_code == JERR_INPUT_EMPTY)
    std::snprintf(e->text, sizeof e->text, "empty file (0 bytes)");  // as the other readers say it
  else (*cinfo->err->format_message)(cinfo, e->text);
  e->what = nullptr;
  jump_back(cinfo);
}

void on_emit_message(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  const int code = cinfo->err->msg_code;
  cinfo->err->num_warnings++;
  // Every pixel is still decoded after these (stb ignores them too).
  if (code == JWRN_EXTRANEOUS_DATA || code == JWRN_JFIF_MAJOR || code == JWRN_BOGUS_ICC || code == JWRN_ADOBE_XFORM)
    return;
  (*cinfo->err->format_message)(cinfo, e->text);
  e->what = code == JWRN_JPEG_EOF     ? "truncated JPEG"
            : code == JWRN_HIT_MARKER ? "truncated or corrupt JPEG data"
                                      : "corrupt JPEG data";
  jump_back(cinfo);
}

void on_output_message(j_common_ptr) {}

void on_progress(j_common_ptr cinfo) {
  if (!cinfo->is_decompressor) return;
  const auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number <= kMaxScans) return;
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  std::snprintf(e->text, sizeof e->text, "more than %d scans", kMaxScans);
  e->what = "corrupt JPEG data";
  jump_back(cinfo);
}

void install(JpegError& e) {
  jpeg_std_error(&e.pub);
  e.pub.error_exit = on_error_exit;
  e.pub.emit_message = on_emit_message;
  e.pub.output_message = on_output_message;
}

// Runs f (calls into libjpeg only: nothing with a destructor may live in it) under a setjmp;
// false when libjpeg reported an error (or a warning taken as one).
template <class F> bool jpeg_ok(JpegError& err, F&& f) {
  std::jmp_buf jump;
  err.jump = &jump;
  if (setjmp(jump)) {
    err.jump = nullptr;
    return false;
  }
  f();
  err.jump = nullptr;
  return true;
}

std::string message_of(const JpegError& e) {
  return e.what ? fmt::format("{} ({})", e.what, e.text) : std::string(e.text);
}

// stb's CMYK -> RGB (as codec_turbojpeg.cpp): rounded C * K / 255 on Adobe's inverted ink.
unsigned char mul255(unsigned x, unsigned y) {
  const unsigned t = x * y + 128;
  return static_cast<unsigned char>((t + (t >> 8)) >> 8);
}

bool starts_with(const jpeg_saved_marker_ptr m, const unsigned char* prefix, std::size_t n) {
  return m->data_length >= n && std::memcmp(m->data, prefix, n) == 0;
}

// The decompressor, its error manager and the file: released even when a constructor throws.
struct JpegReadState {
  JpegError err;
  jpeg_decompress_struct cinfo{};
  jpeg_progress_mgr progress{};
  std::FILE* file = nullptr;
  bool created = false;
  JpegReadState() = default;
  JpegReadState(const JpegReadState&) = delete;
  JpegReadState& operator=(const JpegReadState&) = delete;
  ~JpegReadState() {
    if (created) jpeg_destroy_decompress(&cinfo);
    if (file) std::fclose(file);
  }
};

struct JpegWriteState {
  JpegError err;
  jpeg_compress_struct cinfo{};
  bool created = false;
  JpegWriteState() = default;
  JpegWriteState(const JpegWriteState&) = delete;
  JpegWriteState& operator=(const JpegWriteState&) = delete;
  ~JpegWriteState() { release(); }
  void release() {
    if (created) jpeg_destroy_compress(&cinfo);
    created = false;
  }
};

// EXIF and XMP (APP1) and the ICC profile (APP2 chunks) of a header read with those markers saved.
// False when libjpeg reported an error.
bool read_jpeg_metadata(JpegError& err, j_decompress_ptr cinfo, Metadata& m) {
  for (jpeg_saved_marker_ptr p = cinfo->marker_list; p; p = p->next) {
    if (p->marker != JPEG_APP0 + 1) continue;
    if (m.exif.empty() && starts_with(p, kExifApp1Prefix, sizeof kExifApp1Prefix))
      m.exif.assign(p->data + sizeof kExifApp1Prefix, p->data + p->data_length);
    else if (m.xmp.empty() && starts_with(p, kXmpPrefix, kXmpPrefixSize))
      m.xmp.assign(reinterpret_cast<const char*>(p->data) + kXmpPrefixSize, p->data_length - kXmpPrefixSize);
  }
  if (!m.exif.empty()) m.orientation = exif_orientation(m.exif);
  JOCTET* icc = nullptr;
  unsigned int icc_size = 0;
  boolean found = FALSE;
  if (!jpeg_ok(err, [&] { found = jpeg_read_icc_profile(cinfo, &icc, &icc_size); })) return false;
  if (icc) {
    if (found && icc_size > 0) m.icc.assign(icc, icc + icc_size);
    std::free(icc);
  }
  return true;
}

// The APP1 payloads (prefix + block) this program writes for `metadata`, and the ICC profile for
// APP2; a block too large for one marker is left out (no extended XMP).
struct JpegMarkers {
  std::vector<unsigned char> exif, xmp, icc;
};
JpegMarkers jpeg_markers(const Metadata& metadata) {
  JpegMarkers m;
  std::vector<unsigned char> exif = metadata.exif;
  if (exif_orientation(exif) != metadata.orientation) exif = exif_with_orientation(exif, metadata.orientation);
  if (!exif.empty() && exif.size() + sizeof kExifApp1Prefix <= kMaxMarkerData) {
    m.exif.assign(kExifApp1Prefix, kExifApp1Prefix + sizeof kExifApp1Prefix);
    m.exif.insert(m.exif.end(), exif.begin(), exif.end());
  }
  if (!metadata.xmp.empty() && metadata.xmp.size() + kXmpPrefixSize <= kMaxMarkerData) {
    m.xmp.assign(kXmpPrefix, kXmpPrefix + kXmpPrefixSize);
    m.xmp.insert(m.xmp.end(), metadata.xmp.begin(), metadata.xmp.end());
  }
  m.icc = metadata.icc;
  return m;
}

// The luma component's sampling factors (chroma at 1x1) that give `s`.
std::pair<int, int> luma_sampling(ChromaSubsampling s) {
  switch (s) {
    case ChromaSubsampling::S420: return {2, 2};
    case ChromaSubsampling::S422: return {2, 1};
    default: return {1, 1};
  }
}

// The quality of the tables a header set, and the subsampling of its frame (after a start-of-frame).
JpegCoding coding_of(j_decompress_ptr cinfo, bool has_frame) {
  JpegCoding c;
  const JQUANT_TBL* luma = cinfo->quant_tbl_ptrs[0];
  const JQUANT_TBL* chroma = cinfo->quant_tbl_ptrs[1];
  if (!luma) return c;
  c.quality = estimate_jpeg_quality(luma->quantval, chroma ? chroma->quantval : nullptr);  // natural order
  if (!has_frame || cinfo->num_components != 3) return c;
  const jpeg_component_info* comp = cinfo->comp_info;
  const bool chroma_full = comp[1].h_samp_factor == 1 && comp[1].v_samp_factor == 1 && comp[2].h_samp_factor == 1 &&
                           comp[2].v_samp_factor == 1;
  const int h = comp[0].h_samp_factor, v = comp[0].v_samp_factor;
  if (chroma_full && h == 1 && v == 1) c.subsampling = ChromaSubsampling::S444;
  else if (chroma_full && h == 2 && v == 1) c.subsampling = ChromaSubsampling::S422;
  else c.subsampling = ChromaSubsampling::S420;  // 4:2:0, and the rarer 4:4:0 / 4:1:1 kept at a quarter of the chroma
  return c;
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

class JpegWriter final : public ImageWriter {
 public:
  JpegWriter(const std::string& path, int width, int height, Format format, const Metadata& metadata,
             const WriteOptions& options)
      : width_(width), height_(height), format_(format), file_(path) {
    std::string why;
    if (!jpeg_can_write(format, &why)) throw Error(ErrorKind::InvalidArgument, fmt::format("{}: {}", path, why));
    if (width <= 0 || height <= 0 || width > JPEG_MAX_DIMENSION || height > JPEG_MAX_DIMENSION)
      throw Error(ErrorKind::InvalidArgument, fmt::format("{}: JPEG holds up to {} pixels a side, not {}x{}", path,
                                                          JPEG_MAX_DIMENSION, width, height));

    const JpegMarkers markers = options.strip ? JpegMarkers{} : jpeg_markers(metadata);
    const std::vector<unsigned char>&exif_marker = markers.exif, &xmp_marker = markers.xmp, &icc = markers.icc;

    const int c = format.channels;
    const int quality = jpeg_quality(options);
    const auto [luma_h, luma_v] = luma_sampling(jpeg_subsampling(options, c == 1 ? 1 : 3));
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
    if (rows.width != width_ || rows.format != format_ || next_row_ + rows.height > height_)
      throw Error(
          ErrorKind::InvalidArgument,
          fmt::format("{}: {} rows of {}x{} {} do not continue a {}x{} {} image at row {}", file_.target(), rows.height,
                      rows.width, rows.height, to_string(rows.format), width_, height_, to_string(format_), next_row_));
    if (failed_) throw Error(ErrorKind::Io, fmt::format("{}: cannot write on after an error", file_.target()));
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

std::unique_ptr<ImageReader> jpeg_open(const std::string& path, const Limits& limits) {
  return std::make_unique<JpegReader>(path, limits);
}

std::unique_ptr<ImageWriter> jpeg_create(const std::string& path, int width, int height, Format format,
                                         const Metadata& metadata, const WriteOptions& options) {
  return std::make_unique<JpegWriter>(path, width, height, format, metadata, options);
}

#endif  // TF_HAVE_LIBJPEG

}  // namespace

const FormatCodec& jpeg_codec() {
#ifdef TF_HAVE_LIBJPEG
  static const FormatCodec codec{"libjpeg", [] { return true; }, jpeg_sniff, jpeg_extension,
                                 jpeg_open, jpeg_can_write,      jpeg_create};
#else
  static const FormatCodec codec{"libjpeg", [] { return false; }, jpeg_sniff, jpeg_extension,
                                 nullptr,   jpeg_can_write,       nullptr};
#endif
  return codec;
}

}  // namespace tf::io

namespace tf {

#ifdef TF_HAVE_LIBJPEG

JpegStreamInfo jpeg_stream_info(std::span<const unsigned char> bytes, const std::string& name) {
  using namespace io;
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

int estimate_jpeg_quality(const unsigned short* luma, const unsigned short* chroma) {
  using namespace io;
  // libjpeg's own tables for every quality (jpeg_set_quality with baseline limits), made once.
  struct Tables {
    unsigned short luma[100][DCTSIZE2], chroma[100][DCTSIZE2];
  };
  static const Tables tables = [] {
    Tables t{};
    JpegWriteState s;
    install(s.err);
    s.cinfo.err = &s.err.pub;
    j_compress_ptr cinfo = &s.cinfo;
    if (!jpeg_ok(s.err, [&] { jpeg_create_compress(cinfo); })) return t;
    s.created = true;
    cinfo->in_color_space = JCS_RGB;
    cinfo->input_components = 3;
    for (int q = 1; q <= 100; ++q) {
      if (!jpeg_ok(s.err, [&] {
            jpeg_set_defaults(cinfo);
            jpeg_set_quality(cinfo, q, TRUE);
          }))
        return t;
      for (int k = 0; k < DCTSIZE2; ++k) {
        t.luma[q - 1][k] = cinfo->quant_tbl_ptrs[0]->quantval[k];
        t.chroma[q - 1][k] = cinfo->quant_tbl_ptrs[1]->quantval[k];
      }
    }
    return t;
  }();
  int best = 0;
  long best_distance = -1;
  for (int q = 1; q <= 100; ++q) {
    long d = 0;
    for (int k = 0; k < DCTSIZE2; ++k) {
      d += std::labs(static_cast<long>(luma[k]) - tables.luma[q - 1][k]);
      if (chroma) d += std::labs(static_cast<long>(chroma[k]) - tables.chroma[q - 1][k]);
    }
    if (best_distance < 0 || d <= best_distance) {  // ties: the higher quality
      best_distance = d;
      best = q;
    }
  }
  return best;
}

namespace io {

JpegCoding jpeg_header_coding(std::span<const unsigned char> bytes) {
  JpegReadState s;
  install(s.err);
  s.cinfo.err = &s.err.pub;
  j_decompress_ptr cinfo = &s.cinfo;
  if (!jpeg_ok(s.err, [&] { jpeg_create_decompress(cinfo); })) return {};
  s.created = true;
  const unsigned char* data = bytes.data();
  const auto size = static_cast<unsigned long>(bytes.size());
  int kind = 0;
  if (!jpeg_ok(s.err, [&] {
        jpeg_mem_src(cinfo, data, size);
        kind = jpeg_read_header(cinfo, FALSE);
      }))
    return {};
  return coding_of(cinfo, kind == JPEG_HEADER_OK);
}

}  // namespace io

std::vector<unsigned char> jpeg_with_metadata(std::span<const unsigned char> jpeg, const Metadata& metadata) {
  using namespace io;
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
  std::vector<unsigned char> out(jpeg.begin(), jpeg.begin() + static_cast<std::ptrdiff_t>(at));
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
  return out;
}

#else

JpegStreamInfo jpeg_stream_info(std::span<const unsigned char>, const std::string& name) {
  throw Error(ErrorKind::Decode, fmt::format("{}: this build has no libjpeg to read JPEG headers", name));
}
std::vector<unsigned char> jpeg_with_metadata(std::span<const unsigned char>, const Metadata&) {
  throw Error(ErrorKind::Internal, "this build has no libjpeg to write JPEG metadata");
}
int estimate_jpeg_quality(const unsigned short*, const unsigned short*) { return 0; }
namespace io {
JpegCoding jpeg_header_coding(std::span<const unsigned char>) { return {}; }
}  // namespace io

#endif  // TF_HAVE_LIBJPEG

}  // namespace tf
