// `tilefilter`: filter images with convolution kernels on every GPU (or the CPU) at once.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/engine/startup.hpp"
#include "tilefilter/io/codec.hpp"
#include "tilefilter/util/error.hpp"
#include "tilefilter/util/nearest_name.hpp"

#ifndef TF_VERSION
#define TF_VERSION "0.0.0"
#endif

namespace tf::cli {
int& command_exit_code() {
  static int code = exit_status(ExitCode::Ok);
  return code;
}
}  // namespace tf::cli

namespace {

// The long names of a command's options, "--filter" and so on.
std::vector<std::string> option_names(const CLI::App& command) {
  std::vector<std::string> names;
  for (const CLI::Option* o : command.get_options())
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
  return names;
}

// What a mistyped word was probably meant to be: the subcommand, or an option of the subcommand.
std::string suggestion(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> commands;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    commands.push_back(sub->get_name());
  if (argc < 2 || argv[1][0] == '-') return {};
  const std::string word = argv[1];
  const auto known = std::find(commands.begin(), commands.end(), word);
  if (known == commands.end()) {
    // An image or a folder where the command goes, as `convert IN OUT` and `vips` take them: the command that
    // filters it. A verb people type for one: the command that does it.
    std::error_code ec;
    std::string hint;
    if (std::filesystem::is_directory(word, ec))
      hint = fmt::format("; to filter the images of a folder: tilefilter batch {} OUT_DIR --filter SPEC", word);
    else if (tf::is_image_extension(word) || std::filesystem::is_regular_file(word, ec))
      hint = fmt::format("; to filter an image: tilefilter apply {} OUT --filter SPEC", word);
    else if (word == "filter" || word == "convert")
      hint = "; did you mean 'apply' (filters one image), 'batch' (a folder) or 'filters' (lists them)?";
    else hint = tf::did_you_mean(word, commands);
    return fmt::format("'{}' is not a tilefilter command{} (commands: {})", word, hint, fmt::join(commands, ", "));
  }
  const CLI::App* sub = app.get_subcommand(word);
  const std::vector<std::string> names = option_names(*sub);
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") continue;
    arg = arg.substr(0, arg.find('='));
    if (std::find(names.begin(), names.end(), arg) == names.end())
      return fmt::format("{}: unknown option '{}'{}", word, arg, tf::did_you_mean(arg, names));
  }
  return {};
}

// CLI11's message with "tilefilter: " on every line, what the user probably meant, and where the help is.
int usage_error(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  const std::string hint = suggestion(app, argc, argv);
  if (!hint.empty()) {
    std::fprintf(stderr, "tilefilter: %s\n", hint.c_str());
  } else {
    std::istringstream lines(e.what());
    for (std::string line; std::getline(lines, line);)
      if (!line.empty()) std::fprintf(stderr, "tilefilter: %s\n", line.c_str());
  }
  const bool command = argc >= 2 && argv[1][0] != '-' && hint.find("not a tilefilter command") == std::string::npos;
  std::fprintf(stderr, "tilefilter: see 'tilefilter %s--help'\n", command ? (std::string(argv[1]) + " ").c_str() : "");
  return tf::cli::exit_status(tf::cli::ExitCode::Usage);
}

}  // namespace

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
    return usage_error(app, e, argc, argv);
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
