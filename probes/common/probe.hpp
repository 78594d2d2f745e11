// linklab probe common parts: one command line, one record format, one summary, for
// every middleware. A middleware probe implements the two small interfaces at the
// bottom (Publisher, Subscriber) and calls probe_main(); everything else is here.
//
// Contract (kept in sync with src/linklab/probes/__init__.py, which documents it):
//   probe pub|sub --topic T --type TYPE [--size BYTES] --rate HZ [--count N]
//         [--duration S] [--warmup S]
//         [--qos reliable|best_effort] [--history keep_all|keep_last:N]
//         [--durability volatile|transient_local] [--system-default]
//         [--profile FILE] [--peer ADDR ...] [--domain ID] [--interface IF|ADDR]
//         --records FILE.bin
//   TYPE: Bytes (linklab_msgs, seq + t_send + sequence<octet>), ROS 2's Image,
//   PointCloud2 (sensor_msgs), String, UInt8MultiArray (std_msgs) -- all of any --size
//   (the payload: the data field's bytes) -- or performance_test's fixed-size
//   Array1k..Array4m, PointCloud512k..4m (--size optional; must match). The ROS 2 types
//   keep ROS 2's fields: a sample's seq and send time go where ROS 2 has room, and only
//   those bytes change per sample (payload buffers are allocated and filled once):
//   Image/PointCloud2 header.stamp = send time, header.frame_id = seq in 16 hex digits;
//   String the first 32 characters (seq, send time in hex); UInt8MultiArray the first 16
//   octets (seq u64, send time i64, little-endian; layout.data_offset 16). Details,
//   geometry and size limits: ros_types.hpp and probes/idl/linklab_types.idl. MQTT (and
//   the Zenoh probe) carry a ROS 2 type as its CDR-serialized sample (encapsulation +
//   XCDR1, what Fast DDS writes), the others as seq u64 + t_send i64 + payload.
//   A subscriber counts samples without a linklab seq/send time (malformed_samples; an
//   error when not 0).
//   QoS: the flags win. A policy without a flag comes from the Fast DDS --profile file
//   when there is one, else from ROS 2's default profile (RELIABLE, KEEP_LAST 10,
//   VOLATILE); with --system-default (rclcpp's system_default: rmw leaves the policy to
//   the middleware) from the middleware's own defaults instead of ROS 2's. A flag a
//   middleware cannot take (Middleware::refuse) is a usage error before anything runs.
//   Record file (little-endian): 16-byte header "LLREC1\0\0", u32 record_size=28,
//   u32 role (0 sub, 1 pub); then records <QqqI: seq, t_send_ns, t_recv_ns (0 in
//   publisher files), bytes. One JSON line on stdout at exit; logs on stderr. The
//   summary's applied.ros_qos (ros_qos_json) has the same keys for every middleware:
//   reliability, history, depth, durability read back from the created entities, and
//   unsupported (policy -> why this middleware has no such policy).
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace linklab {

// ---- clock ----------------------------------------------------------------------
// CLOCK_MONOTONIC in ns: all hosts are namespaces of one kernel, so t_recv - t_send
// across processes is the one-way latency.
int64_t now_ns();
void sleep_ns(int64_t ns);  // relative; returns early on a signal

// ---- sequence numbers on the wire ---------------------------------------------------
// Measured samples carry seq 0..N-1. Warm-up samples carry WARMUP_FLAG | k and are
// not counted. END_OF_STREAM tells subscribers the publisher is done.
constexpr uint64_t WARMUP_FLAG = 1ULL << 63;
constexpr uint64_t END_OF_STREAM = ~0ULL;

// ---- message types ----------------------------------------------------------------
enum class TypeKind { Bytes, Array, PointCloud, Image, PointCloud2, String, UInt8MultiArray };
struct TypeInfo {
  const char* name;       // command-line name, e.g. "Array64k"
  const char* dds_name;   // e.g. "performance_test_msgs::msg::dds_::Array64k_"
  TypeKind kind;
  uint32_t payload_bytes; // fixed payload (array/data bytes); 0: any size (Bytes, ROS 2 types)
};
const std::vector<TypeInfo>& all_types();
const TypeInfo* find_type(const std::string& name);

// ---- options ------------------------------------------------------------------------
enum class Role { Sub = 0, Pub = 1 };
struct History {
  bool keep_all = true;
  int32_t depth = 0;  // for keep_last
};
enum class Durability { Volatile, TransientLocal };
struct Options {
  Role role = Role::Sub;
  std::string topic;            // user name; the DDS topic is "rt/" + topic
  const TypeInfo* type = nullptr;
  uint32_t size = 0;            // payload bytes per sample
  double rate_hz = 0;
  uint64_t count = 0;           // 0 = unbounded (then --duration bounds the run)
  double duration_s = 0;        // 0 = none
  double warmup_s = 0;
  std::optional<bool> reliable; // unset: profile / middleware default
  std::optional<History> history;
  std::optional<Durability> durability;
  bool system_default = false;  // unset policies: the profile's / middleware's defaults, not ROS 2's
  std::string profile;          // file (Fast DDS XML / Cyclone config)
  std::string profile_name;     // Fast DDS: named profiles to use (optional)
  std::vector<std::string> peers;
  int domain = 0;
  std::string interface;        // name or IPv4 address as given
  std::string interface_addr;   // resolved IPv4 address
  std::string records;
  double match_timeout_s = 60;  // wait for the other side (discovery may cross a lossy link)
  double idle_timeout_s = 30;   // sub: exit when nothing arrives for this long
  double linger_s = 5;          // pub: wait this long for acknowledgements at the end
  int subscribers = 1;          // pub: matched readers to wait for
  // The discovery gate (linklab bench): a sub creates ready_file once its reader has matched
  // a writer, a pub once its writer has matched --subscribers readers; a pub then waits for
  // start_file (created by the runner when every endpoint is ready) before its first sample. Under loss the two sides of discovery
  // finish apart: a writer can match a reader long before that reader matches the writer.
  std::string ready_file;
  std::string start_file;
  bool verbose = false;
  std::string dds_topic() const { return "rt/" + topic; }
};

// Parses argv; on a bad argument prints one line "<prog>: error: ..." on stderr and
// exits with status 2.
Options parse_options(int argc, char** argv, const char* prog);
[[noreturn]] void usage_error(const char* prog, const std::string& message);
std::string resolve_interface(const std::string& name_or_addr);  // "" if unknown

// ---- signals -----------------------------------------------------------------------
void install_signal_handlers();
bool stop_requested();
int stop_signal();

// ---- records -----------------------------------------------------------------------
class RecordWriter {
 public:
  RecordWriter(const std::string& path, Role role, uint64_t expected);
  ~RecordWriter();
  // Records reach the file when the buffer fills or FLUSH_EVERY_NS after the last
  // flush, whichever comes first: a probe the runner has to SIGKILL (a writer blocked
  // in a send at the deadline) keeps all but its last quarter second of records. The
  // clock is the record's own local time (a subscriber's receive time, a publisher's send
  // time): no clock is read per record.
  static constexpr int64_t FLUSH_EVERY_NS = 250000000;
  void add(uint64_t seq, int64_t t_send_ns, int64_t t_recv_ns, uint32_t bytes) {
    if (n_ == buf_.size()) flush();
    buf_[n_++] = Record{seq, t_send_ns, t_recv_ns, bytes};
    if ((t_recv_ns ? t_recv_ns : t_send_ns) - flushed_at_ns_ >= FLUSH_EVERY_NS) flush();
  }
  void flush();
  bool ok() const { return file_ != nullptr && !failed_; }
  uint64_t written() const { return total_; }

 private:
#pragma pack(push, 1)
  struct Record {
    uint64_t seq;
    int64_t t_send_ns;
    int64_t t_recv_ns;
    uint32_t bytes;
  };
#pragma pack(pop)
  static_assert(sizeof(Record) == 28, "record layout <QqqI");
  FILE* file_ = nullptr;
  std::vector<Record> buf_;
  size_t n_ = 0;
  uint64_t total_ = 0;
  int64_t flushed_at_ns_ = 0;
  bool failed_ = false;
};

// ---- pacing ------------------------------------------------------------------------
// Absolute deadlines start + k/rate on CLOCK_MONOTONIC (no drift). Like an rcl timer,
// a tick that is late by more than one period does not burst: missed deadlines are
// skipped (counted in skipped()) and the phase is kept.
class Pacer {
 public:
  explicit Pacer(double rate_hz);
  // Sleeps until the next deadline; false if a stop was requested meanwhile.
  bool wait_next();
  uint64_t skipped() const { return skipped_; }
  int64_t period_ns() const { return period_; }

 private:
  int64_t start_;
  int64_t period_;
  uint64_t k_ = 0;
  uint64_t skipped_ = 0;
};

// ---- JSON (just what the summary needs) ---------------------------------------------
class Json {
 public:
  enum class T { Null, Bool, Int, UInt, Num, Str, Arr, Obj };
  Json() = default;
  Json(std::nullptr_t) {}
  Json(bool b) : t_(T::Bool), b_(b) {}
  Json(int v) : t_(T::Int), i_(v) {}
  Json(long v) : t_(T::Int), i_(v) {}
  Json(long long v) : t_(T::Int), i_(v) {}
  Json(unsigned v) : t_(T::UInt), u_(v) {}
  Json(unsigned long v) : t_(T::UInt), u_(v) {}
  Json(unsigned long long v) : t_(T::UInt), u_(v) {}
  Json(double v) : t_(T::Num), d_(v) {}
  Json(const char* s) : t_(T::Str), s_(s) {}
  Json(std::string s) : t_(T::Str), s_(std::move(s)) {}
  static Json object() { Json j; j.t_ = T::Obj; return j; }
  static Json array() { Json j; j.t_ = T::Arr; return j; }
  Json& set(const std::string& key, Json value);  // object: insert or replace
  Json& push(Json value);                         // array: append
  bool empty() const { return t_ == T::Obj ? obj_.empty() : t_ == T::Arr ? arr_.empty() : t_ == T::Null; }
  std::string dump() const;

 private:
  T t_ = T::Null;
  bool b_ = false;
  long long i_ = 0;
  unsigned long long u_ = 0;
  double d_ = 0;
  std::string s_;
  std::vector<Json> arr_;
  std::vector<std::pair<std::string, Json>> obj_;
};

// ---- the middleware side --------------------------------------------------------------
class Publisher {
 public:
  virtual ~Publisher() = default;
  virtual int matched() = 0;                                   // matched readers now
  // readers matched since the writer was created, unmatched ones included (DDS
  // PublicationMatchedStatus.total_count); -1: the middleware does not say
  virtual int matched_ever() { return -1; }
  virtual bool write(uint64_t seq, int64_t t_send_ns) = 0;     // false: write failed
  virtual bool wait_acknowledged(double timeout_s) = 0;         // reliable: all acked
  virtual Json applied() = 0;                                   // read back from entities
};

struct Received {
  uint64_t seq;
  int64_t t_send_ns;
  uint32_t bytes;
  int64_t t_recv_ns = 0;  // stamped where the middleware hands the sample over (0: by the caller)
  bool valid = true;      // false: the sample carried no linklab seq/send time (not recorded)
};

// Samples taken in a middleware's listener (its receive thread, stamped there, as
// ddsperf does) and handed to the probe's main thread.
class ReceiveQueue {
 public:
  void push(const Received& r);
  // Waits up to timeout_ns for samples; moves everything queued into out.
  void wait_take(int64_t timeout_ns, std::vector<Received>& out);

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<Received> queue_;
};

class Subscriber {
 public:
  virtual ~Subscriber() = default;
  virtual int matched() = 0;  // matched writers now
  // Waits up to timeout_ns for data; appends every available sample to out (t_recv is
  // taken by the caller right after). Returns false on a middleware error.
  virtual bool take(int64_t timeout_ns, std::vector<Received>& out) = 0;
  virtual Json applied() = 0;
  // After the run: what only the run can tell (e.g. samples the listener missed).
  virtual void after_run(Json& summary) { (void)summary; }
};

// ---- ROS 2 QoS as the middleware applied it (the summary's applied.ros_qos) ----------
struct RosQos {
  bool reliable = true;
  const char* history = nullptr;     // "keep_last" | "keep_all" | nullptr: no such policy
  std::optional<int32_t> depth;      // keep_last's depth; empty with keep_all / no history
  const char* durability = nullptr;  // "volatile" | "transient_local" | "transient" | "persistent"
  std::vector<std::pair<std::string, std::string>> unsupported;  // policy -> why not
};
// {"reliability", "history", "depth", "durability", "unsupported"}: always these keys.
Json ros_qos_json(const RosQos& q);

// What a middleware provides to probe_main. The Python side's twin is the registry's
// probe family (src/linklab/middleware/families.py: one ProbeFamily per probe, whose
// QoS refusals are the same sentences).
struct Middleware {
  const char* name;  // "fastdds", "cyclonedds"
  std::string version;
  // Create the endpoint; on failure return nullptr and put a one-line reason in error.
  std::unique_ptr<Publisher> (*make_publisher)(const Options&, std::string& error);
  std::unique_ptr<Subscriber> (*make_subscriber)(const Options&, std::string& error);
  // A setting this middleware cannot take: the usage error's text ("--flag ...: why"),
  // or "" when it can take them all. nullptr: everything is taken.
  std::string (*refuse)(const Options&) = nullptr;
};

// The one way a probe makes its endpoints: construct T (a Publisher or Subscriber of
// the middleware) and open() it with the options; nullptr and a reason on failure.
template <class T, class Endpoint>
std::unique_ptr<Endpoint> open_endpoint(const Options& o, std::string& error) {
  auto endpoint = std::make_unique<T>();
  if (!endpoint->open(o, error)) return nullptr;
  return endpoint;
}

// Parses arguments, runs the role, writes records, prints the JSON summary. Returns
// the process exit status (0 ok, 1 run failed, 2 usage).
int probe_main(int argc, char** argv, const Middleware& mw);

// Fills a payload buffer once with a recognisable pattern (not zeros, so nothing
// compresses or deduplicates it by accident).
void fill_pattern(uint8_t* data, size_t n);

void log(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace linklab
