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
#include <optional>
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

struct Args {
    std::string file, participant_profile = "linklab_participant",
                      writer_profile = "linklab_writer", reader_profile = "linklab_reader";
    int domain = 0;
    uint32_t size = 262144;
    long exchange = 0;
    double rate = 30.0;
};

// The command line into args; an exit status when the program ends here (0 after --help,
// 2 for a bad command line), nothing when it goes on.
std::optional<int> read_args(int argc, char** argv, Args& args) {
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto next = [&](const char* name) -> const char* {
            if (i + 1 >= argc) { usage((std::string(name) + " needs a value").c_str()); std::exit(2); }
            return argv[++i];
        };
        if (a == "--participant") args.participant_profile = next("--participant");
        else if (a == "--writer") args.writer_profile = next("--writer");
        else if (a == "--reader") args.reader_profile = next("--reader");
        else if (a == "--domain") args.domain = std::atoi(next("--domain"));
        else if (a == "--size") args.size = static_cast<uint32_t>(std::strtoul(next("--size"), nullptr, 10));
        else if (a == "--exchange") args.exchange = std::strtol(next("--exchange"), nullptr, 10);
        else if (a == "--rate") args.rate = std::strtod(next("--rate"), nullptr);
        else if (a == "-h" || a == "--help") { usage("help"); return 0; }
        else if (!a.empty() && a[0] == '-') return usage(("unknown option " + a).c_str());
        else if (args.file.empty()) args.file = a;
        else return usage("only one FILE");
    }
    if (args.file.empty()) return usage("FILE is required");
    if (args.size < 8 || args.domain < 0 || args.domain > 232)
        return usage("--size must be >= 8, --domain 0..232");
    if (args.exchange < 0 || args.exchange > 100000 || !(args.rate > 0))
        return usage("--exchange 0..100000, --rate > 0");
    return std::nullopt;
}

// Fast DDS logs from its own thread, to stdout by default: its XML parser's errors were
// written into the middle of this program's JSON line (2 runs in 150 on a broken file).
// Every log kind goes to stderr; stdout carries only the JSON.
void log_to_stderr() {
    auto consumer = std::make_unique<StdoutErrConsumer>();
    consumer->stderr_threshold(Log::Kind::Info);
    Log::ClearConsumers();
    Log::RegisterConsumer(std::move(consumer));
}

// --exchange: data must cross the transport under test, not a shortcut inside the process
void turn_off_intraprocess_delivery() {
    auto lib = eprosima::fastrtps::xmlparser::XMLProfileManager::library_settings();
    lib.intraprocess_delivery = eprosima::fastrtps::INTRAPROCESS_OFF;
    eprosima::fastrtps::xmlparser::XMLProfileManager::library_settings(lib);
}

// A participant and what the profiles create on it: the one under test, or --exchange's
// peer (no publisher, no writer).
struct Entities {
    DomainParticipant* participant = nullptr;
    Publisher* publisher = nullptr;
    Subscriber* subscriber = nullptr;
    Topic* topic = nullptr;
    DataWriter* writer = nullptr;
    DataReader* reader = nullptr;
};

// Creates the participant, a writer and a reader from the profiles; their QoS read back
// (and the defaults the factory, publisher and subscriber now hold) go into json, each
// entity that was not created into errors.
Entities create_entities(DomainParticipantFactory* factory, const Args& args,
                         std::ostringstream& json, std::vector<std::string>& errors) {
    Entities e;
    e.participant = factory->create_participant_with_profile(args.domain, args.participant_profile);
    if (e.participant == nullptr) {
        errors.push_back("participant profile '" + args.participant_profile + "' did not create a participant");
        return e;
    }
    json << ", \"participant\": " << participant_json(e.participant->get_qos());
    TypeSupport type(new BlobType(args.size));
    type.register_type(e.participant);
    e.topic = e.participant->create_topic("rt/linklab_check", type.get_type_name(), TOPIC_QOS_DEFAULT);
    e.publisher = e.participant->create_publisher(PUBLISHER_QOS_DEFAULT);
    e.subscriber = e.participant->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
    if (e.topic && e.publisher) e.writer = e.publisher->create_datawriter_with_profile(e.topic, args.writer_profile);
    if (e.topic && e.subscriber) e.reader = e.subscriber->create_datareader_with_profile(e.topic, args.reader_profile);
    if (e.writer == nullptr) errors.push_back("writer profile '" + args.writer_profile + "' did not create a DataWriter");
    else json << ", \"writer\": " << writer_json(e.writer->get_qos());
    if (e.reader == nullptr) errors.push_back("reader profile '" + args.reader_profile + "' did not create a DataReader");
    else json << ", \"reader\": " << reader_json(e.reader->get_qos());
    json << ", \"defaults\": {\"participant\": " << participant_json(factory->get_default_participant_qos());
    if (e.publisher) json << ", \"writer\": " << writer_json(e.publisher->get_default_datawriter_qos());
    if (e.subscriber) json << ", \"reader\": " << reader_json(e.subscriber->get_default_datareader_qos());
    json << "}";
    return e;
}

void delete_entities(DomainParticipantFactory* factory, const Entities& e) {
    if (!e.participant) return;
    if (e.writer) e.publisher->delete_datawriter(e.writer);
    if (e.reader) e.subscriber->delete_datareader(e.reader);
    if (e.publisher) e.participant->delete_publisher(e.publisher);
    if (e.subscriber) e.participant->delete_subscriber(e.subscriber);
    if (e.topic) e.participant->delete_topic(e.topic);
    factory->delete_participant(e.participant);
}

// --exchange's second participant (same profiles) and its reader of the writer's topic.
Entities create_peer(DomainParticipantFactory* factory, const Args& args) {
    Entities peer;
    peer.participant = factory->create_participant_with_profile(args.domain, args.participant_profile);
    if (peer.participant == nullptr) return peer;
    TypeSupport peer_type(new BlobType(args.size));
    peer_type.register_type(peer.participant);
    peer.topic = peer.participant->create_topic("rt/linklab_check", peer_type.get_type_name(), TOPIC_QOS_DEFAULT);
    peer.subscriber = peer.participant->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
    if (peer.topic && peer.subscriber)
        peer.reader = peer.subscriber->create_datareader_with_profile(peer.topic, args.reader_profile);
    return peer;
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

// Whether the writer matched both readers (its own participant's and the peer's) in 10 s.
bool wait_for_both_readers(DataWriter* writer, Clock::time_point start) {
    PublicationMatchedStatus status;
    while (seconds_since(start) < 10.0) {
        writer->get_publication_matched_status(status);
        if (status.current_count >= 2) return true;  // both readers
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

// The sequence numbers (a sample's first 8 bytes) the peer's reader has taken.
class Received {
public:
    Received(DataReader* reader, uint32_t size) : reader_(reader), size_(size) {}
    void drain() {
        while (reader_->take_next_sample(&in_, &info_) == ReturnCode_t::RETCODE_OK) {
            if (info_.valid_data && in_.bytes.size() == size_) {
                uint64_t seq = 0;
                std::memcpy(&seq, in_.bytes.data(), 8);
                seen_.insert(seq);
            }
        }
    }
    long count() const { return static_cast<long>(seen_.size()); }

private:
    DataReader* reader_;
    uint32_t size_;
    std::set<uint64_t> seen_;
    Blob in_;
    SampleInfo info_;
};

// --exchange samples of blob written at --rate Hz from t0, each carrying its number in
// its first 8 bytes; the peer's reader drained after each write.
void send_samples(DataWriter* writer, const Args& args, Blob& blob, Received& received,
                  Clock::time_point t0) {
    for (long i = 0; i < args.exchange; ++i) {
        uint64_t seq = static_cast<uint64_t>(i);
        std::memcpy(blob.bytes.data(), &seq, 8);
        writer->write(&blob);
        received.drain();
        std::this_thread::sleep_until(t0 + std::chrono::microseconds(
            static_cast<int64_t>((i + 1) * 1e6 / args.rate)));
    }
}

// The exchange through the peer: its counts go into json, what fell short into errors.
void run_exchange(DataWriter* writer, const Entities& peer, const Args& args,
                  std::ostringstream& json, std::vector<std::string>& errors) {
    long received = 0;
    double seconds = 0;
    if (peer.reader == nullptr) {
        errors.push_back("--exchange: second participant/reader could not be created");
    } else {
        auto start = Clock::now();
        bool matched = wait_for_both_readers(writer, start);
        if (!matched) errors.push_back("--exchange: writer did not match the second participant's reader in 10 s");
        Blob blob{std::vector<uint8_t>(args.size)};
        Received taken(peer.reader, args.size);
        auto t0 = Clock::now();
        if (matched) send_samples(writer, args, blob, taken, t0);
        while (matched && taken.count() < args.exchange && seconds_since(start) < 40.0) {
            peer.reader->wait_for_unread_message(eprosima::fastrtps::Duration_t(0, 100000000));
            taken.drain();
        }
        received = taken.count();
        seconds = seconds_since(t0);
        if (received < args.exchange) errors.push_back("--exchange: " + std::to_string(received) + " of " +
                                                       std::to_string(args.exchange) + " samples received");
    }
    json << ", \"exchange\": {\"sent\": " << args.exchange << ", \"received\": " << received
         << ", \"size\": " << args.size << ", \"seconds\": " << seconds
         << ", \"intraprocess\": false}";
}

std::string errors_json(const std::vector<std::string>& errors) {
    std::ostringstream out;
    out << "[";
    for (size_t i = 0; i < errors.size(); ++i) out << (i ? ", " : "") << quote(errors[i]);
    out << "]";
    return out.str();
}

}  // namespace

int main(int argc, char** argv) {
    log_to_stderr();
    Args args;
    if (auto status = read_args(argc, argv, args)) return *status;
    if (args.exchange > 0) turn_off_intraprocess_delivery();

    std::vector<std::string> errors;
    auto* factory = DomainParticipantFactory::get_instance();
    ReturnCode_t loaded = factory->load_XML_profiles_file(args.file);
    if (loaded != ReturnCode_t::RETCODE_OK) errors.push_back("load_XML_profiles_file failed");

    std::ostringstream json;
    json << "{\"file\": " << quote(args.file) << ", \"load_ok\": "
         << (loaded == ReturnCode_t::RETCODE_OK ? "true" : "false");
    Entities entities = create_entities(factory, args, json, errors);
    Entities peer;
    if (args.exchange > 0 && entities.writer != nullptr) {
        peer = create_peer(factory, args);
        run_exchange(entities.writer, peer, args, json, errors);
    }
    json << ", \"errors\": " << errors_json(errors) << "}";
    std::cout << json.str() << std::endl;

    delete_entities(factory, peer);
    delete_entities(factory, entities);
    Log::Flush();
    return errors.empty() ? 0 : 1;
}
