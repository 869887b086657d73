# CPU suites: run everywhere, CI included.
tf_add_suite(tf_core_tests
  SOURCES core/test_border_tiling.cpp core/test_filters.cpp core/test_equivalence.cpp core/test_codec.cpp core/test_cli.cpp
  LABELS core)
if(TF_HAVE_OPENCV)
  tf_add_suite(tf_oracle_tests SOURCES core/test_opencv_oracle.cpp LABELS core oracle)
endif()
