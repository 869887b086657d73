// tilefilter bench: device-resident kernel throughput and host-resident end-to-end throughput on
// 1..N devices, with the speedup split and its bound. Says what each number includes.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "commands.hpp"
#include "options.hpp"
#include "tilefilter/cuda_backend.hpp"
#include "tilefilter/engine/device.hpp"
#include "tilefilter/engine/scheduler.hpp"
#include "tilefilter/engine/speedup.hpp"
#include "tilefilter/image/testimage.hpp"
#include "tilefilter/util/error.hpp"

namespace tf::cli {

namespace {

struct BenchArgs {
  std::vector<std::string> filters;
  std::string size = "8192x8192";
  std::string format = "rgba8";
  std::string mode = "all";
  std::string cpu_size = "1024x1024";
  std::string json;
  std::string timeline;
  std::string host_memory = "pinned";
  int repeats = 0;
  bool speedup = false;
  bool cpu_reference = false;
  bool pcie = false;
  bool verbose = false;
  JobFlags job;  // border, devices, tile, streams, device memory (its filters are unused)
};

// Default workloads: the four of the performance targets (docs/performance.md).
struct Workload {
  std::string label, spec;
};
const std::vector<Workload>& default_workloads() {
  static const std::vector<Workload> kWorkloads = {{"separable 9 taps", "gaussian:sigma=1.33,radius=4"},
                                                   {"separable 31 taps", "gaussian:sigma=5,radius=15"},
                                                   {"2-D 9x9", "unsharp:sigma=1.3"},
                                                   {"2-D 31x31", "unsharp:sigma=5"}};
  return kWorkloads;
}

// A CSV field in double quotes (filter specs hold commas).
std::string csv_field(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::pair<int, int> parse_size(const std::string& s, const char* flag) {
  int w = 0, h = 0;
  char x = 0, extra = 0;
  const int n = std::sscanf(s.c_str(), "%d%c%d%c", &w, &x, &h, &extra);
  if (n == 1) h = w;
  else if (!(n == 3 && (x == 'x' || x == 'X'))) w = 0;
  if (w < 1 || h < 1 || static_cast<long long>(w) * h > (1LL << 31))
    throw Error(ErrorKind::InvalidArgument, fmt::format("{} '{}': expected N or WxH", flag, s));
  return {w, h};
}

Format parse_format(const std::string& s) {
  static const std::pair<const char*, Format> kNames[] = {
      {"gray8", {PixelType::U8, 1}},    {"rgb8", {PixelType::U8, 3}},    {"rgba8", {PixelType::U8, 4}},
      {"gray16", {PixelType::U16, 1}},  {"rgb16", {PixelType::U16, 3}},  {"rgba16", {PixelType::U16, 4}},
      {"grayf32", {PixelType::F32, 1}}, {"rgbf32", {PixelType::F32, 3}}, {"rgbaf32", {PixelType::F32, 4}}};
  for (const auto& [name, f] : kNames)
    if (s == name) return f;
  throw Error(ErrorKind::InvalidArgument,
              fmt::format("--format '{}': use gray8|rgb8|rgba8|gray16|rgb16|rgba16|grayf32|rgbf32|rgbaf32", s));
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) out += fmt::format("\\u{:04x}", c);
    else out += c;
  }
  return out + "\"";
}

std::string today() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

struct Row {
  std::string workload, spec, mode;
  int devices = 0;
  std::vector<std::string> device_names;
  double median_s = 0, min_s = 0, max_s = 0, gpix = 0, speedup = 1;
  // Host-resident rows on GPUs with --pcie: the image's bytes in and out over the median, as a share of
  // the ceiling measured in the same run (pinned: both directions at once on as many GPUs; pageable:
  // the host's pageable <-> pinned staging, each way). 0 = not measured.
  double copy_share = 0;
  // Resident rows: the ceilings of the GPUs that ran it, and the share of the nearer one reached.
  cuda::Roofline roofline;
};

std::string roofline_json(const cuda::Roofline& r) {
  if (r.bound.empty()) return "null";
  return fmt::format(
      "{{\"bytes_per_pixel\": {:.6g}, \"fmas_per_pixel\": {:.6g}, \"copy_gbs\": {:.6g}, \"fmas_per_s\": {:.6g}, "
      "\"memory_limit_gigapixels_per_s\": {:.6g}, \"fma_limit_gigapixels_per_s\": {}, \"bound\": {}, \"share\": {:.4g}}}",
      r.bytes_per_pixel, r.fmas_per_pixel, r.copy_gbs, r.fmas_per_s, r.memory_gpix,
      r.fma_gpix > 0 ? fmt::format("{:.6g}", r.fma_gpix) : "null", json_string(r.bound), r.share);
}

std::string row_json(const Row& r) {
  std::string names;
  for (const auto& d : r.device_names) names += (names.empty() ? "" : ", ") + json_string(d);
  return fmt::format(
      "{{\"workload\": {}, \"filter\": {}, \"mode\": {}, \"devices\": {}, \"device_names\": [{}], \"median_s\": {:.9g}, "
      "\"min_s\": {:.9g}, \"max_s\": {:.9g}, \"gigapixels_per_s\": {:.6g}, \"speedup\": {:.4g}, \"copy_rate_share\": {}, "
      "\"roofline\": {}}}",
      json_string(r.workload), json_string(r.spec), json_string(r.mode), r.devices, names, r.median_s, r.min_s, r.max_s,
      r.gpix, r.speedup, r.copy_share > 0 ? fmt::format("{:.4g}", r.copy_share) : "null", roofline_json(r.roofline));
}

void print_row(const Row& r) {
  fmt::print("{:<22} {:<9} {:>4}  {:>10.3f}  {:>9.3f}-{:<9.3f} {:>9.2f}  {:>6.2f}x", r.workload, r.mode, r.devices,
             r.median_s * 1e3, r.min_s * 1e3, r.max_s * 1e3, r.gpix, r.speedup);
  if (r.copy_share > 0) fmt::print("  {:>6.1f}%", 100 * r.copy_share);
  const cuda::Roofline& roof = r.roofline;
  if (!roof.bound.empty())
    fmt::print("  {:>5.1f}% of {:<6} (memory {:.1f}, FMA {} Gpix/s)", 100 * roof.share, roof.bound, roof.memory_gpix,
               roof.fma_gpix > 0 ? fmt::format("{:.1f}", roof.fma_gpix) : "-");
  fmt::print("\n");
}

Chain workload_chain(const std::string& spec) {
  // A chain in one workload is written with '+': "gaussian:sigma=2+sharpen".
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t plus = spec.find('+', start);
    parts.push_back(spec.substr(start, plus == std::string::npos ? std::string::npos : plus - start));
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return parse_chain(parts);
}

// One run of `tilefilter bench`, step by step: the plan (workloads, devices, the source image), the
// PCIe ceiling, each workload device-resident and host-resident, the CPU reference, the files.
class Bench {
 public:
  explicit Bench(const BenchArgs& a) : a_(a) {
    std::tie(w_, h_) = parse_size(a.size, "--size");
    format_ = parse_format(a.format);
    if (a.mode != "all" && a.mode != "resident" && a.mode != "host")
      throw Error(ErrorKind::InvalidArgument, fmt::format("--mode '{}': use all|resident|host", a.mode));
    pageable_ = a.host_memory == "pageable";
    JobFlags flags = a.job;
    flags.filters = {"identity"};
    options_ = job_options(flags);
    if (a.filters.empty()) workloads_ = default_workloads();
    for (const auto& f : a.filters) workloads_.push_back({f, f});
    for (const auto& wl : workloads_) chains_.push_back(workload_chain(wl.spec));  // validate before any work
    const DeviceSelection sel = select_devices(a.job.devices, a.job.device_memory);
    if (!sel.note.empty() && a.verbose) fmt::print(stderr, "note: {}\n", sel.note);  // as `tilefilter apply`
    devices_ = sel.devices;
    for (const auto& d : devices_)
      if (d->info().kind == DeviceKind::Cuda) ordinals_.push_back(d->info().ordinal);
    resident_ = a.mode != "host" && !ordinals_.empty();
    host_ = a.mode != "resident";
    resident_repeats_ = a.repeats > 0 ? a.repeats : 20;
    host_repeats_ = a.repeats > 0 ? a.repeats : 5;
  }

  void run() {
    print_header();
    make_source();
    if (a_.pcie && !ordinals_.empty()) measure_copy_ceiling();
    shares_ = host_ && !both_gbs_.empty() && ordinals_.size() == devices_.size();
    fmt::print("\n{:<22} {:<9} {:>4}  {:>10}  {:>19} {:>9}  {:>7}{}{}\n", "workload", "mode", "devs", "median ms",
               "spread (min-max) ms", "Gpix/s", "vs 1", shares_ ? (pageable_ ? "  of staging" : "  of copies") : "",
               resident_ ? "  resident: share of the nearer ceiling" : "");
    for (std::size_t i = 0; i < workloads_.size(); ++i) {
      if (resident_) run_resident(workloads_[i], chains_[i]);
      if (host_) run_host(workloads_[i], chains_[i]);
    }
    if (a_.cpu_reference) run_cpu_reference();
    if (!a_.json.empty()) write_json();
    if (!a_.timeline.empty()) write_timeline();
  }

 private:
  void print_header() const {
    std::string device_list;
    for (const auto& d : devices_)
      device_list += fmt::format("{}{} ({})", device_list.empty() ? "" : ", ", d->info().id, d->info().name);
    fmt::print("tilefilter bench, {}: {}x{} {}, border {}, {}\n", today(), w_, h_, to_string(format_),
               to_string(options_.border.mode), cuda::runtime_description());
    fmt::print("devices: {}\n", device_list);
    if (resident_)
      fmt::print(
          "resident = kernels only, image already on the GPU(s) (split in bands), CUDA events, median of {} after 2 "
          "warm-ups;\n"
          "           its ceilings: memory = device-to-device copy rate / bytes a pixel (each stage reads and writes it "
          "once),\n"
          "           FMA = multiprocessors x FP32 lanes x clock / (taps x channels) FMAs a pixel\n",
          resident_repeats_);
    if (host_)
      fmt::print(
          "host     = {} host image -> upload -> kernels -> download -> {} host image, all tiles, wall clock,\n"
          "           median of {} after 1 warm-up\n",
          a_.host_memory, a_.host_memory, host_repeats_);
  }

  // The source: the project's photo-like test image, in pinned memory when there is a GPU, unless
  // --host-memory pageable asks for what a decoded image usually is (the lanes then stage its rows
  // through their own pinned buffers).
  void make_source() {
    pinned_ = pageable_ ? nullptr : cuda::pinned_allocator();
    const Image generated = make_test_image(w_, h_, format_, 7, Pattern::Photo);
    src_ = generated;
    if (pinned_) {
      src_ = Image(w_, h_, format_, *pinned_);
      for (int y = 0; y < h_; ++y) std::memcpy(src_.view().row(y), generated.view().row(y), src_.view().row_bytes());
    }
  }

  // --pcie: pinned copies on 1..N GPUs, and the host's pageable <-> pinned staging (host-wide: once).
  void measure_copy_ceiling() {
    fmt::print("\nPCIe, pinned memory, 256 MiB per GPU, all GPUs at once (GB/s):\n");
    for (std::size_t n = 1; n <= ordinals_.size(); ++n) {
      const auto b = cuda::measure_pcie({ordinals_.begin(), ordinals_.begin() + n});
      fmt::print(
          "  {} GPU(s): host->device {:6.1f}   device->host {:6.1f}   both directions at once {:6.1f} (in 8 MiB "
          "copies {:6.1f})\n",
          n, b.h2d, b.d2h, b.both, b.both_8mib);
      pcie_json_.push_back(fmt::format(
          "{{\"gpus\": {}, \"h2d_gbs\": {:.4g}, \"d2h_gbs\": {:.4g}, \"both_gbs\": {:.4g}, \"both_8mib_gbs\": {:.4g}}}",
          n, b.h2d, b.d2h, b.both, b.both_8mib));
      both_gbs_.push_back(b.both);
    }
    const auto staging = cuda::measure_host_staging();
    fmt::print("  host memory, pageable <-> pinned staging on {} threads, both ways at once: {:6.1f} each way\n",
               staging.threads, staging.gbs);
    staging_json_ = fmt::format("{{\"gbs\": {:.4g}, \"threads\": {}}}", staging.gbs, staging.threads);
    staging_gbs_ = staging.gbs;
  }

  // A host-resident job on GPUs only moves the image in and out; its share of the copy ceiling.
  double copy_share(int device_count, double median_s) const {
    if (!shares_ || device_count < 1 || device_count > static_cast<int>(both_gbs_.size()) || median_s <= 0 ||
        (pageable_ && staging_gbs_ <= 0))
      return 0.0;
    const double image_gb = static_cast<double>(w_) * h_ * format_.pixel_bytes() / 1e9;
    return pageable_ ? image_gb / median_s / staging_gbs_ : 2 * image_gb / median_s / both_gbs_[device_count - 1];
  }

  void run_resident(const Workload& wl, const Chain& chain) {
    double base = 0;
    for (std::size_t n = 1; n <= ordinals_.size(); ++n) {
      const auto t = cuda::bench_device_resident(src_.view(), chain, options_.border,
                                                 {ordinals_.begin(), ordinals_.begin() + n}, resident_repeats_);
      Row r{wl.label,   wl.spec, "resident", static_cast<int>(n), t.devices,
            t.median_s, t.min_s, t.max_s,    t.gigapixels_per_s,  1};
      if (n == 1) base = t.median_s;
      r.speedup = base / t.median_s;
      r.roofline = t.roofline;
      if (ceilings_printed_.size() < n) {  // once per GPU count: the same GPUs for every workload
        ceilings_printed_.push_back(true);
        fmt::print(
            "{:<22} ceilings of {} GPU(s): device-to-device copy {:.0f} GB/s (read + written), FP32 FMA {:.2f} T/s\n",
            "", n, t.roofline.copy_gbs, t.roofline.fmas_per_s / 1e12);
      }
      print_row(r);
      if (a_.verbose)
        for (const auto& launch : t.launches) fmt::print("  launch {}\n", launch);
      rows_.push_back(r);
    }
  }

  void run_host(const Workload& wl, const Chain& chain) {
    const SpeedupResult sp = measure_speedup(src_, chain, devices_, options_, host_repeats_, {}, nullptr, pinned_);
    for (const auto& p : sp.points) {
      Row r{wl.label,       wl.spec,   "host",
            p.device_count, p.devices, p.median_s,
            p.min_s,        p.max_s,   static_cast<double>(w_) * h_ / p.median_s / 1e9,
            p.speedup};
      r.copy_share = copy_share(p.device_count, p.median_s);
      print_row(r);
      rows_.push_back(r);
    }
    if (!a_.timeline.empty())
      for (const auto& p : sp.points)
        for (const auto& rec : p.records)
          timeline_rows_.push_back(fmt::format("{},{},{},{},{},{},{:.6f},{:.6f},{}", csv_field(wl.spec), p.device_count,
                                               rec.device, rec.lane, to_string(rec.stage), rec.tile, rec.t0 * 1e3,
                                               rec.t1 * 1e3, rec.bytes));
    if (a_.speedup) print_speedup(wl, sp);
  }

  // --speedup: per device count, the speedup against the ideal and each device's split of its time.
  void print_speedup(const Workload& wl, const SpeedupResult& sp) {
    std::string points;
    fmt::print("  speedup ({}): devices, speedup vs ideal, then per device: upload / kernel / download / idle ms\n",
               wl.label);
    for (const auto& p : sp.points) {
      fmt::print("    {} device(s): {:.2f}x of {:.0f}x ({:.0f}%)\n", p.device_count, p.speedup, p.ideal,
                 100 * p.speedup / p.ideal);
      std::string split;
      for (const auto& d : p.split) {
        fmt::print(
            "      {:<8} {:>4} tiles  up {:>8.2f}  kernel {:>8.2f}  down {:>8.2f}  idle {:>8.2f}  (busy {:.2f} of {:.2f} ms;"
            " first stage at {:.3f}, last ends {:.3f} before the end)\n",
            d.name, d.tiles, d.upload_s * 1e3, d.kernel_s * 1e3, d.download_s * 1e3, d.idle_s * 1e3, d.busy_s * 1e3,
            (d.busy_s + d.idle_s) * 1e3, d.first_s * 1e3, d.tail_s * 1e3);
        split += fmt::format(
            "{}{{\"device\": {}, \"tiles\": {}, \"upload_s\": {:.6g}, \"kernel_s\": {:.6g}, \"download_s\": {:.6g}, "
            "\"compute_s\": {:.6g}, \"idle_s\": {:.6g}, \"busy_s\": {:.6g}, \"first_s\": {:.6g}, \"tail_s\": {:.6g}}}",
            split.empty() ? "" : ", ", json_string(d.name), d.tiles, d.upload_s, d.kernel_s, d.download_s, d.compute_s,
            d.idle_s, d.busy_s, d.first_s, d.tail_s);
      }
      points += fmt::format(
          "{}{{\"devices\": {}, \"median_s\": {:.9g}, \"speedup\": {:.4g}, \"ideal\": {}, \"split\": [{}]}}",
          points.empty() ? "" : ", ", p.device_count, p.median_s, p.speedup, p.ideal, split);
    }
    fmt::print("    bound: {} - {}\n", sp.bound, sp.explanation);
    speedup_json_.push_back(fmt::format("{{\"workload\": {}, \"bound\": {}, \"explanation\": {}, \"points\": [{}]}}",
                                        json_string(wl.label), json_string(sp.bound), json_string(sp.explanation),
                                        points));
  }

  // The CPU backend on one core: the gold reference's own speed, on a smaller image.
  void run_cpu_reference() {
    const auto [cw, ch] = parse_size(a_.cpu_size, "--cpu-size");
    const Image csrc = make_test_image(cw, ch, format_, 7, Pattern::Photo);
    const auto cpu1 = select_devices("cpu:1").devices;
    fmt::print("\nCPU reference backend, one worker thread, {}x{} (--cpu-size), median of 3 after 1 warm-up:\n", cw,
               ch);
    for (std::size_t i = 0; i < workloads_.size(); ++i) {
      std::vector<double> t;
      for (int r = 0; r < 4; ++r) {
        JobReport rep;
        filter_image(csrc, chains_[i], cpu1, options_, &rep);
        if (r > 0) t.push_back(rep.wall_s);
      }
      std::sort(t.begin(), t.end());
      const double mpix = static_cast<double>(cw) * ch / t[1] / 1e6;
      fmt::print("  {:<22} {:>10.1f} Mpix/s  ({:.1f} ms)\n", workloads_[i].label, mpix, t[1] * 1e3);
      cpu_json_.push_back(fmt::format(
          "{{\"workload\": {}, \"width\": {}, \"height\": {}, \"median_s\": {:.6g}, \"megapixels_per_s\": {:.6g}}}",
          json_string(workloads_[i].label), cw, ch, t[1], mpix));
    }
  }

  void write_json() const {
    std::string devs;
    for (const auto& d : devices_) {
      const auto& info = d->info();
      devs += fmt::format("{}{{\"id\": {}, \"name\": {}, \"multiprocessors\": {}, \"memory_total\": {}, \"link\": {}}}",
                          devs.empty() ? "" : ", ", json_string(info.id), json_string(info.name), info.multiprocessors,
                          info.memory_total, json_string(info.link));
    }
    std::string results;
    for (const auto& r : rows_) results += (results.empty() ? "\n    " : ",\n    ") + row_json(r);
    const std::string text = fmt::format(
        "{{\n  \"date\": {}, \"runtime\": {}, \"image\": {{\"width\": {}, \"height\": {}, \"format\": {}}}, \"border\": {}, \"host_memory\": {},\n"
        "  \"devices\": [{}],\n  \"results\": [{}\n  ],\n  \"speedup\": [{}],\n  \"cpu_reference\": [{}],\n  \"pcie\": [{}],\n  \"host_staging\": {}\n}}\n",
        json_string(today()), json_string(cuda::runtime_description()), w_, h_, json_string(to_string(format_)),
        json_string(to_string(options_.border.mode)), json_string(a_.host_memory), devs, results,
        fmt::format("{}", fmt::join(speedup_json_, ", ")), fmt::format("{}", fmt::join(cpu_json_, ", ")),
        fmt::format("{}", fmt::join(pcie_json_, ", ")), staging_json_);
    std::ofstream out(a_.json);
    if (!(out << text)) throw Error(ErrorKind::Io, fmt::format("{}: cannot write", a_.json));
    fmt::print("\nwrote {}\n", a_.json);
  }

  void write_timeline() const {
    std::ofstream out(a_.timeline);
    out << "workload,devices,device,lane,stage,tile,start_ms,end_ms,bytes\n";
    for (const auto& row : timeline_rows_) out << row << '\n';
    if (!out) throw Error(ErrorKind::Io, fmt::format("{}: cannot write", a_.timeline));
    fmt::print("wrote {} ({} stages)\n", a_.timeline, timeline_rows_.size());
  }

  const BenchArgs& a_;
  int w_ = 0, h_ = 0;
  Format format_;
  bool pageable_ = false, resident_ = false, host_ = false, shares_ = false;
  int resident_repeats_ = 0, host_repeats_ = 0;
  JobOptions options_;
  std::vector<Workload> workloads_;
  std::vector<Chain> chains_;
  std::vector<DevicePtr> devices_;
  std::vector<int> ordinals_;
  const PixelAllocator* pinned_ = nullptr;
  Image src_;
  std::vector<Row> rows_;
  std::vector<std::string> speedup_json_, cpu_json_, pcie_json_;
  std::string staging_json_ = "null";   // --pcie: the host's pageable <-> pinned staging rate
  std::vector<double> both_gbs_;        // --pcie: both directions at once on 1..N GPUs
  std::vector<bool> ceilings_printed_;  // resident runs: the roofline's ceilings, once per GPU count
  double staging_gbs_ = 0;
  std::vector<std::string> timeline_rows_;  // --timeline: every stage of each host-resident median run
};

void run_bench(const BenchArgs& a) { Bench(a).run(); }

}  // namespace

void add_bench(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  auto* cmd =
      app.add_subcommand("bench", "measure throughput: device-resident kernels and host-resident jobs on 1..N devices");
  cmd->add_option(
      "-f,--filter", a->filters,
      "workload SPEC (repeat for several; chain filters with '+'); default: separable 9 and 31 taps, 2-D 9x9 and 31x31");
  cmd->add_option("--size", a->size, "image size WxH")->capture_default_str();
  cmd->add_option("--format", a->format, "pixel format: gray8|rgb8|rgba8|gray16|rgb16|rgba16|grayf32|rgbf32|rgbaf32")
      ->capture_default_str();
  cmd->add_option("--mode", a->mode, "all | resident (kernels only) | host (end to end from host memory)")
      ->capture_default_str();
  cmd->add_option("--host-memory", a->host_memory,
                  "host-resident runs' source and result in pinned or pageable host memory")
      ->check(CLI::IsMember({"pinned", "pageable"}))
      ->capture_default_str();
  cmd->add_option("--repeats", a->repeats, "timed runs per point (default 20 resident, 5 host)");
  cmd->add_option("--json", a->json, "also write the results to this JSON file");
  cmd->add_option("--timeline", a->timeline,
                  "write every upload/kernel/download of each host-resident median run to this CSV file");
  cmd->add_flag("--speedup", a->speedup, "print each device's upload/kernel/download/idle split and the bound");
  cmd->add_flag("--pcie", a->pcie,
                "also measure pinned host<->GPU copy bandwidth on 1..N GPUs, and give each host-resident run's "
                "image in and out as a share of it (of the host's staging rate with --host-memory pageable)");
  cmd->add_flag(
      "-v,--verbose", a->verbose,
      "print the launch shape of every kernel of the resident runs (grid, block, shared memory, work per block)");
  cmd->add_flag("--cpu-reference", a->cpu_reference, "also time the CPU reference backend on one thread");
  cmd->add_option("--cpu-size", a->cpu_size, "image size for --cpu-reference")->capture_default_str();
  cmd->add_option("--border", a->job.border, fmt::format("border mode: {}", border_mode_names()))
      ->capture_default_str();
  cmd->add_option("--devices", a->job.devices, "all | gpu | cpu | cpu:N | GPU ordinals like 0,1 | mixes")
      ->capture_default_str();
  cmd->add_option("--tile", a->job.tile, "tile size N or WxH for host-resident runs (default: automatic)");
  cmd->add_option("--streams", a->job.streams, "CUDA streams per GPU (default: the backend's)");
  cmd->add_flag("--exact", a->job.exact, "direct convolution only (no FFT path for large 2-D kernels)");
  cmd->add_option("--device-memory", a->job.device_memory, "cap on memory used per GPU, e.g. 512M")
      ->transform(size_value());
  cmd->callback([a] { run_bench(*a); });
}

}  // namespace tf::cli
