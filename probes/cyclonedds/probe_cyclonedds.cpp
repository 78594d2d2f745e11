// linklab-probe-cyclonedds: the linklab probe protocol on Eclipse Cyclone DDS 0.10 (C API).
//
// Configuration: --profile FILE is a Cyclone XML configuration (what CYCLONEDDS_URI
// points at). --interface and --peer add an inline configuration after it (network
// interface; unicast peers with multicast off and ParticipantIndex auto). The domain is
// created with exactly that configuration (without any of these, CYCLONEDDS_URI from
// the environment applies, as for any Cyclone application).
// QoS: ROS 2's defaults (RELIABLE, KEEP_LAST 10, VOLATILE), changed by --qos, --history
// and --durability; with --system-default a policy without a flag is left unset, so
// Cyclone's own default applies (as rmw_cyclonedds does for SYSTEM_DEFAULT).
// TRANSIENT_LOCAL: Cyclone keeps for late joiners what the durability_service history
// says (default KEEP_LAST 1), so it is set to the writer's history, as rmw_cyclonedds
// does. The summary's "applied" object (and its ros_qos) is read back with dds_get_qos
// on the entities.
#include <dds/dds.h>
#include <dds/ddsi/ddsi_config.h>
#include <dds/version.h>

#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <regex>
#include <string>
#include <utility>

#include "codecs.hpp"
#include "probe.hpp"

using linklab::Json;
using linklab::Options;
using linklab_cyclone::Codec;
using linklab_cyclone::codec_for;

namespace {

// ---- QoS read back -------------------------------------------------------------------------
double secs(dds_duration_t d) { return d == DDS_INFINITY ? -1.0 : double(d) / 1e9; }

Json qos_json(dds_entity_t e) {
  Json j = Json::object();
  dds_qos_t* q = dds_create_qos();
  if (dds_get_qos(e, q) != DDS_RETCODE_OK) {
    dds_delete_qos(q);
    return j;
  }
  dds_reliability_kind_t rk;
  dds_duration_t mbt;
  if (dds_qget_reliability(q, &rk, &mbt)) {
    j.set("reliability", rk == DDS_RELIABILITY_RELIABLE ? "RELIABLE" : "BEST_EFFORT");
    j.set("max_blocking_time_s", secs(mbt));
  }
  dds_history_kind_t hk;
  int32_t depth;
  if (dds_qget_history(q, &hk, &depth)) {
    j.set("history", hk == DDS_HISTORY_KEEP_ALL ? "KEEP_ALL" : "KEEP_LAST");
    j.set("depth", depth);
  }
  dds_durability_kind_t dk;
  if (dds_qget_durability(q, &dk)) {
    const char* names[] = {"VOLATILE", "TRANSIENT_LOCAL", "TRANSIENT", "PERSISTENT"};
    j.set("durability", names[int(dk) & 3]);
  }
  dds_duration_t cleanup;
  dds_history_kind_t dshk;
  int32_t dsd, dsms, dsmi, dsmspi;
  if (dds_qget_durability_service(q, &cleanup, &dshk, &dsd, &dsms, &dsmi, &dsmspi)) {
    Json ds = Json::object();
    ds.set("history", dshk == DDS_HISTORY_KEEP_ALL ? "KEEP_ALL" : "KEEP_LAST");
    ds.set("depth", dsd);
    ds.set("max_samples", dsms);
    ds.set("max_samples_per_instance", dsmspi);
    j.set("durability_service", ds);
  }
  int32_t ms, mi, mspi;
  if (dds_qget_resource_limits(q, &ms, &mi, &mspi)) {
    Json rl = Json::object();
    rl.set("max_samples", ms);
    rl.set("max_instances", mi);
    rl.set("max_samples_per_instance", mspi);
    j.set("resource_limits", rl);
  }
  dds_delete_qos(q);
  return j;
}

// The ROS 2 policies as dds_get_qos reports them for the entity (Cyclone has all four).
Json ros_qos_json(dds_entity_t e) {
  linklab::RosQos r;
  dds_qos_t* q = dds_create_qos();
  if (dds_get_qos(e, q) == DDS_RETCODE_OK) {
    dds_reliability_kind_t rk;
    dds_duration_t mbt;
    if (dds_qget_reliability(q, &rk, &mbt)) r.reliable = rk == DDS_RELIABILITY_RELIABLE;
    dds_history_kind_t hk;
    int32_t depth;
    if (dds_qget_history(q, &hk, &depth)) {
      r.history = hk == DDS_HISTORY_KEEP_ALL ? "keep_all" : "keep_last";
      if (hk != DDS_HISTORY_KEEP_ALL) r.depth = depth;
    }
    dds_durability_kind_t dk;
    if (dds_qget_durability(q, &dk)) {
      const char* names[] = {"volatile", "transient_local", "transient", "persistent"};
      r.durability = names[int(dk) & 3];
    }
  }
  dds_delete_qos(q);
  return linklab::ros_qos_json(r);
}

// The leaf settings (<Element>value</Element>) of the configuration handed to the domain:
// the domain was created from exactly these sources, later ones overriding earlier ones,
// so this is what is in effect where it differs from the library defaults below.
// The configuration text handed to the domain (the profile file, then the inline part),
// comments dropped.
std::string config_text(const std::string& profile_path, const std::string& inline_xml) {
  std::string text;
  if (!profile_path.empty()) {
    if (FILE* f = std::fopen(profile_path.c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
      std::fclose(f);
    }
  }
  text += inline_xml;
  return std::regex_replace(text, std::regex("<!--[\\s\\S]*?-->"), "");
}

// DDS-Security of the domain: the plugin library of each of the three sections of
// <Security> (the domain was created with them, or creation failed), false when none.
Json security_json(const std::string& text) {
  static const std::pair<const char*, const char*> sections[] = {
      {"Authentication", "authentication"},
      {"AccessControl", "access_control"},
      {"Cryptographic", "cryptography"}};
  Json sec = Json::object();
  bool any = false;
  for (const auto& [element, key] : sections) {
    std::regex library(std::string("<") + element +
                       ">[\\s\\S]*?<Library\\s[^>]*path=\"([^\"]*)\"");
    std::smatch m;
    if (std::regex_search(text, m, library)) {
      sec.set(key, m[1].str());
      any = true;
    }
  }
  return any ? sec : Json(false);
}

Json config_settings(const std::string& text) {
  Json j = Json::object();
  std::regex leaf("<([A-Za-z][\\w]*)(?:\\s[^>]*)?>([^<]*)</\\1>");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), leaf); it != std::sregex_iterator(); ++it)
    j.set((*it)[1].str(), (*it)[2].str());
  std::regex attr("<(NetworkInterface|Peer)\\s[^>]*address=\"([^\"]*)\"");
  Json addrs = Json::array();
  for (auto it = std::sregex_iterator(text.begin(), text.end(), attr); it != std::sregex_iterator(); ++it)
    addrs.push((*it)[1].str() + " " + (*it)[2].str());
  if (!addrs.empty()) j.set("addresses", addrs);
  return j;
}

Json config_defaults() {
  // Cyclone's built-in defaults for the settings that matter for large samples over
  // lossy links (the configuration file overrides them; Cyclone 0.10 has no public
  // API to read back the merged configuration of a running domain).
  struct ddsi_config c;
  ddsi_config_init_default(&c);
  Json j = Json::object();
  j.set("max_message_size", c.max_msg_size);
  j.set("fragment_size", unsigned(c.fragment_size));
  j.set("max_rexmit_message_size", c.max_rexmit_msg_size);
  j.set("whc_low_water_mark", c.whc_lowwater_mark);
  j.set("whc_high_water_mark", c.whc_highwater_mark);
  j.set("heartbeat_interval_s", secs(c.const_hb_intv_sched));
  j.set("lease_duration_s", secs(c.lease_duration));
  j.set("spdp_interval_s", secs(c.spdp_interval));
  return j;
}

// ---- endpoints --------------------------------------------------------------------------------
class Endpoint {
 public:
  ~Endpoint() {
    if (sample_) {
      codec_.release(sample_);
      free(sample_);
    }
    if (participant_ > 0) dds_delete(participant_);
    if (domain_ > 0) dds_delete(domain_);
  }

  bool open(const Options& o, std::string& error) {
    codec_ = codec_for(o.type->name);
    if (std::string(codec_.desc->m_typename) != o.type->dds_name) {
      error = std::string("internal: generated type name ") + codec_.desc->m_typename + " != " + o.type->dds_name;
      return false;
    }
    std::string inline_xml;
    if (!o.interface_addr.empty() || !o.peers.empty()) {
      inline_xml = "<CycloneDDS><Domain id=\"any\"><General>";
      if (!o.interface_addr.empty())
        inline_xml += "<Interfaces><NetworkInterface address=\"" + o.interface_addr + "\"/></Interfaces>";
      if (!o.peers.empty()) inline_xml += "<AllowMulticast>false</AllowMulticast>";
      inline_xml += "</General>";
      if (!o.peers.empty()) {
        inline_xml += "<Discovery><ParticipantIndex>auto</ParticipantIndex><Peers>";
        for (const auto& p : o.peers) inline_xml += "<Peer address=\"" + p + "\"/>";
        inline_xml += "</Peers></Discovery>";
      }
      inline_xml += "</Domain></CycloneDDS>";
    }
    if (!o.profile.empty()) {
      char* abs = realpath(o.profile.c_str(), nullptr);
      config_ = std::string("file://") + (abs ? abs : o.profile.c_str());
      free(abs);
    }
    if (!inline_xml.empty()) config_ += (config_.empty() ? "" : ",") + inline_xml;
    profile_ = o.profile;
    inline_xml_ = inline_xml;
    if (!config_.empty()) {
      domain_ = dds_create_domain(dds_domainid_t(o.domain), config_.c_str());
      if (domain_ < 0) {
        error = "Cyclone DDS rejected the configuration (" + std::string(dds_strretcode(domain_)) + "): " +
                (o.profile.empty() ? "--interface/--peer" : "--profile " + o.profile);
        return false;
      }
    } else if (const char* env = getenv("CYCLONEDDS_URI")) {
      config_ = env;
      from_env_ = true;
    }
    participant_ = dds_create_participant(dds_domainid_t(o.domain), nullptr, nullptr);
    if (participant_ < 0) {
      error = "Cyclone DDS could not create the participant (" + std::string(dds_strretcode(participant_)) +
              "; check the configuration and the interface)";
      return false;
    }
    topic_ = dds_create_topic(participant_, codec_.desc, o.dds_topic().c_str(), nullptr, nullptr);
    if (topic_ < 0) {
      error = "Cyclone DDS could not create topic " + o.dds_topic() + ": " + dds_strretcode(topic_);
      return false;
    }
    sample_ = calloc(1, codec_.desc->m_size);
    if (!sample_) { error = "could not allocate a sample"; return false; }
    return true;
  }

  // ROS 2's defaults for what no flag sets, unless --system-default leaves it unset.
  dds_qos_t* qos(const Options& o) const {
    dds_qos_t* q = dds_create_qos();
    if (o.reliable || !o.system_default) {
      bool reliable = o.reliable.value_or(true);
      dds_qset_reliability(q, reliable ? DDS_RELIABILITY_RELIABLE : DDS_RELIABILITY_BEST_EFFORT, DDS_MSECS(100));
    }
    if (o.history) {
      if (o.history->keep_all) dds_qset_history(q, DDS_HISTORY_KEEP_ALL, 0);
      else dds_qset_history(q, DDS_HISTORY_KEEP_LAST, o.history->depth);
    } else if (!o.system_default) {
      dds_qset_history(q, DDS_HISTORY_KEEP_LAST, 10);
    }
    bool transient_local = o.durability == linklab::Durability::TransientLocal;
    if (o.durability || !o.system_default)
      dds_qset_durability(q, transient_local ? DDS_DURABILITY_TRANSIENT_LOCAL : DDS_DURABILITY_VOLATILE);
    if (transient_local) {
      // what a late joiner gets: the writer's history (unset: Cyclone's KEEP_LAST 1)
      dds_history_kind_t hk = DDS_HISTORY_KEEP_LAST;
      int32_t depth = 1;
      dds_qget_history(q, &hk, &depth);
      dds_qset_durability_service(q, 0, hk, depth, DDS_LENGTH_UNLIMITED, DDS_LENGTH_UNLIMITED, DDS_LENGTH_UNLIMITED);
    }
    return q;
  }

  Json participant_json(const Options& o) const {
    Json j = Json::object();
    j.set("domain", o.domain);
    Json c = Json::object();
    c.set("uri", config_);
    c.set("source", config_.empty() ? "defaults" : from_env_ ? "CYCLONEDDS_URI" : "probe");
    const std::string text = config_text(profile_, inline_xml_);
    c.set("settings", config_settings(text));
    c.set("library_defaults", config_defaults());
    j.set("config", c);
    // a configuration from CYCLONEDDS_URI is not read here: its security is not known
    j.set("security", from_env_ ? Json(nullptr) : security_json(text));
    j.set("multicast_discovery", o.peers.empty());
    Json peers = Json::array();
    for (const auto& p : o.peers) peers.push(p);
    j.set("peers", peers);
    j.set("interface", o.interface_addr.empty() ? Json() : Json(o.interface_addr));
    j.set("qos", qos_json(participant_));
    return j;
  }

  dds_entity_t domain_ = 0, participant_ = 0, topic_ = 0;
  void* sample_ = nullptr;
  Codec codec_{};
  std::string config_, profile_, inline_xml_;
  bool from_env_ = false;
};

class CyclonePublisher final : public linklab::Publisher {
 public:
  bool open(const Options& o, std::string& error) {
    opts_ = &o;
    if (!ep_.open(o, error)) return false;
    dds_qos_t* q = ep_.qos(o);
    writer_ = dds_create_writer(ep_.participant_, ep_.topic_, q, nullptr);
    dds_delete_qos(q);
    if (writer_ < 0) { error = std::string("Cyclone DDS could not create the writer: ") + dds_strretcode(writer_); return false; }
    ep_.codec_.init(ep_.sample_, o.size);
    return true;
  }
  int matched() override {
    dds_publication_matched_status_t s;
    return dds_get_publication_matched_status(writer_, &s) == DDS_RETCODE_OK ? int(s.current_count) : 0;
  }
  int matched_ever() override {
    dds_publication_matched_status_t s;
    return dds_get_publication_matched_status(writer_, &s) == DDS_RETCODE_OK ? int(s.total_count) : -1;
  }
  bool write(uint64_t seq, int64_t t_send_ns) override {
    ep_.codec_.stamp(ep_.sample_, seq, t_send_ns);
    return dds_write(writer_, ep_.sample_) == DDS_RETCODE_OK;
  }
  bool wait_acknowledged(double timeout_s) override {
    return dds_wait_for_acks(writer_, DDS_SECS(1) * timeout_s) == DDS_RETCODE_OK;
  }
  Json applied() override {
    Json j = Json::object();
    j.set("participant", ep_.participant_json(*opts_));
    j.set("writer", qos_json(writer_));
    j.set("ros_qos", ros_qos_json(writer_));
    return j;
  }

 private:
  Endpoint ep_;
  dds_entity_t writer_ = 0;
  const Options* opts_ = nullptr;
};

class CycloneSubscriber final : public linklab::Subscriber {
 public:
  ~CycloneSubscriber() override {
    if (reader_ > 0) dds_delete(reader_);  // waits for a listener call in progress
  }
  bool open(const Options& o, std::string& error) {
    opts_ = &o;
    if (!ep_.open(o, error)) return false;
    dds_qos_t* q = ep_.qos(o);
    // Samples are taken in the data-available listener, on Cyclone's receive thread,
    // and stamped there (as ddsperf's default listener mode does).
    dds_listener_t* l = dds_create_listener(this);
    dds_lset_data_available(l, on_data_available);
    reader_ = dds_create_reader(ep_.participant_, ep_.topic_, q, l);
    dds_delete_listener(l);
    dds_delete_qos(q);
    if (reader_ < 0) { error = std::string("Cyclone DDS could not create the reader: ") + dds_strretcode(reader_); return false; }
    return true;
  }
  int matched() override {
    dds_subscription_matched_status_t s;
    return dds_get_subscription_matched_status(reader_, &s) == DDS_RETCODE_OK ? int(s.current_count) : 0;
  }
  bool take(int64_t timeout_ns, std::vector<linklab::Received>& out) override {
    queue_.wait_take(timeout_ns, out);
    return !failed_;
  }
  Json applied() override {
    Json j = Json::object();
    j.set("participant", ep_.participant_json(*opts_));
    j.set("reader", qos_json(reader_));
    j.set("ros_qos", ros_qos_json(reader_));
    return j;
  }

 private:
  static void on_data_available(dds_entity_t reader, void* arg) {
    auto* self = static_cast<CycloneSubscriber*>(arg);
    enum { N = 64 };
    void* samples[N];
    dds_sample_info_t infos[N];
    while (true) {
      samples[0] = nullptr;  // loan
      dds_return_t n = dds_take(reader, samples, infos, N, N);
      if (n < 0) { self->failed_ = true; return; }
      if (n == 0) return;
      int64_t t = linklab::now_ns();
      for (dds_return_t i = 0; i < n; ++i) {
        if (!infos[i].valid_data) continue;
        linklab::Received r;
        self->ep_.codec_.read(samples[i], r);
        r.t_recv_ns = t;
        self->queue_.push(r);
      }
      dds_return_loan(reader, samples, n);
      if (n < N) return;
    }
  }

  Endpoint ep_;
  dds_entity_t reader_ = 0;
  linklab::ReceiveQueue queue_;
  std::atomic<bool> failed_{false};
  const Options* opts_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  linklab::Middleware mw{"cyclonedds", DDS_VERSION, linklab::open_endpoint<CyclonePublisher, linklab::Publisher>,
                         linklab::open_endpoint<CycloneSubscriber, linklab::Subscriber>};
  return linklab::probe_main(argc, argv, mw);
}
