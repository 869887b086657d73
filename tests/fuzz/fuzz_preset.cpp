// libFuzzer: preset JSON files as the GUI reads them (app/gui/preset_io.cpp), then the chain they
// describe parsed by core.
#include <QByteArray>

#include "filter_entry.hpp"
#include "preset_io.hpp"
#include "tilefilter/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  try {
    const auto preset =
        tf::gui::preset_from_json(QByteArray(reinterpret_cast<const char*>(data), static_cast<int>(size)), "fuzz.json");
    (void)tf::parse_chain(tf::gui::to_specs(preset.chain.filters));
  } catch (const tf::Error&) {
  }
  return 0;
}
