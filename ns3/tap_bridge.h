// The bridge between a host's TAP device and its station's simulated Wi-Fi device (like
// ns-3's TapBridge in UseLocal mode, except that the TAP carries the Wi-Fi device's MAC
// address: see the comment at the top of linklab-ns3.cc).
#pragma once

#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/wifi-module.h"

#include <cstdint>
#include <string>

namespace linklab_ns3
{

struct Air;

// Reads whole frames from a TAP descriptor in a thread of its own.
class TapReader : public ns3::FdReader
{
  private:
    ns3::FdReader::Data DoRead() override;
};

// One station of the medium: a node with its Wi-Fi device, bridged to a TAP device.
struct Station
{
    Air* air = nullptr;
    size_t id = 0;
    std::string name;
    std::string tap;
    ns3::Mac48Address mac;
    ns3::Vector position;       // where it starts (metres)
    bool moves = false;         // --move: from position to target over moveSeconds
    ns3::Vector target;
    double moveSeconds = 0.0;
    int fd = -1;
    ns3::Ptr<ns3::Node> node;
    ns3::Ptr<ns3::WifiNetDevice> dev;
    ns3::Ptr<TapReader> reader;
    uint64_t fromHost = 0;      // frames read from the TAP
    uint64_t fromHostBytes = 0;
    uint64_t toHost = 0;        // frames written to the TAP
    uint64_t toHostBytes = 0;
    uint64_t groupSent = 0;     // broadcast/multicast frames handed to the MAC
    uint64_t notEthernet = 0;   // frames the bridge cannot carry (802.3 length field)

    // Opens the TAP device named tap and gives it the Wi-Fi device's MAC address.
    void OpenTap();
    // Connects the device's receive and MAC traces and starts reading the TAP.
    void Start();
    // Runs in the reader thread: hand the frame to the simulation, now (realtime).
    void ReadFromThread(uint8_t* buf, ssize_t len);
    // A frame from the host: onto the air (freeing buf).
    void FromHost(uint8_t* buf, ssize_t len);
    // A frame from the air: to the host, as an Ethernet frame.
    bool FromAir(ns3::Ptr<ns3::NetDevice>,
                 ns3::Ptr<const ns3::Packet> packet,
                 uint16_t protocol,
                 const ns3::Address& from,
                 const ns3::Address& to,
                 ns3::NetDevice::PacketType type);
    void Acked(ns3::Ptr<const ns3::WifiMpdu> mpdu);
    void Dropped(ns3::WifiMacDropReason reason, ns3::Ptr<const ns3::WifiMpdu> mpdu);
};

} // namespace linklab_ns3
