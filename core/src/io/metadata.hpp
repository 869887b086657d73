// EXIF helpers shared by the format files (libexif): the orientation tag inside an EXIF block, and
// an EXIF block made from the few IFD0 tags TIFF keeps in its main directory.
#pragma once
#include <span>
#include <string>
#include <vector>

namespace tf::io {

// Orientation (tag 274) in a TIFF-structured EXIF block; 1 when absent or unreadable.
int exif_orientation(std::span<const unsigned char> exif);
// The block with its orientation set to `orientation` (added when absent); the block unchanged
// when libexif cannot parse it.
std::vector<unsigned char> exif_with_orientation(std::span<const unsigned char> exif, int orientation);

// IFD0 text tags a TIFF main directory holds as well (Make, Model, Artist, Copyright, DateTime,
// Software, ImageDescription): read from or made into an EXIF block.
struct Ifd0Text {
  std::string make, model, artist, copyright, date_time, software, description;
  bool empty() const;
};
Ifd0Text exif_ifd0_text(std::span<const unsigned char> exif);
std::vector<unsigned char> exif_from_ifd0_text(const Ifd0Text& text, int orientation);

// JPEG APP1 carries EXIF after "Exif\0\0"; PNG's eXIf chunk holds the block without it.
inline constexpr unsigned char kExifApp1Prefix[6] = {'E', 'x', 'i', 'f', 0, 0};

}  // namespace tf::io
