// Pixel types and image containers. Image owns its pixels (allocator is pluggable so batch jobs can
// decode straight into pinned memory); ImageView is a non-owning {ptr, pitch, width, height} view.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace tf {

enum class PixelType : std::uint8_t { U8, U16, F32 };

constexpr std::size_t bytes_per_sample(PixelType t) { return t == PixelType::U8 ? 1 : t == PixelType::U16 ? 2 : 4; }
std::string to_string(PixelType t);  // "u8", "u16", "f32"

struct Format {
  PixelType type = PixelType::U8;
  int channels = 4;  // 1, 3 or 4
  std::size_t pixel_bytes() const { return bytes_per_sample(type) * static_cast<std::size_t>(channels); }
  bool operator==(const Format&) const = default;
};
std::string to_string(const Format& f);  // "RGBA u8"

struct Rect {
  int x = 0, y = 0, width = 0, height = 0;
  int right() const { return x + width; }
  int bottom() const { return y + height; }
  long long area() const { return static_cast<long long>(width) * height; }
  bool operator==(const Rect&) const = default;
};

// Non-owning view; pitch is in bytes between row starts.
struct ImageView {
  std::byte* data = nullptr;
  std::size_t pitch = 0;
  int width = 0, height = 0;
  Format format;

  std::byte* row(int y) const { return data + static_cast<std::size_t>(y) * pitch; }
  template <class T> T* row_as(int y) const { return reinterpret_cast<T*>(row(y)); }
  std::size_t row_bytes() const { return static_cast<std::size_t>(width) * format.pixel_bytes(); }
  ImageView sub(const Rect& r) const;  // r must lie inside the view
};

// Whether the bytes two views span (first row's start to last row's end) overlap.
bool overlaps(const ImageView& a, const ImageView& b);
// Whether `b` is `a` itself (same data and pitch): an image filtered in place.
bool same_view(const ImageView& a, const ImageView& b);

// A view of a whole image `image_height` rows tall of which only `rows` — the image's rows
// [first_row, first_row + rows.height) — are in memory: row(y) addresses image row y. Reading a
// row outside that range is an error the caller rules out (a band's tiles read only its window).
// Streamed images are filtered band by band through such views.
ImageView window_view(const ImageView& rows, int first_row, int image_height);

// Allocates pixel storage; the default uses aligned host memory. A GPU backend can install one that
// returns pinned memory so uploads run at full PCIe speed.
struct PixelAllocator {
  std::function<void*(std::size_t)> allocate;
  std::function<void(void*)> release;
};
const PixelAllocator& default_allocator();

class Image {
 public:
  Image() = default;
  Image(int width, int height, Format format, const PixelAllocator& alloc = default_allocator());

  int width() const { return view_.width; }
  int height() const { return view_.height; }
  Format format() const { return view_.format; }
  std::size_t pitch() const { return view_.pitch; }
  bool empty() const { return view_.data == nullptr; }
  long long pixels() const { return static_cast<long long>(view_.width) * view_.height; }
  std::size_t size_bytes() const { return view_.pitch * static_cast<std::size_t>(view_.height); }

  const ImageView& view() const { return view_; }
  std::byte* data() const { return view_.data; }
  Image clone() const;

 private:
  std::shared_ptr<std::byte> storage_;
  ImageView view_;
};

// Byte-wise equality of the pixel rows (padding ignored).
bool same_pixels(const ImageView& a, const ImageView& b);

}  // namespace tf
