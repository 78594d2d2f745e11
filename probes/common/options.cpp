// linklab probe command line (see probe.hpp for the contract): parse_options and the
// one-line usage errors.
#include "probe.hpp"
#include "ros_types.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <sstream>

namespace linklab {

[[noreturn]] void usage_error(const char* prog, const std::string& message) {
  std::fprintf(stderr, "%s: error: %s\n", prog, message.c_str());
  std::exit(2);
}

namespace {

const char* kUsage =
    "usage: %s pub|sub --topic T --type TYPE [--size BYTES] [--rate HZ] [--count N]\n"
    "       [--duration S] [--warmup S] [--qos reliable|best_effort]\n"
    "       [--history keep_all|keep_last:N] [--durability volatile|transient_local]\n"
    "       [--system-default] [--profile FILE] [--profile-name NAME]\n"
    "       [--peer ADDR ...] [--domain ID] [--interface IFNAME|ADDR] --records FILE.bin\n"
    "       [--match-timeout S] [--idle-timeout S] [--linger S] [--subscribers N] [-v]\n"
    "       [--ready-file PATH (created once matched)] [--start-file PATH (pub: wait for\n"
    "       it after matching, before the first sample, instead of a 1 s settle; if it\n"
    "       comes before all --subscribers matched, serve the ones that did)]\n"
    "TYPE: any --size (the payload bytes): Bytes; ROS 2's Image (rgb8), PointCloud2\n"
    "      (16-byte points: a multiple of 16), String (>= 32), UInt8MultiArray (>= 16).\n"
    "      Fixed sizes (performance_test): Array1k Array4k Array16k Array32k Array60k\n"
    "      Array64k Array256k Array1m Array2m Array4m PointCloud512k PointCloud1m\n"
    "      PointCloud2m PointCloud4m. The DDS topic is rt/T; type names are ROS 2's\n"
    "      (sensor_msgs::msg::dds_::Image_, std_msgs::msg::dds_::String_,\n"
    "      performance_test_msgs::msg::dds_::Array64k_, linklab_msgs::msg::dds_::Bytes_).\n"
    "      ROS 2 types: seq and send time in header.frame_id/stamp (Image, PointCloud2)\n"
    "      or the first 32 characters / 16 octets of data (String / UInt8MultiArray).\n"
    "QoS: flags win; unset policies come from the --profile file (Fast DDS) or ROS 2's\n"
    "      default profile (RELIABLE, KEEP_LAST 10, VOLATILE); --system-default leaves\n"
    "      them to the middleware (rclcpp's system_default). A policy this middleware\n"
    "      cannot take is refused. The summary's applied.ros_qos is read back.\n"
    "Sizes in bytes (or with B/KiB/MiB/KB/MB), rates in Hz, times in seconds (or ms/s).\n";

bool parse_number(const std::string& text, double& value, std::string& unit) {
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  value = std::strtod(s, &end);
  if (end == s || errno != 0 || !std::isfinite(value)) return false;
  unit = std::string(end);
  return true;
}

double parse_seconds(const char* prog, const std::string& arg, const std::string& text) {
  double v;
  std::string unit;
  if (!parse_number(text, v, unit) || v < 0)
    usage_error(prog, arg + ": expected a non-negative duration in seconds (e.g. 20, 20s, 500ms), got '" + text + "'");
  if (unit.empty() || unit == "s") return v;
  if (unit == "ms") return v / 1e3;
  if (unit == "min") return v * 60;
  usage_error(prog, arg + ": expected a duration in seconds (e.g. 20, 20s, 500ms), got '" + text + "'");
}

uint64_t parse_count(const char* prog, const std::string& arg, const std::string& text, uint64_t max) {
  char* end = nullptr;
  errno = 0;
  if (text.empty() || text[0] == '-') usage_error(prog, arg + ": expected a non-negative integer, got '" + text + "'");
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (*end != '\0' || errno != 0 || v > max)
    usage_error(prog, arg + ": expected an integer 0.." + std::to_string(max) + ", got '" + text + "'");
  return v;
}

uint32_t parse_size(const char* prog, const std::string& text) {
  double v;
  std::string unit;
  static const std::map<std::string, double> units = {
      {"", 1}, {"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"KiB", 1024}, {"MiB", 1048576}};
  auto it = units.end();
  if (parse_number(text, v, unit)) it = units.find(unit);
  if (it == units.end() || v < 0)
    usage_error(prog, "--size: expected a payload size in bytes (e.g. 262144 or 256KiB), got '" + text + "'");
  double bytes = v * it->second;
  if (bytes != std::floor(bytes) || bytes > 256.0 * 1048576)
    usage_error(prog, "--size: expected a whole number of bytes up to 256MiB, got '" + text + "'");
  return uint32_t(bytes);
}

}  // namespace

std::string resolve_interface(const std::string& name_or_addr) {
  in_addr a;
  if (inet_pton(AF_INET, name_or_addr.c_str(), &a) == 1) return name_or_addr;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && name_or_addr == i->ifa_name) {
      char buf[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
      found = buf;
      break;
    }
  }
  freeifaddrs(list);
  return found;
}

namespace {

// What parse_options has read so far: the options, and which of --size and --rate were given.
struct Parse {
  const char* prog;
  Options o;
  bool have_size = false, have_rate = false;
};

[[noreturn]] void print_usage_and_exit(const char* prog) {
  std::printf(kUsage, prog);
  std::exit(0);
}

Role parse_role(int argc, char** argv, const char* prog) {
  if (argc < 2) usage_error(prog, "missing role: expected 'pub' or 'sub' (see --help)");
  std::string role = argv[1];
  if (role == "-h" || role == "--help") print_usage_and_exit(prog);
  if (role == "pub") return Role::Pub;
  if (role == "sub") return Role::Sub;
  usage_error(prog, "role: expected 'pub' or 'sub', got '" + role + "'");
}

// ---- one setter per option that takes a value: (parse, option name, its value) ----------
using Setter = void (*)(Parse&, const std::string&, const std::string&);

void set_topic(Parse& p, const std::string&, const std::string& value) {
  if (value.empty() || value.find_first_of(" /\t") != std::string::npos)
    usage_error(p.prog, "--topic: expected a ROS 2 topic name without slashes (e.g. chatter), got '" + value + "'");
  p.o.topic = value;
}

void set_type(Parse& p, const std::string&, const std::string& value) {
  p.o.type = find_type(value);
  if (!p.o.type) {
    std::string names;
    for (const auto& t : all_types()) names += std::string(names.empty() ? "" : ", ") + t.name;
    usage_error(p.prog, "--type: unknown type '" + value + "'; expected one of " + names);
  }
}

void set_size(Parse& p, const std::string&, const std::string& value) {
  p.o.size = parse_size(p.prog, value);
  p.have_size = true;
}

void set_rate(Parse& p, const std::string&, const std::string& value) {
  double v;
  std::string unit;
  if (!parse_number(value, v, unit) || !(unit.empty() || unit == "Hz") || v <= 0 || v > 1e6)
    usage_error(p.prog, "--rate: expected a publish rate in Hz above 0 (e.g. 30 or 30Hz), got '" + value + "'");
  p.o.rate_hz = v;
  p.have_rate = true;
}

void set_qos(Parse& p, const std::string&, const std::string& value) {
  if (value == "reliable") p.o.reliable = true;
  else if (value == "best_effort") p.o.reliable = false;
  else usage_error(p.prog, "--qos: expected 'reliable' or 'best_effort', got '" + value + "'");
}

void set_history(Parse& p, const std::string&, const std::string& value) {
  History h;
  if (value == "keep_all") {
    h.keep_all = true;
  } else if (value.rfind("keep_last:", 0) == 0) {
    h.keep_all = false;
    std::string n = value.substr(10);
    uint64_t d = 0;
    char* end = nullptr;
    d = std::strtoull(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || d < 1 || d > 1000000)
      usage_error(p.prog, "--history: expected keep_all or keep_last:N with N 1..1000000, got '" + value + "'");
    h.depth = int32_t(d);
  } else {
    usage_error(p.prog, "--history: expected keep_all or keep_last:N (e.g. keep_last:10), got '" + value + "'");
  }
  p.o.history = h;
}

void set_durability(Parse& p, const std::string&, const std::string& value) {
  if (value == "volatile") p.o.durability = Durability::Volatile;
  else if (value == "transient_local") p.o.durability = Durability::TransientLocal;
  else usage_error(p.prog, "--durability: expected 'volatile' or 'transient_local', got '" + value + "'");
}

void set_profile(Parse& p, const std::string&, const std::string& value) {
  FILE* f = std::fopen(value.c_str(), "r");
  if (!f) usage_error(p.prog, "--profile: cannot read '" + value + "': " + std::strerror(errno));
  std::fclose(f);
  p.o.profile = value;
}

void add_peers(Parse& p, const std::string&, const std::string& value) {
  std::stringstream ss(value);
  std::string peer;
  while (std::getline(ss, peer, ',')) {
    in_addr a;
    std::string host = peer.substr(0, peer.find(':'));
    if (inet_pton(AF_INET, host.c_str(), &a) != 1)
      usage_error(p.prog, "--peer: expected an IPv4 address (e.g. 10.0.0.2), got '" + peer + "'");
    p.o.peers.push_back(peer);
  }
}

void set_interface(Parse& p, const std::string&, const std::string& value) {
  p.o.interface = value;
  p.o.interface_addr = resolve_interface(value);
  if (p.o.interface_addr.empty())
    usage_error(p.prog, "--interface: '" + value + "' is neither an IPv4 address nor an interface with an IPv4 address here");
}

void set_gate_file(Parse& p, const std::string& arg, const std::string& value) {
  if (value.empty()) usage_error(p.prog, arg + ": expected a file path");
  (arg == "--ready-file" ? p.o.ready_file : p.o.start_file) = value;
}

// Every option that takes a value, and what it sets.
const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> table = {
      {"--topic", set_topic},
      {"--type", set_type},
      {"--size", set_size},
      {"--rate", set_rate},
      {"--count", [](Parse& p, const std::string& a, const std::string& v) {
         p.o.count = parse_count(p.prog, a, v, 1ULL << 40); }},
      {"--duration", [](Parse& p, const std::string& a, const std::string& v) {
         p.o.duration_s = parse_seconds(p.prog, a, v); }},
      {"--warmup", [](Parse& p, const std::string& a, const std::string& v) {
         p.o.warmup_s = parse_seconds(p.prog, a, v); }},
      {"--qos", set_qos},
      {"--history", set_history},
      {"--durability", set_durability},
      {"--profile", set_profile},
      {"--profile-name", [](Parse& p, const std::string&, const std::string& v) { p.o.profile_name = v; }},
      {"--peer", add_peers},
      {"--domain", [](Parse& p, const std::string& a, const std::string& v) {
         p.o.domain = int(parse_count(p.prog, a, v, 232)); }},
      {"--interface", set_interface},
      {"--records", [](Parse& p, const std::string&, const std::string& v) { p.o.records = v; }},
      {"--match-timeout", [](Parse& p, const std::string& a, const std::string& v) {
         p.o.match_timeout_s = parse_seconds(p.prog, a, v); }},
      {"--idle-timeout", [](Parse& p, const std::string& a, const std::string& v) {
         p.o.idle_timeout_s = parse_seconds(p.prog, a, v); }},
      {"--linger", [](Parse& p, const std::string& a, const std::string& v) {
         p.o.linger_s = parse_seconds(p.prog, a, v); }},
      {"--subscribers", [](Parse& p, const std::string& a, const std::string& v) {
         p.o.subscribers = int(parse_count(p.prog, a, v, 1000)); }},
      {"--ready-file", set_gate_file},
      {"--start-file", set_gate_file},
  };
  return table;
}

// The argument at argv[i] (a flag, or an option with its value inline or in argv[i + 1],
// which then is consumed too).
void read_argument(Parse& p, int argc, char** argv, int& i) {
  std::string arg = argv[i];
  std::string value;
  bool has_inline = false;
  if (arg == "-v" || arg == "--verbose") { p.o.verbose = true; return; }
  if (arg == "--system-default") { p.o.system_default = true; return; }
  if (arg.rfind("--system-default=", 0) == 0) usage_error(p.prog, "--system-default takes no value");
  if (arg == "-h" || arg == "--help") print_usage_and_exit(p.prog);
  auto eq = arg.find('=');
  if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
    value = arg.substr(eq + 1);
    arg = arg.substr(0, eq);
    has_inline = true;
  }
  auto setter = setters().find(arg);
  if (setter == setters().end()) usage_error(p.prog, "unknown argument '" + arg + "' (see --help)");
  if (!has_inline) {
    if (i + 1 >= argc) usage_error(p.prog, arg + ": missing value");
    value = argv[++i];
  }
  setter->second(p, arg, value);
}

// --size against --type: required with a type of any size (for pub) and checked against
// it; with a fixed-size type, omitted or equal to the type's payload.
void check_size_for_type(Parse& p) {
  Options& o = p.o;
  if (o.type->payload_bytes == 0) {  // any size: Bytes and ROS 2's types
    if (o.role == Role::Pub && !p.have_size)
      usage_error(p.prog, "--size is required with --type " + std::string(o.type->name) + " (e.g. --size 262144)");
    std::string why = p.have_size ? ros::size_refusal(o.type->kind, o.size) : "";
    if (!why.empty()) usage_error(p.prog, "--size: " + why);
  } else {
    if (p.have_size && o.size != o.type->payload_bytes)
      usage_error(p.prog, "--size: " + std::string(o.type->name) + " carries exactly " +
                              std::to_string(o.type->payload_bytes) + " bytes; omit --size or use --type Bytes");
    o.size = o.type->payload_bytes;
  }
}

// What each role cannot run without.
void check_required(Parse& p) {
  const Options& o = p.o;
  if (o.topic.empty()) usage_error(p.prog, "--topic is required (e.g. --topic chatter)");
  if (!o.type) usage_error(p.prog, "--type is required (e.g. --type Bytes or --type Array64k)");
  check_size_for_type(p);
  if (o.role == Role::Pub) {
    if (!p.have_rate) usage_error(p.prog, "--rate is required for pub (e.g. --rate 30)");
    if (o.count == 0 && o.duration_s == 0) usage_error(p.prog, "pub needs --count N or --duration S");
  }
  if (o.role == Role::Sub && o.records.empty()) usage_error(p.prog, "--records FILE.bin is required for sub");
}

}  // namespace

Options parse_options(int argc, char** argv, const char* prog) {
  Parse p{prog, Options{}};
  p.o.role = parse_role(argc, argv, prog);
  for (int i = 2; i < argc; ++i) read_argument(p, argc, argv, i);
  check_required(p);
  return p.o;
}

}  // namespace linklab
