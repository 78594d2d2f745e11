// linklab-check-fastdds-security pub|sub [--profile FILE] [--domain ID] [--count N]
//                                  [--timeout S] [--topic T]
// A Fast DDS participant (DDS-Security enabled when --profile names a keystore's
// fastdds_security.xml) that publishes or counts N small samples, then prints one JSON
// line: {"check": "fastdds-security", "role", "security", "matched", "samples"}.
#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/DataWriterListener.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/DataReaderListener.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastrtps/xmlparser/XMLProfileManager.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

using namespace eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::SerializedPayload_t;

namespace {

constexpr uint32_t kSampleBytes = 64;
struct Sample {
  uint8_t bytes[kSampleBytes];
};

// A fixed 64-byte octet array, CDR little-endian: 4-byte encapsulation header + bytes.
class SampleType : public TopicDataType {
 public:
  SampleType() {
    setName("linklab::msg::dds_::SecurityCheck_");
    m_typeSize = 4 + kSampleBytes;
    m_isGetKeyDefined = false;
  }
  bool serialize(void* data, SerializedPayload_t* payload) override {
    payload->data[0] = 0x00;
    payload->data[1] = 0x01;  // CDR_LE
    payload->data[2] = payload->data[3] = 0;
    std::memcpy(payload->data + 4, static_cast<Sample*>(data)->bytes, kSampleBytes);
    payload->length = 4 + kSampleBytes;
    payload->encapsulation = CDR_LE;
    return true;
  }
  bool deserialize(SerializedPayload_t* payload, void* data) override {
    if (payload->length < 4 + kSampleBytes) return false;
    std::memcpy(static_cast<Sample*>(data)->bytes, payload->data + 4, kSampleBytes);
    return true;
  }
  std::function<uint32_t()> getSerializedSizeProvider(void*) override {
    return [] { return 4 + kSampleBytes; };
  }
  void* createData() override { return new Sample(); }
  void deleteData(void* data) override { delete static_cast<Sample*>(data); }
  bool getKey(void*, eprosima::fastrtps::rtps::InstanceHandle_t*, bool) override { return false; }
};

std::atomic<int> g_matched{0};
std::atomic<int> g_received{0};

class WriterListener : public DataWriterListener {
  void on_publication_matched(DataWriter*, const PublicationMatchedStatus& status) override {
    g_matched = status.current_count;
  }
};

class ReaderListener : public DataReaderListener {
  void on_subscription_matched(DataReader*, const SubscriptionMatchedStatus& status) override {
    g_matched = status.current_count;
  }
  void on_data_available(DataReader* reader) override {
    Sample sample{};
    SampleInfo info;
    while (reader->take_next_sample(&sample, &info) == ReturnCode_t::RETCODE_OK) {
      if (info.valid_data) ++g_received;
    }
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (std::string(argv[1]) != "pub" && std::string(argv[1]) != "sub")) {
    std::fprintf(stderr, "usage: linklab-check-fastdds-security pub|sub [--profile FILE] "
                         "[--domain ID] [--count N] [--timeout S] [--topic T]\n");
    return 2;
  }
  const bool publisher = std::string(argv[1]) == "pub";
  std::string profile, topic_name = "rt/linklab_security_check";
  int domain = 0, count = 20;
  double timeout_s = 15;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--profile") profile = value;
    else if (flag == "--domain") domain = std::stoi(value);
    else if (flag == "--count") count = std::stoi(value);
    else if (flag == "--timeout") timeout_s = std::stod(value);
    else if (flag == "--topic") topic_name = value;
    else {
      std::fprintf(stderr, "linklab-check-fastdds-security: unknown option %s\n", flag.c_str());
      return 2;
    }
  }
  auto* factory = DomainParticipantFactory::get_instance();
  DomainParticipant* participant = nullptr;
  bool secure = false;
  if (!profile.empty()) {
    if (factory->load_XML_profiles_file(profile) != ReturnCode_t::RETCODE_OK) {
      std::fprintf(stderr, "cannot load profile %s\n", profile.c_str());
      return 2;
    }
    participant = factory->create_participant_with_profile(domain, "linklab_secure_participant");
    if (participant) {
      const auto& props = participant->get_qos().properties().properties();
      for (const auto& p : props) secure = secure || p.name() == "dds.sec.crypto.plugin";
    }
  } else {
    participant = factory->create_participant(domain, PARTICIPANT_QOS_DEFAULT);
  }
  if (participant == nullptr) {
    std::printf("{\"check\": \"fastdds-security\", \"role\": \"%s\", \"security\": %s, "
                "\"matched\": false, \"samples\": 0, \"errors\": [\"participant creation failed "
                "(identity or permissions rejected locally)\"]}\n",
                argv[1], profile.empty() ? "false" : "true");
    return 1;
  }
  TypeSupport type(new SampleType());
  type.register_type(participant);
  Topic* topic = participant->create_topic(topic_name, type.get_type_name(), TOPIC_QOS_DEFAULT);
  WriterListener writer_listener;
  ReaderListener reader_listener;
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int>(timeout_s * 1000));
  bool ever_matched = false;
  if (publisher) {
    Publisher* pub = participant->create_publisher(PUBLISHER_QOS_DEFAULT);
    DataWriterQos qos = DATAWRITER_QOS_DEFAULT;
    qos.reliability().kind = RELIABLE_RELIABILITY_QOS;
    qos.durability().kind = VOLATILE_DURABILITY_QOS;
    DataWriter* writer = pub->create_datawriter(topic, qos, &writer_listener);
    while (g_matched == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ever_matched = g_matched > 0;
    if (ever_matched) {
      Sample sample{};
      for (int i = 0; i < count; ++i) {
        std::memcpy(sample.bytes, &i, sizeof(i));
        writer->write(&sample);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      writer->wait_for_acknowledgments(eprosima::fastrtps::Duration_t(5, 0));
    }
  } else {
    Subscriber* sub = participant->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
    DataReaderQos qos = DATAREADER_QOS_DEFAULT;
    qos.reliability().kind = RELIABLE_RELIABILITY_QOS;
    sub->create_datareader(topic, qos, &reader_listener);
    while (g_received < count && std::chrono::steady_clock::now() < deadline) {
      ever_matched = ever_matched || g_matched > 0;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ever_matched = ever_matched || g_matched > 0;
  }
  std::printf("{\"check\": \"fastdds-security\", \"role\": \"%s\", \"security\": %s, "
              "\"matched\": %s, \"samples\": %d, \"errors\": []}\n",
              argv[1], secure ? "true" : "false", ever_matched ? "true" : "false",
              publisher ? (ever_matched ? count : 0) : g_received.load());
  std::fflush(stdout);
  participant->delete_contained_entities();
  factory->delete_participant(participant);
  return 0;
}
