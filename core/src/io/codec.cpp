// decode_file / encode_file and the encoder choice: the whole-image special case of the readers and
// writers in io/ (open_image, create_image).
#include "tilefilter/io/codec.hpp"

#include <fmt/format.h>

#include "codec_checks.hpp"
#include "format_whole.hpp"
#include "formats.hpp"
#include "tilefilter/util/error.hpp"

namespace tf {

std::string encoder_for(const std::string& path, const Format& format) {
  if (const auto* f = io::format_for_extension(extension_of(path))) return f->name;
  return whole_encoder_for(path, format);
}

bool can_encode(const std::string& path, const Format& format, std::string* why) {
  if (const auto* f = io::format_for_extension(extension_of(path))) return f->can_write(format, why);
  return can_encode_whole(path, format, why);
}

Image decode_memory(std::span<const unsigned char> bytes, const std::string& name, const Limits& limits,
                    const PixelAllocator& alloc) {
  return decode_memory_whole(bytes, name, limits, alloc, nullptr);
}

Image decode_file(const std::string& path, const Limits& limits, const PixelAllocator& alloc, ImageInfo* info) {
  auto reader = open_image(path, limits);
  const ImageInfo& i = reader->info();
  codec_checks::check_pixel_limit(path, i.width, i.height, limits);
  Image img = read_whole(*reader, alloc);
  if (info) *info = i;
  return img;
}

void encode_file(const std::string& path, const ImageView& image, const EncodeOptions& options,
                 const Metadata& metadata, std::string* note) {
  auto writer = create_image(path, image.width, image.height, image.format, metadata, options);
  writer->write_rows(image);
  writer->finish();
  if (note) *note = writer->note();
}

}  // namespace tf
