#include "wifi.h"

#include "ns3/core-module.h"
#include "ns3/wifi-module.h"

using namespace ns3;

namespace linklab_ns3
{

// The Wi-Fi channel of both modes (see the header comment of linklab-ns3.cc for each
// setting's source).
NetDeviceContainer InstallWifi(NodeContainer nodes, double txPowerDbm)
{
    WifiHelper wifi;
    wifi.SetStandard(WIFI_STANDARD_80211a);
    wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager",
                                 "DataMode",
                                 StringValue("OfdmRate54Mbps"));
    YansWifiChannelHelper channel = YansWifiChannelHelper::Default();
    YansWifiPhyHelper phy;
    phy.SetErrorRateModel("ns3::NistErrorRateModel");
    phy.SetChannel(channel.Create());
    phy.Set("TxPowerStart", DoubleValue(txPowerDbm));
    phy.Set("TxPowerEnd", DoubleValue(txPowerDbm));
    WifiMacHelper mac;
    mac.SetType("ns3::AdhocWifiMac");
    return wifi.Install(phy, mac, nodes);
}

void Place(NodeContainer nodes, const std::vector<Vector>& positions, bool movable)
{
    MobilityHelper mobility;
    Ptr<ListPositionAllocator> alloc = CreateObject<ListPositionAllocator>();
    for (const Vector& p : positions)
    {
        alloc->Add(p);
    }
    mobility.SetPositionAllocator(alloc);
    mobility.SetMobilityModel(movable ? "ns3::ConstantVelocityMobilityModel"
                                      : "ns3::ConstantPositionMobilityModel");
    mobility.Install(nodes);
}

namespace
{

void Arrive(Ptr<ConstantVelocityMobilityModel> model, Vector target)
{
    model->SetVelocity(Vector(0, 0, 0));
    model->SetPosition(target);
}

} // namespace

void Move(Ptr<Node> node, const Vector& target, double seconds)
{
    Ptr<ConstantVelocityMobilityModel> model = node->GetObject<ConstantVelocityMobilityModel>();
    NS_ABORT_MSG_IF(!model, "Move: the node was not placed movable");
    Vector from = model->GetPosition();
    model->SetVelocity(Vector((target.x - from.x) / seconds,
                              (target.y - from.y) / seconds,
                              (target.z - from.z) / seconds));
    Simulator::Schedule(Seconds(seconds), &Arrive, model, target);
}

} // namespace linklab_ns3
