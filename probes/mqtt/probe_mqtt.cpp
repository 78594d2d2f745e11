// linklab-probe-mqtt: the probe protocol over MQTT v5 (libmosquitto) through a broker
// (mosquitto, started by linklab on the edge host: seed 004's "MQTT-broker" column).
//
//   --qos best_effort -> MQTT QoS 0, reliable (default, like ROS 2's default) -> QoS 1;
//                       with --system-default and no --qos: QoS 0, MQTT's own default
//                       (a PUBLISH/SUBSCRIBE without QoS bits; mosquitto_pub/sub's -q 0)
//   --durability volatile  what MQTT does (data is published unretained); transient_local
//                       is refused: a broker keeps at most one retained message per topic
//   --history           refused: MQTT has no history cache
//   --peer ADDR[:PORT]  the broker (default 127.0.0.1:1883, :8883 with TLS)
//   --interface IF|ADDR local address the client binds to
//   --profile FILE      key=value lines: cafile, certfile, keyfile (MQTT over TLS),
//                       keepalive, max_inflight
// Topic: rt/<topic> as for DDS. Payload: Bytes and performance_test's types: seq u64 +
// t_send_ns i64 + the type's payload bytes (the DDS samples carry the same two fields and
// payload, so the bytes on the wire are within a few bytes of the CDR sample). ROS 2's
// types (Image, PointCloud2, String, UInt8MultiArray): the CDR-serialized sample
// (encapsulation CDR_LE + XCDR1, byte for byte what Fast DDS serializes, built once by
// ros_types.hpp's CdrSample with seq and send time where the DDS probes put them), the
// payload a ROS 2 middleware over a non-DDS transport (rmw_zenoh) also carries; the
// subscriber decodes it and records the data field's length.
//
// Matching: MQTT decouples publishers from subscribers, so each probe announces itself
// with a retained presence message (linklab/presence/rt/<topic>/{pub,sub}/<client>),
// cleared by its last will if it dies, and counts the other side's announcements. The
// publisher thus waits for its subscribers like the DDS probes wait for discovery.
// MQTT has no domain: --domain is reported as not applicable. The summary's
// applied.ros_qos has the QoS level in use (publisher: the one on every PUBLISH;
// subscriber: the one the broker granted in its SUBACK): 1 (or 2) = reliable,
// 0 = best_effort; durability "volatile" (retain flag off); history and depth null with
// the reason under "unsupported".
#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <set>

#include "probe.hpp"
#include "ros_types.hpp"

namespace {

using linklab::Json;
using linklab::Options;

constexpr uint32_t kHeaderBytes = 16;  // seq, t_send_ns

// The ROS 2 policies MQTT has no counterpart for (the same sentences as
// linklab.probes.qos.UNSUPPORTED["mqtt"], which a test compares).
const std::vector<std::pair<std::string, std::string>> kUnsupported = {
    {"history", "MQTT has no history cache: the broker forwards each message once to the "
                "subscribers connected now and keeps at most one retained message per topic."},
    {"depth", "MQTT has no history cache whose depth could be set."},
};

// A setting MQTT cannot take: refused before anything runs.
std::string refuse(const Options& o) {
  if (o.history)
    return "--history: MQTT has no history cache (the broker forwards each message once and keeps at most "
           "one retained message per topic); omit --history";
  if (o.durability == linklab::Durability::TransientLocal)
    return "--durability transient_local: MQTT cannot keep a history for late-joining subscribers (a broker "
           "keeps at most one retained message per topic); only volatile is possible";
  return "";
}

struct Profile {
  std::string cafile, certfile, keyfile;
  int keepalive = 30;
  int max_inflight = 20;  // libmosquitto's default, stated explicitly
};

bool read_profile(const std::string& path, Profile& profile, std::string& error) {
  if (path.empty()) return true;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto eq = line.find('=');
    std::string key = line.substr(0, eq), value = eq == std::string::npos ? "" : line.substr(eq + 1);
    if (key == "cafile") profile.cafile = value;
    else if (key == "certfile") profile.certfile = value;
    else if (key == "keyfile") profile.keyfile = value;
    else if (key == "keepalive") profile.keepalive = std::atoi(value.c_str());
    else if (key == "max_inflight") profile.max_inflight = std::atoi(value.c_str());
    else {
      error = "--profile " + path + ": unknown key '" + key +
              "' (expected cafile, certfile, keyfile, keepalive, max_inflight)";
      return false;
    }
  }
  return true;
}

class Client {
 public:
  ~Client() {
    if (mosq_) {
      if (connected_) {
        // withdraw the presence announcement (an empty retained message deletes it)
        int mid = 0;
        mosquitto_publish_v5(mosq_, &mid, presence_mine_.c_str(), 0, nullptr, 1, true, nullptr);
        wait_for([&] { return acked_mids_.count(mid) > 0; }, 2.0);
        mosquitto_disconnect_v5(mosq_, 0, nullptr);
      }
      mosquitto_loop_stop(mosq_, !connected_);
      mosquitto_destroy(mosq_);
    }
    mosquitto_lib_cleanup();
  }

  bool open(const Options& o, bool publisher, std::string& error) {
    if (!read_profile(o.profile, profile_, error)) return false;
    kind_ = o.type->kind;
    // ROS 2's default is reliable; --system-default leaves it to MQTT: QoS 0
    qos_ = o.reliable.value_or(!o.system_default) ? 1 : 0;
    topic_ = o.dds_topic();
    tls_ = !profile_.cafile.empty();
    host_ = "127.0.0.1";
    port_ = tls_ ? 8883 : 1883;
    if (o.peers.size() > 1) { error = "--peer: MQTT connects to one broker, got " + std::to_string(o.peers.size()); return false; }
    if (!o.peers.empty()) {
      const std::string& p = o.peers[0];
      auto colon = p.find(':');
      host_ = p.substr(0, colon);
      if (colon != std::string::npos) port_ = std::atoi(p.substr(colon + 1).c_str());
    }
    client_id_ = std::string("linklab-") + (publisher ? "pub-" : "sub-") + std::to_string(getpid());
    const std::string presence = "linklab/presence/" + topic_ + "/";
    presence_mine_ = presence + (publisher ? "pub/" : "sub/") + client_id_;
    presence_other_ = presence + (publisher ? "sub/" : "pub/");

    mosquitto_lib_init();
    mosq_ = mosquitto_new(client_id_.c_str(), true, this);
    if (!mosq_) { error = "mosquitto_new failed"; return false; }
    mosquitto_int_option(mosq_, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5);
    mosquitto_max_inflight_messages_set(mosq_, unsigned(profile_.max_inflight));
    mosquitto_connect_v5_callback_set(mosq_, on_connect);
    mosquitto_disconnect_v5_callback_set(mosq_, on_disconnect);
    mosquitto_subscribe_v5_callback_set(mosq_, on_subscribe);
    mosquitto_publish_v5_callback_set(mosq_, on_publish);
    mosquitto_message_v5_callback_set(mosq_, on_message);
    mosquitto_will_set_v5(mosq_, presence_mine_.c_str(), 0, nullptr, 1, true, nullptr);
    if (tls_) {
      int rc = mosquitto_tls_set(mosq_, profile_.cafile.c_str(), nullptr,
                                 profile_.certfile.empty() ? nullptr : profile_.certfile.c_str(),
                                 profile_.keyfile.empty() ? nullptr : profile_.keyfile.c_str(), nullptr);
      if (rc != MOSQ_ERR_SUCCESS) { error = std::string("MQTT TLS setup: ") + mosquitto_strerror(rc); return false; }
    }
    int rc = mosquitto_connect_bind_v5(mosq_, host_.c_str(), port_, profile_.keepalive,
                                       o.interface_addr.empty() ? nullptr : o.interface_addr.c_str(), nullptr);
    if (rc != MOSQ_ERR_SUCCESS) {
      error = "MQTT connect to broker " + broker() + ": " +
              (rc == MOSQ_ERR_ERRNO ? std::string(std::strerror(errno)) : mosquitto_strerror(rc));
      return false;
    }
    mosquitto_loop_start(mosq_);
    if (!wait_for([&] { return connect_rc_ >= 0; }, 10.0) || connect_rc_ != 0) {
      error = "MQTT broker " + broker() + " did not accept the connection (" +
              (connect_rc_ < 0 ? std::string("no CONNACK within 10 s") : mosquitto_reason_string(connect_rc_)) + ")";
      return false;
    }
    connected_ = true;
    // announce, and watch the other side's announcements
    mosquitto_publish_v5(mosq_, nullptr, presence_mine_.c_str(), 1, "1", 1, true, nullptr);
    std::string watch = presence_other_ + "+";
    int mid = 0;
    mosquitto_subscribe_v5(mosq_, &mid, watch.c_str(), 1, 0, nullptr);
    if (!publisher) {
      int data_mid = 0;
      mosquitto_subscribe_v5(mosq_, &data_mid, topic_.c_str(), qos_, 0, nullptr);
      if (!wait_for([&] { return granted_.count(data_mid) > 0; }, 10.0)) {
        error = "MQTT broker " + broker() + " did not acknowledge the subscription within 10 s";
        return false;
      }
      granted_qos_ = granted_[data_mid];
      if (granted_qos_ < 0 || granted_qos_ > 2) {
        error = "MQTT broker " + broker() + " refused the subscription to " + topic_ + " (reason code " +
                std::to_string(granted_qos_) + ")";
        return false;
      }
      linklab::log("linklab-probe-mqtt: subscribed to '%s' (QoS %d granted %d)", topic_.c_str(), qos_, granted_qos_);
    }
    wait_for([&] { return granted_.count(mid) > 0; }, 10.0);
    return true;
  }

  int others() {
    std::lock_guard<std::mutex> lock(mutex_);
    return connected_ && !lost_ ? int(others_.size()) : 0;
  }

  bool publish(const uint8_t* data, uint32_t size) {
    int rc = mosquitto_publish_v5(mosq_, nullptr, topic_.c_str(), int(size), data, qos_, retain_, nullptr);
    if (rc != MOSQ_ERR_SUCCESS) return false;
    std::lock_guard<std::mutex> lock(mutex_);
    ++published_;
    return true;
  }

  bool wait_all_acknowledged(double timeout_s) {
    return wait_for([&] { return data_acked_ >= published_; }, timeout_s);
  }

  // subscriber side: samples queued by the network thread, handed over by take()
  bool take(int64_t timeout_ns, std::vector<linklab::Received>& out) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait_for(lock, std::chrono::nanoseconds(timeout_ns), [&] { return !queue_.empty() || lost_; });
    out.insert(out.end(), queue_.begin(), queue_.end());
    queue_.clear();
    return true;
  }

  Json applied(bool publisher) {
    std::lock_guard<std::mutex> lock(mutex_);
    Json j = Json::object();
    j.set("protocol", "MQTTv5");
    j.set("transport", tls_ ? "tls" : "tcp");
    j.set("broker", broker());
    j.set("qos", qos_);
    if (!publisher) j.set("granted_qos", granted_qos_);
    // from the broker's CONNACK
    j.set("broker_maximum_qos", broker_maximum_qos_);
    j.set("broker_maximum_packet_size", broker_maximum_packet_size_ ? Json(broker_maximum_packet_size_) : Json());
    j.set("broker_receive_maximum", broker_receive_maximum_ ? Json(unsigned(broker_receive_maximum_)) : Json());
    j.set("max_inflight", profile_.max_inflight);
    j.set("keepalive_s", profile_.keepalive);
    j.set("retain", retain_);
    j.set("history", "n/a (MQTT)");
    linklab::RosQos r;
    r.reliable = (publisher ? qos_ : granted_qos_) >= 1;  // what each PUBLISH carries / the SUBACK granted
    r.durability = "volatile";  // data is published with retain_ off: nothing is kept for late joiners
    r.unsupported = kUnsupported;
    j.set("ros_qos", linklab::ros_qos_json(r));
    return j;
  }

 private:
  template <typename Pred>
  bool wait_for(Pred pred, double timeout_s) {
    std::unique_lock<std::mutex> lock(mutex_);
    return changed_.wait_for(lock, std::chrono::duration<double>(timeout_s), pred);
  }

  std::string broker() const { return host_ + ":" + std::to_string(port_); }

  static Client* self(void* userdata) { return static_cast<Client*>(userdata); }

  static void on_connect(struct mosquitto*, void* ud, int rc, int, const mosquitto_property* props) {
    Client* c = self(ud);
    std::lock_guard<std::mutex> lock(c->mutex_);
    c->connect_rc_ = rc;
    uint32_t packet = 0;
    if (mosquitto_property_read_int32(props, MQTT_PROP_MAXIMUM_PACKET_SIZE, &packet, false)) c->broker_maximum_packet_size_ = packet;
    uint16_t receive = 0;
    if (mosquitto_property_read_int16(props, MQTT_PROP_RECEIVE_MAXIMUM, &receive, false)) c->broker_receive_maximum_ = receive;
    uint8_t max_qos = 0;
    c->broker_maximum_qos_ = mosquitto_property_read_byte(props, MQTT_PROP_MAXIMUM_QOS, &max_qos, false) ? max_qos : 2;
    c->changed_.notify_all();
  }
  static void on_disconnect(struct mosquitto*, void* ud, int rc, const mosquitto_property*) {
    Client* c = self(ud);
    std::lock_guard<std::mutex> lock(c->mutex_);
    if (rc != 0) {
      c->lost_ = true;
      linklab::log("linklab-probe-mqtt: broker connection lost: %s", mosquitto_reason_string(rc));
    }
    c->changed_.notify_all();
  }
  static void on_subscribe(struct mosquitto*, void* ud, int mid, int count, const int* granted, const mosquitto_property*) {
    Client* c = self(ud);
    std::lock_guard<std::mutex> lock(c->mutex_);
    c->granted_[mid] = count > 0 ? granted[0] : -1;
    c->changed_.notify_all();
  }
  static void on_publish(struct mosquitto*, void* ud, int mid, int, const mosquitto_property*) {
    Client* c = self(ud);
    std::lock_guard<std::mutex> lock(c->mutex_);
    c->acked_mids_.insert(mid);
    ++c->data_acked_;  // presence messages count too: published_ counts them below
    c->changed_.notify_all();
  }
  static void on_message(struct mosquitto*, void* ud, const struct mosquitto_message* m, const mosquitto_property*) {
    Client* c = self(ud);
    std::string topic = m->topic;
    std::lock_guard<std::mutex> lock(c->mutex_);
    if (topic.rfind(c->presence_other_, 0) == 0) {
      if (m->payloadlen > 0) c->others_.insert(topic); else c->others_.erase(topic);
      c->changed_.notify_all();
      return;
    }
    linklab::Received r{};
    const auto* payload = static_cast<const uint8_t*>(m->payload);
    if (linklab::ros::is_ros_kind(c->kind_)) {
      r.valid = linklab::ros::cdr_read(c->kind_, payload, size_t(m->payloadlen), r);
    } else if (m->payloadlen < int(kHeaderBytes)) {
      r.valid = false;
    } else {
      std::memcpy(&r.seq, payload, 8);
      std::memcpy(&r.t_send_ns, payload + 8, 8);
      r.bytes = uint32_t(m->payloadlen) - kHeaderBytes;
    }
    c->queue_.push_back(r);
    c->changed_.notify_all();
  }

  struct mosquitto* mosq_ = nullptr;
  Profile profile_;
  std::string host_, topic_, client_id_, presence_mine_, presence_other_;
  linklab::TypeKind kind_ = linklab::TypeKind::Bytes;
  int port_ = 1883, qos_ = 1;
  bool tls_ = false;
  const bool retain_ = false;  // data is never retained: late joiners get nothing (volatile)
  std::mutex mutex_;
  std::condition_variable changed_;
  int connect_rc_ = -1;
  bool connected_ = false, lost_ = false;
  std::map<int, int> granted_;
  int granted_qos_ = -1;
  std::set<int> acked_mids_;
  std::set<std::string> others_;
  uint64_t published_ = 1;  // the presence announcement
  uint64_t data_acked_ = 0;
  uint32_t broker_maximum_packet_size_ = 0;
  uint16_t broker_receive_maximum_ = 0;
  int broker_maximum_qos_ = -1;
  std::vector<linklab::Received> queue_;
};

class MqttPublisher final : public linklab::Publisher {
 public:
  bool open(const Options& o, std::string& error) {
    // allocated and filled once; write() changes only seq and send time
    if (linklab::ros::is_ros_kind(o.type->kind)) {
      ros_ = std::make_unique<linklab::ros::CdrSample>(o.type->kind, o.size);
    } else {
      payload_.resize(kHeaderBytes + o.size);
      linklab::fill_pattern(payload_.data(), payload_.size());
    }
    return client_.open(o, true, error);
  }
  int matched() override { return client_.others(); }
  bool write(uint64_t seq, int64_t t_send_ns) override {
    if (ros_) {
      ros_->stamp(seq, t_send_ns);
      return client_.publish(ros_->data(), uint32_t(ros_->size()));
    }
    std::memcpy(payload_.data(), &seq, 8);
    std::memcpy(payload_.data() + 8, &t_send_ns, 8);
    return client_.publish(payload_.data(), uint32_t(payload_.size()));
  }
  bool wait_acknowledged(double timeout_s) override { return client_.wait_all_acknowledged(timeout_s); }
  Json applied() override { return client_.applied(true); }

 private:
  Client client_;
  std::vector<uint8_t> payload_;
  std::unique_ptr<linklab::ros::CdrSample> ros_;
};

class MqttSubscriber final : public linklab::Subscriber {
 public:
  bool open(const Options& o, std::string& error) { return client_.open(o, false, error); }
  int matched() override { return client_.others(); }
  bool take(int64_t timeout_ns, std::vector<linklab::Received>& out) override { return client_.take(timeout_ns, out); }
  Json applied() override { return client_.applied(false); }

 private:
  Client client_;
};

}  // namespace

int main(int argc, char** argv) {
  int major = 0, minor = 0, revision = 0;
  mosquitto_lib_version(&major, &minor, &revision);
  std::string version = "libmosquitto " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(revision);
  linklab::Middleware mw{"mqtt", version, linklab::open_endpoint<MqttPublisher, linklab::Publisher>,
                         linklab::open_endpoint<MqttSubscriber, linklab::Subscriber>, refuse};
  return linklab::probe_main(argc, argv, mw);
}
