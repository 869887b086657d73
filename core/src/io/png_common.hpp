// What the libpng reader (png_reader.cpp) and writer (png_writer.cpp) share: libpng's errors caught
// and turned into tf::Error, the read and write states, and the format's checks (format_png.cpp).
//
// libpng reports errors by longjmp. No C++ exception may cross its C frames, so every call into
// libpng runs inside png_ok(), which holds the setjmp; the error handler records the message and
// jumps back there, and the caller turns it into tf::Error. Warnings are dropped.
#pragma once

#include <span>
#include <string>

#include "tilefilter/io/io.hpp"

#ifdef TF_HAVE_LIBPNG
#include <bit>
#include <csetjmp>
#include <cstdio>

#include <png.h>
#endif

namespace tf::io::png {

// The format's checks (format_png.cpp): a PNG signature; what a PNG can hold.
bool png_sniff(std::span<const unsigned char> head);
bool png_can_write(const Format& format, std::string* why);

#ifdef TF_HAVE_LIBPNG

inline constexpr const char* kXmpKey = "XML:com.adobe.xmp";
inline constexpr bool kLittleEndian = std::endian::native == std::endian::little;

// Where the error handler leaves libpng's message (no allocation between the error and the jump).
struct PngMessage {
  char text[256] = {};
};

[[noreturn]] void on_png_error(png_structp png, png_const_charp message);
void on_png_warning(png_structp, png_const_charp);

// Runs f (calls into libpng only: nothing with a destructor may live in it) under a setjmp;
// false when libpng reported an error.
template <class F> bool png_ok(png_structp png, F&& f) {
  if (setjmp(png_jmpbuf(png))) return false;
  f();
  return true;
}

// libpng's read or write state with its info struct (and the file being read), released even when
// a constructor throws half way.
struct PngReadState {
  std::FILE* file = nullptr;
  png_structp png = nullptr;
  png_infop info = nullptr;
  PngReadState() = default;
  PngReadState(const PngReadState&) = delete;
  PngReadState& operator=(const PngReadState&) = delete;
  ~PngReadState() {
    if (png) png_destroy_read_struct(&png, info ? &info : nullptr, nullptr);
    if (file) std::fclose(file);
  }
};

struct PngWriteState {
  png_structp png = nullptr;
  png_infop info = nullptr;
  PngWriteState() = default;
  PngWriteState(const PngWriteState&) = delete;
  PngWriteState& operator=(const PngWriteState&) = delete;
  ~PngWriteState() { release(); }
  void release() {
    if (png) png_destroy_write_struct(&png, info ? &info : nullptr);
    png = nullptr;
    info = nullptr;
  }
};

#endif  // TF_HAVE_LIBPNG

}  // namespace tf::io::png
