// Fast DDS codecs per --type (see codecs.hpp).
#include "codecs.hpp"

#include "linklab_typesPubSubTypes.h"
#include "message_types.inc"
#include "ros_types.hpp"

namespace linklab_fastdds {

namespace {

namespace ros = linklab::ros;

template <class T, class PS>
Codec array_codec() {
  Codec c;
  c.make_type = [] { return new PS(); };
  c.init = [](void* p, uint32_t) { auto* s = static_cast<T*>(p); linklab::fill_pattern(s->array_().data(), s->array_().size()); };
  c.stamp = [](void* p, uint64_t seq, int64_t t) { auto* s = static_cast<T*>(p); s->id_(seq); s->time_(t); };
  c.read = [](const void* p, linklab::Received& r) {
    auto* s = static_cast<const T*>(p);
    r.seq = s->id_(); r.t_send_ns = s->time_(); r.bytes = uint32_t(s->array_().size());
  };
  return c;
}

template <class T, class PS>
Codec pointcloud_codec() {
  Codec c;
  c.make_type = [] { return new PS(); };
  c.init = [](void* p, uint32_t) {
    auto* s = static_cast<T*>(p);
    s->header_().frame_id_("linklab");
    s->height_(1);
    s->width_(uint32_t(s->data_().size() / ros::kPointStep));
    s->point_step_(ros::kPointStep);
    s->row_step_(uint32_t(s->data_().size()));
    s->is_dense_(true);
    for (int i = 0; i < 4; ++i) {
      s->fields_()[i].name_(ros::kPointFields[i].name);
      s->fields_()[i].offset_(ros::kPointFields[i].offset);
      s->fields_()[i].datatype_(ros::kPointFields[i].datatype);
      s->fields_()[i].count_(ros::kPointFields[i].count);
    }
    linklab::fill_pattern(s->data_().data(), s->data_().size());
  };
  c.stamp = [](void* p, uint64_t seq, int64_t t) {
    auto* s = static_cast<T*>(p);
    s->id_(seq);
    s->time_(t);
    s->header_().stamp_().sec_(int32_t(t / 1000000000LL));
    s->header_().stamp_().nanosec_(uint32_t(t % 1000000000LL));
  };
  c.read = [](const void* p, linklab::Received& r) {
    auto* s = static_cast<const T*>(p);
    r.seq = s->id_(); r.t_send_ns = s->time_(); r.bytes = uint32_t(s->data_().size());
  };
  return c;
}

Codec bytes_codec() {
  using T = linklab_msgs::msg::dds_::Bytes_;
  Codec c;
  c.make_type = [] { return new linklab_msgs::msg::dds_::Bytes_PubSubType(); };
  c.init = [](void* p, uint32_t size) {
    auto* s = static_cast<T*>(p);
    s->data_().resize(size);
    linklab::fill_pattern(s->data_().data(), size);
  };
  c.stamp = [](void* p, uint64_t seq, int64_t t) { auto* s = static_cast<T*>(p); s->seq_(seq); s->t_send_ns_(t); };
  c.read = [](const void* p, linklab::Received& r) {
    auto* s = static_cast<const T*>(p);
    r.seq = s->seq_(); r.t_send_ns = s->t_send_ns_(); r.bytes = uint32_t(s->data_().size());
  };
  return c;
}

// ---- ROS 2's types --------------------------------------------------------------------------
void init_header(std_msgs::msg::dds_::Header_& h) { h.frame_id_(std::string(ros::kSeqDigits, '0')); }

void stamp_header(std_msgs::msg::dds_::Header_& h, uint64_t seq, int64_t t) {
  int32_t sec;
  uint32_t nanosec;
  ros::split_stamp(t, sec, nanosec);
  h.stamp_().sec_(sec);
  h.stamp_().nanosec_(nanosec);
  ros::write_hex16(&h.frame_id_()[0], seq);  // in place: same length, no reallocation
}

void read_header(const std_msgs::msg::dds_::Header_& h, linklab::Received& r) {
  r.valid = ros::read_header(h.stamp_().sec_(), h.stamp_().nanosec_(), h.frame_id_().data(), h.frame_id_().size(), r);
}

Codec image_codec() {
  using T = sensor_msgs::msg::dds_::Image_;
  Codec c;
  c.make_type = [] { return new sensor_msgs::msg::dds_::Image_PubSubType(); };
  c.init = [](void* p, uint32_t size) {
    auto* s = static_cast<T*>(p);
    ros::ImageGeometry g = ros::image_geometry(size);
    init_header(s->header_());
    s->height_(g.height);
    s->width_(g.width);
    s->encoding_(ros::kImageEncoding);
    s->is_bigendian_(0);
    s->step_(g.step);
    s->data_().resize(size);
    linklab::fill_pattern(s->data_().data(), size);
  };
  c.stamp = [](void* p, uint64_t seq, int64_t t) { stamp_header(static_cast<T*>(p)->header_(), seq, t); };
  c.read = [](const void* p, linklab::Received& r) {
    auto* s = static_cast<const T*>(p);
    read_header(s->header_(), r);
    r.bytes = uint32_t(s->data_().size());
  };
  return c;
}

Codec pointcloud2_codec() {
  using T = sensor_msgs::msg::dds_::PointCloud2_;
  Codec c;
  c.make_type = [] { return new sensor_msgs::msg::dds_::PointCloud2_PubSubType(); };
  c.init = [](void* p, uint32_t size) {
    auto* s = static_cast<T*>(p);
    init_header(s->header_());
    s->height_(1);
    s->width_(size / ros::kPointStep);
    s->fields_().resize(4);
    for (int i = 0; i < 4; ++i) {
      s->fields_()[i].name_(ros::kPointFields[i].name);
      s->fields_()[i].offset_(ros::kPointFields[i].offset);
      s->fields_()[i].datatype_(ros::kPointFields[i].datatype);
      s->fields_()[i].count_(ros::kPointFields[i].count);
    }
    s->is_bigendian_(false);
    s->point_step_(ros::kPointStep);
    s->row_step_(size);
    s->data_().resize(size);
    linklab::fill_pattern(s->data_().data(), size);
    s->is_dense_(true);
  };
  c.stamp = [](void* p, uint64_t seq, int64_t t) { stamp_header(static_cast<T*>(p)->header_(), seq, t); };
  c.read = [](const void* p, linklab::Received& r) {
    auto* s = static_cast<const T*>(p);
    read_header(s->header_(), r);
    r.bytes = uint32_t(s->data_().size());
  };
  return c;
}

Codec string_codec() {
  using T = std_msgs::msg::dds_::String_;
  Codec c;
  c.make_type = [] { return new std_msgs::msg::dds_::String_PubSubType(); };
  c.init = [](void* p, uint32_t size) {
    auto* s = static_cast<T*>(p);
    s->data_().assign(size, ' ');
    ros::fill_text(&s->data_()[0], size);
  };
  c.stamp = [](void* p, uint64_t seq, int64_t t) { ros::write_string_head(&static_cast<T*>(p)->data_()[0], seq, t); };
  c.read = [](const void* p, linklab::Received& r) {
    auto* s = static_cast<const T*>(p);
    r.valid = ros::read_string_head(s->data_().data(), s->data_().size(), r);
  };
  return c;
}

Codec uint8_multiarray_codec() {
  using T = std_msgs::msg::dds_::UInt8MultiArray_;
  Codec c;
  c.make_type = [] { return new std_msgs::msg::dds_::UInt8MultiArray_PubSubType(); };
  c.init = [](void* p, uint32_t size) {
    auto* s = static_cast<T*>(p);
    s->layout_().dim_().resize(1);
    auto& d = s->layout_().dim_()[0];
    d.label_(ros::kDimLabel);
    d.size_(size - ros::kArrayHead);
    d.stride_(size - ros::kArrayHead);
    s->layout_().data_offset_(ros::kArrayHead);
    s->data_().resize(size);
    linklab::fill_pattern(s->data_().data(), size);
  };
  c.stamp = [](void* p, uint64_t seq, int64_t t) { ros::write_array_head(static_cast<T*>(p)->data_().data(), seq, t); };
  c.read = [](const void* p, linklab::Received& r) {
    auto* s = static_cast<const T*>(p);
    r.valid = ros::read_array_head(s->data_().data(), s->data_().size(), r);
  };
  return c;
}

}  // namespace

Codec codec_for(const std::string& name) {
  using namespace performance_test_msgs::msg::dds_;
#define LL_ARRAY(N) if (name == #N) return array_codec<N##_, N##_PubSubType>();
#define LL_CLOUD(N) if (name == #N) return pointcloud_codec<N##_, N##_PubSubType>();
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

}  // namespace linklab_fastdds
