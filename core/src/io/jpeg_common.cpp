// What the libjpeg reader and writer share (jpeg_common.hpp), and a JPEG's quality estimated from its
// quantisation tables (estimate_jpeg_quality, io.hpp; jpeg_header_coding, formats.hpp).
#include "jpeg_common.hpp"

#include "formats.hpp"

#ifdef TF_HAVE_LIBJPEG
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "metadata.hpp"

namespace tf::io::jpeg {

namespace {

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

}  // namespace

void on_progress(j_common_ptr cinfo) {
  if (!cinfo->is_decompressor) return;
  const auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number <= kMaxScans) return;
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  std::snprintf(e->text, sizeof e->text, "more than %d scans", kMaxScans);
  e->what = "corrupt JPEG data";
  jump_back(cinfo);
}

namespace {
bool starts_with(const jpeg_saved_marker_ptr m, const unsigned char* prefix, std::size_t n) {
  return m->data_length >= n && std::memcmp(m->data, prefix, n) == 0;
}
}  // namespace

void install(JpegError& e) {
  jpeg_std_error(&e.pub);
  e.pub.error_exit = on_error_exit;
  e.pub.emit_message = on_emit_message;
  e.pub.output_message = on_output_message;
}

std::string message_of(const JpegError& e) {
  return e.what ? fmt::format("{} ({})", e.what, e.text) : std::string(e.text);
}

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

}  // namespace tf::io::jpeg

namespace tf {

int estimate_jpeg_quality(const unsigned short* luma, const unsigned short* chroma) {
  using namespace io::jpeg;
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
  using namespace jpeg;
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

}  // namespace tf

#else

namespace tf {
int estimate_jpeg_quality(const unsigned short*, const unsigned short*) { return 0; }
namespace io {
JpegCoding jpeg_header_coding(std::span<const unsigned char>) { return {}; }
}  // namespace io
}  // namespace tf

#endif  // TF_HAVE_LIBJPEG
