# GPU suite: CUDA = CPU bitwise, the multi-GPU engine, the device-memory cap, fault injection. Every
# test that needs a GPU skips with CUDA's reason where none is visible (CI), so this stays fast there.
tf_add_suite(tf_gpu_tests
  SOURCES gpu/gpu_test_support.cpp gpu/test_gpu_equivalence.cpp gpu/test_gpu_engine.cpp gpu/test_tile_plan.cpp gpu/test_launch_shape.cpp gpu/test_gpu_large_kernels.cpp
  gpu/test_gpu_soak.cpp gpu/test_gpu_naive_reference.cpp gpu/test_gpu_fft.cpp gpu/test_gpu_jpeg.cpp gpu/test_gpu_device_image.cpp
  LABELS gpu)
if(TF_HAVE_CUDA)
  # The tile planner and the launch shapes are internal to kernels/ (pure C++).
  target_include_directories(tf_gpu_tests PRIVATE ${PROJECT_SOURCE_DIR}/kernels/src)
  target_link_libraries(tf_gpu_tests PRIVATE CUDA::cudart_static)
else()
  set_source_files_properties(gpu/test_gpu_soak.cpp gpu/test_gpu_jpeg.cpp PROPERTIES HEADER_FILE_ONLY ON)
endif()

# Probe, not a test: nvJPEG's start-up on every GPU, one after another, in threads and in processes.
if(TF_HAVE_NVJPEG)
  add_executable(tf_nvjpeg_startup bench/nvjpeg_startup.cpp)
  target_link_libraries(tf_nvjpeg_startup PRIVATE CUDA::cudart_static CUDA::nvjpeg)
endif()

# Probe, not a test: whether the GPU codec lanes of one process slow each other, files in memory.
if(TF_HAVE_NVJPEG)
  add_executable(tf_lane_probe bench/lane_probe.cpp)
  target_link_libraries(tf_lane_probe PRIVATE tf_core tf_kernels fmt::fmt)
endif()
