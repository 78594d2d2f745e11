// saturation: N saturated 802.11ac stations sending to one AP, in simulated time (issue
// 43: the relay's medium, emu/src/medium/, against ns-3; linklab.emu.medium_agreement):
//
//   linklab-ns3 saturation --standard ac --width 80 --nss 1 --mcs N --gi 800
//                          --stations N --frame-bytes B --seconds S --seed K
//                          [--ampdu-bytes X] [--queue Q] [--warmup S] [--explicit-bar 0|1]
//                          [--max-ssrc N] [--distance M]
// Prints one JSON line.
//
// The BSS (ns-3 3.37 classes): WifiHelper (WIFI_STANDARD_80211ac), YansWifiPhyHelper on
// a YansWifiChannelHelper::Default() channel (log-distance loss; stations --distance m
// (default 1) from the AP, frame errors from ns-3's default TableBasedErrorRateModel; at 1 m:
// about -30 dBm received, no frame errors), channel {42, 80, BAND_5GHZ, 0} (or the
// --width's), ConstantRateWifiManager with DataMode VhtMcs<N> (its control responses,
// ACK and BlockAck, at the highest basic rate not above the data rate: 24 Mbit/s),
// ApWifiMac + StaWifiMac (QoS: EDCA, AC_BE for every frame: AIFSN 3, CWmin 15, CWmax
// 1023, TXOP limit 0), RTS/CTS off (RtsCtsThreshold 65535), A-MPDU only
// (BE_MaxAmsduSize 0; BE_MaxAmpduSize 65535, ns-3's default, or --ampdu-bytes; the
// BlockAck window 64), WifiMacQueue MaxSize 1000p.
// Beacons: one at time 0 (EnableBeaconJitter false), then every 65535 TU (67 s): none in
// the measured window; the stations scan passively and associate in the first ~0.1 s.
// BlockAck policy: UseExplicitBarAfterMissedBlockAck (QosTxop) false unless --explicit-bar
// 1: after a missed BlockAck the A-MPDU is sent again (with the implicit BAR), as the
// relay's medium does; ns-3's default first sends a BlockAckReq in a TXOP of its own.
// Retry limit: MaxSsrc 7 (--max-ssrc). ns-3 3.37 counts it per AC and a BlockAck never
// resets it, so every 7th missed BlockAck drops an A-MPDU (per-MPDU counts from ns-3.44).
//
// Traffic: no IP stack (setup.sh links only ns3-core/network/wifi/mobility): each
// station's WifiNetDevice::Send takes IP-sized packets of --frame-bytes (EtherType
// 0x0800; the MAC adds LLC/SNAP as for an IP packet) and is kept saturated the way the
// relay's medium keeps a saturated station: its AC_BE WifiMacQueue is topped up to
// --queue packets (64: one BlockAck window) whenever an MPDU leaves it (WifiMac traces
// AckedMpdu and DroppedMpdu). The MAC delay is then what the medium measures: enqueue
// at the MAC queue -> acknowledged (AckedMpdu), mean over the MPDUs acked in the window.
//
// Output, for [--warmup, --warmup + --seconds): per station and total delivered bits/s
// (IP bytes received at the AP), mean MAC delay, data PPDUs sent (PhyTxPsduBegin on the
// stations), those that got no ACK/BlockAck (MpduResponseTimeout, PsduResponseTimeout),
// BlockAckReqs, MPDUs per data PPDU and MPDUs dropped.
#include "args.h"
#include "modes.h"

#include "ns3/core-module.h"
#include "ns3/mobility-module.h"
#include "ns3/network-module.h"
#include "ns3/wifi-module.h"

#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

using namespace ns3;

namespace linklab_ns3
{

namespace
{

struct SatOptions
{
    std::string standard = "ac";
    int width = 80;
    int nss = 1;
    int mcs = 7;
    int gi = 800;
    int stations = 1;
    uint32_t frameBytes = 1500;
    double seconds = 2.0;
    double warmup = -1; // default: StartTime + 0.2 s
    int seed = 1;
    uint32_t ampduBytes = 65535;
    uint32_t queue = 64;
    bool explicitBar = false;
    uint32_t maxSsrc = 7;
    double distance = 1.0;
};

SatOptions ParseSatOptions(const std::vector<std::string>& args)
{
    SatOptions o;
    ForEachOption(args, [&](const std::string& a, const std::string& v) {
        int n = a == "--standard" ? 0 : static_cast<int>(Number(v, a));
        if (a == "--standard") o.standard = v;
        else if (a == "--width") o.width = n;
        else if (a == "--nss") o.nss = n;
        else if (a == "--mcs") o.mcs = n;
        else if (a == "--gi") o.gi = n;
        else if (a == "--stations") o.stations = n;
        else if (a == "--frame-bytes") o.frameBytes = static_cast<uint32_t>(n);
        else if (a == "--seconds") o.seconds = Number(v, a);
        else if (a == "--warmup") o.warmup = Number(v, a);
        else if (a == "--seed") o.seed = n;
        else if (a == "--ampdu-bytes") o.ampduBytes = static_cast<uint32_t>(n);
        else if (a == "--queue") o.queue = static_cast<uint32_t>(n);
        else if (a == "--explicit-bar") o.explicitBar = n != 0;
        else if (a == "--max-ssrc") o.maxSsrc = static_cast<uint32_t>(n);
        else if (a == "--distance") o.distance = Number(v, a);
        else return false;
        return true;
    });
    if (o.standard != "ac") Die("saturation: --standard ac only (802.11ac, VHT)");
    if (o.width != 20 && o.width != 40 && o.width != 80 && o.width != 160)
        Die("saturation: --width 20, 40, 80 or 160");
    if (o.gi != 800 && o.gi != 400) Die("saturation: --gi 800 or 400");
    if (!(o.distance > 0 && o.distance <= 10000)) Die("saturation: --distance 0..10000 m");
    if (o.mcs < 0 || o.mcs > 9 || o.nss < 1 || o.nss > 4) Die("saturation: --mcs 0..9, --nss 1..4");
    if (o.stations < 1 || o.stations > 64 || o.frameBytes < 20 || o.frameBytes > 2304)
        Die("saturation: --stations 1..64, --frame-bytes 20..2304");
    double start = 0.25 + 0.005 * o.stations;
    if (o.warmup < 0) o.warmup = start + 0.2;
    if (o.seconds <= 0 || o.warmup < start || o.queue < 1)
        Die("saturation: --seconds > 0, --warmup >= " + std::to_string(start) +
            " (association, ADDBA), --queue >= 1");
    return o;
}

// When every station starts saturating (after its ADDBA, module comment).
Time StartTime(const SatOptions& o)
{
    return Seconds(0.25 + 0.005 * o.stations);
}

// One station's counters over the measured window.
struct SatStation
{
    Ptr<WifiNetDevice> dev;
    Ptr<WifiMacQueue> queue;
    std::unordered_map<uint64_t, Time> enqueued; // packet uid -> when it was given to the MAC
    uint64_t rxBytes = 0, rxFrames = 0;          // at the AP
    uint64_t acked = 0, dropped = 0, ppdus = 0, mpdus = 0, failed = 0, bars = 0;
    double delaySumNs = 0;
};

struct SatRun
{
    SatOptions o;
    Address ap;
    std::vector<SatStation> st;
    bool started = false; // traffic begun
    Time from = Time::Max(), until = Time::Max(); // the measured window (Start)
    double dataNs = 0;    // data PPDUs' airtime, summed
    int64_t blockAckNs = 0, ackNs = 0;

    bool Measuring() const { return Simulator::Now() >= from && Simulator::Now() < until; }

    void SendOne(size_t i)
    {
        Ptr<Packet> p = Create<Packet>(o.frameBytes);
        st[i].enqueued[p->GetUid()] = Simulator::Now();
        st[i].dev->Send(p, ap, 0x0800);
    }

    void TopUp(size_t i)
    {
        for (uint32_t n = st[i].queue->GetNPackets(); started && n < o.queue; n++)
        {
            SendOne(i);
        }
    }

    bool Associated(size_t i) const
    {
        return st[i].dev->GetMac()->GetObject<StaWifiMac>()->IsAssociated();
    }

    // the packet that sets up station i's BlockAck agreement, once it is associated
    void First(size_t i)
    {
        if (!Associated(i)) Simulator::Schedule(MilliSeconds(10), &SatRun::First, this, i);
        else SendOne(i);
    }

    // every station saturated once all have their first packet acked (else 10 ms later);
    // the window opens --warmup - StartTime later
    void Start()
    {
        for (size_t i = 0; i < st.size(); i++)
        {
            if (!Associated(i) || !st[i].enqueued.empty())
            {
                Simulator::Schedule(MilliSeconds(10), &SatRun::Start, this);
                return;
            }
        }
        started = true;
        from = Simulator::Now() + Seconds(o.warmup) - StartTime(o);
        until = from + Seconds(o.seconds);
        Simulator::Stop(until - Simulator::Now());
        for (size_t i = 0; i < st.size(); i++) TopUp(i);
    }

    void Acked(size_t i, Ptr<const WifiMpdu> mpdu)
    {
        if (!mpdu->GetHeader().IsQosData()) return;
        SatStation& s = st[i];
        auto it = s.enqueued.find(mpdu->GetPacket()->GetUid());
        if (it != s.enqueued.end())
        {
            if (Measuring())
            {
                s.acked++;
                s.delaySumNs += (Simulator::Now() - it->second).GetNanoSeconds();
            }
            s.enqueued.erase(it);
        }
        Simulator::ScheduleNow(&SatRun::TopUp, this, i);
    }

    // (an MPDU dropped at the retry limit is reported again as an old packet when the
    // BlockAck window moves past it: counted once)
    void Dropped(size_t i, WifiMacDropReason, Ptr<const WifiMpdu> mpdu)
    {
        if (!mpdu->GetHeader().IsQosData()) return;
        if (st[i].enqueued.erase(mpdu->GetPacket()->GetUid()) && Measuring()) st[i].dropped++;
        Simulator::ScheduleNow(&SatRun::TopUp, this, i);
    }

    void TxPsdu(size_t i, WifiConstPsduMap psdus, WifiTxVector tx, double)
    {
        if (!Measuring()) return;
        for (const auto& [id, psdu] : psdus)
        {
            if (psdu->GetHeader(0).IsQosData())
            {
                st[i].ppdus++;
                st[i].mpdus += psdu->GetNMpdus();
                dataNs += WifiPhy::CalculateTxDuration(psdus, tx, WIFI_PHY_BAND_5GHZ).GetNanoSeconds();
            }
            else if (psdu->GetHeader(0).IsBlockAckReq())
            {
                st[i].bars++;
            }
        }
    }

    void MpduTimeout(size_t i, uint8_t, Ptr<const WifiMpdu>, const WifiTxVector&)
    {
        if (Measuring()) st[i].failed++;
    }

    void PsduTimeout(size_t i, uint8_t, Ptr<const WifiPsdu>, const WifiTxVector&)
    {
        if (Measuring()) st[i].failed++;
    }

    // the AP's responses: the BlockAck's (or ACK's) airtime
    void ApTx(WifiConstPsduMap psdus, WifiTxVector tx, double)
    {
        const WifiMacHeader& h = psdus.begin()->second->GetHeader(0);
        Time d = WifiPhy::CalculateTxDuration(psdus, tx, WIFI_PHY_BAND_5GHZ);
        if (h.IsBlockAck()) blockAckNs = d.GetNanoSeconds();
        else if (h.IsAck()) ackNs = d.GetNanoSeconds();
    }

    bool Received(Ptr<NetDevice>, Ptr<const Packet> p, uint16_t, const Address& from,
                  const Address&, NetDevice::PacketType)
    {
        if (!Measuring()) return true;
        for (SatStation& s : st)
        {
            if (s.dev->GetAddress() == from)
            {
                s.rxBytes += p->GetSize();
                s.rxFrames++;
            }
        }
        return true;
    }
};

// The BSS: one AP at the origin, the stations on a --distance circle around it, 802.11ac at
// a constant MCS (WifiHelper, YansWifiPhyHelper, WifiMacHelper, MobilityHelper).
void InstallBss(const SatOptions& o, NodeContainer& apNode, NodeContainer& staNodes,
                NetDeviceContainer& apDev, NetDeviceContainer& staDevs)
{
    apNode.Create(1);
    staNodes.Create(o.stations);
    WifiHelper wifi;
    wifi.SetStandard(WIFI_STANDARD_80211ac);
    wifi.SetRemoteStationManager("ns3::ConstantRateWifiManager",
                                 "DataMode", StringValue("VhtMcs" + std::to_string(o.mcs)),
                                 "ControlMode", StringValue("OfdmRate24Mbps"),
                                 "RtsCtsThreshold", UintegerValue(65535),
                                 "MaxSsrc", UintegerValue(o.maxSsrc));
    YansWifiChannelHelper channel = YansWifiChannelHelper::Default();
    YansWifiPhyHelper phy;
    phy.SetChannel(channel.Create());
    // named, though it is the helper's default: per-table (run_per_table.cc) tabulates it
    phy.SetErrorRateModel("ns3::TableBasedErrorRateModel");
    int number = o.width == 20 ? 36 : o.width == 40 ? 38 : o.width == 80 ? 42 : 50;
    phy.Set("ChannelSettings", StringValue("{" + std::to_string(number) + ", " +
                                           std::to_string(o.width) + ", BAND_5GHZ, 0}"));
    phy.Set("Antennas", UintegerValue(o.nss));
    phy.Set("MaxSupportedTxSpatialStreams", UintegerValue(o.nss));
    phy.Set("MaxSupportedRxSpatialStreams", UintegerValue(o.nss));
    Config::SetDefault("ns3::WifiMacQueue::MaxSize", StringValue("1000p"));
    Config::SetDefault("ns3::WifiMacQueue::MaxDelay", TimeValue(Seconds(1000)));
    Config::SetDefault("ns3::QosTxop::UseExplicitBarAfterMissedBlockAck",
                       BooleanValue(o.explicitBar));
    Config::SetDefault("ns3::HtConfiguration::ShortGuardIntervalSupported",
                       BooleanValue(o.gi == 400));

    Ssid ssid("linklab");
    WifiMacHelper mac;
    mac.SetType("ns3::ApWifiMac", "Ssid", SsidValue(ssid),
                "BeaconInterval", TimeValue(MicroSeconds(1024 * 65535)),
                "EnableBeaconJitter", BooleanValue(false),
                "BE_MaxAmsduSize", UintegerValue(0),
                "BE_MaxAmpduSize", UintegerValue(o.ampduBytes));
    apDev = wifi.Install(phy, mac, apNode);
    mac.SetType("ns3::StaWifiMac", "Ssid", SsidValue(ssid),
                "BE_MaxAmsduSize", UintegerValue(0),
                "BE_MaxAmpduSize", UintegerValue(o.ampduBytes));
    staDevs = wifi.Install(phy, mac, staNodes);
    wifi.AssignStreams(apDev, 100);
    wifi.AssignStreams(staDevs, 200);

    MobilityHelper mobility;
    Ptr<ListPositionAllocator> where = CreateObject<ListPositionAllocator>();
    where->Add(Vector(0, 0, 0));
    for (int i = 0; i < o.stations; i++)
    {
        double a = 2 * M_PI * i / o.stations;
        where->Add(Vector(o.distance * std::cos(a), o.distance * std::sin(a), 0));
    }
    mobility.SetPositionAllocator(where);
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mobility.Install(apNode);
    mobility.Install(staNodes);

}

// The run's one JSON line: totals, then each station.
void PrintResult(const SatRun& run)
{
    const SatOptions& o = run.o;
    double total = 0, delaySum = 0;
    uint64_t acked = 0, ppdus = 0, mpdus = 0, failed = 0, bars = 0, dropped = 0;
    std::string per;
    for (int i = 0; i < o.stations; i++)
    {
        const SatStation& s = run.st[i];
        double bps = 8.0 * s.rxBytes / o.seconds;
        total += bps;
        delaySum += s.delaySumNs;
        acked += s.acked;
        ppdus += s.ppdus;
        mpdus += s.mpdus;
        failed += s.failed;
        bars += s.bars;
        dropped += s.dropped;
        char buf[400];
        std::snprintf(buf, sizeof buf,
                      "%s{\"delivered_bps\": %.1f, \"delivered_frames\": %llu, "
                      "\"mac_delay_mean_ns\": %.0f, \"ppdus\": %llu, \"failed\": %llu, "
                      "\"bars\": %llu, \"dropped\": %llu}",
                      i ? ", " : "", bps, static_cast<unsigned long long>(s.rxFrames),
                      s.acked ? s.delaySumNs / s.acked : 0.0,
                      static_cast<unsigned long long>(s.ppdus),
                      static_cast<unsigned long long>(s.failed),
                      static_cast<unsigned long long>(s.bars),
                      static_cast<unsigned long long>(s.dropped));
        per += buf;
    }
    std::printf("{\"standard\": \"ac\", \"width_mhz\": %d, \"nss\": %d, \"mcs\": %d, "
                "\"gi_ns\": %d, \"stations\": %d, \"frame_bytes\": %u, \"seconds\": %g, "
                "\"seed\": %d, \"ampdu_bytes\": %u, \"queue\": %u, \"explicit_bar\": %s, \"max_ssrc\": %u, "
                "\"throughput_bps\": %.1f, \"mac_delay_mean_ns\": %.0f, \"ppdus\": %llu, "
                "\"failed_ppdus\": %llu, \"collision_probability\": %.6f, "
                "\"mean_ampdu_frames\": %.3f, \"mean_data_ppdu_ns\": %.0f, "
                "\"block_ack_ns\": %lld, \"ack_ns\": %lld, \"bars\": %llu, \"dropped\": %llu, "
                "\"stations_detail\": [%s]}\n",
                o.width, o.nss, o.mcs, o.gi, o.stations, o.frameBytes, o.seconds, o.seed,
                o.ampduBytes, o.queue, o.explicitBar ? "true" : "false", o.maxSsrc, total,
                acked ? delaySum / acked : 0.0, static_cast<unsigned long long>(ppdus),
                static_cast<unsigned long long>(failed),
                ppdus ? static_cast<double>(failed) / ppdus : 0.0,
                ppdus ? static_cast<double>(mpdus) / ppdus : 0.0, ppdus ? run.dataNs / ppdus : 0.0,
                static_cast<long long>(run.blockAckNs), static_cast<long long>(run.ackNs),
                static_cast<unsigned long long>(bars), static_cast<unsigned long long>(dropped),
                per.c_str());
}

} // namespace

int RunSaturation(const std::vector<std::string>& args)
{
    SatRun run;
    run.o = ParseSatOptions(args);
    const SatOptions& o = run.o;
    RngSeedManager::SetSeed(static_cast<uint32_t>(o.seed));
    RngSeedManager::SetRun(1);

    NodeContainer apNode, staNodes;
    NetDeviceContainer apDev, staDevs;
    InstallBss(o, apNode, staNodes, apDev, staDevs);

    run.ap = apDev.Get(0)->GetAddress();
    apNode.Get(0)->RegisterProtocolHandler(MakeCallback(&SatRun::Received, &run), 0x0800,
                                           apDev.Get(0), false);
    DynamicCast<WifiNetDevice>(apDev.Get(0))->GetPhy()->TraceConnectWithoutContext(
        "PhyTxPsduBegin", MakeCallback(&SatRun::ApTx, &run));
    run.st.resize(o.stations);
    for (int i = 0; i < o.stations; i++)
    {
        SatStation& s = run.st[i];
        s.dev = DynamicCast<WifiNetDevice>(staDevs.Get(i));
        Ptr<WifiMac> m = s.dev->GetMac();
        s.queue = m->GetTxopQueue(AC_BE);
        size_t k = i;
        m->TraceConnectWithoutContext("AckedMpdu", MakeCallback(&SatRun::Acked, &run).Bind(k));
        m->TraceConnectWithoutContext("DroppedMpdu",
                                      MakeCallback(&SatRun::Dropped, &run).Bind(k));
        m->TraceConnectWithoutContext("MpduResponseTimeout",
                                      MakeCallback(&SatRun::MpduTimeout, &run).Bind(k));
        m->TraceConnectWithoutContext("PsduResponseTimeout",
                                      MakeCallback(&SatRun::PsduTimeout, &run).Bind(k));
        s.dev->GetPhy()->TraceConnectWithoutContext("PhyTxPsduBegin",
                                                    MakeCallback(&SatRun::TxPsdu, &run).Bind(k));
        // one packet from 0.2 s (associated by then), stations 5 ms apart: it sets up the
        // BlockAck agreement (ADDBA), one station at a time; then all saturate (Start)
        // (a station flooding before its agreement was up sent an A-MPDU under Normal Ack
        // policy and the AP's PHY aborted, "Invalid WifiPhy state")
        Simulator::Schedule(Seconds(0.2) + MilliSeconds(5 * i), &SatRun::First, &run, k);
    }
    Simulator::Schedule(StartTime(o), &SatRun::Start, &run);
    Simulator::Run();

    Simulator::Destroy();
    PrintResult(run);
    return 0;
}

} // namespace linklab_ns3
