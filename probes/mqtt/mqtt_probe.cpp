// linklab-probe-mqtt: publish or subscribe fixed-size samples through an MQTT broker
// (mosquitto, started by linklab on the edge host) with libmosquitto.
//
//   --qos best_effort -> MQTT QoS 0,  --qos reliable -> MQTT QoS 1
//   --peer HOST[:PORT]  broker address (default 127.0.0.1:1883, or :8883 with TLS)
//   --interface ADDR    local address to bind the client socket to
//   --profile FILE      key=value lines: cafile, certfile, keyfile (MQTT over TLS),
//                       keepalive, max_inflight
// MQTT has no history/domain: --history and --domain are accepted and reported as
// not applicable. The protocol is MQTT v5 so the broker's CONNACK states what it
// applied (maximum packet size, receive maximum, maximum QoS) and SUBACK the QoS granted.
#include <mosquitto.h>
#include <mqtt_protocol.h>

#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <algorithm>
#include <thread>
#include <unistd.h>

#include "probe_protocol.hpp"

namespace {

using linklab::Record;

struct Profile {
  std::string cafile, certfile, keyfile;
  int keepalive = 30;
  int max_inflight = 20;  // libmosquitto's default, stated explicitly
};

Profile read_profile(const std::string& path) {
  Profile profile;
  if (path.empty()) return profile;
  std::ifstream in(path);
  if (!in) throw linklab::UsageError("--profile: cannot read '" + path + "'");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto eq = line.find('=');
    if (eq == std::string::npos) throw linklab::UsageError("--profile: expected key=value, got '" + line + "'");
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "cafile") profile.cafile = value;
    else if (key == "certfile") profile.certfile = value;
    else if (key == "keyfile") profile.keyfile = value;
    else if (key == "keepalive") profile.keepalive = std::stoi(value);
    else if (key == "max_inflight") profile.max_inflight = std::stoi(value);
    else throw linklab::UsageError("--profile: unknown key '" + key + "' (cafile, certfile, keyfile, keepalive, max_inflight)");
  }
  return profile;
}

struct State {
  std::mutex mutex;
  std::condition_variable changed;
  bool connected = false;
  int connect_rc = -1;
  bool subscribed = false;
  int granted_qos = -1;
  uint64_t acknowledged = 0;  // on_publish callbacks (QoS 0: written, QoS 1: PUBACK)
  // CONNACK properties (0 when the broker did not send them)
  uint32_t broker_maximum_packet_size = 0;
  uint16_t broker_receive_maximum = 0;
  int broker_maximum_qos = -1;
  bool disconnected_unexpectedly = false;
  std::vector<std::string> errors;
  // subscriber
  std::vector<Record> records;
  uint64_t wanted = 0;
  int64_t deadline_ns = 0;
};

void on_connect(struct mosquitto*, void* userdata, int rc, int, const mosquitto_property* props) {
  auto* state = static_cast<State*>(userdata);
  std::lock_guard<std::mutex> lock(state->mutex);
  state->connect_rc = rc;
  state->connected = rc == 0;
  uint32_t packet = 0;
  if (mosquitto_property_read_int32(props, MQTT_PROP_MAXIMUM_PACKET_SIZE, &packet, false)) {
    state->broker_maximum_packet_size = packet;
  }
  uint16_t receive = 0;
  if (mosquitto_property_read_int16(props, MQTT_PROP_RECEIVE_MAXIMUM, &receive, false)) {
    state->broker_receive_maximum = receive;
  }
  uint8_t max_qos = 0;
  state->broker_maximum_qos = mosquitto_property_read_byte(props, MQTT_PROP_MAXIMUM_QOS, &max_qos, false)
                                  ? max_qos : 2;  // absent means QoS 2 is supported
  state->changed.notify_all();
}

void on_disconnect(struct mosquitto*, void* userdata, int rc, const mosquitto_property*) {
  auto* state = static_cast<State*>(userdata);
  std::lock_guard<std::mutex> lock(state->mutex);
  if (rc != 0) {
    state->disconnected_unexpectedly = true;
    state->errors.push_back(std::string("broker connection lost: ") + mosquitto_reason_string(rc));
  }
  state->connected = false;
  state->changed.notify_all();
}

void on_subscribe(struct mosquitto*, void* userdata, int, int count, const int* granted,
                  const mosquitto_property*) {
  auto* state = static_cast<State*>(userdata);
  std::lock_guard<std::mutex> lock(state->mutex);
  state->subscribed = true;
  state->granted_qos = count > 0 ? granted[0] : -1;
  state->changed.notify_all();
}

void on_publish(struct mosquitto*, void* userdata, int, int, const mosquitto_property*) {
  auto* state = static_cast<State*>(userdata);
  std::lock_guard<std::mutex> lock(state->mutex);
  state->acknowledged += 1;
  state->changed.notify_all();
}

void on_message(struct mosquitto*, void* userdata, const struct mosquitto_message* message,
                const mosquitto_property*) {
  const int64_t t_recv = linklab::monotonic_ns();
  auto* state = static_cast<State*>(userdata);
  if (message->payloadlen < static_cast<int>(linklab::kPayloadHeaderBytes)) return;
  uint64_t seq = 0;
  int64_t t_send = 0;
  linklab::get_header(static_cast<const uint8_t*>(message->payload), &seq, &t_send);
  std::lock_guard<std::mutex> lock(state->mutex);
  state->records.push_back({seq, t_send, t_recv, static_cast<uint32_t>(message->payloadlen)});
  if (state->wanted && state->records.size() >= state->wanted) state->changed.notify_all();
}

struct Broker {
  std::string host = "127.0.0.1";
  int port = 1883;
};

Broker parse_peer(const std::vector<std::string>& peers, bool tls) {
  Broker broker;
  broker.port = tls ? 8883 : 1883;
  if (peers.empty()) return broker;
  if (peers.size() > 1) throw linklab::UsageError("--peer: MQTT connects to one broker, got several");
  std::string peer = peers[0];
  for (const char* scheme : {"tcp/", "mqtt://", "tcp://"}) {
    if (peer.rfind(scheme, 0) == 0) peer = peer.substr(std::strlen(scheme));
  }
  auto colon = peer.rfind(':');
  if (colon != std::string::npos) {
    broker.host = peer.substr(0, colon);
    broker.port = static_cast<int>(linklab::parse_number("--peer", peer.substr(colon + 1)));
  } else {
    broker.host = peer;
  }
  return broker;
}

}  // namespace

int main(int argc, char** argv) {
  linklab::Options options;
  Profile profile;
  try {
    options = linklab::parse_options(argc, argv);
    profile = read_profile(options.profile);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "linklab-probe-mqtt: error: %s\n", error.what());
    return 2;
  }
  const bool publisher = options.role == "pub";
  const bool tls = !profile.cafile.empty();
  const int qos = options.qos == "reliable" ? 1 : 0;
  Broker broker;
  try {
    broker = parse_peer(options.peers, tls);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "linklab-probe-mqtt: error: %s\n", error.what());
    return 2;
  }
  linklab::install_signal_handlers();
  mosquitto_lib_init();

  State state;
  std::string client_id = "linklab-" + options.role + "-" + std::to_string(getpid());
  struct mosquitto* client = mosquitto_new(client_id.c_str(), true, &state);
  mosquitto_int_option(client, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
  mosquitto_max_inflight_messages_set(client, static_cast<unsigned>(profile.max_inflight));
  mosquitto_connect_v5_callback_set(client, on_connect);
  mosquitto_disconnect_v5_callback_set(client, on_disconnect);
  mosquitto_subscribe_v5_callback_set(client, on_subscribe);
  mosquitto_publish_v5_callback_set(client, on_publish);
  mosquitto_message_v5_callback_set(client, on_message);

  auto fail = [&](const std::string& message) {
    std::fprintf(stderr, "linklab-probe-mqtt: error: %s\n", message.c_str());
    std::vector<std::string> errors = state.errors;
    errors.push_back(message);
    linklab::write_records(options.records, publisher, {});
    linklab::print_summary("mqtt", options.role, "", 0, errors);
    mosquitto_destroy(client);
    mosquitto_lib_cleanup();
    return 1;
  };

  if (tls) {
    int rc = mosquitto_tls_set(client, profile.cafile.c_str(), nullptr,
                               profile.certfile.empty() ? nullptr : profile.certfile.c_str(),
                               profile.keyfile.empty() ? nullptr : profile.keyfile.c_str(), nullptr);
    if (rc != MOSQ_ERR_SUCCESS) return fail(std::string("TLS setup: ") + mosquitto_strerror(rc));
  }

  // Sample buffers are sized before connecting: the subscriber appends without reallocating
  // as long as the run stays within count (or rate x duration).
  uint64_t expected = options.count;
  if (expected == 0 && options.duration_s > 0) expected = static_cast<uint64_t>(options.rate_hz * options.duration_s) + 16;
  state.records.reserve(expected ? expected + 16 : 1 << 16);
  state.wanted = publisher ? 0 : options.count;

  const int64_t start_ns = linklab::monotonic_ns();
  int rc = mosquitto_connect_bind_v5(client, broker.host.c_str(), broker.port, profile.keepalive,
                                     options.interface_.empty() ? nullptr : options.interface_.c_str(),
                                     nullptr);
  if (rc != MOSQ_ERR_SUCCESS) {
    return fail("connect to broker " + broker.host + ":" + std::to_string(broker.port) + ": " +
                (rc == MOSQ_ERR_ERRNO ? std::string(std::strerror(errno)) : mosquitto_strerror(rc)));
  }
  mosquitto_loop_start(client);
  {
    std::unique_lock<std::mutex> lock(state.mutex);
    state.changed.wait_for(lock, std::chrono::seconds(10), [&] { return state.connect_rc >= 0; });
    if (!state.connected) {
      lock.unlock();
      mosquitto_loop_stop(client, true);
      return fail("broker " + broker.host + ":" + std::to_string(broker.port) +
                  " did not accept the connection (" +
                  (state.connect_rc < 0 ? std::string("no CONNACK in 10 s")
                                        : mosquitto_reason_string(state.connect_rc)) + ")");
    }
  }

  std::vector<Record> published;
  std::vector<std::string> errors;
  if (!publisher) {
    rc = mosquitto_subscribe_v5(client, nullptr, options.topic.c_str(), qos, 0, nullptr);
    if (rc != MOSQ_ERR_SUCCESS) errors.push_back(std::string("subscribe: ") + mosquitto_strerror(rc));
    std::unique_lock<std::mutex> lock(state.mutex);
    state.changed.wait_for(lock, std::chrono::seconds(10), [&] { return state.subscribed; });
    if (!state.subscribed) errors.push_back("no SUBACK from the broker in 10 s");
    std::fprintf(stderr, "linklab-probe-mqtt: subscribed to '%s' (QoS %d granted %d)\n",
                 options.topic.c_str(), qos, state.granted_qos);
    const int64_t end_ns = options.duration_s > 0 ? start_ns + static_cast<int64_t>(options.duration_s * 1e9) : 0;
    while (!linklab::stop_requested().load()) {
      if (options.count && state.records.size() >= options.count) break;
      if (end_ns && linklab::monotonic_ns() >= end_ns) break;
      if (state.disconnected_unexpectedly) break;
      state.changed.wait_for(lock, std::chrono::milliseconds(50));
    }
  } else {
    std::vector<uint8_t> payload(options.size, 0);  // allocated once; only the header changes
    if (options.warmup_s > 0) {
      const int64_t until = linklab::monotonic_ns() + static_cast<int64_t>(options.warmup_s * 1e9);
      while (!linklab::stop_requested().load() && linklab::monotonic_ns() < until) {
        linklab::sleep_until_ns(std::min<int64_t>(until, linklab::monotonic_ns() + 50000000LL));
      }
    }
    const uint64_t planned = options.count ? options.count
                             : options.duration_s > 0 ? static_cast<uint64_t>(options.rate_hz * options.duration_s)
                                                      : UINT64_MAX;
    published.reserve(planned == UINT64_MAX ? 1 << 16 : planned);
    const int64_t period_ns = static_cast<int64_t>(1e9 / options.rate_hz);
    const int64_t first_ns = linklab::monotonic_ns();
    for (uint64_t seq = 0; seq < planned && !linklab::stop_requested().load(); ++seq) {
      linklab::sleep_until_ns(first_ns + static_cast<int64_t>(seq) * period_ns);
      if (linklab::stop_requested().load()) break;
      const int64_t t_send = linklab::monotonic_ns();
      linklab::put_header(payload.data(), seq, t_send);
      rc = mosquitto_publish_v5(client, nullptr, options.topic.c_str(), static_cast<int>(payload.size()),
                                payload.data(), qos, false, nullptr);
      if (rc != MOSQ_ERR_SUCCESS) {
        if (errors.size() < 10) errors.push_back("publish seq " + std::to_string(seq) + ": " + mosquitto_strerror(rc));
        continue;
      }
      published.push_back({seq, t_send, 0, options.size});
    }
    // Let queued messages leave (QoS 0: written to the socket; QoS 1: PUBACK received).
    std::unique_lock<std::mutex> lock(state.mutex);
    state.changed.wait_for(lock, std::chrono::seconds(10),
                           [&] { return state.acknowledged >= published.size() || !state.connected; });
    if (state.acknowledged < published.size()) {
      errors.push_back(std::to_string(published.size() - state.acknowledged) +
                       " samples not acknowledged by the broker at exit");
    }
  }

  mosquitto_disconnect_v5(client, 0, nullptr);
  mosquitto_loop_stop(client, false);

  std::lock_guard<std::mutex> lock(state.mutex);
  const std::vector<Record>& records = publisher ? published : state.records;
  if (!linklab::write_records(options.records, publisher, records)) {
    errors.push_back("cannot write records to '" + options.records + "'");
  }
  for (const auto& error : state.errors) errors.push_back(error);

  std::string applied =
      "\"protocol\": \"MQTTv5\", \"transport\": " + linklab::json_string(tls ? "tls" : "tcp") +
      ", \"broker\": " + linklab::json_string(broker.host + ":" + std::to_string(broker.port)) +
      ", \"qos\": " + std::to_string(qos) +
      (publisher ? "" : ", \"granted_qos\": " + std::to_string(state.granted_qos)) +
      ", \"broker_maximum_qos\": " + std::to_string(state.broker_maximum_qos) +
      ", \"broker_maximum_packet_size\": " +
      (state.broker_maximum_packet_size ? std::to_string(state.broker_maximum_packet_size) : "null") +
      ", \"broker_receive_maximum\": " +
      (state.broker_receive_maximum ? std::to_string(state.broker_receive_maximum) : "null") +
      ", \"max_inflight\": " + std::to_string(profile.max_inflight) +
      ", \"payload_bytes\": " + std::to_string(options.size) +
      ", \"type\": " + linklab::json_string(options.type) +
      ", \"topic\": " + linklab::json_string(options.topic) +
      ", \"history\": \"n/a (MQTT)\"";
  linklab::print_summary("mqtt", options.role, applied, records.size(), errors);
  mosquitto_destroy(client);
  mosquitto_lib_cleanup();
  return errors.empty() ? 0 : 1;
}
