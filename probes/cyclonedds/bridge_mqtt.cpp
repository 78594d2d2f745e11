// linklab-bridge-mqtt: seed 004's bridged architecture (§3.1: "the communication within
// one host used DDS, and communication between two hosts used ... MQTT") between a
// Cyclone DDS domain restricted to this host and an MQTT broker.
//
//   --direction dds-to-mqtt   a DDS reader on rt/TOPIC; each sample's serialized CDR
//                             (bridge_dds.c: the bytes RTPS carried, encapsulation
//                             header included) is published on MQTT topic TOPIC
//   --direction mqtt-to-dds   an MQTT subscription to TOPIC; each message's bytes are
//                             written as a serialized sample on rt/TOPIC
//
// Nothing is decoded on the way: what crosses the broker is the CDR a DDS peer would have
// received. Reliability maps to MQTT QoS 1 (reliable) or 0 (best effort), as the MQTT
// probe's does. --interface and --peer (default 127.0.0.1 both: "Localhost Only")
// restrict the domain like the Cyclone probe's. --ready-file is created once the broker
// has acknowledged the connection (and the subscription) and the DDS entity exists. On
// SIGINT/SIGTERM it prints one JSON line: what it forwarded and dropped.
#include <mosquitto.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bridge_dds.h"
#include "probe.hpp"

namespace {

const char* kProg = "linklab-bridge-mqtt";

struct BridgeOptions {
  bool to_mqtt = true;
  std::string topic;
  const linklab::TypeInfo* type = nullptr;
  std::string broker_host;
  int broker_port = 1883;
  bool reliable = true;
  int depth = 0;  // 0: KEEP_ALL
  int domain = 0;
  std::string interface_addr = "127.0.0.1";
  std::string peer = "127.0.0.1";
  std::string ready_file;
};

[[noreturn]] void bad(const std::string& message) { linklab::usage_error(kProg, message); }

void parse_broker(const std::string& value, BridgeOptions& o) {
  const auto colon = value.rfind(':');
  char* end = nullptr;
  long port = colon == std::string::npos ? 0 : std::strtol(value.c_str() + colon + 1, &end, 10);
  if (colon == std::string::npos || colon == 0 || !end || *end || port < 1 || port > 65535)
    bad("--broker: " + value + " is not HOST:PORT");
  o.broker_host = value.substr(0, colon);
  o.broker_port = int(port);
}

void parse_value(const std::string& flag, const std::string& value, BridgeOptions& o) {
  if (flag == "--direction") {
    if (value != "dds-to-mqtt" && value != "mqtt-to-dds")
      bad("--direction: " + value + " is not one of dds-to-mqtt, mqtt-to-dds");
    o.to_mqtt = value == "dds-to-mqtt";
  } else if (flag == "--topic") {
    o.topic = value;
  } else if (flag == "--type") {
    o.type = linklab::find_type(value);
    if (!o.type) bad("--type: unknown type " + value);
  } else if (flag == "--broker") {
    parse_broker(value, o);
  } else if (flag == "--qos") {
    if (value != "reliable" && value != "best_effort")
      bad("--qos: " + value + " is not one of reliable, best_effort");
    o.reliable = value == "reliable";
  } else if (flag == "--depth") {
    char* end = nullptr;
    long depth = std::strtol(value.c_str(), &end, 10);
    if (!end || *end || depth < 0 || depth > 100000) bad("--depth: " + value + " is not 0-100000 (0: keep all)");
    o.depth = int(depth);
  } else if (flag == "--domain") {
    char* end = nullptr;
    long domain = std::strtol(value.c_str(), &end, 10);
    if (!end || *end || domain < 0 || domain > 232) bad("--domain: " + value + " is not 0-232");
    o.domain = int(domain);
  } else if (flag == "--interface") {
    o.interface_addr = linklab::resolve_interface(value);
    if (o.interface_addr.empty()) bad("--interface: no IPv4 interface " + value);
  } else if (flag == "--peer") {
    o.peer = value;
  } else if (flag == "--ready-file") {
    o.ready_file = value;
  } else {
    bad("unknown option " + flag + " (--direction --topic --type --broker --qos --depth --domain "
        "--interface --peer --ready-file)");
  }
}

BridgeOptions parse(int argc, char** argv) {
  BridgeOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) bad(flag + " needs a value");
    parse_value(flag, argv[++i], o);
  }
  if (o.topic.empty() || !o.type || o.broker_host.empty()) bad("--topic, --type and --broker are required");
  return o;
}

class Bridge {
 public:
  explicit Bridge(const BridgeOptions& o) : o_(o) {}
  ~Bridge() { close(); }

  // The incoming side's writer before its subscription; the outgoing side's reader after
  // the broker took the connection (a sample taken before would have nowhere to go).
  bool open(std::string& error) {
    if (!o_.to_mqtt && !open_dds(nullptr, error)) return false;
    if (!open_mqtt(error)) return false;
    return !o_.to_mqtt || open_dds(on_sample, error);
  }

  void close() {
    linklab_bridge_dds_close(dds_);  // first: no sample is handed to a closed client
    dds_ = nullptr;
    if (mosq_) {
      mosquitto_disconnect(mosq_);
      mosquitto_loop_stop(mosq_, true);
      mosquitto_destroy(mosq_);
      mosq_ = nullptr;
      mosquitto_lib_cleanup();
    }
  }

  std::string summary() const {
    linklab::Json j = linklab::Json::object();
    j.set("bridge", "mqtt");
    j.set("direction", o_.to_mqtt ? "dds-to-mqtt" : "mqtt-to-dds");
    j.set("topic", o_.topic);
    j.set("forwarded", double(forwarded_.load()));
    j.set("forwarded_bytes", double(bytes_.load()));
    j.set("dropped", double(dropped_.load()));
    return j.dump();
  }

 private:
  bool open_dds(linklab_bridge_sample_fn fn, std::string& error) {
    char message[256] = "";
    dds_ = linklab_bridge_dds_open(o_.domain, o_.interface_addr.c_str(), o_.peer.c_str(), o_.type->dds_name,
                                   o_.topic.c_str(), o_.reliable, o_.depth, fn, this, message, sizeof message);
    if (!dds_) error = message;
    return dds_ != nullptr;
  }

  bool open_mqtt(std::string& error) {
    mosquitto_lib_init();
    const std::string id = std::string("linklab-bridge-") + (o_.to_mqtt ? "out-" : "in-") + std::to_string(getpid());
    mosq_ = mosquitto_new(id.c_str(), true, this);
    if (!mosq_) { error = "mosquitto_new failed"; return false; }
    mosquitto_int_option(mosq_, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311);
    mosquitto_max_inflight_messages_set(mosq_, 20);
    mosquitto_connect_callback_set(mosq_, on_connect);
    mosquitto_subscribe_callback_set(mosq_, on_subscribe);
    mosquitto_message_callback_set(mosq_, on_message);
    int rc = mosquitto_connect(mosq_, o_.broker_host.c_str(), o_.broker_port, 30);
    if (rc != MOSQ_ERR_SUCCESS) {
      error = "cannot connect to the broker " + o_.broker_host + ":" + std::to_string(o_.broker_port) + ": " +
              (rc == MOSQ_ERR_ERRNO ? std::string(std::strerror(errno)) : mosquitto_strerror(rc));
      return false;
    }
    mosquitto_loop_start(mosq_);
    for (int i = 0; i < 1000 && !ready_ && !linklab::stop_requested(); ++i) linklab::sleep_ns(10'000'000);
    if (!ready_) { error = "the broker did not acknowledge the connection within 10 s"; return false; }
    return true;
  }

  static void on_connect(struct mosquitto* m, void* ud, int rc) {
    auto* self = static_cast<Bridge*>(ud);
    if (rc != 0) return;
    if (self->o_.to_mqtt) self->ready_ = true;
    else mosquitto_subscribe(m, nullptr, self->o_.topic.c_str(), self->o_.reliable ? 1 : 0);
  }

  static void on_subscribe(struct mosquitto*, void* ud, int, int, const int*) {
    static_cast<Bridge*>(ud)->ready_ = true;
  }

  // MQTT -> DDS: the message's bytes are the sample's CDR.
  static void on_message(struct mosquitto*, void* ud, const struct mosquitto_message* msg) {
    auto* self = static_cast<Bridge*>(ud);
    const auto* cdr = static_cast<const unsigned char*>(msg->payload);
    if (self->dds_ && linklab_bridge_dds_write(self->dds_, cdr, size_t(msg->payloadlen)) == 0)
      self->count(size_t(msg->payloadlen));
    else
      self->dropped_++;
  }

  // DDS -> MQTT: every sample as the reader takes it, on Cyclone's receive thread.
  static void on_sample(void* ctx, const unsigned char* cdr, size_t size) {
    auto* self = static_cast<Bridge*>(ctx);
    int rc = mosquitto_publish(self->mosq_, nullptr, self->o_.topic.c_str(), int(size), cdr,
                               self->o_.reliable ? 1 : 0, false);
    if (rc == MOSQ_ERR_SUCCESS) self->count(size);
    else self->dropped_++;
  }

  void count(size_t bytes) {
    forwarded_++;
    bytes_ += bytes;
  }

  const BridgeOptions& o_;
  linklab_bridge_dds* dds_ = nullptr;
  struct mosquitto* mosq_ = nullptr;
  std::atomic<bool> ready_{false};
  std::atomic<uint64_t> forwarded_{0}, bytes_{0}, dropped_{0};
};

}  // namespace

int main(int argc, char** argv) {
  const BridgeOptions o = parse(argc, argv);
  linklab::install_signal_handlers();
  Bridge bridge(o);
  std::string error;
  if (!bridge.open(error)) {
    std::fprintf(stderr, "%s: error: %s\n", kProg, error.c_str());
    return 1;
  }
  if (!o.ready_file.empty()) {
    if (FILE* f = std::fopen(o.ready_file.c_str(), "w")) std::fclose(f);
  }
  while (!linklab::stop_requested()) linklab::sleep_ns(100'000'000);
  std::string line = bridge.summary();
  bridge.close();
  std::printf("%s\n", line.c_str());
  return 0;
}
