// The C API's options (tf_options_init) and filtering in memory: host images (tf_filter) and images
// already on a GPU (tf_filter_device).
#include "capi_internal.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>

#include "tilefilter/cuda_device_image.hpp"
#include "tilefilter/engine/device_selection.hpp"
#include "tilefilter/engine/job_settings.hpp"

namespace tf::capi {

Format format_of(int channels, int type) {
  require(channels == 1 || channels == 3 || channels == 4,
          fmt::format("images have 1, 3 or 4 channels, not {}", channels));
  require(type >= TF_U8 && type <= TF_F32, fmt::format("unknown pixel type {} (u8 = 0, u16 = 1, f32 = 2)", type));
  return {static_cast<PixelType>(type), channels};
}

ImageView view_of(const tf_image* image, const char* what) {
  require(image != nullptr, fmt::format("no {} image", what));
  const Format format = format_of(image->channels, image->type);
  require(image->width > 0 && image->height > 0,
          fmt::format("the {} image is {}x{}: both sides must be positive", what, image->width, image->height));
  require(image->data != nullptr, fmt::format("the {} image has no pixels", what));
  ImageView v{static_cast<std::byte*>(image->data), image->pitch, image->width, image->height, format};
  require(v.pitch >= v.row_bytes(),
          fmt::format("the {} image's row pitch {} is smaller than a row ({} bytes)", what, v.pitch, v.row_bytes()));
  return v;
}

namespace {

// `in_place`: the output may also be the input itself (same data and pitch).
void check_pair(const ImageView& src, const ImageView& dst, bool in_place) {
  require(src.width == dst.width && src.height == dst.height && src.format == dst.format,
          fmt::format("the output ({}x{} {}) must have the input's size and format ({}x{} {})", dst.width, dst.height,
                      to_string(dst.format), src.width, src.height, to_string(src.format)));
  const bool same = in_place && same_view(src, dst);
  require(same || !overlaps(src, dst), in_place ? "the output overlaps the input without being it (same data and pitch)"
                                                : "the output overlaps the input");
}

JobSettings settings_of(const tf_options* o) {
  JobSettings s;
  if (!o) return s;
  require(o->struct_size >= sizeof(tf_options), "tf_options: call tf_options_init first");
  if (o->border) s.border = o->border;
  s.border_value = o->border_value;
  s.tile = {o->tile_width, o->tile_height};
  if (o->streams != 0) s.streams = o->streams;  // 0 = automatic
  s.exact = o->exact != 0;
  return s;
}

}  // namespace

JobOptions job_of(const tf_chain& chain, const tf_options* o) { return make_job_options(settings_of(o), chain.border); }

}  // namespace tf::capi

using namespace tf;
using namespace tf::capi;

extern "C" {

void tf_options_init(tf_options* o) {
  if (!o) return;
  *o = tf_options{};
  o->struct_size = sizeof(tf_options);
}

tf_status tf_filter(const tf_chain* chain, const tf_image* src, const tf_image* dst, const tf_options* options) {
  return guarded([&] {
    require(chain != nullptr, "no chain given");
    const ImageView s = view_of(src, "input"), d = view_of(dst, "output");
    check_pair(s, d, false);
    const JobOptions job = job_of(*chain, options);
    auto lease = device_pool().take(devices_of(options), memory_of(options));
    run_filter(s, d, chain->chain, lease.selection->devices, job);
  });
}

tf_status tf_filter_device(const tf_chain* chain, const tf_image* src, const tf_image* dst, int device, void* stream,
                           const tf_options* options) {
  return guarded([&] {
    require(chain != nullptr, "no chain given");
    const ImageView s = view_of(src, "input"), d = view_of(dst, "output");
    check_pair(s, d, true);
    const JobOptions job = job_of(*chain, options);
    const std::vector<int> gpus =
        device_image_gpus(parse_device_spec(devices_of(options)), chain->chain, s.format,
                          static_cast<long long>(s.width) * s.height, [] { return cuda::device_ordinals(); });
    cuda::filter_device_image(s, d, chain->chain, job.border, device, stream, gpus);
  });
}

}  // extern "C"
