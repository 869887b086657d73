# Batch folder processing (CPU; runs everywhere, CI included). Some tests run the CLI as a child
# process and signal it; the internals (memory budget, buffer pool, temp names) are tested directly.
tf_add_suite(tf_batch_tests
  SOURCES batch/batch_fixture.cpp batch/test_batch_plan.cpp batch/test_batch_pipeline.cpp batch/test_batch_cli.cpp
          batch/test_batch_signals.cpp
  LABELS batch
  LIBS nlohmann_json::nlohmann_json)
target_include_directories(tf_batch_tests PRIVATE ${PROJECT_SOURCE_DIR}/core/src/batch)
