// Checks every decoder runs before it allocates pixels or trusts its input; shared by codec.cpp
// (stb, OpenCV) and codec_turbojpeg.cpp so each idea has one implementation and one message.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tilefilter/io/codec.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::codec_checks {

// ErrorKind::Decode, "<name>: <why>".
Error decode_error(const std::string& name, const std::string& why);

// Throws ErrorKind::Limit when w x h exceeds limits.max_pixels. Header sizes are untrusted
// (up to 2^32-1 per side), so the product cannot overflow here.
void check_pixel_limit(const std::string& name, long long w, long long h, const Limits& limits);

// A streaming writer's arguments, checked before anything is made: `format` held by the file format
// (`can_write` says why not) and `width` x `height` of 1 to `max_side` pixels a side. Throws tf::Error
// (InvalidArgument) naming `path`, e.g. "out.jpg: JPEG holds 1 to 65500 pixels a side, not 70000x20".
// A streaming writer's write_rows: `rows` continue the width x height `format` image at `next_row`, and
// no earlier write failed. Throws tf::Error naming `path` (InvalidArgument, or Io after a failure).
void check_rows_continue(const std::string& path, const ImageView& rows, int width, int height, const Format& format,
                         int next_row, bool failed);

void check_writer_args(const std::string& path, const char* format_name, bool (*can_write)(const Format&, std::string*),
                       const Format& format, int width, int height, long long max_side);

// Throws ErrorKind::InvalidArgument unless `rows` is a band of `info`'s image starting at row y: its
// width and format, within its height. What a streaming reader's read_rows checks first.
void check_rows_request(const std::string& name, const ImageInfo& info, int y, const ImageView& rows);

// A complete JPEG has an end-of-image marker after its last start-of-scan; decoders pad or warn
// on missing data instead of failing, so a cut file is recognised here. True for non-JPEG bytes.
bool jpeg_looks_complete(std::span<const unsigned char> bytes);
// Throws "<name>: truncated JPEG (no end-of-image marker)" unless jpeg_looks_complete(bytes).
void check_jpeg_complete(std::span<const unsigned char> bytes, const std::string& name);

// stb's rule for "this is a JPEG": 0xFF, any number of 0xFF fill bytes, then 0xD8 (SOI).
bool looks_like_jpeg(std::span<const unsigned char> bytes);
// stb_image trusts the symbol counts of a JPEG Huffman table (DHT) and writes past its arrays when
// they add up to more than 256 (found by fuzz_decode). Throws a decode error for such a table, or
// one that runs past its segment; call before any stb function sees JPEG bytes.
void check_jpeg_huffman_tables(std::span<const unsigned char> bytes, const std::string& name);

// stb refuses PNG headers over 2^30 bytes before telling the size; the limit check must still come
// first, so this reads the size from the IHDR chunk and throws like check_pixel_limit.
void check_png_header_limit(std::span<const unsigned char> bytes, const std::string& name, const Limits& limits);

// stb grows its buffer to an IDAT chunk's claimed length before reading it: a 176-byte file claiming a
// 2 GB chunk made it allocate 2 GB (found by fuzz_decode). Throws a decode error for an IDAT chunk
// that runs past the end of the bytes.
void check_png_idat_fits(std::span<const unsigned char> bytes, const std::string& name);

// A PNG may hold IDAT chunks of length 0 (legal, no data). When one comes first, Debian's
// stb_image computes NULL + 0 (undefined behaviour, found by fuzz_decode). Returns the bytes with
// every empty IDAT chunk left out, or nothing when there is none (the common case: no copy).
// Bytes that are not a well-formed chunk sequence are left to the decoder to refuse.
std::optional<std::vector<unsigned char>> png_without_empty_idat(std::span<const unsigned char> bytes);

// stb's Radiance (.hdr) reader loops forever on a run-length count of 0, which is also what it
// reads past the end of a cut file (found by fuzz_decode), and it fills a cut file's missing
// pixels with black. Walks the scanlines the way stb does and throws a decode error for a zero
// count or data that ends early; returns for bytes stb itself refuses (bad header, bad runs).
void check_radiance_data(std::span<const unsigned char> bytes, const std::string& name);

// stb's binary PNM reader (P5, P6) reads the header's numbers into an int without a bound (undefined behaviour
// past INT_MAX, found by fuzz_decode): throws a decode error for such a number; call before any stb function
// sees the bytes.
void check_pnm_header(std::span<const unsigned char> bytes, const std::string& name);

// stb's binary PNM reader (P5, P6) ignores a short read: a cut file decodes, its missing pixels whatever
// the fresh allocation held. Walks the header as stb does and throws a decode error when the pixel data
// is shorter than the size says; returns for bytes that are no P5 / P6 file or whose header stb refuses.
void check_pnm_data(std::span<const unsigned char> bytes, const std::string& name);

// The same for stb's TGA reader: an uncompressed true-colour or grey TGA's rows come by a read whose
// shortfall it ignores. Call only for bytes stb reads as TGA (it tries every other format first, and TGA
// has no signature): returns for bytes that start like one of those, and for any other kind of TGA.
void check_tga_data(std::span<const unsigned char> bytes, const std::string& name);

// stb's BMP reader reads bytes past the end as zeros: a cut BMP decoded, its missing rows black. Reads the
// header's pixel-data offset, size and depth as stb does and throws a decode error when the file ends before
// the last row; returns for bytes that are no BMP or one stb refuses (RLE, JPEG or PNG inside).
void check_bmp_data(std::span<const unsigned char> bytes, const std::string& name);

// OpenCV 4.6 reads a PFM (PF / Pf) through a temporary file that it leaves in /tmp whenever the header
// or the data make it throw (fuzz_decode left hundreds), and it checks no size of ours first. Reads
// the header as OpenCV does (P, f or F, a line break, then width, height and scale, each ended by one
// whitespace byte) and throws for a malformed header, a size over `limits` or OpenCV's own
// (2^20 a side, 2^30 pixels), a scale of 0, or pixel data shorter than the size says. Returns for
// bytes that do not start like a PFM.
void check_pfm(std::span<const unsigned char> bytes, const std::string& name, const Limits& limits);

}  // namespace tf::codec_checks
