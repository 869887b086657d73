# Batch folder processing (CPU; runs everywhere, CI included). Some tests run the CLI as a child
# process and signal it; the internals (memory budget, buffer pool, temp names) are tested directly.
# test_batch_mpi runs the CLI under mpirun (2-3 ranks on this host) when MPI was built.
tf_add_suite(tf_batch_tests
  SOURCES batch/batch_fixture.cpp batch/test_batch_plan.cpp batch/test_batch_pipeline.cpp batch/test_batch_cli.cpp
          batch/test_batch_signals.cpp batch/test_batch_mpi.cpp
  LABELS batch
  LIBS nlohmann_json::nlohmann_json)
target_include_directories(tf_batch_tests PRIVATE ${PROJECT_SOURCE_DIR}/core/src/batch)
if(TF_HAVE_MPI)
  target_compile_definitions(tf_batch_tests PRIVATE TF_HAVE_MPI)
  if(TF_MPIEXEC)
    target_compile_definitions(tf_batch_tests PRIVATE TF_MPIEXEC_PATH="${TF_MPIEXEC}")
  endif()
endif()
