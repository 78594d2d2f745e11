// The probe protocol every linklab probe speaks (DESIGN.md "Probes", PREAMBLE.md):
// one command line, one record file format, one JSON summary line.
// Kept header-only so a probe is one translation unit plus its middleware.
// TODO(merge): when probes/common/ lands on branch `probes`, use it instead.
#pragma once

#include <time.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace linklab {

inline int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

inline void sleep_until_ns(int64_t deadline_ns) {
  timespec ts{};
  ts.tv_sec = deadline_ns / 1000000000LL;
  ts.tv_nsec = deadline_ns % 1000000000LL;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// ---- stop flag (SIGINT / SIGTERM end a probe cleanly) ------------------------------
inline std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}
extern "C" inline void linklab_on_signal(int) { stop_requested().store(true); }
inline void install_signal_handlers() {
  struct sigaction action {};
  action.sa_handler = linklab_on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

// ---- message types: names mirror performance_test's; --size is the payload bytes ----
struct MessageType {
  const char* name;
  uint32_t nominal_bytes;
};
inline const std::vector<MessageType>& message_types() {
  static const std::vector<MessageType> types = {
      {"Bytes", 0},
      {"Array1k", 1024},          {"Array4k", 4096},          {"Array16k", 16384},
      {"Array32k", 32768},        {"Array60k", 61440},        {"Array64k", 65536},
      {"Array256k", 262144},      {"Array1m", 1048576},       {"Array2m", 2097152},
      {"Array4m", 4194304},       {"PointCloud512k", 524288}, {"PointCloud1m", 1048576},
      {"PointCloud2m", 2097152},  {"PointCloud4m", 4194304},
  };
  return types;
}

// Sample payload header: seq u64, t_send_ns i64 (little-endian), then filler.
constexpr uint32_t kPayloadHeaderBytes = 16;

// ---- command line ---------------------------------------------------------------------
struct Options {
  std::string role;  // "pub" | "sub"
  std::string topic = "linklab";
  std::string type = "Bytes";
  uint32_t size = 0;
  double rate_hz = 10.0;
  uint64_t count = 0;       // 0: no limit
  double duration_s = 0.0;  // 0: no limit
  double warmup_s = 0.0;
  std::string qos = "reliable";
  std::string history = "keep_last:1";
  std::string profile;
  std::vector<std::string> peers;
  int domain = 0;
  std::string interface_;
  std::string records;
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline double parse_number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (errno != 0 || end == text.c_str() || *end != '\0' || value < 0) {
    throw UsageError(flag + ": expected a non-negative number, got '" + text + "'");
  }
  return value;
}

inline Options parse_options(int argc, char** argv) {
  Options options;
  if (argc < 2) throw UsageError("expected 'pub' or 'sub' as the first argument");
  options.role = argv[1];
  if (options.role != "pub" && options.role != "sub") {
    throw UsageError("first argument: expected 'pub' or 'sub', got '" + options.role + "'");
  }
  bool size_given = false;
  for (int i = 2; i < argc; ++i) {
    std::string flag = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError(flag + ": missing value");
      return argv[++i];
    };
    if (flag == "--topic") options.topic = value();
    else if (flag == "--type") options.type = value();
    else if (flag == "--size") { options.size = static_cast<uint32_t>(parse_number(flag, value())); size_given = true; }
    else if (flag == "--rate") options.rate_hz = parse_number(flag, value());
    else if (flag == "--count") options.count = static_cast<uint64_t>(parse_number(flag, value()));
    else if (flag == "--duration") options.duration_s = parse_number(flag, value());
    else if (flag == "--warmup") options.warmup_s = parse_number(flag, value());
    else if (flag == "--qos") options.qos = value();
    else if (flag == "--history") options.history = value();
    else if (flag == "--profile") options.profile = value();
    else if (flag == "--peer") options.peers.push_back(value());
    else if (flag == "--domain") options.domain = static_cast<int>(parse_number(flag, value()));
    else if (flag == "--interface") options.interface_ = value();
    else if (flag == "--records") options.records = value();
    else throw UsageError("unknown option '" + flag + "'");
  }
  const MessageType* type = nullptr;
  for (const auto& candidate : message_types()) {
    if (options.type == candidate.name) type = &candidate;
  }
  if (type == nullptr) {
    throw UsageError("--type: expected Bytes, Array1k..Array4m or PointCloud512k..4m, got '" +
                     options.type + "'");
  }
  if (!size_given) options.size = type->nominal_bytes;
  if (options.size < kPayloadHeaderBytes) {
    throw UsageError("--size: at least 16 bytes (seq + t_send header), got " +
                     std::to_string(options.size));
  }
  if (options.qos != "reliable" && options.qos != "best_effort") {
    throw UsageError("--qos: expected reliable or best_effort, got '" + options.qos + "'");
  }
  if (options.records.empty()) throw UsageError("--records: required");
  if (options.role == "pub" && options.rate_hz <= 0) throw UsageError("--rate: must be > 0");
  return options;
}

// ---- records --------------------------------------------------------------------------
#pragma pack(push, 1)
struct Record {
  uint64_t seq;
  int64_t t_send_ns;
  int64_t t_recv_ns;
  uint32_t bytes;
};
#pragma pack(pop)
static_assert(sizeof(Record) == 28, "record layout is <QqqI");

// Header: magic "LLREC1\0\0", u32 record_size, u32 role (0 sub, 1 pub). x86/ARM: LE.
inline bool write_records(const std::string& path, bool publisher,
                          const std::vector<Record>& records) {
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return false;
  const char magic[8] = {'L', 'L', 'R', 'E', 'C', '1', '\0', '\0'};
  uint32_t record_size = sizeof(Record);
  uint32_t role = publisher ? 1 : 0;
  bool ok = std::fwrite(magic, 1, 8, file) == 8 &&
            std::fwrite(&record_size, 4, 1, file) == 1 && std::fwrite(&role, 4, 1, file) == 1;
  if (ok && !records.empty()) {
    ok = std::fwrite(records.data(), sizeof(Record), records.size(), file) == records.size();
  }
  return std::fclose(file) == 0 && ok;
}

inline void put_header(uint8_t* payload, uint64_t seq, int64_t t_send_ns) {
  std::memcpy(payload, &seq, 8);
  std::memcpy(payload + 8, &t_send_ns, 8);
}

inline void get_header(const uint8_t* payload, uint64_t* seq, int64_t* t_send_ns) {
  std::memcpy(seq, payload, 8);
  std::memcpy(t_send_ns, payload + 8, 8);
}

// ---- JSON summary (one line on stdout) ------------------------------------------------
inline std::string json_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') { out += '\\'; out += c; }
    else if (static_cast<unsigned char>(c) < 0x20) {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
      out += buffer;
    } else out += c;
  }
  return out;
}
inline std::string json_string(const std::string& text) { return "\"" + json_escape(text) + "\""; }

// `applied_json` is an already-formatted JSON object body, e.g. "\"qos\": 1".
inline void print_summary(const std::string& probe, const std::string& role,
                          const std::string& applied_json, uint64_t samples,
                          const std::vector<std::string>& errors) {
  std::string line = "{\"probe\": " + json_string(probe) + ", \"role\": " + json_string(role) +
                     ", \"applied\": {" + applied_json + "}, \"samples\": " +
                     std::to_string(samples) + ", \"errors\": [";
  for (size_t i = 0; i < errors.size(); ++i) {
    if (i) line += ", ";
    line += json_string(errors[i]);
  }
  line += "]}\n";
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
}

}  // namespace linklab
