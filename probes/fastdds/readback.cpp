// Fast DDS QoS read back into the probe summary's JSON (see readback.hpp).
#include "readback.hpp"

#include <fastdds/rtps/transport/TCPv4TransportDescriptor.h>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastdds/rtps/transport/shared_mem/SharedMemTransportDescriptor.h>
#include <fastrtps/utils/IPLocator.h>

#include <algorithm>
#include <utility>

namespace linklab_fastdds {

namespace fdds = eprosima::fastdds::dds;
namespace ftr = eprosima::fastdds::rtps;
namespace frtps = eprosima::fastrtps::rtps;
using linklab::Json;

namespace {

double seconds(const eprosima::fastrtps::Duration_t& d) {
  if (d == eprosima::fastrtps::c_TimeInfinite) return -1;
  return double(d.seconds) + double(d.nanosec) / 1e9;
}

std::string locator_text(const frtps::Locator_t& l) {
  std::string kind = l.kind == LOCATOR_KIND_UDPv4 ? "udpv4" : l.kind == LOCATOR_KIND_TCPv4 ? "tcpv4"
                     : l.kind == LOCATOR_KIND_SHM ? "shm" : std::to_string(l.kind);
  std::string addr = frtps::IPLocator::toIPv4string(l);
  uint32_t port = l.kind == LOCATOR_KIND_TCPv4 ? frtps::IPLocator::getPhysicalPort(l) : l.port;
  return kind + ":" + addr + ":" + std::to_string(port);
}

Json locators(const frtps::LocatorList_t& list) {
  Json a = Json::array();
  for (const auto& l : list) a.push(locator_text(l));
  return a;
}

Json transport_json(const std::shared_ptr<ftr::TransportDescriptorInterface>& t) {
  Json j = Json::object();
  if (auto* tcp = dynamic_cast<ftr::TCPv4TransportDescriptor*>(t.get())) {
    j.set("kind", "TCPv4");
    Json ports = Json::array();
    for (auto p : tcp->listening_ports) ports.push(unsigned(p));
    j.set("listening_ports", ports);
    j.set("tcp_nodelay", tcp->enable_tcp_nodelay);
  } else if (dynamic_cast<ftr::UDPv4TransportDescriptor*>(t.get())) {
    j.set("kind", "UDPv4");
  } else if (auto* shm = dynamic_cast<ftr::SharedMemTransportDescriptor*>(t.get())) {
    j.set("kind", "SHM");
    j.set("segment_size", shm->segment_size());
  } else {
    j.set("kind", "other");
  }
  j.set("max_message_size", t->max_message_size());
  if (auto* sock = dynamic_cast<ftr::SocketTransportDescriptor*>(t.get())) {
    j.set("send_buffer_size", sock->sendBufferSize);
    j.set("receive_buffer_size", sock->receiveBufferSize);
    Json wl = Json::array();
    for (const auto& w : sock->interfaceWhiteList) wl.push(w);
    j.set("interface_whitelist", wl);
  }
  return j;
}

}  // namespace

// DDS-Security as the created participant holds it: the plugin of each of the three
// (the dds.sec.*.plugin properties, e.g. builtin.PKI-DH), false when none is set.
Json security_json(const fdds::DomainParticipantQos& q) {
  static const std::pair<const char*, const char*> plugins[] = {
      {"dds.sec.auth.plugin", "authentication"},
      {"dds.sec.access.plugin", "access_control"},
      {"dds.sec.crypto.plugin", "cryptography"}};
  Json sec = Json::object();
  bool any = false;
  for (const auto& property : q.properties().properties())
    for (const auto& [name, key] : plugins)
      if (property.name() == name) {
        sec.set(key, property.value());
        any = true;
      }
  return any ? sec : Json(false);
}

Json participant_json(const fdds::DomainParticipantQos& q, int domain) {
  Json j = Json::object();
  j.set("domain", domain);
  j.set("security", security_json(q));
  j.set("name", q.name().to_string());
  Json transports = Json::array();
  uint32_t max_msg = 0;
  if (q.transport().use_builtin_transports) {
    // Fast DDS 2.9 builtins: UDPv4 (65500 B) + shared memory.
    Json u = Json::object();
    u.set("kind", "UDPv4");
    u.set("builtin", true);
    u.set("max_message_size", 65500u);
    transports.push(u);
    Json s = Json::object();
    s.set("kind", "SHM");
    s.set("builtin", true);
    transports.push(s);
    max_msg = 65500;
  }
  for (const auto& t : q.transport().user_transports) {
    transports.push(transport_json(t));
    if (!dynamic_cast<ftr::SharedMemTransportDescriptor*>(t.get()))
      max_msg = max_msg ? std::min(max_msg, t->max_message_size()) : t->max_message_size();
  }
  j.set("use_builtin_transports", q.transport().use_builtin_transports);
  j.set("transports", transports);
  j.set("max_message_size", max_msg);
  j.set("send_socket_buffer_size", q.transport().send_socket_buffer_size);
  j.set("listen_socket_buffer_size", q.transport().listen_socket_buffer_size);
  const auto& b = q.wire_protocol().builtin;
  Json d = Json::object();
  d.set("lease_duration_s", seconds(b.discovery_config.leaseDuration));
  d.set("announcement_period_s", seconds(b.discovery_config.leaseDuration_announcementperiod));
  d.set("initial_peers", locators(b.initialPeersList));
  d.set("metatraffic_unicast", locators(b.metatrafficUnicastLocatorList));
  d.set("metatraffic_multicast", locators(b.metatrafficMulticastLocatorList));
  d.set("multicast_discovery", b.metatrafficMulticastLocatorList.empty()
                                   ? Json(!b.metatrafficUnicastLocatorList.empty() ? false : true)
                                   : Json(true));
  j.set("discovery", d);
  j.set("default_unicast_locators", locators(q.wire_protocol().default_unicast_locator_list));
  Json fc = Json::array();
  for (const auto& f : q.flow_controllers()) {
    Json c = Json::object();
    c.set("name", f->name ? f->name : "");
    c.set("max_bytes_per_period", f->max_bytes_per_period);
    c.set("period_ms", (unsigned long long)f->period_ms);
    fc.push(c);
  }
  j.set("flow_controllers", fc);
  return j;
}

namespace {

const char* memory_policy(frtps::MemoryManagementPolicy_t p) {
  switch (p) {
    case frtps::PREALLOCATED_MEMORY_MODE: return "PREALLOCATED";
    case frtps::PREALLOCATED_WITH_REALLOC_MEMORY_MODE: return "PREALLOCATED_WITH_REALLOC";
    case frtps::DYNAMIC_RESERVE_MEMORY_MODE: return "DYNAMIC_RESERVE";
    case frtps::DYNAMIC_REUSABLE_MEMORY_MODE: return "DYNAMIC_REUSABLE";
  }
  return "?";
}

template <class Q>
void common_qos_json(Json& j, const Q& q) {
  j.set("reliability", q.reliability().kind == fdds::RELIABLE_RELIABILITY_QOS ? "RELIABLE" : "BEST_EFFORT");
  j.set("max_blocking_time_s", seconds(q.reliability().max_blocking_time));
  j.set("history", q.history().kind == fdds::KEEP_ALL_HISTORY_QOS ? "KEEP_ALL" : "KEEP_LAST");
  j.set("depth", q.history().depth);
  const char* dur[] = {"VOLATILE", "TRANSIENT_LOCAL", "TRANSIENT", "PERSISTENT"};
  j.set("durability", dur[int(q.durability().kind) & 3]);
  Json rl = Json::object();
  rl.set("max_samples", q.resource_limits().max_samples);
  rl.set("max_instances", q.resource_limits().max_instances);
  rl.set("max_samples_per_instance", q.resource_limits().max_samples_per_instance);
  rl.set("allocated_samples", q.resource_limits().allocated_samples);
  j.set("resource_limits", rl);
  j.set("history_memory_policy", memory_policy(q.endpoint().history_memory_policy));
  j.set("data_sharing", q.data_sharing().kind() == fdds::OFF ? "OFF" : q.data_sharing().kind() == fdds::ON ? "ON" : "AUTO");
}

const char* durability_name(fdds::DurabilityQosPolicyKind k) {
  switch (k) {
    case fdds::VOLATILE_DURABILITY_QOS: return "volatile";
    case fdds::TRANSIENT_LOCAL_DURABILITY_QOS: return "transient_local";
    case fdds::TRANSIENT_DURABILITY_QOS: return "transient";
    case fdds::PERSISTENT_DURABILITY_QOS: return "persistent";
  }
  return "?";
}

// The ROS 2 policies as the entity holds them (Fast DDS has all four).
template <class Q>
linklab::RosQos ros_qos_of(const Q& q) {
  linklab::RosQos r;
  r.reliable = q.reliability().kind == fdds::RELIABLE_RELIABILITY_QOS;
  bool keep_all = q.history().kind == fdds::KEEP_ALL_HISTORY_QOS;
  r.history = keep_all ? "keep_all" : "keep_last";
  if (!keep_all) r.depth = q.history().depth;
  r.durability = durability_name(q.durability().kind);
  return r;
}

}  // namespace

Json writer_json(const fdds::DataWriterQos& q) {
  Json j = Json::object();
  common_qos_json(j, q);
  const auto& t = q.reliable_writer_qos().times;
  j.set("heartbeat_period_s", seconds(t.heartbeatPeriod));
  j.set("initial_heartbeat_delay_s", seconds(t.initialHeartbeatDelay));
  j.set("nack_response_delay_s", seconds(t.nackResponseDelay));
  j.set("nack_supression_duration_s", seconds(t.nackSupressionDuration));
  j.set("publish_mode", q.publish_mode().kind == fdds::ASYNCHRONOUS_PUBLISH_MODE ? "ASYNCHRONOUS" : "SYNCHRONOUS");
  j.set("flow_controller", q.publish_mode().flow_controller_name ? q.publish_mode().flow_controller_name : "");
  return j;
}

Json reader_json(const fdds::DataReaderQos& q) {
  Json j = Json::object();
  common_qos_json(j, q);
  const auto& t = q.reliable_reader_qos().times;
  j.set("heartbeat_response_delay_s", seconds(t.heartbeatResponseDelay));
  j.set("initial_acknack_delay_s", seconds(t.initialAcknackDelay));
  return j;
}

linklab::RosQos ros_qos(const fdds::DataWriterQos& q) { return ros_qos_of(q); }
linklab::RosQos ros_qos(const fdds::DataReaderQos& q) { return ros_qos_of(q); }

}  // namespace linklab_fastdds
