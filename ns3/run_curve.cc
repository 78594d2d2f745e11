// curve: the paper's Fig. 4 validation, in simulated time (see the comment at the top of
// linklab-ns3.cc).
#include "args.h"
#include "modes.h"
#include "wifi.h"

#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/wifi-module.h"

#include <cstdio>

using namespace ns3;

namespace linklab_ns3
{

namespace
{

struct CurveOptions
{
    std::vector<double> distances;
    uint32_t packets = 1000;
    uint32_t size = 60;
    double txPower = 16.0206;
    double intervalMs = 10.0;
    int seed = 1;
};

CurveOptions ParseCurveOptions(const std::vector<std::string>& args)
{
    CurveOptions o;
    ForEachOption(args, [&](const std::string& a, const std::string& v) {
        if (a == "--distances")
            for (const std::string& d : Split(v, ','))
                o.distances.push_back(Number(d, a));
        else if (a == "--packets")
            o.packets = static_cast<uint32_t>(Number(v, a));
        else if (a == "--size")
            o.size = static_cast<uint32_t>(Number(v, a));
        else if (a == "--tx-power")
            o.txPower = Number(v, a);
        else if (a == "--interval-ms")
            o.intervalMs = Number(v, a);
        else if (a == "--seed")
            o.seed = static_cast<int>(Number(v, a));
        else
            return false;
        return true;
    });
    if (o.distances.empty() || o.packets == 0)
    {
        Die("curve needs --distances D1,D2,... and --packets N > 0");
    }
    return o;
}

struct Counter
{
    uint64_t received = 0;

    bool Receive(Ptr<NetDevice>,
                 Ptr<const Packet>,
                 uint16_t,
                 const Address&,
                 const Address&,
                 NetDevice::PacketType type)
    {
        if (type != NetDevice::PACKET_OTHERHOST)
        {
            received++;
        }
        return true;
    }
};

void SendOne(Ptr<WifiNetDevice> dev, Address to, uint32_t size)
{
    dev->Send(Create<Packet>(size), to, 0x0800);
}

// How many of the packets node 0 sends arrive at node 1, DISTANCE metres away (run K).
uint64_t ReceivedAt(const CurveOptions& o, double distance, size_t k)
{
    RngSeedManager::SetSeed(static_cast<uint32_t>(o.seed));
    RngSeedManager::SetRun(k + 1);
    NodeContainer nodes;
    nodes.Create(2);
    NetDeviceContainer devices = InstallWifi(nodes, o.txPower);
    Place(nodes, {Vector(0, 0, 0), Vector(distance, 0, 0)});
    Counter counter;
    nodes.Get(1)->RegisterProtocolHandler(MakeCallback(&Counter::Receive, &counter),
                                          0,
                                          devices.Get(1),
                                          true);
    auto sender = DynamicCast<WifiNetDevice>(devices.Get(0));
    for (uint32_t n = 0; n < o.packets; n++)
    {
        Simulator::Schedule(MilliSeconds(100) + MicroSeconds(o.intervalMs * 1000 * n),
                            &SendOne,
                            sender,
                            devices.Get(1)->GetAddress(),
                            o.size);
    }
    Simulator::Stop(MilliSeconds(100) + MicroSeconds(o.intervalMs * 1000 * o.packets) +
                    Seconds(1));
    Simulator::Run();
    Simulator::Destroy();
    return counter.received;
}

} // namespace

int RunCurve(const std::vector<std::string>& args)
{
    CurveOptions o = ParseCurveOptions(args);
    GlobalValue::Bind("ChecksumEnabled", BooleanValue(true));
    for (size_t k = 0; k < o.distances.size(); k++)
    {
        uint64_t received = ReceivedAt(o, o.distances[k], k);
        std::printf("{\"distance_m\": %.3f, \"size_bytes\": %u, \"tx_power_dbm\": %.4f, "
                    "\"sent\": %u, \"received\": %llu, \"loss\": %.6f}\n",
                    o.distances[k],
                    o.size,
                    o.txPower,
                    o.packets,
                    static_cast<unsigned long long>(received),
                    1.0 - static_cast<double>(received) / o.packets);
        std::fflush(stdout);
    }
    return 0;
}

} // namespace linklab_ns3
