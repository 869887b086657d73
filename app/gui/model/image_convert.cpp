#include "image_convert.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace tf::gui {

QImage::Format display_format(int channels) {
  switch (channels) {
    case 1: return QImage::Format_Grayscale8;
    case 3: return QImage::Format_RGB888;
    default: return QImage::Format_RGBA8888;
  }
}

QString describe_format(const Format& format) {
  const char* layout = format.channels == 1 ? "Gray" : format.channels == 3 ? "RGB" : "RGBA";
  return QStringLiteral("%1 %2").arg(layout, QString::fromStdString(to_string(format.type)));
}

namespace {

// Reduces one sample to 8 bits for display.
inline std::uint8_t display_sample(const std::byte* p, PixelType type) {
  switch (type) {
    case PixelType::U8: return static_cast<std::uint8_t>(*p);
    case PixelType::U16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return static_cast<std::uint8_t>((v + 128) / 257);
    }
    case PixelType::F32: {
      float v;
      std::memcpy(&v, p, 4);
      if (!std::isfinite(v)) v = 0;
      return static_cast<std::uint8_t>(std::lround(std::clamp(v, 0.0f, 1.0f) * 255.0f));
    }
  }
  return 0;
}

}  // namespace

QImage to_display_image(const Image& image) {
  if (image.empty()) return {};
  const Format f = image.format();
  const QImage::Format qf = display_format(f.channels);
  if (f.type == PixelType::U8) {
    // The cleanup function owns a copy of the Image handle, so the pixels live as long as the QImage.
    auto* keep = new Image(image);
    return QImage(
        reinterpret_cast<const uchar*>(image.data()), image.width(), image.height(),
        static_cast<qsizetype>(image.pitch()), qf, [](void* p) { delete static_cast<Image*>(p); }, keep);
  }
  QImage out(image.width(), image.height(), qf);
  const std::size_t step = bytes_per_sample(f.type);
  const ImageView& v = image.view();
  for (int y = 0; y < image.height(); ++y) {
    const std::byte* src = v.row(y);
    uchar* dst = out.scanLine(y);
    const int samples = image.width() * f.channels;
    for (int i = 0; i < samples; ++i) dst[i] = display_sample(src + i * step, f.type);
  }
  return out;
}

}  // namespace tf::gui
