# Finds what TileFilter needs. Required: fmt, CLI11, nlohmann-json, stb (Debian's libstb-dev, or
# headers in TF_STB_INCLUDE_DIR for machines without the package). Optional: TurboJPEG, CUDA,
# OpenCV, Qt 6.
include(CheckLanguage)
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
find_package(CLI11 CONFIG QUIET)
if(NOT CLI11_FOUND)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
endif()

# stb: Debian builds the implementation into libstb.so; elsewhere we compile it from the headers.
find_package(PkgConfig QUIET)
set(TF_STB_INCLUDE_DIR "" CACHE PATH "Directory holding stb_image.h: compile stb into core instead of linking libstb")
if(NOT TF_STB_INCLUDE_DIR AND PkgConfig_FOUND)
  pkg_check_modules(STB QUIET IMPORTED_TARGET stb)
endif()
if(NOT TF_STB_INCLUDE_DIR AND TARGET PkgConfig::STB)
  set(TF_STB_COMPILE_IMPL OFF)
else()
  find_path(TF_STB_HEADERS stb_image.h HINTS ${TF_STB_INCLUDE_DIR} PATH_SUFFIXES stb REQUIRED)
  set(TF_STB_COMPILE_IMPL ON)
endif()

# TurboJPEG (libjpeg-turbo, Debian's libturbojpeg0-dev) decodes JPEG ~2x and encodes 7-10x faster
# per core than stb; without it stb does JPEG. Machines without the package (or with a bundled
# copy) can point TF_TURBOJPEG_INCLUDE / TF_TURBOJPEG_LIBRARY at turbojpeg.h and libturbojpeg.
option(TF_WITH_TURBOJPEG "Use libjpeg-turbo's TurboJPEG for JPEG when found (stb otherwise)" ON)
set(TF_HAVE_TURBOJPEG OFF)
if(TF_WITH_TURBOJPEG)
  if(PkgConfig_FOUND)
    pkg_check_modules(PC_TURBOJPEG QUIET libturbojpeg)
  endif()
  find_path(TF_TURBOJPEG_INCLUDE turbojpeg.h HINTS ${PC_TURBOJPEG_INCLUDE_DIRS})
  find_library(TF_TURBOJPEG_LIBRARY turbojpeg HINTS ${PC_TURBOJPEG_LIBRARY_DIRS})
  if(TF_TURBOJPEG_INCLUDE AND TF_TURBOJPEG_LIBRARY)
    add_library(TF::TurboJPEG UNKNOWN IMPORTED)
    set_target_properties(TF::TurboJPEG PROPERTIES
      IMPORTED_LOCATION ${TF_TURBOJPEG_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${TF_TURBOJPEG_INCLUDE})
    set(TF_HAVE_TURBOJPEG ON)
    message(STATUS "TileFilter: JPEG through TurboJPEG (${TF_TURBOJPEG_LIBRARY})")
  else()
    message(STATUS "TileFilter: TurboJPEG not found (libturbojpeg0-dev); JPEG through stb")
  endif()
endif()

# The streaming codecs, each optional (stb and OpenCV still read and write whole images without
# them): libtiff, libpng and libjpeg(-turbo) read and write band by band; libexif reads and edits
# EXIF; zlib and zstd compress TIFF strips/tiles and PNG's image data on every core (libtiff's and
# libpng's own codecs run on one).
option(TF_WITH_IO_LIBS "Use libtiff, libpng, libjpeg, libexif, zlib, zstd when found" ON)
set(TF_HAVE_LIBTIFF OFF)
set(TF_HAVE_LIBPNG OFF)
set(TF_HAVE_LIBJPEG OFF)
set(TF_HAVE_LIBEXIF OFF)
set(TF_HAVE_ZSTD OFF)
if(TF_WITH_IO_LIBS)
  find_package(TIFF QUIET)
  find_package(PNG QUIET)
  find_package(JPEG QUIET)
  find_package(ZLIB QUIET)
  if(TIFF_FOUND AND ZLIB_FOUND)
    set(TF_HAVE_LIBTIFF ON)
  endif()
  if(PNG_FOUND AND ZLIB_FOUND)
    set(TF_HAVE_LIBPNG ON)
  endif()
  if(JPEG_FOUND)
    set(TF_HAVE_LIBJPEG ON)
  endif()
  if(PkgConfig_FOUND)
    pkg_check_modules(LIBEXIF QUIET IMPORTED_TARGET libexif)
    pkg_check_modules(ZSTD QUIET IMPORTED_TARGET libzstd)
    if(TARGET PkgConfig::LIBEXIF)
      set(TF_HAVE_LIBEXIF ON)
    endif()
    if(TARGET PkgConfig::ZSTD)
      set(TF_HAVE_ZSTD ON)
    endif()
  endif()
  message(STATUS "TileFilter: libtiff=${TF_HAVE_LIBTIFF} libpng=${TF_HAVE_LIBPNG} libjpeg=${TF_HAVE_LIBJPEG} "
                 "libexif=${TF_HAVE_LIBEXIF} zstd=${TF_HAVE_ZSTD}")
endif()

# FFTW3 single precision (Debian libfftw3-dev) for the CPU's FFT path of large 2-D kernels
# (docs/design.md, contract 2); without it every convolution is direct.
set(TF_HAVE_FFTW OFF)
if(PkgConfig_FOUND)
  pkg_check_modules(FFTW3F QUIET IMPORTED_TARGET fftw3f)
  if(TARGET PkgConfig::FFTW3F)
    set(TF_HAVE_FFTW ON)
  endif()
endif()
message(STATUS "TileFilter: fftw3f=${TF_HAVE_FFTW}")

set(TF_HAVE_OPENCV OFF)
if(TF_WITH_OPENCV)
  # Only core, imgproc and imgcodecs: highgui would drag in another Qt. Debian's per-module -dev
  # packages ship no OpenCVConfig.cmake, so the headers and libraries are found directly.
  find_path(TF_OPENCV_INCLUDE opencv2/imgcodecs.hpp PATH_SUFFIXES opencv4)
  find_library(TF_OPENCV_CORE opencv_core)
  find_library(TF_OPENCV_IMGPROC opencv_imgproc)
  find_library(TF_OPENCV_IMGCODECS opencv_imgcodecs)
  if(TF_OPENCV_INCLUDE AND TF_OPENCV_CORE AND TF_OPENCV_IMGPROC AND TF_OPENCV_IMGCODECS)
    add_library(TF::OpenCV INTERFACE IMPORTED)
    target_include_directories(TF::OpenCV INTERFACE ${TF_OPENCV_INCLUDE})
    target_link_libraries(TF::OpenCV INTERFACE ${TF_OPENCV_IMGCODECS} ${TF_OPENCV_IMGPROC} ${TF_OPENCV_CORE})
    set(TF_HAVE_OPENCV ON)
  endif()
endif()

set(TF_HAVE_CUDA OFF)
if(TF_WITH_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Hopper (H100/H200) natively, plus PTX for anything newer.
      set(CMAKE_CUDA_ARCHITECTURES 90-real 90-virtual)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(TF_HAVE_CUDA ON)
  endif()
endif()

# cuFFT for the GPU's FFT path of large 2-D kernels (docs/design.md, contract 2). Optional: without
# it GPUs convolve every kernel directly. Linked as a shared library (the static one is hundreds of
# MB); the GPU machines' CUDA installation provides it at run time.
option(TF_WITH_CUFFT "Use cuFFT for large 2-D kernels on GPUs when the CUDA toolkit has it" ON)
set(TF_HAVE_CUFFT OFF)
if(TF_HAVE_CUDA AND TF_WITH_CUFFT AND TARGET CUDA::cufft)
  set(TF_HAVE_CUFFT ON)
endif()
message(STATUS "TileFilter: cufft=${TF_HAVE_CUFFT}")

# nvJPEG for `tilefilter batch --codec auto|gpu`: JPEGs decoded (on the hardware decoder where the
# GPU has one), filtered and encoded on the GPU. Optional: CUDA 13 ships it on the GPU machines;
# Debian's CUDA packages do not, and without it every JPEG goes through the CPU codecs.
# TF_NVJPEG_ROOT names a folder with include/nvjpeg.h and lib/libnvjpeg.so for a toolkit without it.
option(TF_WITH_NVJPEG "Decode and encode JPEGs on GPUs with nvJPEG when the CUDA toolkit has it" ON)
set(TF_NVJPEG_ROOT "" CACHE PATH "Folder with include/nvjpeg.h and lib/libnvjpeg.so (when the toolkit has none)")
set(TF_HAVE_NVJPEG OFF)
if(TF_HAVE_CUDA AND TF_WITH_NVJPEG)
  if(TARGET CUDA::nvjpeg)
    set(TF_HAVE_NVJPEG ON)
  elseif(TF_NVJPEG_ROOT)
    find_path(TF_NVJPEG_INCLUDE nvjpeg.h PATHS ${TF_NVJPEG_ROOT}/include NO_DEFAULT_PATH)
    find_library(TF_NVJPEG_LIBRARY nvjpeg PATHS ${TF_NVJPEG_ROOT}/lib NO_DEFAULT_PATH)
    if(TF_NVJPEG_INCLUDE AND TF_NVJPEG_LIBRARY)
      add_library(CUDA::nvjpeg SHARED IMPORTED)
      set_target_properties(CUDA::nvjpeg PROPERTIES IMPORTED_LOCATION ${TF_NVJPEG_LIBRARY}
                                                    INTERFACE_INCLUDE_DIRECTORIES ${TF_NVJPEG_INCLUDE})
      set(TF_HAVE_NVJPEG ON)
    endif()
  endif()
endif()
message(STATUS "TileFilter: nvjpeg=${TF_HAVE_NVJPEG}")

set(TF_HAVE_QT OFF)
if(TF_WITH_GUI)
  # QtCharts depends on the Qt6OpenGL package, but Debian bookworm puts Qt6OpenGLConfig.cmake in
  # libqt6opengl6-dev, which libqt6charts6-dev does not pull in: the runtime library is there, its
  # CMake package is not, and Charts then reports "not found". The GUI never uses OpenGL itself, so
  # when only the package file is missing, the library is described as an imported target here.
  find_package(Qt6 QUIET COMPONENTS Core Gui Widgets)
  if(Qt6_FOUND)
    find_package(Qt6OpenGL ${Qt6_VERSION} QUIET CONFIG PATHS ${Qt6_DIR}/.. NO_DEFAULT_PATH)
    if(NOT Qt6OpenGL_FOUND)
      find_library(TF_QT6_OPENGL_LIBRARY NAMES Qt6OpenGL libQt6OpenGL.so.6)
      if(TF_QT6_OPENGL_LIBRARY AND NOT TARGET Qt6::OpenGL)
        add_library(Qt6::OpenGL SHARED IMPORTED)
        set_target_properties(Qt6::OpenGL PROPERTIES
          IMPORTED_LOCATION ${TF_QT6_OPENGL_LIBRARY}
          INTERFACE_LINK_LIBRARIES "Qt6::Gui")
        add_library(Qt::OpenGL INTERFACE IMPORTED)
        set_target_properties(Qt::OpenGL PROPERTIES INTERFACE_LINK_LIBRARIES Qt6::OpenGL)
        set(Qt6OpenGL_FOUND TRUE)
        message(STATUS "TileFilter: Qt6OpenGL package missing (libqt6opengl6-dev); using ${TF_QT6_OPENGL_LIBRARY}")
      endif()
    endif()
    find_package(Qt6 QUIET COMPONENTS Widgets Charts Concurrent Test OPTIONAL_COMPONENTS Svg)
  endif()
  if(Qt6_FOUND AND Qt6Widgets_FOUND AND Qt6Charts_FOUND AND Qt6Concurrent_FOUND AND Qt6Test_FOUND)
    set(TF_HAVE_QT ON)
  elseif(Qt6Widgets_FOUND)
    message(STATUS "TileFilter: Qt 6 found without Charts/Concurrent/Test (qt6-base-dev, libqt6charts6-dev); no GUI")
  endif()
endif()

# Google Highway (Debian's libhwy-dev): the CPU backend's vector loops, dispatched at run time to
# the CPU's best target with native FMA (core/src/engine/cpu/simd_rows.cpp). Without it (the GPU machines,
# or TF_WITH_HWY=OFF) the scalar loops run: the same bits, slower.
option(TF_WITH_HWY "Use Google Highway for the CPU backend's vector loops when found" ON)
set(TF_HAVE_HWY OFF)
if(TF_WITH_HWY AND PkgConfig_FOUND)
  pkg_check_modules(HWY QUIET IMPORTED_TARGET libhwy)
  if(TARGET PkgConfig::HWY)
    set(TF_HAVE_HWY ON)
  endif()
endif()
message(STATUS "TileFilter: Highway=${TF_HAVE_HWY} ${HWY_VERSION}")

# Deterministic arithmetic (docs/design.md, contract 2): no implicit contraction of a*b+c anywhere;
# every fused multiply-add is written out.
add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off>)

# MPI (OpenMPI from Debian: libopenmpi-dev, openmpi-bin) for `mpirun -n N tilefilter batch`; only
# the CLI links it (app/cli/batch_mpi.cpp). The sanitizer and fuzz presets leave it out (OpenMPI's
# own threads and allocations are not instrumented and would drown the reports). The gpu-bundle
# build links it too; tools/device-bundle.sh leaves OpenMPI's libraries out, so the bundle runs
# with the GPU machine's own OpenMPI 4 (the same libmpi.so.40 interface) and its mpirun.
set(TF_HAVE_MPI OFF)
if(TF_WITH_MPI)
  find_package(MPI QUIET COMPONENTS C)
  if(MPI_C_FOUND)
    set(TF_HAVE_MPI ON)
    find_program(TF_MPIEXEC NAMES mpirun mpiexec HINTS ${MPIEXEC_EXECUTABLE})
  endif()
endif()

# tf_use_optional(TARGET NAME [LIBS...]): where the optional dependency NAME was found (TF_HAVE_NAME),
# TARGET's sources see TF_HAVE_NAME and TARGET links LIBS (privately).
function(tf_use_optional target name)
  if(TF_HAVE_${name})
    target_compile_definitions(${target} PRIVATE TF_HAVE_${name})
    if(ARGN)
      target_link_libraries(${target} PRIVATE ${ARGN})
    endif()
  endif()
endfunction()
