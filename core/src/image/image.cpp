#include "tilefilter/image/image.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#include <fmt/format.h>

#include "tilefilter/util/error.hpp"

namespace tf {

std::string to_string(PixelType t) {
  switch (t) {
    case PixelType::U8: return "u8";
    case PixelType::U16: return "u16";
    case PixelType::F32: return "f32";
  }
  return "?";
}

std::string to_string(const Format& f) {
  static const char* names[] = {"?", "Gray", "GrayAlpha", "RGB", "RGBA"};
  const char* c = f.channels >= 1 && f.channels <= 4 ? names[f.channels] : "?";
  return fmt::format("{} {}", c, to_string(f.type));
}

ImageView ImageView::sub(const Rect& r) const {
  ImageView v = *this;
  v.data = data + static_cast<std::size_t>(r.y) * pitch + static_cast<std::size_t>(r.x) * format.pixel_bytes();
  v.width = r.width;
  v.height = r.height;
  return v;
}

bool overlaps(const ImageView& a, const ImageView& b) {
  const auto* a_end = a.data + a.pitch * static_cast<std::size_t>(a.height - 1) + a.row_bytes();
  const auto* b_end = b.data + b.pitch * static_cast<std::size_t>(b.height - 1) + b.row_bytes();
  return a.data < b_end && b.data < a_end;
}

bool same_view(const ImageView& a, const ImageView& b) { return a.data == b.data && a.pitch == b.pitch; }

const PixelAllocator& default_allocator() {
  static const PixelAllocator alloc{[](std::size_t n) -> void* {
                                      void* p = std::aligned_alloc(64, (n + 63) / 64 * 64);
                                      if (!p) throw std::bad_alloc();
                                      return p;
                                    },
                                    [](void* p) { std::free(p); }};
  return alloc;
}

Image::Image(int width, int height, Format format, const PixelAllocator& alloc) {
  if (width <= 0 || height <= 0)
    throw Error(ErrorKind::InvalidArgument, fmt::format("invalid image size {}x{}", width, height));
  if (format.channels < 1 || format.channels > 4) throw Error(ErrorKind::InvalidArgument, "channels must be 1..4");
  // Rows start on 64-byte boundaries: wide loads on the CPU, aligned 2-D copies to the GPU.
  const std::size_t pitch = (static_cast<std::size_t>(width) * format.pixel_bytes() + 63) / 64 * 64;
  const std::size_t bytes = pitch * static_cast<std::size_t>(height);
  auto release = alloc.release;
  storage_ = std::shared_ptr<std::byte>(static_cast<std::byte*>(alloc.allocate(bytes)),
                                        [release](std::byte* p) { release(p); });
  view_ = ImageView{storage_.get(), pitch, width, height, format};
}

Image Image::clone() const {
  if (empty()) return {};
  Image copy(width(), height(), format());
  std::memcpy(copy.data(), data(), size_bytes());
  return copy;
}

bool same_pixels(const ImageView& a, const ImageView& b) {
  if (a.width != b.width || a.height != b.height || !(a.format == b.format)) return false;
  for (int y = 0; y < a.height; ++y)
    if (std::memcmp(a.row(y), b.row(y), a.row_bytes()) != 0) return false;
  return true;
}

ImageView window_view(const ImageView& rows, int first_row, int image_height) {
  ImageView v = rows;
  // Address arithmetic in integers: the row-0 address may lie outside the allocation, which
  // pointer arithmetic may not express; rows outside the window are never dereferenced.
  const auto base = reinterpret_cast<std::uintptr_t>(rows.data) - static_cast<std::uintptr_t>(first_row) * rows.pitch;
  v.data = reinterpret_cast<std::byte*>(base);
  v.height = image_height;
  return v;
}

}  // namespace tf
