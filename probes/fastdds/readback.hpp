// Fast DDS QoS read back from created entities (get_qos()) into the probe summary's JSON:
// the detailed "participant", "writer" and "reader" objects and the uniform ros_qos.
#pragma once

#include <fastdds/dds/domain/qos/DomainParticipantQos.hpp>
#include <fastdds/dds/publisher/qos/DataWriterQos.hpp>
#include <fastdds/dds/subscriber/qos/DataReaderQos.hpp>

#include "probe.hpp"

namespace linklab_fastdds {

// Transports, max message size, discovery, flow controllers of a participant.
linklab::Json participant_json(const eprosima::fastdds::dds::DomainParticipantQos& q, int domain);
// Reliability, history, durability, resource limits, memory policy, data sharing, and the
// writer's heartbeat / publish mode or the reader's acknack timing.
linklab::Json writer_json(const eprosima::fastdds::dds::DataWriterQos& q);
linklab::Json reader_json(const eprosima::fastdds::dds::DataReaderQos& q);
// The four ROS 2 policies (Fast DDS has them all).
linklab::RosQos ros_qos(const eprosima::fastdds::dds::DataWriterQos& q);
linklab::RosQos ros_qos(const eprosima::fastdds::dds::DataReaderQos& q);

}  // namespace linklab_fastdds
