# CPU suites: run everywhere, CI included.
tf_add_suite(tf_core_tests
  SOURCES core/test_border_tiling.cpp core/test_filters.cpp core/test_equivalence.cpp core/test_codec.cpp core/test_cli.cpp
          core/test_startup.cpp
  LABELS core)
target_include_directories(tf_core_tests PRIVATE ${PROJECT_SOURCE_DIR}/core/src)  # io/codec_opencv.hpp
# The I/O layer: each format's reader and writer, and streaming apply.
tf_add_suite(tf_io_tests
  SOURCES core/test_io_tiff.cpp core/test_io_png_jpeg.cpp core/test_io_stream.cpp core/test_overview.cpp
          core/test_jpeg_coding.cpp
  LABELS core io)
target_include_directories(tf_io_tests PRIVATE ${PROJECT_SOURCE_DIR}/core/src)
foreach(lib LIBTIFF LIBPNG LIBJPEG LIBEXIF ZSTD TURBOJPEG)
  if(TF_HAVE_${lib})
    target_compile_definitions(tf_io_tests PRIVATE TF_HAVE_${lib})
  endif()
endforeach()
if(TF_HAVE_LIBTIFF)
  target_link_libraries(tf_io_tests PRIVATE TIFF::TIFF)
endif()
if(TF_HAVE_LIBPNG)
  target_link_libraries(tf_io_tests PRIVATE PNG::PNG)
endif()
if(TF_HAVE_LIBJPEG)
  target_link_libraries(tf_io_tests PRIVATE JPEG::JPEG)
endif()
if(TF_HAVE_TURBOJPEG)
  target_link_libraries(tf_io_tests PRIVATE TF::TurboJPEG)
endif()

# The TIFF variants (and PNG/JPEG oddities) other tools write, each read, written or refused as
# docs/formats.md says: made afresh by vips, ImageMagick, libtiff's tools, OpenCV and exiftool where they
# are installed (cmake/tf.sh installs them), skipped with the reason where not.
if(TF_HAVE_LIBTIFF)
  add_test(NAME Io.TiffVariants
           COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/core/tiff_variants.py $<TARGET_FILE:tilefilter>)
  set_tests_properties(Io.TiffVariants PROPERTIES LABELS "core;io" SKIP_RETURN_CODE 77 TIMEOUT 180)
endif()

if(TF_HAVE_TURBOJPEG)
  # test_codec.cpp writes a CMYK JPEG through TurboJPEG itself (nothing else makes one).
  target_compile_definitions(tf_core_tests PRIVATE TF_HAVE_TURBOJPEG)
  target_link_libraries(tf_core_tests PRIVATE TF::TurboJPEG)
endif()
tf_add_suite(tf_reference_tests SOURCES core/test_naive_reference.cpp core/test_large_kernels.cpp core/test_cpu_simd.cpp
  LABELS core reference)  # = naive reference, bitwise; vector loops = scalar loops, bitwise
if(TF_HAVE_HWY)
  target_compile_definitions(tf_reference_tests PRIVATE TF_HAVE_HWY=1)
endif()
tf_add_suite(tf_fft_tests SOURCES core/test_fft.cpp LABELS core reference)  # the FFT path: float64 reference, a bound
if(TF_HAVE_OPENCV)
  tf_add_suite(tf_oracle_tests SOURCES core/test_opencv_oracle.cpp LABELS core oracle)
endif()

# Benchmark, not a test: CPU backend vs OpenCV GaussianBlur in one process.
if(TF_HAVE_OPENCV)
  add_executable(tf_cpu_bench bench/cpu_vs_opencv.cpp)
  target_link_libraries(tf_cpu_bench PRIVATE tf_core TF::OpenCV fmt::fmt)
endif()

# Benchmark, not a test: stb vs TurboJPEG decode and encode of one JPEG, one thread, same process.
add_executable(tf_jpeg_bench bench/jpeg_codecs.cpp)
target_link_libraries(tf_jpeg_bench PRIVATE tf_core fmt::fmt)
