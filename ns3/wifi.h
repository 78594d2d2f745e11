// The simulated medium of both modes: the 802.11a ad-hoc channel and where the nodes
// stand (see the comment at the top of linklab-ns3.cc for each setting's source).
#pragma once

#include "ns3/mobility-module.h"
#include "ns3/network-module.h"

#include <vector>

namespace linklab_ns3
{

// One ad-hoc Wi-Fi device per node on one shared 802.11a channel.
ns3::NetDeviceContainer InstallWifi(ns3::NodeContainer nodes, double txPowerDbm);

// Puts node i at positions[i] (metres), not moving; with MOVABLE each node gets a
// ConstantVelocityMobilityModel (at rest until Move gives it a velocity).
void Place(ns3::NodeContainer nodes, const std::vector<ns3::Vector>& positions,
           bool movable = false);

// Moves NODE (placed movable) in a straight line from where it is to TARGET over SECONDS
// of simulated time from now, at constant speed, and leaves it there.
void Move(ns3::Ptr<ns3::Node> node, const ns3::Vector& target, double seconds);

} // namespace linklab_ns3
