// linklab-check-cdr TYPE SIZE SEQ T_SEND_NS: one sample of a ROS 2 type (Image,
// PointCloud2, String, UInt8MultiArray) as Fast DDS 2.9 serializes it (the probe's codec,
// padding zeroed) and as probes/common/ros_types.cpp encodes it for MQTT, and each read
// back by the other side. Prints one JSON line:
//   {"fastdds": HEX, "common": HEX, "common_reads_fastdds": {seq, t_send_ns, bytes, valid},
//    "fastdds_reads_common": {...}}
// Exit 2 on bad arguments. tests/test_probes_ros_types.py compares both encodings and
// the Python one (src/linklab/probes/ros_types.py).
//
// linklab-check-cdr --size TYPE SIZE: the length of one sample of any probe type (Bytes,
// the ROS 2 types, the Array*/PointCloud* family; SIZE = its payload bytes) as Fast DDS
// 2.9 serializes it, encapsulation included. Prints {"type", "payload_bytes",
// "serialized_bytes"}. tests/test_probes_types.py checks linklab.probes.types.sample_bytes
// against it: the bench's wire model counts these bytes, not the payload's.
#include <fastdds/rtps/common/SerializedPayload.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "codecs.hpp"
#include "probe.hpp"
#include "ros_types.hpp"

namespace {

std::string hex(const uint8_t* p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (size_t i = 0; i < n; ++i) {
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

linklab::Json received(const linklab::Received& r) {
  linklab::Json j = linklab::Json::object();
  j.set("seq", (unsigned long long)r.seq);
  j.set("t_send_ns", (long long)r.t_send_ns);
  j.set("bytes", (unsigned long)r.bytes);
  j.set("valid", r.valid);
  return j;
}

int serialized_size(const char* prog, const char* type_name, const char* size_arg) {
  const linklab::TypeInfo* type = linklab::find_type(type_name);
  if (!type) linklab::usage_error(prog, std::string("TYPE: not a probe type: '") + type_name + "'");
  char* end = nullptr;
  unsigned long size = std::strtoul(size_arg, &end, 10);
  if (!*size_arg || *end || size > 0xffffffffUL)
    linklab::usage_error(prog, std::string("SIZE: expected payload bytes, got '") + size_arg + "'");
  if (type->payload_bytes && size != type->payload_bytes)
    linklab::usage_error(prog, std::string("SIZE: ") + type->name + " carries exactly " +
                                   std::to_string(type->payload_bytes) + " bytes");
  if (linklab::ros::is_ros_kind(type->kind)) {
    std::string why = linklab::ros::size_refusal(type->kind, uint32_t(size));
    if (!why.empty()) linklab::usage_error(prog, "SIZE: " + why);
  }
  linklab_fastdds::Codec codec = linklab_fastdds::codec_for(type->name);
  std::unique_ptr<eprosima::fastdds::dds::TopicDataType> ts(codec.make_type());
  void* sample = ts->createData();
  codec.init(sample, uint32_t(size));
  codec.stamp(sample, 1, 1);
  eprosima::fastrtps::rtps::SerializedPayload_t payload(ts->getSerializedSizeProvider(sample)());
  bool ok = ts->serialize(sample, &payload);
  ts->deleteData(sample);
  if (!ok) {
    std::fprintf(stderr, "%s: Fast DDS could not serialize the sample\n", prog);
    return 1;
  }
  linklab::Json out = linklab::Json::object();
  out.set("type", std::string(type->name));
  out.set("payload_bytes", (unsigned long)size);
  out.set("serialized_bytes", (unsigned long)payload.length);
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* prog = "linklab-check-cdr";
  if (argc == 4 && std::string(argv[1]) == "--size") return serialized_size(prog, argv[2], argv[3]);
  if (argc != 5) linklab::usage_error(prog, "usage: linklab-check-cdr TYPE SIZE SEQ T_SEND_NS | --size TYPE SIZE");
  const linklab::TypeInfo* type = linklab::find_type(argv[1]);
  if (!type || !linklab::ros::is_ros_kind(type->kind))
    linklab::usage_error(prog, std::string("TYPE: expected Image, PointCloud2, String or UInt8MultiArray, got '") + argv[1] + "'");
  uint32_t size = uint32_t(std::strtoul(argv[2], nullptr, 10));
  std::string why = linklab::ros::size_refusal(type->kind, size);
  if (!why.empty()) linklab::usage_error(prog, "SIZE: " + why);
  uint64_t seq = std::strtoull(argv[3], nullptr, 10);
  int64_t t = std::strtoll(argv[4], nullptr, 10);

  linklab_fastdds::Codec codec = linklab_fastdds::codec_for(type->name);
  std::unique_ptr<eprosima::fastdds::dds::TopicDataType> ts(codec.make_type());
  void* sample = ts->createData();
  codec.init(sample, size);
  codec.stamp(sample, seq, t);
  uint32_t max = ts->getSerializedSizeProvider(sample)();
  eprosima::fastrtps::rtps::SerializedPayload_t payload(max);
  std::memset(payload.data, 0, max);
  if (!ts->serialize(sample, &payload)) {
    std::fprintf(stderr, "%s: Fast DDS could not serialize the sample\n", prog);
    return 1;
  }

  linklab::ros::CdrSample common(type->kind, size);
  common.stamp(seq, t);

  linklab::Received a{};
  linklab::Received b{};
  a.valid = linklab::ros::cdr_read(type->kind, payload.data, payload.length, a);
  eprosima::fastrtps::rtps::SerializedPayload_t back(uint32_t(common.size()));
  std::memcpy(back.data, common.data(), common.size());
  back.length = uint32_t(common.size());
  void* decoded = ts->createData();
  if (ts->deserialize(&back, decoded)) codec.read(decoded, b);
  else b.valid = false;

  linklab::Json out = linklab::Json::object();
  out.set("fastdds", hex(payload.data, payload.length));
  out.set("common", hex(common.data(), common.size()));
  out.set("common_reads_fastdds", received(a));
  out.set("fastdds_reads_common", received(b));
  std::printf("%s\n", out.dump().c_str());
  ts->deleteData(sample);
  ts->deleteData(decoded);
  return 0;
}
