// Device-resident images filtered where they live (tilefilter/cuda_device_image.hpp): the image is
// one tile (or one band per GPU), planned by plan_tile and run by run_chain exactly as a CUDA lane
// runs a tile, so the bits are the CPU's. Buffers, taps, the last plan and its maps are kept per GPU in
// slots reused from call to call; a slot's last work is fenced by an event that its next user's stream
// waits for.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "chain_runner.hpp"
#include "cuda/cuda_util.hpp"
#include "tile_plan.hpp"
#include "tilefilter/cuda_device_image.hpp"
#include "tilefilter/engine/backend_rules.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cuda {

namespace {

// What plan_tile reads of a call: each stage's convolutions' footprints, the tile, the image's size
// and its border mode. Calls that repeat one filter on one image size repeat it, and planning an
// 8192-row image takes 13-22 us (16 404 map entries; one H200's host, 2026-11-28), a third of the
// host's time in a call before its kernel starts.
struct PlanKey {
  std::vector<std::vector<Halo>> footprints;  // each stage's convolutions'
  Rect in, out;
  int width = 0, height = 0;
  BorderMode mode = BorderMode::Reflect101;
  bool operator==(const PlanKey&) const = default;
};

PlanKey plan_key(const Chain& chain, const Tile& tile, int width, int height, BorderMode mode) {
  PlanKey key{{}, tile.in, tile.out, width, height, mode};
  for (const Stage& stage : chain) {
    auto& stage_footprints = key.footprints.emplace_back();
    for (const Convolution& conv : stage.convs) stage_footprints.push_back(conv.halo());
  }
  return key;
}

// One GPU's state for one call at a time: its buffers, the chain's taps, the last plan and whether
// its maps are on the device, a stream for bands filtered away from the caller's GPU, and the event
// that ends the slot's last work.
struct Slot {
  explicit Slot(int d) : device(d), stream(d), done(d, Event::Timing::Untimed) {}
  int device;
  Stream stream;
  Event done;
  bool fenced = false;  // `done` has been recorded
  LaneBuffers buffers;
  DeviceTaps taps;
  std::optional<PlanKey> planned;  // what `plan` was made for
  TilePlan plan;
  bool maps_uploaded = false;  // buffers.maps holds plan.maps
  int multiprocessors = 0;
};

class SlotPool {
 public:
  std::unique_ptr<Slot> take(int device) {
    {
      std::lock_guard lock(mutex_);
      for (auto it = free_.begin(); it != free_.end(); ++it)
        if ((*it)->device == device) {
          auto slot = std::move(*it);
          free_.erase(it);
          return slot;
        }
    }
    ScopedDevice on(device);
    auto slot = std::make_unique<Slot>(device);
    TF_CUDA_CHECK(cudaDeviceGetAttribute(&slot->multiprocessors, cudaDevAttrMultiProcessorCount, device));
    return slot;
  }
  void give(std::unique_ptr<Slot> slot) {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(slot));
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<Slot>> free_;
};

// Never destroyed: slots may be returned while the process exits, after the CUDA runtime is gone.
SlotPool& slots() {
  static auto* pool = new SlotPool;
  return *pool;
}

// A slot held for one call and given back at the end, fenced or not.
struct HeldSlot {
  explicit HeldSlot(int device) : slot(slots().take(device)) {}
  ~HeldSlot() {
    if (slot) slots().give(std::move(slot));
  }
  HeldSlot(const HeldSlot&) = delete;
  HeldSlot& operator=(const HeldSlot&) = delete;
  Slot* operator->() const { return slot.get(); }
  std::unique_ptr<Slot> slot;
};

// The GPUs a call's source and destination lie on, asked of the driver once a call.
struct Where {
  int src = -1, dst = -1;
};

void enable_peer_access(int from, int to) {
  static std::mutex mutex;
  static std::vector<std::pair<int, int>> done;
  std::lock_guard lock(mutex);
  if (std::find(done.begin(), done.end(), std::pair{from, to}) != done.end()) return;
  done.emplace_back(from, to);
  int can = 0;
  if (cudaDeviceCanAccessPeer(&can, from, to) != cudaSuccess || !can) return;
  ScopedDevice on(from);
  if (cudaDeviceEnablePeerAccess(to, 0) != cudaSuccess) cudaGetLastError();  // already on, or no peer path
}

// Runs `tile` of `chain` from `src` (on any GPU) on the slot's GPU, on `stream` (of that GPU), into
// dst's tile.out. Copies go through unified addressing (cudaMemcpyDefault): on one GPU device to
// device, between GPUs peer to peer. `dst` may overlap `src` only on this one stream (no other GPU
// reads `src` meanwhile).
void run_tile(Slot& slot, const ImageView& src, const ImageView& dst, Where where, const Chain& chain,
              const Border& border, const Tile& tile, cudaStream_t stream) {
  const std::size_t ps = src.format.pixel_bytes();
  PlanKey key = plan_key(chain, tile, src.width, src.height, border.mode);
  if (slot.planned != key) {
    slot.planned.reset();
    slot.maps_uploaded = false;
    slot.plan = plan_tile(chain, tile, src.width, src.height, border.mode);
    slot.planned = std::move(key);
  }
  const TilePlan& plan = slot.plan;
  slot.taps.upload(chain, slot.device, stream);
  // The first stage reads the caller's image where it lies when the plan's maps can index it: one run
  // of rows and one of columns at the start of the compact buffer (every whole image, whatever its
  // border, and the bands of images without wrap borders), on this GPU, aligned for the kernels' loads.
  // Otherwise the pixels the tile needs are copied into the upload buffer.
  const bool one_run =
      plan.columns.size() == 1 && plan.rows.size() == 1 && plan.columns[0].compact == 0 && plan.rows[0].compact == 0;
  const std::byte* first =
      one_run ? src.row(plan.rows[0].source) + static_cast<std::size_t>(plan.columns[0].source) * ps : nullptr;
  const bool read_in_place =
      one_run && where.src == slot.device && is_aligned(first, src.pitch, read_alignment(src.format));
  LaneNeeds needs = lane_needs(chain, plan, src.format);
  if (read_in_place) needs.upload = 0;
  slot.buffers.reserve(needs, slot.device);
  if (!slot.maps_uploaded) {
    // A pageable copy returns once its bytes are staged; the next call may plan anew at once.
    TF_CUDA_CHECK(cudaMemcpyAsync(slot.buffers.maps.data(), plan.maps.data(), plan.maps.size() * sizeof(int),
                                  cudaMemcpyHostToDevice, stream));
    slot.maps_uploaded = true;
  }
  DeviceRegion input;
  if (read_in_place) {
    input = {const_cast<std::byte*>(first), src.pitch};
  } else {
    const std::size_t pitch = device_pitch(plan.upload_width, ps);
    auto* d_up = slot.buffers.upload.as<std::byte>();
    for (const auto& yr : plan.rows)
      for (const auto& xr : plan.columns)
        TF_CUDA_CHECK(cudaMemcpy2DAsync(d_up + yr.compact * pitch + xr.compact * ps, pitch,
                                        src.row(yr.source) + static_cast<std::size_t>(xr.source) * ps, src.pitch,
                                        static_cast<std::size_t>(xr.length) * ps, yr.length, cudaMemcpyDefault,
                                        stream));
    input = {d_up, pitch};
  }
  // The last stage writes into the caller's image when it lives on this GPU, aligned for the kernels'
  // stores, and does not overwrite pixels that its own launch still reads (docs/design.md, contract 2:
  // in place gives the bits of out of place). Otherwise it writes a stage buffer, copied out after
  // the chain: the one intermediate an image filtered in place by a single fused launch needs.
  const Rect& o = tile.out;
  std::byte* const target = dst.row(o.y) + static_cast<std::size_t>(o.x) * ps;
  const bool reads_target =
      read_in_place && overlaps(src, dst) && !output_may_alias_input(chain, plan, src.format, slot.multiprocessors);
  const bool write_in_place =
      where.dst == slot.device && is_aligned(target, dst.pitch, write_alignment(dst.format)) && !reads_target;
  const DeviceRegion out =
      run_chain(chain, plan, slot.taps, slot.buffers, input, src.format, border, slot.multiprocessors, stream, nullptr,
                nullptr, write_in_place ? DeviceRegion{target, dst.pitch} : DeviceRegion{});
  if (write_in_place) return;
  TF_CUDA_CHECK(cudaMemcpy2DAsync(target, dst.pitch, out.data, out.pitch, static_cast<std::size_t>(o.width) * ps,
                                  o.height, cudaMemcpyDefault, stream));
}

// The whole image as one tile on `device`, on the caller's stream.
void filter_on_one(const ImageView& src, const ImageView& dst, Where where, const Chain& chain, const Border& border,
                   int device, cudaStream_t stream) {
  ScopedDevice on(device);
  HeldSlot slot(device);
  if (slot->fenced) TF_CUDA_CHECK(cudaStreamWaitEvent(stream, slot->done.get(), 0));
  const Halo h = chain_halo(chain);
  Tile tile{0, {0, 0, src.width, src.height}, {}};
  tile.in = {-h.left, -h.top, src.width + h.left + h.right, src.height + h.top + h.bottom};
  try {
    run_tile(*slot.slot, src, dst, where, chain, border, tile, stream);
  } catch (...) {
    slot->maps_uploaded = false;  // what the device holds is unknown now
    throw;
  }
  TF_CUDA_CHECK(cudaEventRecord(slot->done.get(), stream));
  slot->fenced = true;
}

// Bands of rows over `ordinals`; the band of the caller's own GPU runs on the caller's stream.
void filter_split(const ImageView& src, const ImageView& dst, Where where, const Chain& chain, const Border& border,
                  int device, cudaStream_t stream, const std::vector<int>& ordinals) {
  const int n = static_cast<int>(ordinals.size());
  const int band_rows = (src.height + n - 1) / n;
  const auto tiles = plan_tiles(src.width, src.height, chain_halo(chain), {src.width, band_rows});
  // A band whose chain cannot synthesize its border (wrap takes rows from the other end of the
  // image) runs the image whole on the caller's GPU instead.
  for (const auto& t : tiles)
    if (!chain_fits_tile(chain, t, src.width, src.height, border.mode))
      return filter_on_one(src, dst, where, chain, border, device, stream);
  Event ready(device, Event::Timing::Untimed);
  {
    ScopedDevice on(device);
    TF_CUDA_CHECK(cudaEventRecord(ready.get(), stream));
  }
  std::vector<std::unique_ptr<HeldSlot>> held;
  for (std::size_t i = 0; i < tiles.size(); ++i) {
    const int ordinal = ordinals[i % ordinals.size()];
    ScopedDevice on(ordinal);
    held.push_back(std::make_unique<HeldSlot>(ordinal));
    Slot& slot = *held.back()->slot;
    const bool own = ordinal == device;
    const cudaStream_t s = own ? stream : slot.stream.get();
    if (slot.fenced) TF_CUDA_CHECK(cudaStreamWaitEvent(s, slot.done.get(), 0));
    if (!own) {
      enable_peer_access(ordinal, device);
      TF_CUDA_CHECK(cudaStreamWaitEvent(s, ready.get(), 0));
    }
    run_tile(slot, src, dst, where, chain, border, tiles[i], s);
    TF_CUDA_CHECK(cudaEventRecord(slot.done.get(), s));
    slot.fenced = true;
  }
  ScopedDevice on(device);
  for (auto& h : held)
    if (h->slot->device != device) TF_CUDA_CHECK(cudaStreamWaitEvent(stream, h->slot->done.get(), 0));
}

}  // namespace

std::vector<int> device_ordinals() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  std::vector<int> ordinals(count);
  for (int i = 0; i < count; ++i) ordinals[i] = i;
  return ordinals;
}

void filter_device_image(const ImageView& src, const ImageView& dst, const Chain& chain, const Border& border,
                         int device, void* stream_handle, const std::vector<int>& split) {
  if (!src.data || !dst.data || src.width < 1 || src.height < 1)
    throw Error(ErrorKind::InvalidArgument, "device image: empty source or destination");
  if (src.width != dst.width || src.height != dst.height || !(src.format == dst.format))
    throw Error(ErrorKind::InvalidArgument,
                fmt::format("device image: destination {}x{} {} differs from the source {}x{} {}", dst.width,
                            dst.height, to_string(dst.format), src.width, src.height, to_string(src.format)));
  if (src.pitch < src.row_bytes() || dst.pitch < dst.row_bytes())
    throw Error(ErrorKind::InvalidArgument, "device image: a row pitch is smaller than a row");
  if (overlaps(src, dst) && !same_view(src, dst))
    throw Error(ErrorKind::InvalidArgument,
                "device image: the destination overlaps the source without being it (same pointer and pitch)");
  if (chain.empty()) throw Error(ErrorKind::InvalidArgument, "device image: empty chain");
  check_chain_halo(chain);
  const auto stream = static_cast<cudaStream_t>(stream_handle);
  Where where;
  for (const char* what : {"source", "destination"}) {
    cudaPointerAttributes attributes{};
    const bool source = what[0] == 's';
    const void* p = source ? static_cast<const void*>(src.data) : static_cast<const void*>(dst.data);
    if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess || attributes.type == cudaMemoryTypeHost ||
        attributes.type == cudaMemoryTypeUnregistered) {
      cudaGetLastError();
      throw Error(ErrorKind::InvalidArgument, fmt::format("device image: the {} is not in GPU memory", what));
    }
    if (attributes.type == cudaMemoryTypeDevice && attributes.device != device)
      throw Error(ErrorKind::InvalidArgument,
                  fmt::format("device image: the {} is on gpu{}, not gpu{}", what, attributes.device, device));
    (source ? where.src : where.dst) = attributes.device;
  }
  Tile grown{0, {0, 0, src.width, src.height}, {}};
  const Halo h = chain_halo(chain);
  grown.in = {-h.left, -h.top, src.width + h.left + h.right, src.height + h.top + h.bottom};
  if (!chain_fits_tile(chain, grown, src.width, src.height, border.mode)) {
    // Filter by filter, through an intermediate image on the device (docs/design.md, contract 3: the same bits).
    ScopedDevice on(device);
    DeviceBuffer middle[2];
    ImageView from = src;
    for (std::size_t s = 0; s < chain.size(); ++s) {
      ImageView to = dst;
      if (s + 1 < chain.size()) {
        DeviceBuffer& buffer = middle[s % 2];
        const std::size_t pitch = device_pitch(src.width, src.format.pixel_bytes());
        buffer.reserve(pitch * src.height, device);
        to = {buffer.as<std::byte>(), pitch, src.width, src.height, src.format};
      }
      const Where step{s == 0 ? where.src : device, s + 1 < chain.size() ? device : where.dst};
      filter_on_one(from, to, step, Chain{chain[s]}, border, device, stream);
      from = to;
    }
    // The intermediates are freed here: wait for the stream rather than free under running kernels.
    TF_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  std::vector<int> ordinals = split;
  ordinals.erase(std::unique(ordinals.begin(), ordinals.end()), ordinals.end());
  // In place, a band written on one GPU would be read as another band's halo on another: one GPU then.
  if (ordinals.size() <= 1 || src.height < static_cast<int>(ordinals.size()) || same_view(src, dst)) {
    filter_on_one(src, dst, where, chain, border, device, stream);
    return;
  }
  filter_split(src, dst, where, chain, border, device, stream, ordinals);
}

}  // namespace tf::cuda
