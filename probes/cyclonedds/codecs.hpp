// How the Cyclone DDS probe stamps and reads each idlc-generated type (probes/idl): a
// Codec per --type. init() allocates and fills the payload once; stamp() changes only
// the seq and send-time fields (ros_types.hpp says where they are in ROS 2's types);
// read() takes seq, send time and payload bytes out of a received sample (valid = false
// when a ROS 2 type's sample carries no linklab seq/send time); release() frees what
// init() allocated.
#pragma once

#include <dds/dds.h>

#include <cstdint>
#include <string>

#include "probe.hpp"

namespace linklab_cyclone {

struct Codec {
  const dds_topic_descriptor_t* desc;
  void (*init)(void*, uint32_t);
  void (*stamp)(void*, uint64_t, int64_t);
  void (*read)(const void*, linklab::Received&);
  void (*release)(void*);
};

Codec codec_for(const std::string& type_name);

}  // namespace linklab_cyclone
