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

// Puts node i at positions[i] (metres), not moving.
void Place(ns3::NodeContainer nodes, const std::vector<ns3::Vector>& positions);

} // namespace linklab_ns3
