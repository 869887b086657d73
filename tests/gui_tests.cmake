# Widget tests of tilefilter-gui, run offscreen (QT_QPA_PLATFORM=offscreen): they drive the real
# main window and dialogs from tf_gui_lib — the same code as the binary — on small images, so the
# whole suite takes seconds on CI's two cores.
if(TF_HAVE_QT)
  tf_add_suite(tf_gui_tests
    SOURCES gui/gui_test_support.cpp gui/test_gui_model.cpp gui/test_main_window.cpp gui/test_batch_dialog.cpp
            gui/test_speedup_dialog.cpp gui/test_gui_cli.cpp gui/test_preview_latency.cpp
            gui/fake_gpu.cpp gui/test_fake_gpu_panel.cpp gui/test_large_document.cpp
            gui/test_large_edit.cpp gui/test_gpu_startup.cpp gui/test_photographer.cpp
    LABELS gui
    LIBS tf_gui_lib Qt6::Test)
  target_compile_definitions(tf_gui_tests PRIVATE TF_GUI_PATH="$<TARGET_FILE:tilefilter-gui>")
  add_dependencies(tf_gui_tests tilefilter-gui)
  # tf_add_suite discovers the tests at build time; this file, read by CTest after the discovered
  # list, gives each of them the offscreen platform.
  set(tf_gui_env_file ${CMAKE_CURRENT_BINARY_DIR}/tf_gui_tests_environment.cmake)
  file(WRITE ${tf_gui_env_file}
       "if(tf_gui_tests_TESTS)\n"
       "  set_tests_properties(\${tf_gui_tests_TESTS} PROPERTIES ENVIRONMENT \"QT_QPA_PLATFORM=offscreen\")\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${tf_gui_env_file})
endif()
