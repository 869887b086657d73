#include "codec_opencv.hpp"

#include <algorithm>
#include <cstring>
#include <initializer_list>

#include <fmt/format.h>

#include "codec_checks.hpp"
#include "tilefilter/util/error.hpp"

#ifdef TF_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace tf::opencv_codecs {

bool reads_signature(std::span<const unsigned char> b) {
  auto starts = [&](std::initializer_list<unsigned char> sig, std::size_t at = 0) {
    return b.size() >= at + sig.size() && std::equal(sig.begin(), sig.end(), b.begin() + at);
  };
  // OpenCV picks its decoder by signature too, and asks its DICOM reader (GDCM, which sizes buffers
  // from the file's length fields: 1.7 GB for an 874-byte file) before its JPEG 2000 and OpenEXR
  // readers: bytes with "DICM" at offset 128 go there whatever they start with.
  if (starts({'D', 'I', 'C', 'M'}, 128)) return false;
  return starts({'I', 'I', 42, 0}) || starts({'M', 'M', 0, 42}) ||  // TIFF
         starts({'I', 'I', 43, 0}) || starts({'M', 'M', 0, 43}) ||  // BigTIFF
         (starts({'R', 'I', 'F', 'F'}) && starts({'W', 'E', 'B', 'P'}, 8)) ||
         (b.size() >= 2 && b[0] == 'P' && b[1] != 0 && std::strchr("Ff1234567", b[1]) != nullptr) ||  // PFM, PNM, PAM
         starts({0, 0, 0, 12, 'j', 'P', ' ', ' '}) || starts({0xFF, 0x4F, 0xFF, 0x51}) ||             // JPEG 2000
         starts({0x76, 0x2F, 0x31, 0x01}) ||                                                          // OpenEXR
         starts({0x59, 0xA6, 0x6A, 0x95});                                                            // Sun raster
}

#ifdef TF_HAVE_OPENCV
namespace {
int cv_type(const Format& f) {
  const int depth = f.type == PixelType::U8 ? CV_8U : f.type == PixelType::U16 ? CV_16U : CV_32F;
  return CV_MAKETYPE(depth, f.channels);
}
// OpenCV keeps BGR(A); TileFilter keeps RGB(A) like stb and Qt.
void swap_red_blue(cv::Mat& m) {
  if (m.channels() == 3) cv::cvtColor(m, m, cv::COLOR_BGR2RGB);
  else if (m.channels() == 4) cv::cvtColor(m, m, cv::COLOR_BGRA2RGBA);
}
}  // namespace

bool available() { return true; }

bool can_write(const std::string& ext, const Format& f) {
  if (ext == ".png") return f.type != PixelType::F32;
  // OpenCV 4.6 does not read back 3-channel float TIFF as written (measured); .pfm holds it losslessly.
  if (ext == ".tif" || ext == ".tiff") return !(f.type == PixelType::F32 && f.channels == 3);
  if (ext == ".webp") return f.type == PixelType::U8 && f.channels >= 3;
  if (ext == ".pfm") return f.type == PixelType::F32 && f.channels != 4;
  return false;
}

Image decode(std::span<const unsigned char> bytes, const std::string& name, const Limits& limits,
             const PixelAllocator& alloc) {
  cv::Mat m;
  try {
    const cv::Mat buf(1, static_cast<int>(bytes.size()), CV_8U, const_cast<unsigned char*>(bytes.data()));
    m = cv::imdecode(buf, cv::IMREAD_UNCHANGED);
  } catch (const cv::Exception& e) {
    throw Error(ErrorKind::Decode, fmt::format("{}: not a readable image ({})", name, e.err));
  }
  if (m.empty())
    throw Error(ErrorKind::Decode,
                fmt::format("{}: not a readable image (unknown format, or corrupt or truncated data)", name));
  codec_checks::check_pixel_limit(name, m.cols, m.rows, limits);
  if (m.channels() == 2) throw Error(ErrorKind::Decode, fmt::format("{}: 2-channel images are not supported", name));
  if (m.depth() == CV_64F || m.depth() == CV_16F) m.convertTo(m, CV_MAKETYPE(CV_32F, m.channels()));
  if (m.depth() != CV_8U && m.depth() != CV_16U && m.depth() != CV_32F)
    throw Error(ErrorKind::Decode, fmt::format("{}: signed sample types are not supported", name));
  swap_red_blue(m);
  const PixelType t = m.depth() == CV_8U ? PixelType::U8 : m.depth() == CV_16U ? PixelType::U16 : PixelType::F32;
  Image img(m.cols, m.rows, Format{t, m.channels()}, alloc);
  for (int y = 0; y < m.rows; ++y) std::memcpy(img.view().row(y), m.ptr(y), img.view().row_bytes());
  return img;
}

std::vector<unsigned char> encode(const std::string& ext, const ImageView& image, int quality) {
  cv::Mat view(image.height, image.width, cv_type(image.format), image.data, image.pitch);
  cv::Mat m = view.clone();
  swap_red_blue(m);
  std::vector<int> params;
  if (ext == ".webp") params = {cv::IMWRITE_WEBP_QUALITY, quality};
  if (ext == ".jpg" || ext == ".jpeg") params = {cv::IMWRITE_JPEG_QUALITY, quality};
  std::vector<unsigned char> out;
  try {
    if (!cv::imencode(ext, m, out, params)) throw Error(ErrorKind::Io, "OpenCV imencode failed");
  } catch (const cv::Exception& e) {
    throw Error(ErrorKind::Io, e.err);
  }
  return out;
}
#else
bool available() { return false; }
bool can_write(const std::string&, const Format&) { return false; }
Image decode(std::span<const unsigned char>, const std::string& name, const Limits&, const PixelAllocator&) {
  throw Error(ErrorKind::Decode,
              fmt::format("{}: not a readable image (format needs OpenCV, not in this build)", name));
}
std::vector<unsigned char> encode(const std::string&, const ImageView&, int) {
  throw Error(ErrorKind::Io, "format needs OpenCV, not in this build");
}
#endif

}  // namespace tf::opencv_codecs
