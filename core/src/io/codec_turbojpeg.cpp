#include "codec_turbojpeg.hpp"

#include <memory>

#include <fmt/format.h>

#include "codec_checks.hpp"
#include "tilefilter/util/error.hpp"

#ifdef TF_HAVE_TURBOJPEG
#include <turbojpeg.h>
#endif

namespace tf::turbojpeg_codec {

#ifdef TF_HAVE_TURBOJPEG
namespace {

using codec_checks::decode_error;

// Written against the TurboJPEG 2.1 API (Debian bookworm); 3.x keeps these functions.
struct HandleDeleter {
  void operator()(void* handle) const noexcept { tjDestroy(handle); }
};
using Handle = std::unique_ptr<void, HandleDeleter>;

// A handle must not be used by two threads at once, and making one per image would allocate
// libjpeg's state again each time: one decompressor and one compressor per thread.
Handle& thread_slot(bool compress) {
  thread_local Handle decompressor, compressor;
  return compress ? compressor : decompressor;
}

tjhandle thread_handle(bool compress) {
  Handle& handle = thread_slot(compress);
  if (!handle) handle.reset(compress ? tjInitCompress() : tjInitDecompress());
  if (!handle)
    throw Error(ErrorKind::Internal, fmt::format("TurboJPEG: cannot create a {} ({})",
                                                 compress ? "compressor" : "decompressor", tjGetErrorStr2(nullptr)));
  return handle.get();
}

// After a failed call, libjpeg's state can leak into the next image on the same handle (seen: a
// corrupt JPEG changed the pixels of the next file decoded on that thread). A call that does not
// end in success drops the thread's handle, so the next image starts from a fresh one.
struct FreshHandleUnlessOk {
  bool compress;
  bool ok = false;
  ~FreshHandleUnlessOk() {
    if (!ok) thread_slot(compress).reset();
  }
};

// TurboJPEG turns every libjpeg warning into a failed call (-1, TJERR_WARNING) after decoding what
// it could. These leave every pixel decoded (stray bytes between segments, odd metadata; stb
// ignores them too); any other warning means missing or wrong pixels and is an error. libjpeg
// reports only its first warning, so a harmless one can hide a later one; a file cut short is
// still caught by jpeg_looks_complete before decoding.
bool harmless_warning(const std::string& message) {
  for (const char* s :
       {"extraneous bytes before marker", "unknown JFIF revision", "bad ICC marker", "Unknown Adobe color transform"})
    if (message.find(s) != std::string::npos) return true;
  return false;
}

void check_decoded(tjhandle tj, int rc, const std::string& name) {
  if (rc == 0) return;
  const std::string why = tjGetErrorStr2(tj);
  if (tjGetErrorCode(tj) == TJERR_WARNING && harmless_warning(why)) return;
  // The data ran out ("Premature end of JPEG file"), or a marker came before the data was complete
  // ("premature end of data segment": cut and re-terminated, or garbage holding 0xFF bytes).
  const char* what = why.find("Premature end of JPEG file") != std::string::npos      ? "truncated JPEG"
                     : why.find("premature end of data segment") != std::string::npos ? "truncated or corrupt JPEG data"
                                                                                      : "corrupt JPEG data";
  throw decode_error(name, fmt::format("{} ({})", what, why));
}

// stb's CMYK -> RGB: Adobe CMYK JPEGs store inverted ink, so R = C * K / 255 (rounded like stb).
unsigned char mul255(unsigned x, unsigned y) {
  const unsigned t = x * y + 128;
  return static_cast<unsigned char>((t + (t >> 8)) >> 8);
}

}  // namespace

bool available() { return true; }

std::optional<Image> decode(std::span<const unsigned char> bytes, const std::string& name, const Limits& limits,
                            const PixelAllocator& alloc) {
  if (bytes.size() < 3 || bytes[0] != 0xFF || bytes[1] != 0xD8 || bytes[2] != 0xFF) return std::nullopt;
  FreshHandleUnlessOk guard{false};
  tjhandle tj = thread_handle(false);
  int w = 0, h = 0, subsamp = 0, colorspace = 0;
  const int header = tjDecompressHeader3(tj, bytes.data(), bytes.size(), &w, &h, &subsamp, &colorspace);
  // A header TurboJPEG cannot use (a broken one, or a layout it has no name for): stb decides, and
  // words the error, as it did before TurboJPEG.
  if ((header != 0 && tjGetErrorCode(tj) != TJERR_WARNING) || w <= 0 || h <= 0) return std::nullopt;
  codec_checks::check_pixel_limit(name, w, h, limits);
  codec_checks::check_jpeg_complete(bytes, name);

  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  const int channels = colorspace == TJCS_GRAY ? 1 : 3;
  Image img(w, h, Format{PixelType::U8, channels}, alloc);
  const ImageView& v = img.view();
  if (!cmyk) {
    const int rc = tjDecompress2(tj, bytes.data(), bytes.size(), reinterpret_cast<unsigned char*>(v.data), w,
                                 static_cast<int>(v.pitch), h, channels == 1 ? TJPF_GRAY : TJPF_RGB, 0);
    check_decoded(tj, rc, name);
    guard.ok = true;
    return img;
  }
  // libjpeg turns CMYK and YCCK into CMYK only; rare enough that a scratch copy does not matter.
  std::vector<unsigned char> ink(static_cast<std::size_t>(w) * 4 * static_cast<std::size_t>(h));
  check_decoded(tj, tjDecompress2(tj, bytes.data(), bytes.size(), ink.data(), w, w * 4, h, TJPF_CMYK, 0), name);
  for (int y = 0; y < h; ++y) {
    const unsigned char* in = ink.data() + static_cast<std::size_t>(w) * 4 * static_cast<std::size_t>(y);
    auto* out = reinterpret_cast<unsigned char*>(v.row(y));
    for (int x = 0; x < w; ++x, in += 4, out += 3) {
      out[0] = mul255(in[0], in[3]);
      out[1] = mul255(in[1], in[3]);
      out[2] = mul255(in[2], in[3]);
    }
  }
  guard.ok = true;
  return img;
}

std::vector<unsigned char> encode(const ImageView& image, const WriteOptions& options) {
  const int c = image.format.channels;
  if (image.format.type != PixelType::U8 || (c != 1 && c != 3 && c != 4))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("JPEG holds 8-bit gray or RGB, not {}", to_string(image.format)));
  tjhandle tj = thread_handle(true);
  // RGBX: the fourth byte is skipped, so RGBA is written as its RGB, as stb writes it.
  const int pixel_format = c == 1 ? TJPF_GRAY : c == 3 ? TJPF_RGB : TJPF_RGBX;
  const int quality = jpeg_quality(options);
  const ChromaSubsampling s = jpeg_subsampling(options, c == 1 ? 1 : 3);
  const int subsampling = c == 1                         ? TJSAMP_GRAY
                          : s == ChromaSubsampling::S420 ? TJSAMP_420
                          : s == ChromaSubsampling::S422 ? TJSAMP_422
                                                         : TJSAMP_444;
  unsigned char* jpeg = nullptr;
  unsigned long size = 0;
  const int rc =
      tjCompress2(tj, reinterpret_cast<const unsigned char*>(image.data), image.width, static_cast<int>(image.pitch),
                  image.height, pixel_format, &jpeg, &size, subsampling, quality, 0);
  const std::unique_ptr<unsigned char, void (*)(unsigned char*)> owned(jpeg, tjFree);
  if (rc != 0) throw Error(ErrorKind::Io, fmt::format("TurboJPEG: {}", tjGetErrorStr2(tj)));
  return {jpeg, jpeg + size};
}
#else
bool available() { return false; }
std::optional<Image> decode(std::span<const unsigned char>, const std::string&, const Limits&, const PixelAllocator&) {
  return std::nullopt;
}
std::vector<unsigned char> encode(const ImageView&, const WriteOptions&) {
  throw Error(ErrorKind::Io, "TurboJPEG is not in this build");
}
#endif

}  // namespace tf::turbojpeg_codec
