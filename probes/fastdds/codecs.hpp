// How the Fast DDS probe stamps and reads each generated type (fastddsgen, probes/idl):
// a Codec per --type. init() allocates and fills the payload once; stamp() changes only
// the seq and send-time fields (ros_types.hpp says where they are in ROS 2's types);
// read() takes seq, send time and payload bytes out of a received sample (valid = false
// when a ROS 2 type's sample carries no linklab seq/send time).
#pragma once

#include <fastdds/dds/topic/TopicDataType.hpp>

#include <cstdint>
#include <functional>
#include <string>

#include "probe.hpp"

namespace linklab_fastdds {

struct Codec {
  std::function<eprosima::fastdds::dds::TopicDataType*()> make_type;
  std::function<void(void*, uint32_t)> init;  // once: allocate and fill the payload
  std::function<void(void*, uint64_t, int64_t)> stamp;
  std::function<void(const void*, linklab::Received&)> read;
};

Codec codec_for(const std::string& type_name);

}  // namespace linklab_fastdds
