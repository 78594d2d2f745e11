// linklab probe common parts (see probe.hpp for the contract).
#include "probe.hpp"
#include "message_types.inc"
#include "run.hpp"

#include <signal.h>
#include <execinfo.h>
#include <time.h>
#include <unistd.h>

#include <cmath>
#include <cstdarg>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace linklab {

// ---- clock -------------------------------------------------------------------------
int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

static void sleep_until_ns(int64_t t) {
  timespec ts{time_t(t / 1000000000LL), long(t % 1000000000LL)};
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
}

void sleep_ns(int64_t ns) {
  int64_t end = now_ns() + ns;
  while (!stop_requested()) {
    int64_t now = now_ns();
    if (now >= end) return;
    sleep_until_ns(std::min<int64_t>(end, now + 50000000LL));
  }
}

void log(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
}

// ---- types -------------------------------------------------------------------------
// the rows of the one message-type table (src/linklab/probes/message_types.py)
const std::vector<TypeInfo>& all_types() {
#define LL_TYPE(NAME, DDS, KIND, BYTES) {#NAME, DDS, TypeKind::KIND, BYTES},
  static const std::vector<TypeInfo> types = {LINKLAB_MESSAGE_TYPES(LL_TYPE)};
#undef LL_TYPE
  return types;
}

const TypeInfo* find_type(const std::string& name) {
  for (const auto& t : all_types())
    if (name == t.name) return &t;
  return nullptr;
}

void fill_pattern(uint8_t* data, size_t n) {
  uint32_t x = 2463534242u;  // xorshift: cheap, not constant
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    data[i] = uint8_t(x);
  }
}

// ---- signals ---------------------------------------------------------------------
static std::atomic<int> g_signal{0};
static void on_signal(int sig) { g_signal.store(sig); }

// A crash inside a middleware leaves a backtrace on stderr (the run's log) before the
// default action (core / exit status) happens.
// Set once the summary is out: a crash while the middleware tears down after that does
// not change the run's result (records and summary are complete), so the process exits
// with the status it was going to have.
static std::atomic<int> g_exit_status{-1};

static void on_crash(int sig) {
  void* frames[64];
  int n = backtrace(frames, 64);
  const char msg[] = "linklab probe: fatal signal; backtrace:\n";
  ssize_t ignored = write(2, msg, sizeof msg - 1);
  backtrace_symbols_fd(frames, n, 2);
  int status = g_exit_status.load();
  if (status >= 0) {
    const char note[] = "linklab probe: the crash happened in middleware teardown, after the summary\n";
    ignored = write(2, note, sizeof note - 1);
    _exit(status);
  }
  (void)ignored;
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_signal_handlers() {
  signal(SIGSEGV, on_crash);
  signal(SIGABRT, on_crash);
  signal(SIGBUS, on_crash);
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;  // no SA_RESTART: sleeps return early
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);
}
bool stop_requested() { return g_signal.load() != 0; }
int stop_signal() { return g_signal.load(); }

// ---- records ---------------------------------------------------------------------
RecordWriter::RecordWriter(const std::string& path, Role role, uint64_t expected) {
  buf_.resize(size_t(std::min<uint64_t>(std::max<uint64_t>(expected, 1024), 1 << 16)));
  file_ = std::fopen(path.c_str(), "wb");
  if (!file_) return;
  const char magic[8] = {'L', 'L', 'R', 'E', 'C', '1', '\0', '\0'};
  uint32_t head[2] = {28u, uint32_t(role)};  // little-endian host (x86-64, aarch64)
  failed_ = std::fwrite(magic, 1, 8, file_) != 8 || std::fwrite(head, 4, 2, file_) != 2;
  std::fflush(file_);
  flushed_at_ns_ = now_ns();
}

void RecordWriter::flush() {
  if (!file_) { n_ = 0; return; }
  if (n_ && std::fwrite(buf_.data(), sizeof(Record), n_, file_) != n_) failed_ = true;
  total_ += n_;
  n_ = 0;
  std::fflush(file_);
  flushed_at_ns_ = now_ns();
}

RecordWriter::~RecordWriter() {
  flush();
  if (file_) std::fclose(file_);
}

// ---- pacing ------------------------------------------------------------------------
Pacer::Pacer(double rate_hz) : start_(now_ns()), period_(int64_t(std::llround(1e9 / rate_hz))) {}

bool Pacer::wait_next() {
  int64_t deadline = start_ + int64_t(k_) * period_;
  int64_t now = now_ns();
  if (now - deadline > period_) {
    uint64_t missed = uint64_t((now - deadline) / period_);
    skipped_ += missed;
    k_ += missed;
    deadline = start_ + int64_t(k_) * period_;
  }
  while ((now = now_ns()) < deadline) {
    if (stop_requested()) return false;
    sleep_until_ns(std::min<int64_t>(deadline, now + 50000000LL));
  }
  ++k_;
  return !stop_requested();
}

// ---- ROS 2 QoS summary ----------------------------------------------------------------
Json ros_qos_json(const RosQos& q) {
  Json j = Json::object();
  j.set("reliability", q.reliable ? "reliable" : "best_effort");
  j.set("history", q.history ? Json(q.history) : Json());
  j.set("depth", q.depth ? Json(int(*q.depth)) : Json());
  j.set("durability", q.durability ? Json(q.durability) : Json());
  Json why = Json::object();
  for (const auto& u : q.unsupported) why.set(u.first, u.second);
  j.set("unsupported", why);
  return j;
}

// ---- receive queue ------------------------------------------------------------------
void ReceiveQueue::push(const Received& r) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(r);
  }
  cv_.notify_one();
}

void ReceiveQueue::wait_take(int64_t timeout_ns, std::vector<Received>& out) {
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait_for(lock, std::chrono::nanoseconds(timeout_ns), [this] { return !queue_.empty(); });
  out.insert(out.end(), queue_.begin(), queue_.end());
  queue_.clear();
}

// ---- the runs (the publisher's: publish.cpp) -------------------------------------------
bool touch_file(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return false;
  std::fclose(f);
  return true;
}

namespace {

void run_sub(const Options& o, Subscriber& sub, Outcome& out) {
  RecordWriter rec(o.records, Role::Sub, o.count);
  if (!rec.ok()) { out.errors.push("cannot write records file " + o.records); out.end_reason = "error"; return; }
  std::vector<Received> got;
  got.reserve(1024);
  std::vector<bool> seen(o.count > 0 ? size_t(o.count) : 0);
  uint64_t unique = 0, samples = 0, warm = 0, dups = 0, max_matched = 0, malformed = 0;
  int64_t t0 = now_ns(), t_match = 0, t_last = 0, t_first_rx = 0;
  while (true) {
    if (stop_requested()) { out.end_reason = "signal"; break; }
    int m = sub.matched();
    if (m > 0 && !t_match) {
      t_match = now_ns();
      if (!o.ready_file.empty() && !touch_file(o.ready_file))
        out.errors.push("cannot create --ready-file " + o.ready_file);
    }
    if (uint64_t(m) > max_matched) max_matched = uint64_t(m);
    got.clear();
    if (!sub.take(50000000, got)) { out.errors.push("take failed"); out.end_reason = "error"; break; }
    int64_t t_taken = now_ns();
    bool end = false;
    for (const auto& r : got) {
      int64_t t_recv = r.t_recv_ns ? r.t_recv_ns : t_taken;
      if (!r.valid) { ++malformed; continue; }
      if (r.seq == END_OF_STREAM) { end = true; continue; }
      if (r.seq & WARMUP_FLAG) { ++warm; t_last = t_recv; continue; }
      rec.add(r.seq, r.t_send_ns, t_recv, r.bytes);
      ++samples;
      if (!t_first_rx) t_first_rx = t_recv;
      t_last = t_recv;
      if (!seen.empty() && r.seq < seen.size()) {
        if (seen[r.seq]) ++dups; else { seen[r.seq] = true; ++unique; }
      } else {
        ++unique;
      }
    }
    int64_t now = now_ns();
    if (end) { out.end_reason = "end_of_stream"; break; }
    if (o.count && unique >= o.count) { out.end_reason = "count"; break; }
    if (!t_match && !samples) {
      if (now - t0 > int64_t(o.match_timeout_s * 1e9)) {
        out.errors.push("no publisher matched within " + Json(o.match_timeout_s).dump() + " s");
        out.end_reason = "no_match";
        break;
      }
      continue;
    }
    int64_t since = std::max(t_last, t_match ? t_match : t0);
    if (o.idle_timeout_s > 0 && now - since > int64_t(o.idle_timeout_s * 1e9)) { out.end_reason = "idle"; break; }
    if (o.duration_s > 0 && now - (t_match ? t_match : t0) > int64_t(o.duration_s * 1e9)) { out.end_reason = "duration"; break; }
  }
  rec.flush();
  out.summary.set("samples", samples);
  out.summary.set("unique_samples", unique);
  out.summary.set("duplicates", dups);
  out.summary.set("warmup_samples", warm);
  out.summary.set("max_matched", max_matched);
  if (t_match) out.summary.set("match_wait_s", double(t_match - t0) / 1e9);
  out.summary.set("malformed_samples", malformed);
  if (malformed)
    out.errors.push(std::to_string(malformed) + " sample(s) on " + o.dds_topic() + " carried no linklab seq/send time "
                    "(another publisher on the topic?); they are not in the records");
  out.summary.set("receive_span_s", samples > 1 ? double(t_last - t_first_rx) / 1e9 : 0.0);
  if (!rec.ok()) out.errors.push("writing records file " + o.records + " failed");
}

}  // namespace

int probe_main(int argc, char** argv, const Middleware& mw) {
  std::string prog = std::string("linklab-probe-") + mw.name;
  Options o = parse_options(argc, argv, prog.c_str());
  if (mw.refuse) {
    std::string why = mw.refuse(o);
    if (!why.empty()) usage_error(prog.c_str(), why);
  }
  install_signal_handlers();
  Outcome out;
  out.summary.set("probe", mw.name);
  out.summary.set("role", o.role == Role::Pub ? "pub" : "sub");
  out.summary.set("version", mw.version);
  out.summary.set("topic", o.dds_topic());
  out.summary.set("type", o.type->dds_name);
  out.summary.set("size", o.size);
  if (o.role == Role::Pub) out.summary.set("rate_hz", o.rate_hz);
  out.summary.set("applied", Json::object());
  out.summary.set("samples", 0ULL);
  std::string error;
  int64_t t_begin = now_ns();
  std::unique_ptr<Publisher> pub;
  std::unique_ptr<Subscriber> sub;
  if (o.role == Role::Pub) {
    pub = mw.make_publisher(o, error);
    if (!pub) {
      out.errors.push(error);
      out.end_reason = "error";
    } else {
      out.summary.set("applied", pub->applied());
      run_pub(o, *pub, out);
    }
  } else {
    sub = mw.make_subscriber(o, error);
    if (!sub) {
      out.errors.push(error);
      out.end_reason = "error";
    } else {
      out.summary.set("applied", sub->applied());
      run_sub(o, *sub, out);
      sub->after_run(out.summary);
    }
  }
  // Records are closed (run_* flushed them); the summary goes out before the
  // middleware tears down, so a teardown problem cannot lose it.
  out.summary.set("errors", out.errors);
  out.summary.set("end_reason", out.end_reason);
  if (stop_requested()) out.summary.set("signal", stop_signal());
  out.summary.set("records", o.records.empty() ? Json() : Json(o.records));
  out.summary.set("wall_s", double(now_ns() - t_begin) / 1e9);
  std::fflush(stderr);
  std::printf("%s\n", out.summary.dump().c_str());
  std::fflush(stdout);
  bool failed = !out.errors.empty() && out.end_reason != "signal";
  g_exit_status.store(failed ? 1 : 0);
  pub.reset();  // participants leave: peers see them go at once
  sub.reset();
  return failed ? 1 : 0;
}

}  // namespace linklab
