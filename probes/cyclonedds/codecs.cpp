// Cyclone DDS codecs per --type (see codecs.hpp).
#include "codecs.hpp"

#include <cstdlib>
#include <cstring>

#include "linklab_types.h"
#include "message_types.inc"
#include "ros_types.hpp"

namespace linklab_cyclone {

namespace {

namespace ros = linklab::ros;

template <class T>
Codec array_codec(const dds_topic_descriptor_t* d) {
  Codec c{};
  c.desc = d;
  c.init = [](void* p, uint32_t) { auto* s = static_cast<T*>(p); linklab::fill_pattern(s->array_, sizeof s->array_); };
  c.stamp = [](void* p, uint64_t seq, int64_t t) { auto* s = static_cast<T*>(p); s->id_ = seq; s->time_ = t; };
  c.read = [](const void* p, linklab::Received& r) {
    auto* s = static_cast<const T*>(p);
    r.seq = s->id_; r.t_send_ns = s->time_; r.bytes = uint32_t(sizeof s->array_);
  };
  c.release = [](void*) {};
  return c;
}

template <class T>
Codec pointcloud_codec(const dds_topic_descriptor_t* d) {
  Codec c{};
  c.desc = d;
  c.init = [](void* p, uint32_t) {
    auto* s = static_cast<T*>(p);
    s->header_.frame_id_ = strdup("linklab");
    s->height_ = 1;
    s->width_ = uint32_t(sizeof s->data_ / ros::kPointStep);
    s->point_step_ = ros::kPointStep;
    s->row_step_ = uint32_t(sizeof s->data_);
    s->is_dense_ = true;
    for (int i = 0; i < 8; ++i) {
      s->fields_[i].name_ = strdup(i < 4 ? ros::kPointFields[i].name : "");
      s->fields_[i].offset_ = i < 4 ? ros::kPointFields[i].offset : 0;
      s->fields_[i].datatype_ = i < 4 ? ros::kPointFields[i].datatype : 0;
      s->fields_[i].count_ = i < 4 ? ros::kPointFields[i].count : 0;
    }
    linklab::fill_pattern(s->data_, sizeof s->data_);
  };
  c.stamp = [](void* p, uint64_t seq, int64_t t) {
    auto* s = static_cast<T*>(p);
    s->id_ = seq;
    s->time_ = t;
    s->header_.stamp_.sec_ = int32_t(t / 1000000000LL);
    s->header_.stamp_.nanosec_ = uint32_t(t % 1000000000LL);
  };
  c.read = [](const void* p, linklab::Received& r) {
    auto* s = static_cast<const T*>(p);
    r.seq = s->id_; r.t_send_ns = s->time_; r.bytes = uint32_t(sizeof s->data_);
  };
  c.release = [](void* p) {
    auto* s = static_cast<T*>(p);
    free(s->header_.frame_id_);
    for (auto& f : s->fields_) free(f.name_);
  };
  return c;
}

// a sequence<octet> of n pattern bytes, allocated and filled once
void init_octets(dds_sequence_octet& q, uint32_t n) {
  q._buffer = static_cast<uint8_t*>(malloc(n ? n : 1));
  q._length = q._maximum = n;
  q._release = false;
  linklab::fill_pattern(q._buffer, n);
}

Codec bytes_codec() {
  using T = linklab_msgs_msg_dds__Bytes_;
  Codec c{};
  c.desc = &linklab_msgs_msg_dds__Bytes__desc;
  c.init = [](void* p, uint32_t size) { init_octets(static_cast<T*>(p)->data_, size); };
  c.stamp = [](void* p, uint64_t seq, int64_t t) { auto* s = static_cast<T*>(p); s->seq_ = seq; s->t_send_ns_ = t; };
  c.read = [](const void* p, linklab::Received& r) {
    auto* s = static_cast<const T*>(p);
    r.seq = s->seq_; r.t_send_ns = s->t_send_ns_; r.bytes = s->data_._length;
  };
  c.release = [](void* p) { free(static_cast<T*>(p)->data_._buffer); };
  return c;
}

// ---- ROS 2's types --------------------------------------------------------------------------
using Header = std_msgs_msg_dds__Header_;

void init_header(Header& h) {
  h.frame_id_ = static_cast<char*>(calloc(ros::kSeqDigits + 1, 1));
  std::memset(h.frame_id_, '0', ros::kSeqDigits);
}

void stamp_header(Header& h, uint64_t seq, int64_t t) {
  ros::split_stamp(t, h.stamp_.sec_, h.stamp_.nanosec_);
  ros::write_hex16(h.frame_id_, seq);  // in place
}

void read_header(const Header& h, linklab::Received& r) {
  const char* f = h.frame_id_ ? h.frame_id_ : "";
  r.valid = ros::read_header(h.stamp_.sec_, h.stamp_.nanosec_, f, std::strlen(f), r);
}

Codec image_codec() {
  using T = sensor_msgs_msg_dds__Image_;
  Codec c{};
  c.desc = &sensor_msgs_msg_dds__Image__desc;
  c.init = [](void* p, uint32_t size) {
    auto* s = static_cast<T*>(p);
    ros::ImageGeometry g = ros::image_geometry(size);
    init_header(s->header_);
    s->height_ = g.height;
    s->width_ = g.width;
    s->encoding_ = strdup(ros::kImageEncoding);
    s->is_bigendian_ = 0;
    s->step_ = g.step;
    init_octets(s->data_, size);
  };
  c.stamp = [](void* p, uint64_t seq, int64_t t) { stamp_header(static_cast<T*>(p)->header_, seq, t); };
  c.read = [](const void* p, linklab::Received& r) {
    auto* s = static_cast<const T*>(p);
    read_header(s->header_, r);
    r.bytes = s->data_._length;
  };
  c.release = [](void* p) {
    auto* s = static_cast<T*>(p);
    free(s->header_.frame_id_);
    free(s->encoding_);
    free(s->data_._buffer);
  };
  return c;
}

Codec pointcloud2_codec() {
  using T = sensor_msgs_msg_dds__PointCloud2_;
  Codec c{};
  c.desc = &sensor_msgs_msg_dds__PointCloud2__desc;
  c.init = [](void* p, uint32_t size) {
    auto* s = static_cast<T*>(p);
    init_header(s->header_);
    s->height_ = 1;
    s->width_ = size / ros::kPointStep;
    s->fields_._buffer = static_cast<sensor_msgs_msg_dds__PointField_*>(calloc(4, sizeof(sensor_msgs_msg_dds__PointField_)));
    s->fields_._length = s->fields_._maximum = 4;
    s->fields_._release = false;
    for (int i = 0; i < 4; ++i) {
      auto& f = s->fields_._buffer[i];
      f.name_ = strdup(ros::kPointFields[i].name);
      f.offset_ = ros::kPointFields[i].offset;
      f.datatype_ = ros::kPointFields[i].datatype;
      f.count_ = ros::kPointFields[i].count;
    }
    s->is_bigendian_ = false;
    s->point_step_ = ros::kPointStep;
    s->row_step_ = size;
    init_octets(s->data_, size);
    s->is_dense_ = true;
  };
  c.stamp = [](void* p, uint64_t seq, int64_t t) { stamp_header(static_cast<T*>(p)->header_, seq, t); };
  c.read = [](const void* p, linklab::Received& r) {
    auto* s = static_cast<const T*>(p);
    read_header(s->header_, r);
    r.bytes = s->data_._length;
  };
  c.release = [](void* p) {
    auto* s = static_cast<T*>(p);
    free(s->header_.frame_id_);
    for (uint32_t i = 0; i < s->fields_._length; ++i) free(s->fields_._buffer[i].name_);
    free(s->fields_._buffer);
    free(s->data_._buffer);
  };
  return c;
}

Codec string_codec() {
  using T = std_msgs_msg_dds__String_;
  Codec c{};
  c.desc = &std_msgs_msg_dds__String__desc;
  c.init = [](void* p, uint32_t size) {
    auto* s = static_cast<T*>(p);
    s->data_ = static_cast<char*>(malloc(size_t(size) + 1));
    ros::fill_text(s->data_, size);
    s->data_[size] = '\0';
  };
  c.stamp = [](void* p, uint64_t seq, int64_t t) { ros::write_string_head(static_cast<T*>(p)->data_, seq, t); };
  c.read = [](const void* p, linklab::Received& r) {
    const char* d = static_cast<const T*>(p)->data_;
    r.valid = d && ros::read_string_head(d, std::strlen(d), r);
  };
  c.release = [](void* p) { free(static_cast<T*>(p)->data_); };
  return c;
}

Codec uint8_multiarray_codec() {
  using T = std_msgs_msg_dds__UInt8MultiArray_;
  Codec c{};
  c.desc = &std_msgs_msg_dds__UInt8MultiArray__desc;
  c.init = [](void* p, uint32_t size) {
    auto* s = static_cast<T*>(p);
    auto& dim = s->layout_.dim_;
    dim._buffer = static_cast<std_msgs_msg_dds__MultiArrayDimension_*>(calloc(1, sizeof(std_msgs_msg_dds__MultiArrayDimension_)));
    dim._length = dim._maximum = 1;
    dim._release = false;
    dim._buffer[0].label_ = strdup(ros::kDimLabel);
    dim._buffer[0].size_ = size - ros::kArrayHead;
    dim._buffer[0].stride_ = size - ros::kArrayHead;
    s->layout_.data_offset_ = ros::kArrayHead;
    init_octets(s->data_, size);
  };
  c.stamp = [](void* p, uint64_t seq, int64_t t) { ros::write_array_head(static_cast<T*>(p)->data_._buffer, seq, t); };
  c.read = [](const void* p, linklab::Received& r) {
    auto* s = static_cast<const T*>(p);
    r.valid = ros::read_array_head(s->data_._buffer, s->data_._length, r);
  };
  c.release = [](void* p) {
    auto* s = static_cast<T*>(p);
    if (s->layout_.dim_._buffer) free(s->layout_.dim_._buffer[0].label_);
    free(s->layout_.dim_._buffer);
    free(s->data_._buffer);
  };
  return c;
}

}  // namespace

Codec codec_for(const std::string& name) {
#define LL_ARRAY(N) \
  if (name == #N) return array_codec<performance_test_msgs_msg_dds__##N##_>(&performance_test_msgs_msg_dds__##N##__desc);
#define LL_CLOUD(N) \
  if (name == #N) return pointcloud_codec<performance_test_msgs_msg_dds__##N##_>(&performance_test_msgs_msg_dds__##N##__desc);
  LINKLAB_ARRAY_TYPES(LL_ARRAY)
  LINKLAB_POINTCLOUD_TYPES(LL_CLOUD)
#undef LL_ARRAY
#undef LL_CLOUD
  if (name == "Image") return image_codec();
  if (name == "PointCloud2") return pointcloud2_codec();
  if (name == "String") return string_codec();
  if (name == "UInt8MultiArray") return uint8_multiarray_codec();
  return bytes_codec();
}

}  // namespace linklab_cyclone
