// The formats read and written whole, and which codec reads what. The streaming formats (libtiff,
// libpng, libjpeg) take TIFF, PNG and JPEG when built in; what they don't take is decoded whole
// from memory here: stb_image reads PNG, JPEG, BMP, TGA, GIF, HDR, PNM,
// PSD; stb_image_write writes PNG (8-bit), JPEG, BMP, TGA, HDR; TurboJPEG (when built in) takes
// over JPEG both ways; OpenCV (when built in) adds TIFF, WebP, PFM, 16-bit PNG and float TIFF.
// Sizes are checked from the header before any pixel memory is allocated.
#include "tilefilter/io/codec.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <stb_image.h>
#include <stb_image_write.h>

#include "codec_checks.hpp"
#include "codec_opencv.hpp"
#include "codec_turbojpeg.hpp"
#include "format_whole.hpp"
#include "formats.hpp"
#include "tilefilter/util/error.hpp"

namespace fs = std::filesystem;

namespace tf {

namespace {

using codec_checks::check_pixel_limit;
using codec_checks::decode_error;

bool one_of(const std::string& ext, std::initializer_list<const char*> list) {
  return std::any_of(list.begin(), list.end(), [&](const char* e) { return ext == e; });
}

const std::initializer_list<const char*> kStbRead = {".png", ".jpg", ".jpeg", ".bmp", ".tga", ".gif",
                                                     ".hdr", ".pnm", ".ppm",  ".pgm", ".psd"};
const std::initializer_list<const char*> kOpenCvOnly = {".tif", ".tiff", ".webp", ".pfm", ".jp2", ".exr"};

Image decode_with_stb(std::span<const unsigned char> bytes, const std::string& name, const Limits& limits,
                      const PixelAllocator& alloc) {
  const auto without_empty_idat = codec_checks::png_without_empty_idat(bytes);
  if (without_empty_idat) bytes = *without_empty_idat;
  const auto* data = bytes.data();
  const int len = static_cast<int>(bytes.size());
  int w = 0, h = 0, comp = 0;
  if (!stbi_info_from_memory(data, len, &w, &h, &comp))
    throw decode_error(name, fmt::format("not a readable image ({})", stbi_failure_reason()));
  check_pixel_limit(name, w, h, limits);
  if (w <= 0 || h <= 0) throw decode_error(name, "image has no pixels");
  codec_checks::check_jpeg_complete(bytes, name);
  codec_checks::check_png_idat_fits(bytes, name);
  codec_checks::check_pnm_data(bytes, name);
  codec_checks::check_tga_data(bytes, name);
  codec_checks::check_bmp_data(bytes, name);
  const int channels = comp == 2 ? 4 : comp;  // gray+alpha becomes RGBA
  PixelType type = PixelType::U8;
  void* pixels = nullptr;
  if (stbi_is_hdr_from_memory(data, len)) {
    codec_checks::check_radiance_data(bytes, name);
    type = PixelType::F32;
    pixels = stbi_loadf_from_memory(data, len, &w, &h, &comp, channels);
  } else if (stbi_is_16_bit_from_memory(data, len)) {
    type = PixelType::U16;
    pixels = stbi_load_16_from_memory(data, len, &w, &h, &comp, channels);
  } else {
    pixels = stbi_load_from_memory(data, len, &w, &h, &comp, channels);
  }
  if (!pixels) throw decode_error(name, fmt::format("corrupt or truncated image data ({})", stbi_failure_reason()));
  std::unique_ptr<void, void (*)(void*)> guard(pixels, stbi_image_free);
  Image img(w, h, Format{type, channels}, alloc);
  const std::size_t row = img.view().row_bytes();
  for (int y = 0; y < h; ++y) std::memcpy(img.view().row(y), static_cast<const std::byte*>(pixels) + row * y, row);
  return img;
}

}  // namespace

std::string extension_of(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

ReadableFile::ReadableFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    if (errno == ENOENT || errno == ENOTDIR) throw Error(ErrorKind::Io, fmt::format("{}: no such file", path));
    throw Error(ErrorKind::Io, fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int e = errno;
    ::close(fd_);
    throw Error(ErrorKind::Io, fmt::format("{}: cannot open ({})", path, std::strerror(e)));
  }
  if (S_ISDIR(st.st_mode) || st.st_size <= 0) {
    ::close(fd_);
    if (S_ISDIR(st.st_mode)) throw Error(ErrorKind::Io, fmt::format("{}: is a directory, not an image", path));
    throw Error(ErrorKind::Decode, fmt::format("{}: empty file (0 bytes)", path));
  }
  size_ = static_cast<std::size_t>(st.st_size);
}

ReadableFile::~ReadableFile() { ::close(fd_); }

std::size_t ReadableFile::read(void* data, std::size_t n) {
  auto* at = static_cast<unsigned char*>(data);
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::read(fd_, at + done, n - done);
    if (got == 0) break;
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error(ErrorKind::Io, fmt::format("{}: read error ({})", path_, std::strerror(errno)));
    done += static_cast<std::size_t>(got);
  }
  return done;
}

std::vector<unsigned char> read_file(const std::string& path, const Limits& limits) {
  std::vector<unsigned char> bytes;
  read_file(path, limits, bytes);
  return bytes;
}

void read_file(const std::string& path, const Limits& limits, std::vector<unsigned char>& bytes) {
  ReadableFile in(path);
  const std::size_t size = in.size();
  if (size > limits.max_file_bytes)
    throw Error(ErrorKind::Limit,
                fmt::format("{}: file of {} bytes exceeds the limit of {} bytes", path, size, limits.max_file_bytes));
  if (size > static_cast<std::size_t>(INT32_MAX))
    throw Error(ErrorKind::Limit, fmt::format("{}: file larger than 2 GiB", path));
  bytes.resize(size);
  if (in.read(bytes.data(), size) != size)
    throw Error(ErrorKind::Io, fmt::format("{}: read error (the file grew shorter while it was read)", path));
}

namespace {

void stb_sink(void* context, void* data, int size) {
  auto* v = static_cast<std::vector<unsigned char>*>(context);
  v->insert(v->end(), static_cast<unsigned char*>(data), static_cast<unsigned char*>(data) + size);
}

// Contiguous copy of the rows (stb wants tightly packed pixels or a stride).
std::vector<unsigned char> encode_with_stb(const std::string& ext, const ImageView& img, int quality) {
  std::vector<unsigned char> out;
  const int w = img.width, h = img.height, c = img.format.channels;
  std::vector<std::byte> packed(img.row_bytes() * h);
  for (int y = 0; y < h; ++y) std::memcpy(packed.data() + img.row_bytes() * y, img.row(y), img.row_bytes());
  int ok = 0;
  if (ext == ".png")
    ok = stbi_write_png_to_func(stb_sink, &out, w, h, c, packed.data(), static_cast<int>(img.row_bytes()));
  else if (ext == ".jpg" || ext == ".jpeg")
    ok = stbi_write_jpg_to_func(stb_sink, &out, w, h, c, packed.data(), quality);
  else if (ext == ".bmp") ok = stbi_write_bmp_to_func(stb_sink, &out, w, h, c, packed.data());
  else if (ext == ".tga") ok = stbi_write_tga_to_func(stb_sink, &out, w, h, c, packed.data());
  else if (ext == ".hdr")
    ok = stbi_write_hdr_to_func(stb_sink, &out, w, h, c, reinterpret_cast<const float*>(packed.data()));
  if (!ok) throw Error(ErrorKind::Io, "stb_image_write failed");
  return out;
}

}  // namespace

bool have_opencv_codecs() { return opencv_codecs::available(); }
bool have_turbojpeg() { return turbojpeg_codec::available(); }

std::vector<std::string> readable_extensions() {
  std::vector<std::string> v(kStbRead.begin(), kStbRead.end());
  if (have_opencv_codecs()) v.insert(v.end(), kOpenCvOnly.begin(), kOpenCvOnly.end());
  for (const char* ext : {".tif", ".tiff"})
    if (io::format_for_extension(ext) && std::find(v.begin(), v.end(), ext) == v.end()) v.push_back(ext);
  return v;
}

bool is_image_extension(const std::string& path) {
  const auto ext = extension_of(path);
  auto v = readable_extensions();
  return std::find(v.begin(), v.end(), ext) != v.end();
}

std::string codec_for(const std::string& path) {
  const auto ext = extension_of(path);
  if (const auto* f = io::format_for_extension(ext)) return f->name;
  if (have_turbojpeg() && one_of(ext, {".jpg", ".jpeg"})) return "turbojpeg";
  return one_of(ext, kOpenCvOnly) ? "opencv" : "stb";
}

std::string whole_encoder_for(const std::string& path, const Format& format) {
  const auto ext = extension_of(path);
  if (format.type == PixelType::U8 && have_turbojpeg() && one_of(ext, {".jpg", ".jpeg"})) return "turbojpeg";
  const bool stb = format.type == PixelType::U8
                       ? one_of(ext, {".png", ".jpg", ".jpeg", ".bmp", ".tga"}) || !have_opencv_codecs()
                       : ext == ".hdr";
  return stb ? "stb" : "opencv";
}

bool can_encode_whole(const std::string& path, const Format& format, std::string* why) {
  const auto ext = extension_of(path);
  auto fail = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  if (have_opencv_codecs() && opencv_codecs::can_write(ext, format)) return true;
  if (format.type == PixelType::U8 && one_of(ext, {".png", ".jpg", ".jpeg", ".bmp", ".tga"})) return true;
  if (format.type == PixelType::F32 && ext == ".hdr" && format.channels >= 3) return true;
  if (!one_of(ext, {".png", ".jpg", ".jpeg", ".bmp", ".tga", ".hdr", ".tif", ".tiff", ".webp", ".pfm"}))
    return fail(fmt::format("unknown output format '{}' (use .png, .jpg, .tif, ...)", ext));
  return fail(
      fmt::format("cannot write {} {} images in this build{}", to_string(format), ext,
                  have_opencv_codecs() ? "" : " (needs OpenCV: 16-bit and float go to .png/.tif through OpenCV)"));
}

Image decode_memory_whole(std::span<const unsigned char> bytes, const std::string& name, const Limits& limits,
                          const PixelAllocator& alloc, std::string* codec) {
  std::string unused;
  if (!codec) codec = &unused;
  if (bytes.empty()) throw Error(ErrorKind::Decode, fmt::format("{}: empty file (0 bytes)", name));
  if (bytes.size() > limits.max_file_bytes)
    throw Error(ErrorKind::Limit,
                fmt::format("{}: {} bytes exceeds the limit of {} bytes", name, bytes.size(), limits.max_file_bytes));
  codec_checks::check_png_header_limit(bytes, name, limits);
  *codec = "turbojpeg";
  if (auto jpeg = turbojpeg_codec::decode(bytes, name, limits, alloc)) return std::move(*jpeg);
  codec_checks::check_jpeg_huffman_tables(bytes, name);  // before stb reads any JPEG header
  codec_checks::check_pnm_header(bytes, name);           // or any PNM header
  int w = 0, h = 0, comp = 0;
  const bool stb_knows = stbi_info_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &comp) != 0;
  // OpenCV 4.6's Radiance reader leaks its FILE on a bad header (fuzz_decode ran out of file
  // descriptors): anything that starts like a Radiance file ("#?RADIANCE", "#?RGBE") stays with stb.
  const bool radiance = bytes.size() >= 2 && bytes[0] == '#' && bytes[1] == '?';
  *codec = !stb_knows && !radiance && have_opencv_codecs() && opencv_codecs::reads_signature(bytes) ? "opencv" : "stb";
  if (*codec == "opencv") {
    codec_checks::check_pfm(bytes, name, limits);
    return opencv_codecs::decode(bytes, name, limits, alloc);
  }
  return decode_with_stb(bytes, name, limits, alloc);
}

Image decode_file_whole(const std::string& path, const Limits& limits, const PixelAllocator& alloc,
                        std::string* codec) {
  const auto bytes = read_file(path, limits);
  return decode_memory_whole(bytes, path, limits, alloc, codec);
}

Image decode_jpeg_with(const std::string& codec, std::span<const unsigned char> bytes, const std::string& name,
                       const Limits& limits, const PixelAllocator& alloc) {
  if (codec == "stb") {
    codec_checks::check_jpeg_huffman_tables(bytes, name);
    return decode_with_stb(bytes, name, limits, alloc);
  }
  if (codec == "turbojpeg" && have_turbojpeg()) {
    if (auto jpeg = turbojpeg_codec::decode(bytes, name, limits, alloc)) return std::move(*jpeg);
    throw decode_error(name, "not a JPEG that TurboJPEG reads");
  }
  throw Error(ErrorKind::InvalidArgument, fmt::format("no JPEG codec '{}' in this build", codec));
}

std::vector<unsigned char> encode_jpeg_with(const std::string& codec, const ImageView& image, int quality,
                                            ChromaSubsampling subsampling) {
  if (image.format.type != PixelType::U8)
    throw Error(ErrorKind::InvalidArgument, fmt::format("JPEG holds 8-bit pixels, not {}", to_string(image.format)));
  WriteOptions o;
  o.quality = std::clamp(quality, 1, 100);
  o.subsampling = subsampling;
  if (codec == "stb") return encode_with_stb(".jpg", image, o.quality);
  if (codec == "turbojpeg" && have_turbojpeg()) return turbojpeg_codec::encode(image, o);
  throw Error(ErrorKind::InvalidArgument, fmt::format("no JPEG codec '{}' in this build", codec));
}

std::vector<unsigned char> encode_whole(const std::string& path, const ImageView& image, const WriteOptions& options) {
  std::string why;
  if (!can_encode_whole(path, image.format, &why))
    throw Error(ErrorKind::InvalidArgument, fmt::format("{}: {}", path, why));
  const auto ext = extension_of(path);
  const int quality = jpeg_quality(options);
  const std::string codec = whole_encoder_for(path, image.format);
  std::vector<unsigned char> bytes;
  try {
    bytes = codec == "turbojpeg" ? turbojpeg_codec::encode(image, options)
            : codec == "stb"     ? encode_with_stb(ext, image, quality)
                                 : opencv_codecs::encode(ext, image, quality);
  } catch (const Error& e) {
    throw Error(ErrorKind::Io, fmt::format("{}: cannot encode ({})", path, e.what()));
  }
  return bytes;
}

}  // namespace tf
