// What the libjpeg reader and writer share (jpeg_reader.cpp, jpeg_writer.cpp): libjpeg's errors as
// messages, the states that release themselves, the metadata markers, and the coding a header holds.
//
// libjpeg reports errors through error_exit, which must not return: it longjmps back to the
// setjmp in jpeg_ok() around each call into libjpeg; no C++ exception crosses libjpeg's frames.
// Warnings that mean missing or wrong pixels (data cut short, bad Huffman codes, ...) are treated
// as errors, the ones that leave every pixel decoded are ignored, as the TurboJPEG path does.
#pragma once

#ifdef TF_HAVE_LIBJPEG
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

#include "tilefilter/io/io.hpp"

namespace tf::io::jpeg {

inline constexpr unsigned char kXmpPrefix[] = "http://ns.adobe.com/xap/1.0/";  // with its NUL: 29 bytes
inline constexpr std::size_t kXmpPrefixSize = sizeof kXmpPrefix;
inline constexpr std::size_t kMaxMarkerData = 65533;  // a marker's length field counts itself
inline constexpr int kMaxScans = 500;                 // as TurboJPEG's TJFLAG_LIMITSCANS: a progressive-scan bomb guard

struct JpegError {
  jpeg_error_mgr pub;  // first: libjpeg's err pointer is cast back to this struct
  std::jmp_buf* jump = nullptr;
  const char* what = nullptr;  // "truncated JPEG" for a warning taken as an error; null for errors
  char text[JMSG_LENGTH_MAX + 32] = {};
};

// libjpeg's error manager in `e`: errors and the warnings that lose pixels jump back to jpeg_ok.
void install(JpegError& e);
// A decompressor's progress monitor that refuses more than kMaxScans scans.
void on_progress(j_common_ptr cinfo);

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

std::string message_of(const JpegError& e);

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
bool read_jpeg_metadata(JpegError& err, j_decompress_ptr cinfo, Metadata& m);

// The APP1 payloads (prefix + block) this program writes for `metadata`, and the ICC profile for
// APP2; a block too large for one marker is left out (no extended XMP).
struct JpegMarkers {
  std::vector<unsigned char> exif, xmp, icc;
};
JpegMarkers jpeg_markers(const Metadata& metadata);

// The luma component's sampling factors (chroma at 1x1) that give `s`.
std::pair<int, int> luma_sampling(ChromaSubsampling s);
// The quality of the tables a header set, and the subsampling of its frame (after a start-of-frame).
JpegCoding coding_of(j_decompress_ptr cinfo, bool has_frame);

}  // namespace tf::io::jpeg
#endif  // TF_HAVE_LIBJPEG
