// linklab-check-fastdds-profile: prove that a Fast DDS XML profile file is real.
//
// Fast DDS 2.9's XML parser rejects a whole file for one unknown element while
// load_XML_profiles_file() may still return OK, so loading proves nothing. This tool
// loads the file, creates a DomainParticipant from the participant profile, and a
// DataWriter and DataReader from the writer/reader profiles, then prints (one JSON
// object on stdout) the values read back from the created entities, plus the default
// QoS the factory/publisher/subscriber now hold (what rmw_fastrtps uses when a topic
// has no profile of its own). With --exchange N a second participant (same profiles,
// intra-process delivery off, so data crosses the UDP transport) receives N samples of
// --size bytes written at --rate Hz, proving the profile carries data.
// Exit status: 0 all entities created (and all N samples received), 1 otherwise,
// 2 bad command line.
//
// usage: linklab-check-fastdds-profile FILE [--participant NAME] [--writer NAME]
//            [--reader NAME] [--domain ID] [--size BYTES] [--exchange N] [--rate HZ]
#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/core/status/PublicationMatchedStatus.hpp>
#include <fastdds/dds/topic/TopicDataType.hpp>
#include <fastdds/dds/topic/TypeSupport.hpp>
#include <fastdds/dds/log/Log.hpp>
#include <fastdds/dds/log/StdoutErrConsumer.hpp>
#include <fastdds/rtps/transport/UDPv4TransportDescriptor.h>
#include <fastdds/rtps/transport/TCPv4TransportDescriptor.h>
#include <fastdds/rtps/transport/shared_mem/SharedMemTransportDescriptor.h>
#include <fastrtps/xmlparser/XMLProfileManager.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <thread>
#include <cstring>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::InstanceHandle_t;
using eprosima::fastrtps::rtps::SerializedPayload_t;

namespace {

// An opaque byte payload of a fixed size: enough for creating a writer and reader.
struct Blob {
    std::vector<uint8_t> bytes;
};

class BlobType : public TopicDataType {
public:
    explicit BlobType(uint32_t size) : size_(size) {
        setName("linklab::msg::dds_::Bytes_");
        m_typeSize = size + 8;  // 4 B encapsulation + 4 B length + data
        m_isGetKeyDefined = false;
    }
    bool serialize(void* data, SerializedPayload_t* payload) override {
        auto* blob = static_cast<Blob*>(data);
        uint32_t n = static_cast<uint32_t>(blob->bytes.size());
        if (payload->max_size < n + 8) return false;
        payload->data[0] = 0; payload->data[1] = 1; payload->data[2] = 0; payload->data[3] = 0;
        std::memcpy(payload->data + 4, &n, 4);
        std::memcpy(payload->data + 8, blob->bytes.data(), n);
        payload->length = n + 8;
        return true;
    }
    bool deserialize(SerializedPayload_t* payload, void* data) override {
        auto* blob = static_cast<Blob*>(data);
        if (payload->length < 8) return false;
        uint32_t n = 0;
        std::memcpy(&n, payload->data + 4, 4);
        if (payload->length < n + 8) return false;
        blob->bytes.assign(payload->data + 8, payload->data + 8 + n);
        return true;
    }
    std::function<uint32_t()> getSerializedSizeProvider(void* data) override {
        auto* blob = static_cast<Blob*>(data);
        return [blob]() { return static_cast<uint32_t>(blob->bytes.size() + 8); };
    }
    void* createData() override { return new Blob{std::vector<uint8_t>(size_)}; }
    void deleteData(void* data) override { delete static_cast<Blob*>(data); }
    bool getKey(void*, InstanceHandle_t*, bool) override { return false; }

private:
    uint32_t size_;
};

std::string quote(const std::string& s) {
    std::ostringstream out;
    out << '"';
    for (char c : s) {
        if (c == '"' || c == '\\') out << '\\' << c;
        else if (static_cast<unsigned char>(c) < 0x20) out << ' ';
        else out << c;
    }
    out << '"';
    return out.str();
}

const char* reliability_name(ReliabilityQosPolicyKind k) {
    return k == RELIABLE_RELIABILITY_QOS ? "RELIABLE" : "BEST_EFFORT";
}
const char* history_name(HistoryQosPolicyKind k) {
    return k == KEEP_ALL_HISTORY_QOS ? "KEEP_ALL" : "KEEP_LAST";
}
const char* memory_name(eprosima::fastrtps::rtps::MemoryManagementPolicy_t m) {
    using namespace eprosima::fastrtps::rtps;
    switch (m) {
        case PREALLOCATED_MEMORY_MODE: return "PREALLOCATED";
        case PREALLOCATED_WITH_REALLOC_MEMORY_MODE: return "PREALLOCATED_WITH_REALLOC";
        case DYNAMIC_RESERVE_MEMORY_MODE: return "DYNAMIC";
        case DYNAMIC_REUSABLE_MEMORY_MODE: return "DYNAMIC_REUSABLE";
    }
    return "UNKNOWN";
}

int64_t duration_ns(const eprosima::fastrtps::Duration_t& d) {
    return static_cast<int64_t>(d.seconds) * 1000000000LL + static_cast<int64_t>(d.nanosec);
}

std::string transports_json(const DomainParticipantQos& qos) {
    using namespace eprosima::fastdds::rtps;
    std::ostringstream out;
    out << "[";
    bool first = true;
    for (const auto& t : qos.transport().user_transports) {
        if (!first) out << ", ";
        first = false;
        std::string kind = "other";
        uint32_t send = 0, recv = 0;
        if (auto u = std::dynamic_pointer_cast<UDPv4TransportDescriptor>(t)) {
            kind = "UDPv4"; send = u->sendBufferSize; recv = u->receiveBufferSize;
        } else if (auto c = std::dynamic_pointer_cast<TCPv4TransportDescriptor>(t)) {
            kind = "TCPv4"; send = c->sendBufferSize; recv = c->receiveBufferSize;
        } else if (std::dynamic_pointer_cast<SharedMemTransportDescriptor>(t)) {
            kind = "SHM";
        }
        out << "{\"type\": " << quote(kind) << ", \"max_message_size\": " << t->max_message_size()
            << ", \"send_buffer_size\": " << send << ", \"receive_buffer_size\": " << recv << "}";
    }
    out << "]";
    return out.str();
}

std::string participant_json(const DomainParticipantQos& qos) {
    std::ostringstream out;
    out << "{\"transports\": " << transports_json(qos)
        << ", \"use_builtin_transports\": " << (qos.transport().use_builtin_transports ? "true" : "false")
        << ", \"send_socket_buffer_size\": " << qos.transport().send_socket_buffer_size
        << ", \"listen_socket_buffer_size\": " << qos.transport().listen_socket_buffer_size
        << ", \"lease_duration_ns\": "
        << duration_ns(qos.wire_protocol().builtin.discovery_config.leaseDuration)
        << ", \"lease_announcement_ns\": "
        << duration_ns(qos.wire_protocol().builtin.discovery_config.leaseDuration_announcementperiod)
        << "}";
    return out.str();
}

template <typename Qos>
std::string common_json(const Qos& qos) {
    std::ostringstream out;
    out << "\"reliability\": " << quote(reliability_name(qos.reliability().kind))
        << ", \"history_kind\": " << quote(history_name(qos.history().kind))
        << ", \"history_depth\": " << qos.history().depth
        << ", \"max_samples\": " << qos.resource_limits().max_samples
        << ", \"max_instances\": " << qos.resource_limits().max_instances
        << ", \"max_samples_per_instance\": " << qos.resource_limits().max_samples_per_instance
        << ", \"allocated_samples\": " << qos.resource_limits().allocated_samples
        << ", \"memory_policy\": " << quote(memory_name(qos.endpoint().history_memory_policy));
    return out.str();
}

std::string writer_json(const DataWriterQos& qos) {
    std::ostringstream out;
    out << "{" << common_json(qos)
        << ", \"heartbeat_period_ns\": " << duration_ns(qos.reliable_writer_qos().times.heartbeatPeriod)
        << ", \"publish_mode\": "
        << quote(qos.publish_mode().kind == ASYNCHRONOUS_PUBLISH_MODE ? "ASYNCHRONOUS" : "SYNCHRONOUS")
        << "}";
    return out.str();
}

std::string reader_json(const DataReaderQos& qos) {
    return "{" + common_json(qos) + "}";
}

int usage(const char* why) {
    std::cerr << "linklab-check-fastdds-profile: " << why << "\n"
              << "usage: linklab-check-fastdds-profile FILE [--participant NAME] [--writer NAME] "
                 "[--reader NAME] [--domain ID] [--size BYTES]\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    // Fast DDS logs from its own thread, to stdout by default: its XML parser's errors were
    // written into the middle of this program's JSON line (2 runs in 150 on a broken file).
    // Every log kind goes to stderr; stdout carries only the JSON.
    {
        auto consumer = std::make_unique<StdoutErrConsumer>();
        consumer->stderr_threshold(Log::Kind::Info);
        Log::ClearConsumers();
        Log::RegisterConsumer(std::move(consumer));
    }
    std::string file, participant_profile = "linklab_participant",
                      writer_profile = "linklab_writer", reader_profile = "linklab_reader";
    int domain = 0;
    uint32_t size = 262144;
    long exchange = 0;
    double rate = 30.0;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&](const char* name) -> const char* {
            if (i + 1 >= argc) { usage((std::string(name) + " needs a value").c_str()); std::exit(2); }
            return argv[++i];
        };
        if (a == "--participant") participant_profile = next("--participant");
        else if (a == "--writer") writer_profile = next("--writer");
        else if (a == "--reader") reader_profile = next("--reader");
        else if (a == "--domain") domain = std::atoi(next("--domain"));
        else if (a == "--size") size = static_cast<uint32_t>(std::strtoul(next("--size"), nullptr, 10));
        else if (a == "--exchange") exchange = std::strtol(next("--exchange"), nullptr, 10);
        else if (a == "--rate") rate = std::strtod(next("--rate"), nullptr);
        else if (a == "-h" || a == "--help") { usage("help"); return 0; }
        else if (!a.empty() && a[0] == '-') return usage(("unknown option " + a).c_str());
        else if (file.empty()) file = a;
        else return usage("only one FILE");
    }
    if (file.empty()) return usage("FILE is required");
    if (size < 8 || domain < 0 || domain > 232) return usage("--size must be >= 8, --domain 0..232");
    if (exchange < 0 || exchange > 100000 || !(rate > 0)) return usage("--exchange 0..100000, --rate > 0");
    if (exchange > 0) {
        // data must cross the transport under test, not a shortcut inside the process
        auto lib = eprosima::fastrtps::xmlparser::XMLProfileManager::library_settings();
        lib.intraprocess_delivery = eprosima::fastrtps::INTRAPROCESS_OFF;
        eprosima::fastrtps::xmlparser::XMLProfileManager::library_settings(lib);
    }

    std::vector<std::string> errors;
    auto* factory = DomainParticipantFactory::get_instance();
    ReturnCode_t loaded = factory->load_XML_profiles_file(file);
    if (loaded != ReturnCode_t::RETCODE_OK) errors.push_back("load_XML_profiles_file failed");

    std::ostringstream json;
    json << "{\"file\": " << quote(file) << ", \"load_ok\": "
         << (loaded == ReturnCode_t::RETCODE_OK ? "true" : "false");

    DomainParticipant* participant = factory->create_participant_with_profile(domain, participant_profile);
    DataWriter* writer = nullptr;
    DataReader* reader = nullptr;
    Publisher* publisher = nullptr;
    Subscriber* subscriber = nullptr;
    Topic* topic = nullptr;
    if (participant == nullptr) {
        errors.push_back("participant profile '" + participant_profile + "' did not create a participant");
    } else {
        json << ", \"participant\": " << participant_json(participant->get_qos());
        TypeSupport type(new BlobType(size));
        type.register_type(participant);
        topic = participant->create_topic("rt/linklab_check", type.get_type_name(), TOPIC_QOS_DEFAULT);
        publisher = participant->create_publisher(PUBLISHER_QOS_DEFAULT);
        subscriber = participant->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
        if (topic && publisher) writer = publisher->create_datawriter_with_profile(topic, writer_profile);
        if (topic && subscriber) reader = subscriber->create_datareader_with_profile(topic, reader_profile);
        if (writer == nullptr) errors.push_back("writer profile '" + writer_profile + "' did not create a DataWriter");
        else json << ", \"writer\": " << writer_json(writer->get_qos());
        if (reader == nullptr) errors.push_back("reader profile '" + reader_profile + "' did not create a DataReader");
        else json << ", \"reader\": " << reader_json(reader->get_qos());
        json << ", \"defaults\": {\"participant\": " << participant_json(factory->get_default_participant_qos());
        if (publisher) json << ", \"writer\": " << writer_json(publisher->get_default_datawriter_qos());
        if (subscriber) json << ", \"reader\": " << reader_json(subscriber->get_default_datareader_qos());
        json << "}";
    }
    DomainParticipant* peer = nullptr;
    Subscriber* peer_sub = nullptr;
    Topic* peer_topic = nullptr;
    DataReader* peer_reader = nullptr;
    if (exchange > 0 && writer != nullptr) {
        peer = factory->create_participant_with_profile(domain, participant_profile);
        if (peer != nullptr) {
            TypeSupport peer_type(new BlobType(size));
            peer_type.register_type(peer);
            peer_topic = peer->create_topic("rt/linklab_check", peer_type.get_type_name(), TOPIC_QOS_DEFAULT);
            peer_sub = peer->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
            if (peer_topic && peer_sub) peer_reader = peer_sub->create_datareader_with_profile(peer_topic, reader_profile);
        }
        long received = 0;
        double seconds = 0;
        bool matched = false;
        if (peer_reader == nullptr) {
            errors.push_back("--exchange: second participant/reader could not be created");
        } else {
            auto start = std::chrono::steady_clock::now();
            auto elapsed = [&]() {
                return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            };
            PublicationMatchedStatus status;
            while (elapsed() < 10.0) {
                writer->get_publication_matched_status(status);
                if (status.current_count >= 2) { matched = true; break; }  // both readers
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
            if (!matched) errors.push_back("--exchange: writer did not match the second participant's reader in 10 s");
            Blob blob{std::vector<uint8_t>(size)};
            std::set<uint64_t> seen;
            Blob in;
            SampleInfo info;
            auto drain = [&]() {
                while (peer_reader->take_next_sample(&in, &info) == ReturnCode_t::RETCODE_OK) {
                    if (info.valid_data && in.bytes.size() == size) {
                        uint64_t seq = 0;
                        std::memcpy(&seq, in.bytes.data(), 8);
                        seen.insert(seq);
                    }
                }
            };
            auto t0 = std::chrono::steady_clock::now();
            for (long i = 0; matched && i < exchange; ++i) {
                uint64_t seq = static_cast<uint64_t>(i);
                std::memcpy(blob.bytes.data(), &seq, 8);
                writer->write(&blob);
                drain();
                std::this_thread::sleep_until(t0 + std::chrono::microseconds(
                    static_cast<int64_t>((i + 1) * 1e6 / rate)));
            }
            while (matched && static_cast<long>(seen.size()) < exchange && elapsed() < 40.0) {
                peer_reader->wait_for_unread_message(eprosima::fastrtps::Duration_t(0, 100000000));
                drain();
            }
            received = static_cast<long>(seen.size());
            seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (received < exchange) errors.push_back("--exchange: " + std::to_string(received) + " of " +
                                                      std::to_string(exchange) + " samples received");
        }
        json << ", \"exchange\": {\"sent\": " << exchange << ", \"received\": " << received
             << ", \"size\": " << size << ", \"seconds\": " << seconds
             << ", \"intraprocess\": false}";
    }
    json << ", \"errors\": [";
    for (size_t i = 0; i < errors.size(); ++i) json << (i ? ", " : "") << quote(errors[i]);
    json << "]}";
    std::cout << json.str() << std::endl;

    if (peer) {
        if (peer_reader) peer_sub->delete_datareader(peer_reader);
        if (peer_sub) peer->delete_subscriber(peer_sub);
        if (peer_topic) peer->delete_topic(peer_topic);
        factory->delete_participant(peer);
    }
    if (participant) {
        if (writer) publisher->delete_datawriter(writer);
        if (reader) subscriber->delete_datareader(reader);
        if (publisher) participant->delete_publisher(publisher);
        if (subscriber) participant->delete_subscriber(subscriber);
        if (topic) participant->delete_topic(topic);
        factory->delete_participant(participant);
    }
    Log::Flush();
    return errors.empty() ? 0 : 1;
}
