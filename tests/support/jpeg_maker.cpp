#include "jpeg_maker.hpp"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#ifdef TF_HAVE_LIBJPEG
// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>
#endif

namespace tf::test {

#ifdef TF_HAVE_LIBJPEG

std::vector<unsigned char> libjpeg_encode(const ImageView& img, const JpegShape& shape) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);  // test input only: libjpeg's default handler exits on error
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &out, &size);
  c.image_width = static_cast<JDIMENSION>(img.width);
  c.image_height = static_cast<JDIMENSION>(img.height);
  c.input_components = img.format.channels;
  c.in_color_space = shape.cmyk ? JCS_CMYK : img.format.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  if (shape.cmyk) jpeg_set_colorspace(&c, JCS_YCCK);
  jpeg_set_quality(&c, shape.quality, TRUE);
  if (img.format.channels == 3 && !shape.cmyk) {
    c.comp_info[0].h_samp_factor = shape.h_samp;
    c.comp_info[0].v_samp_factor = shape.v_samp;
  }
  if (shape.progressive) jpeg_simple_progression(&c);
  jpeg_start_compress(&c, TRUE);
  for (int y = 0; y < img.height; ++y) {
    JSAMPROW row = reinterpret_cast<JSAMPROW>(img.row(y));
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::vector<unsigned char> bytes(out, out + size);
  std::free(out);
  return bytes;
}

#else

std::vector<unsigned char> libjpeg_encode(const ImageView&, const JpegShape&) {
  throw std::runtime_error("this build has no libjpeg");
}

#endif

}  // namespace tf::test
