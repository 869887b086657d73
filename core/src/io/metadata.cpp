// EXIF helpers on libexif. Blocks come and go without JPEG's "Exif\0\0" prefix (as PNG's eXIf
// chunk and TIFF hold them); libexif wants the prefix on input and writes it on output, so it is
// added to a copy before parsing and cut off after saving. Without libexif a block is kept as it
// is but never looked into (orientation 1, no text tags).
#include "metadata.hpp"

#include <cstdlib>
#include <cstring>
#include <memory>

#ifdef TF_HAVE_LIBEXIF
#include <libexif/exif-data.h>
#include <libexif/exif-entry.h>
#include <libexif/exif-mem.h>
#include <libexif/exif-utils.h>
#endif

namespace tf::io {

bool Ifd0Text::empty() const {
  return make.empty() && model.empty() && artist.empty() && copyright.empty() && date_time.empty() &&
         software.empty() && description.empty();
}

#ifdef TF_HAVE_LIBEXIF
namespace {

struct ExifDataUnref {
  void operator()(ExifData* d) const noexcept { exif_data_unref(d); }
};
using ExifPtr = std::unique_ptr<ExifData, ExifDataUnref>;

bool tiff_header(std::span<const unsigned char> b) {
  return b.size() >= 8 && ((b[0] == 'I' && b[1] == 'I' && b[2] == 42 && b[3] == 0) ||
                           (b[0] == 'M' && b[1] == 'M' && b[2] == 0 && b[3] == 42));
}

// A fresh ExifData that changes nothing it was not asked to: no mandatory tags added on load
// (FOLLOW_SPECIFICATION), unknown tags kept, maker notes copied as bytes.
ExifPtr new_exif() {
  ExifPtr d(exif_data_new());
  if (!d) return d;
  exif_data_unset_option(d.get(), EXIF_DATA_OPTION_FOLLOW_SPECIFICATION);
  exif_data_unset_option(d.get(), EXIF_DATA_OPTION_IGNORE_UNKNOWN_TAGS);
  exif_data_set_option(d.get(), EXIF_DATA_OPTION_DONT_CHANGE_MAKER_NOTE);
  return d;
}

// The parsed block, or null when it is not a TIFF-structured block libexif can read any entry of.
ExifPtr parse(std::span<const unsigned char> exif) {
  if (!tiff_header(exif) || exif.size() > 0xFFFFFFF0u) return nullptr;
  ExifPtr d = new_exif();
  if (!d) return nullptr;
  std::vector<unsigned char> prefixed(sizeof kExifApp1Prefix + exif.size());
  std::memcpy(prefixed.data(), kExifApp1Prefix, sizeof kExifApp1Prefix);
  std::memcpy(prefixed.data() + sizeof kExifApp1Prefix, exif.data(), exif.size());
  exif_data_load_data(d.get(), prefixed.data(), static_cast<unsigned>(prefixed.size()));
  bool any = false;
  for (int i = 0; i < EXIF_IFD_COUNT; ++i) any = any || (d->ifd[i] && d->ifd[i]->count > 0);
  return any ? std::move(d) : nullptr;
}

std::vector<unsigned char> save(ExifData* d) {
  unsigned char* bytes = nullptr;
  unsigned int size = 0;
  exif_data_save_data(d, &bytes, &size);
  const std::unique_ptr<unsigned char, void (*)(void*)> owned(bytes, std::free);  // libexif's default allocator
  if (!bytes || size <= sizeof kExifApp1Prefix) return {};
  return {bytes + sizeof kExifApp1Prefix, bytes + size};
}

void set_orientation(ExifData* d, int orientation) {
  ExifContent* ifd0 = d->ifd[EXIF_IFD_0];
  ExifEntry* e = exif_content_get_entry(ifd0, EXIF_TAG_ORIENTATION);
  if (e && (e->format != EXIF_FORMAT_SHORT || e->components != 1 || e->size < 2)) {
    exif_content_remove_entry(ifd0, e);  // a malformed tag: replaced by a proper one
    e = nullptr;
  }
  if (!e) {
    e = exif_entry_new();
    if (!e) return;
    exif_content_add_entry(ifd0, e);
    exif_entry_initialize(e, EXIF_TAG_ORIENTATION);  // SHORT, one component
    exif_entry_unref(e);                             // the IFD holds it now
  }
  if (e->data && e->size >= 2)
    exif_set_short(e->data, exif_data_get_byte_order(d), static_cast<ExifShort>(orientation));
}

void add_ascii(ExifData* d, ExifTag tag, const std::string& text) {
  if (text.empty()) return;
  ExifMem* mem = exif_mem_new_default();
  if (!mem) return;
  ExifEntry* e = exif_entry_new_mem(mem);
  const std::size_t n = std::strlen(text.c_str()) + 1;  // up to the first NUL, terminated
  auto* data = e ? static_cast<unsigned char*>(exif_mem_alloc(mem, static_cast<ExifLong>(n))) : nullptr;
  if (e && data) {
    std::memcpy(data, text.c_str(), n);
    e->tag = tag;
    e->format = EXIF_FORMAT_ASCII;
    e->components = static_cast<unsigned long>(n);
    e->size = static_cast<unsigned int>(n);
    e->data = data;
    exif_content_add_entry(d->ifd[EXIF_IFD_0], e);
  }
  if (e) exif_entry_unref(e);
  exif_mem_unref(mem);
}

std::string ascii(ExifData* d, ExifTag tag) {
  const ExifEntry* e = exif_content_get_entry(d->ifd[EXIF_IFD_0], tag);
  if (!e || !e->data || e->size == 0 || (e->format != EXIF_FORMAT_ASCII && e->format != EXIF_FORMAT_UNDEFINED))
    return {};
  const char* s = reinterpret_cast<const char*>(e->data);
  std::string text(s, strnlen(s, e->size));
  while (!text.empty() && text.back() == ' ') text.pop_back();  // padded fields
  return text;
}

}  // namespace

int exif_orientation(std::span<const unsigned char> exif) {
  const ExifPtr d = parse(exif);
  if (!d) return 1;
  const ExifEntry* e = exif_content_get_entry(d->ifd[EXIF_IFD_0], EXIF_TAG_ORIENTATION);
  if (!e || !e->data || e->size < 2 || e->format != EXIF_FORMAT_SHORT) return 1;
  const int v = exif_get_short(e->data, exif_data_get_byte_order(d.get()));
  return v >= 1 && v <= 8 ? v : 1;
}

std::vector<unsigned char> exif_with_orientation(std::span<const unsigned char> exif, int orientation) {
  if (orientation < 1 || orientation > 8) orientation = 1;
  ExifPtr d = exif.empty() ? new_exif() : parse(exif);
  if (!d) return {exif.begin(), exif.end()};
  set_orientation(d.get(), orientation);
  std::vector<unsigned char> out = save(d.get());
  if (out.empty()) return {exif.begin(), exif.end()};
  return out;
}

Ifd0Text exif_ifd0_text(std::span<const unsigned char> exif) {
  const ExifPtr d = parse(exif);
  if (!d) return {};
  Ifd0Text t;
  t.make = ascii(d.get(), EXIF_TAG_MAKE);
  t.model = ascii(d.get(), EXIF_TAG_MODEL);
  t.artist = ascii(d.get(), EXIF_TAG_ARTIST);
  t.copyright = ascii(d.get(), EXIF_TAG_COPYRIGHT);
  t.date_time = ascii(d.get(), EXIF_TAG_DATE_TIME);
  t.software = ascii(d.get(), EXIF_TAG_SOFTWARE);
  t.description = ascii(d.get(), EXIF_TAG_IMAGE_DESCRIPTION);
  return t;
}

std::vector<unsigned char> exif_from_ifd0_text(const Ifd0Text& text, int orientation) {
  if (orientation < 1 || orientation > 8) orientation = 1;
  if (text.empty() && orientation == 1) return {};
  ExifPtr d = new_exif();
  if (!d) return {};
  add_ascii(d.get(), EXIF_TAG_IMAGE_DESCRIPTION, text.description);
  add_ascii(d.get(), EXIF_TAG_MAKE, text.make);
  add_ascii(d.get(), EXIF_TAG_MODEL, text.model);
  add_ascii(d.get(), EXIF_TAG_SOFTWARE, text.software);
  add_ascii(d.get(), EXIF_TAG_DATE_TIME, text.date_time);
  add_ascii(d.get(), EXIF_TAG_ARTIST, text.artist);
  add_ascii(d.get(), EXIF_TAG_COPYRIGHT, text.copyright);
  set_orientation(d.get(), orientation);
  return save(d.get());
}
#else
int exif_orientation(std::span<const unsigned char>) { return 1; }
std::vector<unsigned char> exif_with_orientation(std::span<const unsigned char> exif, int) {
  return {exif.begin(), exif.end()};
}
Ifd0Text exif_ifd0_text(std::span<const unsigned char>) { return {}; }
std::vector<unsigned char> exif_from_ifd0_text(const Ifd0Text&, int) { return {}; }
#endif

}  // namespace tf::io
