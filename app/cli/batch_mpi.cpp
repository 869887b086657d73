// The MPI side of `tilefilter batch`: rank 0 walks IN_DIR and prepares OUT_DIR, sends the plan to
// every rank, then a dispatcher thread hands out plan indices one request at a time (no static
// split: a slow node just asks less often) while rank 0's own pipeline takes from the same counter.
// Each rank runs the ordinary pipeline on its devices and sends its results to rank 0 at the end,
// which merges them. Only the dispatcher thread (rank 0) or one decode thread at a time (under a
// lock, other ranks) calls MPI while the pipelines run, so MPI_THREAD_SERIALIZED is enough.
#include "batch_mpi.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>

#include <fmt/format.h>

#include "commands.hpp"
#include "tilefilter/util/error.hpp"
#include "tilefilter/util/thread_pool.hpp"

namespace tf::cli {

namespace {

constexpr int kTagRequest = 1;  // rank -> 0: an int, kAsk or kLeaving
constexpr int kTagReply = 2;    // 0 -> rank: a plan index, or -1 when none is left
constexpr int kTagReport = 3;   // rank -> 0: the rank's results (wire bytes, below)
constexpr int kAsk = 0, kLeaving = 1;

bool debug_log() {
  static const bool on = std::getenv("TILEFILTER_DEBUG") != nullptr;
  return on;
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw Error(ErrorKind::Internal, fmt::format("MPI: {} failed ({})", what, rc));
}

// Waits for a message by polling: a blocking MPI receive spins a core, which the codec threads of
// a shared node need more. The pause stays short (at most 0.2 ms, a few probes a millisecond): every
// file another rank takes waits for rank 0's dispatcher to see its request.
MPI_Status wait_message(int source, int tag) {
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    int flag = 0;
    MPI_Status status{};
    check(MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, &status), "MPI_Iprobe");
    if (flag) return status;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(200));
  }
}

int receive_int(int source, int tag, int* from = nullptr) {
  const MPI_Status st = wait_message(source, tag);
  int value = 0;
  check(MPI_Recv(&value, 1, MPI_INT, st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
  if (from) *from = st.MPI_SOURCE;
  return value;
}

void send_int(int value, int dest, int tag) {
  check(MPI_Send(&value, 1, MPI_INT, dest, tag, MPI_COMM_WORLD), "MPI_Send");
}

std::string receive_text(int source, int tag, int* from) {
  const MPI_Status st = wait_message(source, tag);
  int n = 0;
  check(MPI_Get_count(&st, MPI_CHAR, &n), "MPI_Get_count");
  std::string text(static_cast<std::size_t>(n), '\0');
  check(MPI_Recv(text.data(), n, MPI_CHAR, st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
  if (from) *from = st.MPI_SOURCE;
  return text;
}

// Rank 0's text to every rank (the plan, or the job's error).
std::string broadcast_text(std::string text, int rank) {
  long long n = static_cast<long long>(text.size());
  check(MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
  if (n > std::numeric_limits<int>::max())
    throw Error(ErrorKind::Limit, "the folder's plan is too large to send to the other ranks (over 2 GiB)");
  if (rank != 0) text.resize(static_cast<std::size_t>(n));
  check(MPI_Bcast(text.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return text;
}

// ---- wire format: the plan (rank 0 -> all) and a rank's results (rank -> 0) ----
// Plain bytes, length-prefixed strings: file names are bytes, not always UTF-8, and must arrive
// exactly as rank 0 saw them.

class WireWriter {
 public:
  template <class T> WireWriter& operator<<(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes_.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  WireWriter& operator<<(const std::string& s) {
    *this << static_cast<std::uint64_t>(s.size());
    bytes_ += s;
    return *this;
  }
  WireWriter& operator<<(const std::vector<std::string>& v) {
    *this << static_cast<std::uint64_t>(v.size());
    for (const auto& s : v) *this << s;
    return *this;
  }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class WireReader {
 public:
  explicit WireReader(const std::string& bytes) : bytes_(bytes) {}
  template <class T> WireReader& operator>>(T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof v);
    std::memcpy(&v, bytes_.data() + at_, sizeof v);
    at_ += sizeof v;
    return *this;
  }
  WireReader& operator>>(std::string& s) {
    const std::size_t n = count();
    need(n);
    s.assign(bytes_, at_, n);
    at_ += n;
    return *this;
  }
  WireReader& operator>>(std::vector<std::string>& v) {
    v.resize(count());
    for (auto& s : v) *this >> s;
    return *this;
  }
  std::size_t count() {
    std::uint64_t n = 0;
    *this >> n;
    need(static_cast<std::size_t>(std::min<std::uint64_t>(n, bytes_.size())));  // a sane count, before resizing
    return static_cast<std::size_t>(n);
  }

 private:
  void need(std::size_t n) const {
    if (n > bytes_.size() - at_) throw Error(ErrorKind::Internal, "MPI: a truncated message from another rank");
  }
  const std::string& bytes_;
  std::size_t at_ = 0;
};

std::string plan_to_wire(const BatchPlan& plan) {
  WireWriter w;
  w << static_cast<std::uint64_t>(plan.items.size());
  for (const auto& it : plan.items)
    w << it.input << it.output << it.relative << static_cast<std::uint64_t>(it.input_bytes)
      << static_cast<std::uint8_t>(it.complete) << it.problem;
  w << plan.skipped << plan.notes;
  return w.take();
}

BatchPlan plan_from_wire(const std::string& bytes) {
  WireReader r(bytes);
  BatchPlan plan;
  plan.items.resize(r.count());
  for (auto& it : plan.items) {
    std::uint64_t input_bytes = 0;
    std::uint8_t complete = 0;
    r >> it.input >> it.output >> it.relative >> input_bytes >> complete >> it.problem;
    it.input_bytes = static_cast<std::size_t>(input_bytes);
    it.complete = complete != 0;
  }
  r >> plan.skipped >> plan.notes;
  return plan;
}

// A rank's report without what rank 0 already has (the plan, the stage records): its own files,
// devices and totals.
std::string report_to_wire(const BatchReport& r, int rank, const std::string& host) {
  WireWriter w;
  w << host;
  std::vector<std::size_t> mine;
  for (std::size_t i = 0; i < r.files.size(); ++i)
    if (r.files[i].rank == rank) mine.push_back(i);
  w << static_cast<std::uint64_t>(mine.size());
  for (const std::size_t i : mine) {
    const FileResult& f = r.files[i];
    w << static_cast<std::uint64_t>(i) << static_cast<std::int32_t>(f.status) << f.reason << f.width << f.height
      << f.format << static_cast<std::uint64_t>(f.output_bytes) << f.decode_s << f.filter_s << f.encode_s
      << f.decode_cpu_s << f.encode_cpu_s << f.decoder << f.encoder << f.device << f.tiles << f.retried_tiles
      << f.write_note;
  }
  w << static_cast<std::uint64_t>(r.devices.size());
  for (const auto& d : r.devices)
    w << d.device << d.name << d.tiles << d.upload_s << d.kernel_s << d.download_s << d.compute_s << d.busy_s
      << d.idle_s << static_cast<std::uint64_t>(d.bytes_up) << static_cast<std::uint64_t>(d.bytes_down)
      << d.mean_utilization;
  w << static_cast<std::uint64_t>(r.images_per_device.size());
  for (const int n : r.images_per_device) w << n;
  w << r.device_note << r.wall_s << r.decode_s << r.encode_s << r.decode_cpu_s << r.encode_cpu_s << r.megapixels
    << r.decode_threads << r.encode_threads << static_cast<std::uint64_t>(r.max_inflight_bytes)
    << static_cast<std::uint64_t>(r.peak_inflight_bytes) << static_cast<std::uint8_t>(r.cancelled) << r.memory_wait_s
    << r.gpu_codec_lanes << r.gpu_codec_batch << static_cast<std::uint64_t>(r.codec_workers.size());
  for (const auto& c : r.codec_workers)
    w << c.device << c.ready_s << c.calls << c.files << c.busy_s << c.starved_s << c.steps.parse_s
      << c.steps.hw_decode_s << c.steps.cuda_decode_s << c.steps.queue_s << c.steps.wait_s << c.steps.retrieve_s;
  return w.take();
}

// Back into a report over the whole plan; `base` (rank 0's) gives the files' names, and the files
// this rank did not take keep rank -1.
BatchReport report_from_wire(const std::string& bytes, const BatchReport& base, int rank, std::string* host) {
  WireReader in(bytes);
  BatchReport r;
  r.files.resize(base.files.size());
  for (std::size_t i = 0; i < r.files.size(); ++i) {
    r.files[i].input = base.files[i].input;
    r.files[i].output = base.files[i].output;
    r.files[i].input_bytes = base.files[i].input_bytes;
  }
  in >> *host;
  for (std::size_t k = in.count(); k > 0; --k) {
    std::uint64_t i = 0, output_bytes = 0;
    std::int32_t status = 0;
    FileResult f;
    in >> i >> status >> f.reason >> f.width >> f.height >> f.format >> output_bytes >> f.decode_s >> f.filter_s >>
        f.encode_s >> f.decode_cpu_s >> f.encode_cpu_s >> f.decoder >> f.encoder >> f.device >> f.tiles >>
        f.retried_tiles >> f.write_note;
    if (i >= r.files.size()) throw Error(ErrorKind::Internal, "MPI: a file index outside the plan");
    FileResult& slot = r.files[i];
    f.input = std::move(slot.input);
    f.output = std::move(slot.output);
    f.input_bytes = slot.input_bytes;
    f.status = static_cast<FileResult::Status>(status);
    f.output_bytes = static_cast<std::size_t>(output_bytes);
    f.rank = rank;
    slot = std::move(f);
  }
  r.devices.resize(in.count());
  for (auto& d : r.devices) {
    std::uint64_t up = 0, down = 0;
    in >> d.device >> d.name >> d.tiles >> d.upload_s >> d.kernel_s >> d.download_s >> d.compute_s >> d.busy_s >>
        d.idle_s >> up >> down >> d.mean_utilization;
    d.bytes_up = static_cast<std::size_t>(up);
    d.bytes_down = static_cast<std::size_t>(down);
  }
  r.images_per_device.resize(in.count());
  for (int& n : r.images_per_device) in >> n;
  std::uint64_t max_inflight = 0, peak_inflight = 0;
  std::uint8_t cancelled = 0;
  in >> r.device_note >> r.wall_s >> r.decode_s >> r.encode_s >> r.decode_cpu_s >> r.encode_cpu_s >> r.megapixels >>
      r.decode_threads >> r.encode_threads >> max_inflight >> peak_inflight >> cancelled >> r.memory_wait_s >>
      r.gpu_codec_lanes >> r.gpu_codec_batch;
  r.codec_workers.resize(in.count());
  for (auto& c : r.codec_workers)
    in >> c.device >> c.ready_s >> c.calls >> c.files >> c.busy_s >> c.starved_s >> c.steps.parse_s >>
        c.steps.hw_decode_s >> c.steps.cuda_decode_s >> c.steps.queue_s >> c.steps.wait_s >> c.steps.retrieve_s;
  r.max_inflight_bytes = static_cast<std::size_t>(max_inflight);
  r.peak_inflight_bytes = static_cast<std::size_t>(peak_inflight);
  r.cancelled = cancelled != 0;
  return r;
}

// ---- handing out files ----

// The plan's next index, shared by rank 0's decode threads and its dispatcher thread.
class Dispenser {
 public:
  Dispenser(int count, const std::atomic<bool>* cancel) : count_(count), cancel_(cancel) {}
  int take() {
    if (cancel_ && cancel_->load()) return -1;  // rank 0 interrupted: nobody starts another file
    std::lock_guard lock(mutex_);
    return next_ < count_ ? next_++ : -1;
  }

 private:
  std::mutex mutex_;
  int next_ = 0;
  const int count_;
  const std::atomic<bool>* cancel_;
};

class LocalSource final : public BatchWorkSource {
 public:
  explicit LocalSource(Dispenser& d) : dispenser_(d) {}
  int next() override { return dispenser_.take(); }
  int rank() const override { return 0; }

 private:
  Dispenser& dispenser_;
};

// Another rank's source: one request to rank 0 per file, one thread at a time.
class RemoteSource final : public BatchWorkSource {
 public:
  explicit RemoteSource(int rank) : rank_(rank) {}
  int next() override {
    std::lock_guard lock(mutex_);
    if (exhausted_) return -1;
    send_int(kAsk, 0, kTagRequest);
    const int i = receive_int(0, kTagReply);
    if (i < 0) exhausted_ = true;
    if (debug_log()) std::fprintf(stderr, "[mpi] rank %d takes file %d\n", rank_, i);
    return i;
  }
  int rank() const override { return rank_; }
  // After the pipeline: a rank that stopped early (interrupted) tells rank 0 not to wait for it.
  void leave() {
    std::lock_guard lock(mutex_);
    if (!exhausted_) send_int(kLeaving, 0, kTagRequest);
    exhausted_ = true;
  }

 private:
  const int rank_;
  std::mutex mutex_;
  bool exhausted_ = false;
};

// Rank 0's dispatcher: answers requests until every other rank got its "none left" or left.
void dispatch(Dispenser& dispenser, int size) noexcept try {
  for (int active = size - 1; active > 0;) {
    int from = 0;
    const int request = receive_int(MPI_ANY_SOURCE, kTagRequest, &from);
    if (request == kLeaving) {
      --active;
      continue;
    }
    const int i = dispenser.take();
    if (debug_log()) std::fprintf(stderr, "[mpi] file %d -> rank %d\n", i, from);
    send_int(i, from, kTagReply);
    if (i < 0) --active;
  }
} catch (const std::exception& e) {
  std::fprintf(stderr, "tilefilter: rank 0 dispatcher: %s; ending the MPI job (run again with --resume)\n", e.what());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, exit_status(ExitCode::Failed));
}

std::string processor_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int n = 0;
  MPI_Get_processor_name(name, &n);
  return std::string(name, static_cast<std::size_t>(std::max(0, n)));
}

class MpiSession {
 public:
  MpiSession() {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    if (provided < MPI_THREAD_SERIALIZED) {
      if (rank_ == 0)
        std::fprintf(stderr, "tilefilter: this MPI library offers no MPI_THREAD_SERIALIZED; cannot share a batch\n");
      MPI_Abort(MPI_COMM_WORLD, exit_status(ExitCode::Failed));
    }
  }
  ~MpiSession() { MPI_Finalize(); }
  // The ranks on this rank's node share its cores: each takes its share for its codec threads and
  // CPU workers, or fewer where the launcher bound it to fewer (Open MPI binds each of 2 or fewer
  // ranks to one core unless told --bind-to none), which rank 0 points out.
  void share_cores() const {
    MPI_Comm node = MPI_COMM_NULL;
    int local = 1;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
      MPI_Comm_size(node, &local);
      MPI_Comm_free(&node);
    }
    const int node_cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    const int share = std::max(1, node_cores / std::max(1, local));
    const int bound = default_threads();
    limit_default_threads(share);
    if (rank_ == 0 && bound < share)
      std::fprintf(stderr,
                   "tilefilter: rank 0 may run on %d of its node's %d cores (the MPI launcher bound it), not its share "
                   "of %d for %d ranks on the node; its codecs and CPU workers use %d thread(s). Open MPI: mpirun "
                   "--bind-to none, or --map-by ppr:%d:node:PE=%d\n",
                   bound, node_cores, share, local, bound, local, share);
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  int rank_ = 0, size_ = 1;
};

RankOutcome run_ranks(const BatchOptions& options, const MpiSession& mpi) {
  const int rank = mpi.rank(), size = mpi.size();
  const double t_start = MPI_Wtime();

  // Rank 0 plans and prepares OUT_DIR; the plan, or the job's error, goes to every rank.
  std::string text;
  if (rank == 0) {
    try {
      text = 'P' + plan_to_wire(prepare_batch(options));
    } catch (const Error& e) {
      text = 'E' + (WireWriter() << static_cast<std::int32_t>(e.kind()) << std::string(e.what())).take();
    }
  }
  text = broadcast_text(std::move(text), rank);
  if (text.empty()) throw Error(ErrorKind::Internal, "MPI: an empty plan from rank 0");
  const std::string body = text.substr(1);
  if (text[0] == 'E') {
    std::int32_t kind = 0;
    std::string what;
    WireReader(body) >> kind >> what;
    const Error error(static_cast<ErrorKind>(kind), what);
    RankOutcome quiet;
    quiet.root = rank == 0;
    quiet.job_error = error;
    quiet.exit_code = exit_status(error.kind() == ErrorKind::InvalidArgument ? ExitCode::Usage : ExitCode::Failed);
    return quiet;
  }
  BatchPlan plan = plan_from_wire(body);
  const std::string host = processor_name();

  RankOutcome outcome;
  outcome.root = rank == 0;
  if (rank != 0) {
    BatchOptions quiet = options;
    quiet.progress = nullptr;  // rank 0 alone shows progress
    RemoteSource source(rank);
    BatchReport mine = run_batch(quiet, std::move(plan), &source);
    source.leave();
    const std::string report = report_to_wire(mine, rank, host);
    check(MPI_Send(report.data(), static_cast<int>(report.size()), MPI_CHAR, 0, kTagReport, MPI_COMM_WORLD),
          "MPI_Send");
    outcome.exit_code = 0;  // rank 0 ends with the batch's status
    return outcome;
  }

  Dispenser dispenser(static_cast<int>(plan.items.size()), options.cancel);
  std::thread dispatcher([&] { dispatch(dispenser, size); });
  LocalSource source(dispenser);
  std::vector<BatchReport> parts(static_cast<std::size_t>(size));
  std::vector<std::string> hosts(static_cast<std::size_t>(size));
  try {
    parts[0] = run_batch(options, std::move(plan), &source);
  } catch (...) {
    dispatcher.detach();  // MPI_Abort ends it with the process
    throw;
  }
  dispatcher.join();
  hosts[0] = host;
  for (int k = 1; k < size; ++k) {
    int from = 0;
    const std::string report = receive_text(MPI_ANY_SOURCE, kTagReport, &from);
    parts[from] = report_from_wire(report, parts[0], from, &hosts[from]);
  }
  outcome.report = merge_batch_reports(std::move(parts), hosts, MPI_Wtime() - t_start);
  return outcome;
}

}  // namespace

RankOutcome run_batch_mpi(const BatchOptions& options) {
  MpiSession mpi;
  if (mpi.size() == 1) {
    RankOutcome single;
    single.report = run_batch(options);
    return single;
  }
  mpi.share_cores();
  RankOutcome outcome;
  try {
    outcome = run_ranks(options, mpi);
  } catch (const std::exception& e) {
    // The other ranks would wait for this one forever: end the job. Finished outputs are complete
    // (temporary name + rename); `--resume` redoes the rest.
    std::fprintf(stderr, "tilefilter: rank %d: %s; ending the MPI job (run again with --resume)\n", mpi.rank(),
                 e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, exit_status(ExitCode::Failed));
    throw;
  }
  if (outcome.root && outcome.job_error) throw *outcome.job_error;  // as without MPI
  return outcome;
}

}  // namespace tf::cli
