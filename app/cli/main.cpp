// `tilefilter`: filter images with convolution kernels on every GPU (or the CPU) at once.
#include <cstdio>
#include <cstdlib>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/engine/startup.hpp"
#include "tilefilter/util/error.hpp"

#ifndef TF_VERSION
#define TF_VERSION "0.0.0"
#endif

namespace tf::cli {
int& command_exit_code() {
  static int code = exit_status(ExitCode::Ok);
  return code;
}
}  // namespace tf::cli

int main(int argc, char** argv) {
  tf::cuda::install_backend();
  tf::keep_gpu_resources_until_exit();  // this process ends with _Exit once its outputs are written
  CLI::App app{"TileFilter: convolution filters on every GPU of the machine (or the CPU), tiled with halos"};
  app.set_version_flag("--version", std::string("tilefilter ") + TF_VERSION);
  app.require_subcommand(1);
  tf::cli::add_apply(app);
  tf::cli::add_filters(app);
  tf::cli::add_devices(app);
  tf::cli::add_generate(app);
  tf::cli::add_batch(app);
  tf::cli::add_bench(app);
  tf::cli::add_startup(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return tf::cli::exit_status(tf::cli::ExitCode::Usage);
  } catch (const tf::Error& e) {
    std::fprintf(stderr, "tilefilter: %s\n", e.what());
    using tf::cli::ExitCode;
    return tf::cli::exit_status(e.kind() == tf::ErrorKind::InvalidArgument ? ExitCode::Usage : ExitCode::Failed);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tilefilter: %s\n", e.what());
    return tf::cli::exit_status(tf::cli::ExitCode::Failed);
  }
  const int code = tf::cli::command_exit_code();
  // Every output is written and renamed by now. A process that started GPUs leaves without tearing
  // them down one by one (contexts, pinned buffers, codec lanes that may still be coming up for a
  // batch the CPU codecs finished): the driver frees them as the process ends.
  if (tf::cuda::gpus_started()) {
    std::fflush(nullptr);
    std::_Exit(code);
  }
  return code;
}
