// linklab-probe-fastdds: the linklab probe protocol on eProsima Fast DDS 2.9 (DDS API).
//
// QoS comes from, in order: Fast DDS's defaults with ROS 2's (RELIABLE, KEEP_LAST 10,
// VOLATILE) when there is no --profile and no --system-default; the XML profile file
// (--profile; the profiles marked is_default_profile="true", or those named
// --profile-name); then the flags --qos, --history and --durability, which win.
// TRANSIENT_LOCAL keeps the writer's history (its KEEP_LAST depth) for late-joining
// TRANSIENT_LOCAL readers, as rmw_fastrtps does. Without a profile the participant uses
// one UDPv4 transport (the UDP half of Fast DDS's builtins; no shared memory) so samples
// cross the emulated link. Data sharing is always off for the same reason. The summary's
// "applied" object (and its ros_qos) is read back from the created entities with
// get_qos(). The subscriber counts samples its poll found that the listener had not
// taken (polled_samples): their receive time is the poll's, up to 50 ms late.
#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/DataReaderListener.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/Topic.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastdds/rtps/transport/TCPv4TransportDescriptor.h>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastdds/rtps/transport/shared_mem/SharedMemTransportDescriptor.h>
#include <fastrtps/config.h>
#include <fastdds/dds/log/Log.hpp>
#include <fastdds/dds/log/StdoutErrConsumer.hpp>
#include <fastrtps/utils/IPLocator.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "codecs.hpp"
#include "linklab_typesPubSubTypes.h"
#include "probe.hpp"
#include "readback.hpp"

namespace fdds = eprosima::fastdds::dds;
namespace ftr = eprosima::fastdds::rtps;
namespace frtps = eprosima::fastrtps::rtps;
using linklab::Json;
using linklab::Options;
using linklab_fastdds::Codec;
using linklab_fastdds::codec_for;
using linklab_fastdds::participant_json;
using linklab_fastdds::reader_json;
using linklab_fastdds::ros_qos;
using linklab_fastdds::writer_json;

namespace {

// ---- the participant ----------------------------------------------------------------------
frtps::Locator_t udp_locator(const std::string& addr, uint32_t port) {
  frtps::Locator_t l;
  l.kind = LOCATOR_KIND_UDPv4;
  frtps::IPLocator::setIPv4(l, addr);
  l.port = port;
  return l;
}

class Endpoint {
 public:
  ~Endpoint() { close(); }
  void close() {
    if (participant_) {
      participant_->delete_contained_entities();
      fdds::DomainParticipantFactory::get_instance()->delete_participant(participant_);
      participant_ = nullptr;
    }
    if (sample_) {
      type_.delete_data(sample_);
      sample_ = nullptr;
    }
  }

  // Creates participant and topic; false with a one-line reason in error.
  bool open(const Options& o, std::string& error) {
    auto* factory = fdds::DomainParticipantFactory::get_instance();
    codec_ = codec_for(o.type->name);
    fdds::DomainParticipantQos pq;
    if (!o.profile.empty()) {
      if (factory->load_XML_profiles_file(o.profile) != ReturnCode_t::RETCODE_OK) {
        error = "--profile: Fast DDS rejected the XML profile file " + o.profile + " (see stderr)";
        return false;
      }
      have_profile_ = true;
      // load_profiles() makes the file's is_default_profile="true" entries the
      // factory's (and new publishers'/subscribers') defaults
      factory->load_profiles();
      if (!o.profile_name.empty()) {
        if (factory->get_participant_qos_from_profile(o.profile_name, pq) != ReturnCode_t::RETCODE_OK) {
          error = "--profile-name: no participant profile named '" + o.profile_name + "' in " + o.profile;
          return false;
        }
      } else {
        pq = factory->get_default_participant_qos();
      }
    } else {
      pq = factory->get_default_participant_qos();
      pq.transport().use_builtin_transports = false;
      pq.transport().user_transports.push_back(std::make_shared<ftr::UDPv4TransportDescriptor>());
    }
    pq.name("linklab-probe-fastdds");
    if (!o.interface_addr.empty()) {
      bool any_socket = false;
      for (auto& t : pq.transport().user_transports)
        if (auto* s = dynamic_cast<ftr::SocketTransportDescriptor*>(t.get())) {
          s->interfaceWhiteList = {o.interface_addr};
          any_socket = true;
        }
      if (pq.transport().use_builtin_transports || !any_socket) {
        // replace the builtins by their UDP part, bound to the interface
        auto udp = std::make_shared<ftr::UDPv4TransportDescriptor>();
        udp->interfaceWhiteList = {o.interface_addr};
        pq.transport().use_builtin_transports = false;
        pq.transport().user_transports.push_back(udp);
      }
    }
    if (!o.peers.empty()) {
      auto& b = pq.wire_protocol().builtin;
      b.initialPeersList.clear();
      for (const auto& p : o.peers) {
        auto colon = p.find(':');
        uint32_t port = colon == std::string::npos ? 0 : uint32_t(std::stoul(p.substr(colon + 1)));
        b.initialPeersList.push_back(udp_locator(p.substr(0, colon), port));
      }
      // Multicast discovery off: no multicast metatraffic locator, a unicast one on
      // the well-known port (address 0: all whitelisted interfaces).
      b.metatrafficMulticastLocatorList.clear();
      if (b.metatrafficUnicastLocatorList.empty())
        b.metatrafficUnicastLocatorList.push_back(udp_locator(o.interface_addr.empty() ? "0.0.0.0" : o.interface_addr, 0));
    }
    participant_ = factory->create_participant(o.domain, pq);
    if (!participant_) {
      error = "Fast DDS could not create the participant (domain " + std::to_string(o.domain) + "; see stderr)";
      return false;
    }
    type_ = fdds::TypeSupport(codec_.make_type());
    if (type_.get_type_name() != o.type->dds_name) {
      error = "internal: generated type name " + type_.get_type_name() + " != " + o.type->dds_name;
      return false;
    }
    type_.register_type(participant_);
    topic_ = participant_->create_topic(o.dds_topic(), type_.get_type_name(), fdds::TOPIC_QOS_DEFAULT);
    if (!topic_) { error = "Fast DDS could not create topic " + o.dds_topic(); return false; }
    sample_ = type_.create_data();
    if (!sample_) { error = "could not allocate a sample"; return false; }
    return true;
  }

  // Profile first, then the flags.
  template <class Q>
  void apply_flags(const Options& o, Q& q) {
    if (!have_profile_ && !o.system_default) {  // ROS 2's default QoS profile
      q.reliability().kind = fdds::RELIABLE_RELIABILITY_QOS;
      q.history().kind = fdds::KEEP_LAST_HISTORY_QOS;
      q.history().depth = 10;
      q.durability().kind = fdds::VOLATILE_DURABILITY_QOS;
    }
    if (o.reliable)
      q.reliability().kind = *o.reliable ? fdds::RELIABLE_RELIABILITY_QOS : fdds::BEST_EFFORT_RELIABILITY_QOS;
    if (o.history) {
      q.history().kind = o.history->keep_all ? fdds::KEEP_ALL_HISTORY_QOS : fdds::KEEP_LAST_HISTORY_QOS;
      if (!o.history->keep_all) {
        q.history().depth = o.history->depth;
        if (q.resource_limits().max_samples_per_instance > 0 && q.resource_limits().max_samples_per_instance < o.history->depth)
          q.resource_limits().max_samples_per_instance = o.history->depth;
        if (q.resource_limits().max_samples > 0 && q.resource_limits().max_samples < o.history->depth)
          q.resource_limits().max_samples = o.history->depth;
      }
    }
    if (o.durability)
      q.durability().kind = *o.durability == linklab::Durability::TransientLocal ? fdds::TRANSIENT_LOCAL_DURABILITY_QOS
                                                                                 : fdds::VOLATILE_DURABILITY_QOS;
    q.data_sharing().off();  // samples must cross the (emulated) network
  }

  fdds::DomainParticipant* participant_ = nullptr;
  fdds::TypeSupport type_;
  fdds::Topic* topic_ = nullptr;
  void* sample_ = nullptr;
  Codec codec_;
  bool have_profile_ = false;
};

// ---- publisher ----------------------------------------------------------------------------
class FastPublisher final : public linklab::Publisher {
 public:
  bool open(const Options& o, std::string& error) {
    if (!ep_.open(o, error)) return false;
    pub_ = ep_.participant_->create_publisher(fdds::PUBLISHER_QOS_DEFAULT);
    if (!pub_) { error = "Fast DDS could not create the publisher"; return false; }
    fdds::DataWriterQos q = pub_->get_default_datawriter_qos();
    if (!o.profile_name.empty() &&
        pub_->get_datawriter_qos_from_profile(o.profile_name, q) != ReturnCode_t::RETCODE_OK) {
      error = "--profile-name: no data_writer profile named '" + o.profile_name + "' in " + o.profile;
      return false;
    }
    ep_.apply_flags(o, q);
    writer_ = pub_->create_datawriter(ep_.topic_, q);
    if (!writer_) { error = "Fast DDS could not create the data writer with the requested QoS (see stderr)"; return false; }
    ep_.codec_.init(ep_.sample_, o.size);
    domain_ = o.domain;
    return true;
  }
  int matched() override {
    fdds::PublicationMatchedStatus s;
    writer_->get_publication_matched_status(s);
    return s.current_count;
  }
  int matched_ever() override {
    fdds::PublicationMatchedStatus s;
    writer_->get_publication_matched_status(s);
    return s.total_count;
  }
  bool write(uint64_t seq, int64_t t_send_ns) override {
    ep_.codec_.stamp(ep_.sample_, seq, t_send_ns);
    return writer_->write(ep_.sample_);
  }
  bool wait_acknowledged(double timeout_s) override {
    eprosima::fastrtps::Duration_t d(timeout_s);
    return writer_->wait_for_acknowledgments(d) == ReturnCode_t::RETCODE_OK;
  }
  Json applied() override {
    Json j = Json::object();
    j.set("participant", participant_json(ep_.participant_->get_qos(), ep_.participant_->get_domain_id()));
    fdds::DataWriterQos q = writer_->get_qos();
    j.set("writer", writer_json(q));
    j.set("ros_qos", linklab::ros_qos_json(ros_qos(q)));
    (void)domain_;
    return j;
  }

 private:
  Endpoint ep_;
  fdds::Publisher* pub_ = nullptr;
  fdds::DataWriter* writer_ = nullptr;
  int domain_ = 0;
};

// ---- subscriber ---------------------------------------------------------------------------
class FastSubscriber final : public linklab::Subscriber, public fdds::DataReaderListener {
 public:
  ~FastSubscriber() override {
    if (reader_) reader_->set_listener(nullptr);
    if (poll_sample_) ep_.type_.delete_data(poll_sample_);
    ep_.close();  // deletes the reader before the queue goes
  }
  bool open(const Options& o, std::string& error) {
    if (!ep_.open(o, error)) return false;
    sub_ = ep_.participant_->create_subscriber(fdds::SUBSCRIBER_QOS_DEFAULT);
    if (!sub_) { error = "Fast DDS could not create the subscriber"; return false; }
    fdds::DataReaderQos q = sub_->get_default_datareader_qos();
    if (!o.profile_name.empty() &&
        sub_->get_datareader_qos_from_profile(o.profile_name, q) != ReturnCode_t::RETCODE_OK) {
      error = "--profile-name: no data_reader profile named '" + o.profile_name + "' in " + o.profile;
      return false;
    }
    ep_.apply_flags(o, q);
    // Samples are taken in on_data_available, on Fast DDS's receive thread, and stamped
    // there; the main thread only writes records.
    reader_ = sub_->create_datareader(ep_.topic_, q, this, fdds::StatusMask::data_available());
    if (!reader_) { error = "Fast DDS could not create the data reader with the requested QoS (see stderr)"; return false; }
    return true;
  }
  int matched() override {
    fdds::SubscriptionMatchedStatus s;
    reader_->get_subscription_matched_status(s);
    return s.current_count;
  }
  bool take(int64_t timeout_ns, std::vector<linklab::Received>& out) override {
    queue_.wait_take(timeout_ns, out);
    if (out.empty()) {  // a sample the listener has not taken (yet, or at all)
      size_t n = poll_reader();
      queue_.wait_take(0, out);
      if (n) {
        polled_ += n;
        linklab::log("linklab-probe-fastdds: %zu sample(s) found by polling, not by the listener", n);
      }
    }
    return true;
  }
  void after_run(Json& summary) override {
    summary.set("polled_samples", polled_);
    if (polled_) {
      Json notes = Json::array();
      notes.push(std::to_string(polled_) + " sample(s) were taken by the subscriber's 50 ms poll, not by the "
                 "data-available listener: their receive times are the poll's, up to 50 ms late");
      summary.set("notes", notes);
    }
  }
  void on_data_available(fdds::DataReader* reader) override {
    // Fast DDS may call this from several receive threads at once (TCP: one per
    // connection); the one sample buffer is taken into under a lock.
    std::lock_guard<std::mutex> lock(take_mutex_);
    fdds::SampleInfo info;
    while (reader->take_next_sample(ep_.sample_, &info) == ReturnCode_t::RETCODE_OK) {
      if (!info.valid_data) continue;
      linklab::Received r;
      ep_.codec_.read(ep_.sample_, r);
      r.t_recv_ns = linklab::now_ns();
      queue_.push(r);
    }
  }
  // The main thread's poll must not hold take_mutex_ while it calls into the reader:
  // Fast DDS calls on_data_available with the reader's own lock held, and that thread then
  // waits for take_mutex_ -- the opposite order, a deadlock (seen with DDS-Security, where
  // the key exchange keeps the listener busy). The poll takes into its own buffer instead.
  // Returns the number of measured samples it took (warm-up and end-of-stream not counted).
  size_t poll_reader() {
    if (!poll_sample_) poll_sample_ = ep_.type_.create_data();
    fdds::SampleInfo info;
    size_t n = 0;
    while (reader_->take_next_sample(poll_sample_, &info) == ReturnCode_t::RETCODE_OK) {
      if (!info.valid_data) continue;
      linklab::Received r;
      ep_.codec_.read(poll_sample_, r);
      r.t_recv_ns = linklab::now_ns();
      queue_.push(r);
      if (r.valid && r.seq != linklab::END_OF_STREAM && !(r.seq & linklab::WARMUP_FLAG)) ++n;  // measured ones
    }
    return n;
  }
  Json applied() override {
    Json j = Json::object();
    j.set("participant", participant_json(ep_.participant_->get_qos(), ep_.participant_->get_domain_id()));
    fdds::DataReaderQos q = reader_->get_qos();
    j.set("reader", reader_json(q));
    j.set("ros_qos", linklab::ros_qos_json(ros_qos(q)));
    return j;
  }

 private:
  linklab::ReceiveQueue queue_;
  std::mutex take_mutex_;
  void* poll_sample_ = nullptr;
  uint64_t polled_ = 0;
  Endpoint ep_;
  fdds::Subscriber* sub_ = nullptr;
  fdds::DataReader* reader_ = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  // Fast DDS logs to stdout by default; the probe's stdout carries only the summary.
  {
    using eprosima::fastdds::dds::Log;
    auto consumer = std::make_unique<eprosima::fastdds::dds::StdoutErrConsumer>();
    consumer->stderr_threshold(Log::Kind::Info);
    Log::ClearConsumers();
    Log::RegisterConsumer(std::move(consumer));
    Log::SetVerbosity(Log::Warning);
  }
  linklab::Middleware mw{"fastdds",
                         std::to_string(FASTRTPS_VERSION_MAJOR) + "." + std::to_string(FASTRTPS_VERSION_MINOR) + "." +
                             std::to_string(FASTRTPS_VERSION_MICRO),
                         linklab::open_endpoint<FastPublisher, linklab::Publisher>,
                         linklab::open_endpoint<FastSubscriber, linklab::Subscriber>};
  int rc = linklab::probe_main(argc, argv, mw);
  eprosima::fastdds::dds::Log::Flush();
  // Entities are gone, records closed, summary printed. Skip static destructors: Fast
  // DDS 2.9's TCP transport can abort ("pure virtual method called") in them.
  std::fflush(nullptr);
  std::_Exit(rc);
}
