// ROS 2's standard message types in the probes, of any size: sensor_msgs Image and
// PointCloud2, std_msgs String and UInt8MultiArray (paper 000 §V-A). One place for what
// every probe must agree on (the layouts are in probes/idl/linklab_types.idl):
//   * where the seq and the send time live in a sample that has no field for them:
//       Image, PointCloud2   header.stamp = send time (sec = t / 1e9, nanosec = t % 1e9),
//                            header.frame_id = seq as 16 lowercase hex digits
//       String               data[0:16] = seq, data[16:32] = send time (as u64), both as
//                            16 lowercase hex digits; the rest printable filler
//       UInt8MultiArray      data[0:8] = seq (u64 LE), data[8:16] = send time (i64 LE);
//                            layout.data_offset = 16, dim = [{"linklab", N-16, N-16}]
//   * the geometry for N payload bytes (Image: rgb8 rows; PointCloud2: 16-byte points)
//     and which N a type can carry (size_refusal);
//   * the XCDR1 encoding of a whole sample (CdrSample, cdr_read) for the probes that carry
//     serialized samples over a non-DDS transport (MQTT; the Zenoh probe has the same in
//     src/linklab/probes/ros_types.py). It is byte for byte what Fast DDS 2.9 serializes
//     (padding zeroed; tests/test_probes_ros_types.py compares with linklab-check-cdr).
// The payload (a record's bytes) is the data field's length: N.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "probe.hpp"

namespace linklab::ros {

constexpr const char* kImageEncoding = "rgb8";
constexpr uint32_t kImageChannels = 3;        // rgb8
constexpr uint32_t kPointStep = 16;           // x, y, z, intensity as float32
constexpr uint8_t kFloat32 = 7;               // sensor_msgs/PointField FLOAT32
constexpr uint32_t kSeqDigits = 16;           // frame_id: the seq in hex
constexpr uint32_t kStringHead = 32;          // String: seq + send time in hex
constexpr uint32_t kArrayHead = 16;           // UInt8MultiArray: seq + send time, binary
constexpr const char* kDimLabel = "linklab";

struct PointFieldSpec {
  const char* name;
  uint32_t offset;
  uint8_t datatype;
  uint32_t count;
};
constexpr PointFieldSpec kPointFields[4] = {
    {"x", 0, kFloat32, 1}, {"y", 4, kFloat32, 1}, {"z", 8, kFloat32, 1}, {"intensity", 12, kFloat32, 1}};

bool is_ros_kind(TypeKind kind);

struct ImageGeometry {
  uint32_t height, width, step;
};
// rgb8 rows for n bytes: height = the largest divisor h of n with 3*h*h <= n (1 if
// none), step = n / h, width = step / 3 (0-2 padding bytes a row). height * step == n.
ImageGeometry image_geometry(uint32_t n);

// Why a type cannot carry n payload bytes ("" when it can): PointCloud2 needs whole
// 16-byte points, String at least 32 characters, UInt8MultiArray at least 16 octets.
std::string size_refusal(TypeKind kind, uint32_t n);

// header.stamp
void split_stamp(int64_t t_ns, int32_t& sec, uint32_t& nanosec);
int64_t join_stamp(int32_t sec, uint32_t nanosec);

// 16 lowercase hex digits, no terminator; read: exactly that, else false.
void write_hex16(char* out, uint64_t v);
bool read_hex16(const char* in, uint64_t& v);

// String: the first 32 characters; read also checks n >= 32 and sets r.bytes = n.
void write_string_head(char* s, uint64_t seq, int64_t t_ns);
bool read_string_head(const char* s, size_t n, Received& r);
// UInt8MultiArray: the first 16 octets; read also checks n >= 16 and sets r.bytes = n.
void write_array_head(uint8_t* data, uint64_t seq, int64_t t_ns);
bool read_array_head(const uint8_t* data, size_t n, Received& r);
// Image / PointCloud2: stamp and frame_id; r.bytes is the caller's (the data length).
bool read_header(int32_t sec, uint32_t nanosec, const char* frame_id, size_t frame_len, Received& r);

// Printable filler for String (never NUL: a C string must keep its length).
void fill_text(char* data, size_t n);

// A whole serialized sample (encapsulation CDR_LE + XCDR1 body) built once for n payload
// bytes; stamp() rewrites only the seq and send-time bytes in place.
class CdrSample {
 public:
  CdrSample(TypeKind kind, uint32_t n);
  void stamp(uint64_t seq, int64_t t_ns);
  const uint8_t* data() const { return buf_.data(); }
  size_t size() const { return buf_.size(); }

 private:
  TypeKind kind_;
  std::vector<uint8_t> buf_;
  size_t at_ = 0;  // Image/PointCloud2: the stamp (frame_id chars at +12); String: the
                   // first character; UInt8MultiArray: the first data octet
};

// Decodes a serialized sample of this kind (CDR_LE); false when it is not one (too short,
// wrong encapsulation, lengths beyond the end, or no linklab seq/send time in it).
bool cdr_read(TypeKind kind, const uint8_t* p, size_t n, Received& r);

}  // namespace linklab::ros
