// Reading and writing images a band of rows at a time, so that an image never has to fit in memory.
// One reader/writer per file format behind these two interfaces (core/src/io/format_*.cpp): libtiff,
// libpng and libjpeg(-turbo) stream; stb and OpenCV's imgcodecs serve the other formats whole.
// decode_file / encode_file (codec.hpp) are the whole-image special case of the same calls.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "tilefilter/engine/tiling.hpp"
#include "tilefilter/image/image.hpp"

namespace tf {

struct Limits {
  long long max_pixels = 1LL << 30;         // 1 gigapixel: images decoded whole (a decompression-bomb guard)
  long long max_stream_pixels = 1LL << 40;  // 1 terapixel: images read band by band (TIFF, PNG, JPEG)
  std::size_t max_file_bytes = 4ULL << 30;  // 4 GiB, for files read into memory whole
};

// What travels from input to output unless --strip: EXIF, ICC profile, XMP, and the orientation
// (EXIF/TIFF tag 274; 1 = pixels as stored). Pixels are never rotated implicitly, so the tag copied
// to the output keeps pixels and tag consistent; --autorotate rotates the pixels and writes 1.
struct Metadata {
  std::vector<unsigned char> exif;  // a TIFF-structured EXIF block ("II*\0" or "MM\0*"), as in JPEG APP1
  std::vector<unsigned char> icc;   // ICC profile
  std::string xmp;                  // XMP packet
  int orientation = 1;              // 1..8
  bool empty() const { return exif.empty() && icc.empty() && xmp.empty() && orientation == 1; }
};

// How a reader can hand out rows: Whole = decoded at open (the format cannot stream);
// Sequential = bands in order, top to bottom (PNG, JPEG); Random = any band (TIFF strips, tiles).
enum class RowAccess { Whole, Sequential, Random };

struct LevelSize {
  int width = 0, height = 0;
  bool operator==(const LevelSize&) const = default;
};

// JPEG chroma subsampling: FromInput keeps what the input had (a JPEG's, or a JPEG-compressed TIFF's;
// for any other input 4:4:4 from quality 90, 4:2:0 below, as libjpeg-turbo's tools choose).
enum class ChromaSubsampling { FromInput, S444, S422, S420 };
// "444", "422", "420" (or "4:4:4", ...; "input" = FromInput). Throws tf::Error (InvalidArgument) quoting `text`.
ChromaSubsampling parse_subsampling(const std::string& text);
const char* to_string(ChromaSubsampling s);  // "input", "4:4:4", "4:2:2", "4:2:0"

// How a JPEG input was coded (a JPEG file, or the JPEG streams of a JPEG-compressed TIFF).
struct JpegCoding {
  int quality = 0;  // estimated from the luminance and chrominance quantisation tables, 1..100; 0 = not a JPEG
  ChromaSubsampling subsampling = ChromaSubsampling::FromInput;  // FromInput = not known (gray, or not a JPEG)
  bool rgb = false;                                              // TIFF: stored as RGB (photometric RGB), not YCbCr
};

// The libjpeg quality (1..100) whose scaled standard tables are nearest to `luma` (and `chroma`, when
// given: 64 values each, in natural order), as ImageMagick estimates a JPEG's quality. Exact for files
// written with libjpeg's tables (libjpeg-turbo, ImageMagick, GIMP, cameras that use the standard tables).
int estimate_jpeg_quality(const unsigned short* luma, const unsigned short* chroma);

struct ImageInfo {
  int width = 0, height = 0;
  Format format;            // what read_rows delivers: u8/u16/f32 x 1, 3 or 4 channels
  int stored_channels = 0;  // channels in the file: 2 (gray+alpha) is delivered as RGBA
  std::string codec;        // "libtiff", "libpng", "libjpeg", "stb", "opencv"
  RowAccess access = RowAccess::Whole;
  std::string note;         // one line for the user, e.g. "first page of 3 read"; empty if none
  std::string compression;  // as stored, e.g. "deflate" (TIFF), "" when the format has one kind
  Metadata metadata;
  JpegCoding jpeg;  // a JPEG's (or a JPEG-compressed TIFF's) quality and subsampling
  // Reduced-resolution versions of the image the reader delivers cheaply, largest first, each
  // smaller than the one before (open_level(i) reads levels[i]): TIFF pyramid levels (pages marked
  // reduced-resolution that follow the first, or its SubIFDs) in the same pixel format as the image
  // (others are left out), JPEG DCT scaling (1/2, 1/4, 1/8). Empty for the other formats.
  std::vector<LevelSize> levels;
};

class ImageReader {
 public:
  virtual ~ImageReader() = default;
  const ImageInfo& info() const { return info_; }
  // Decodes rows [y, y + rows.height) into `rows` (rows.width == info().width, rows.format ==
  // info().format). Sequential readers need y == the number of rows read so far. Throws tf::Error
  // (Decode) naming the file and the reason, e.g. a truncated strip.
  virtual void read_rows(int y, const ImageView& rows) = 0;
  // A new reader of info().levels[index], independent of this one (its own file handles and
  // position); its info() has the level's size and this image's format. Throws tf::Error naming
  // the file when the level cannot be read.
  virtual std::unique_ptr<ImageReader> open_level(int index) const;

 protected:
  ImageInfo info_;
};

// JPEG and WebP quality when neither the user nor the input says (the input is not a JPEG).
constexpr int kDefaultQuality = 92;

struct WriteOptions {
  // JPEG, WebP: 1..100; 0 = the input's (keep_input_compression: a JPEG input's estimated quality),
  // else kDefaultQuality.
  int quality = 0;
  // JPEG (and JPEG in TIFF): FromInput = the input's (keep_input_compression), else the quality's rule.
  ChromaSubsampling subsampling = ChromaSubsampling::FromInput;
  bool jpeg_rgb = false;  // JPEG in TIFF: store RGB (photometric RGB), as the input did
  // TIFF: none, lzw, deflate, zstd, packbits, jpeg; "" = deflate (or the input's: keep_input_compression).
  std::string compression;
  // The compression is the input's, not asked for: where the output cannot hold it (JPEG for anything
  // but 8-bit gray or RGB, a method this writer does not write) the writer takes deflate and says so
  // in note(), instead of refusing.
  bool compression_from_input = false;
  int level = -1;           // deflate / zstd / PNG zlib level, JPEG-in-TIFF quality; -1 = the default
  bool bigtiff = false;     // TIFF: BigTIFF even when classic TIFF would do (automatic past 4 GB)
  TileSize tiff_tile{};     // TIFF: tiles of this size (multiples of 16); 0 x 0 = strips
  bool gray_alpha = false;  // write 4-channel rows as gray+alpha (the input was gray+alpha)
  bool strip = false;       // write no metadata
  int threads = 0;          // codec worker threads; 0 = one per core
  // TIFF: reduced-resolution pages after the image, each half the one before, down to one tile
  // (a pyramid; tiled, 256 x 256 unless tiff_tile says otherwise).
  bool tiff_pyramid = false;
};

class ImageWriter {
 public:
  // Without finish(), the temporary file is removed and the target is untouched.
  virtual ~ImageWriter() = default;
  // Appends rows top to bottom (rows.width == width, rows.format == format of create_image).
  virtual void write_rows(const ImageView& rows) = 0;
  // Completes the file and renames it onto the target path (temp + rename: all or nothing).
  virtual void finish() = 0;
  // One line for the user on what the writer chose differently from what it was asked, e.g. "the
  // input's jpeg compression cannot hold RGB f32 samples: written with deflate"; empty if nothing.
  virtual std::string note() const { return {}; }
};

// Where `input` was a TIFF, `options` keeps its compression unless one was asked for (marked
// compression_from_input, so a TIFF writer that cannot hold it falls back; other formats ignore it).
// Where it was a JPEG (or a JPEG-compressed TIFF), a quality or subsampling left to the input
// (0, FromInput) becomes the input's, and a TIFF's RGB storage is kept.
void keep_input_compression(WriteOptions& options, const ImageInfo& input);
void keep_input_coding(WriteOptions& options, const JpegCoding& input);  // the JPEG part of it

// What a JPEG writer writes for `options` and `channels` (1 = gray): the quality (kDefaultQuality
// for 0) and the subsampling (gray: S444; FromInput: 4:4:4 from quality 90, else 4:2:0).
int jpeg_quality(const WriteOptions& options);
ChromaSubsampling jpeg_subsampling(const WriteOptions& options, int channels);

// `--compression` as a user writes it into `options`: METHOD[:LEVEL] for TIFF (jpeg takes a
// quality 1-100), or a zlib level 0-9 alone (PNG). Throws tf::Error (InvalidArgument) quoting `text`.
void parse_compression(const std::string& text, WriteOptions& options);

// Opens `path` with the reader its bytes call for (not its extension). Size checks happen here,
// before any pixel memory: formats read Whole against limits.max_pixels, streaming ones against
// limits.max_stream_pixels. Throws tf::Error naming the file and the reason.
std::unique_ptr<ImageReader> open_image(const std::string& path, const Limits& limits = {});

// A writer for `path` (format from the extension). Throws tf::Error (InvalidArgument) when the
// format cannot hold `format` — can_encode() says the same beforehand.
std::unique_ptr<ImageWriter> create_image(const std::string& path, int width, int height, Format format,
                                          const Metadata& metadata, const WriteOptions& options = {});

// True when create_image(path, ...) writes rows as they come, without holding the whole image.
bool writer_streams(const std::string& path);

// Reads every row of an opened image (the whole-image special case of read_rows).
Image read_whole(ImageReader& reader, const PixelAllocator& alloc = default_allocator());

}  // namespace tf
