// linklab-ns3: an ns-3 802.11a ad-hoc medium for linklab (paper 002, Thulasiraman et al.,
// "Evaluation of ROS 2 in Lossy Unmanned Networks", SYSCON 2020, §III-A and §IV).
//
// Two modes:
//
//   linklab-ns3 air --station NAME,TAP,X,Y ... --tx-power DBM --stats FILE
//                   [--lag-limit-ms MS] [--lag-hold-ms MS] [--priority P] [--seed N]
//     A realtime simulation (RealtimeSimulatorImpl, checksums on) of one shared 802.11a
//     channel. Each station is an ns-3 node with an ad-hoc Wi-Fi device at (X, Y) metres,
//     bridged to a TAP device the program opens itself (/dev/net/tun) in the namespace it
//     runs in; linklab then moves each TAP into its host's namespace (the descriptor stays
//     valid). The bridge works like ns-3's TapBridge in UseLocal mode, except that the TAP
//     is given the Wi-Fi device's MAC address, so nothing needs to be rewritten (and the
//     setuid tap-creator helper, whose path Debian's build gets wrong, is not needed).
//     (The address is the one ns-3 allocated to the device: changing a Wi-Fi device's
//     address after installation leaves its frame exchange manager on the old one, and
//     then no ACK matches.)
//     Every 100 ms of simulated time it writes FILE (JSON, atomically): how far the
//     simulator lags behind the wall clock, and per-station and per-pair frame counters.
//     If the lag stays above --lag-limit-ms for --lag-hold-ms (the simulation cannot keep
//     up: its lag only grows), it writes state "lagging" with the figures and exits with
//     status 3: the TAP devices vanish, the link is down -- a simulator that cannot keep
//     up must never pass as a slow link. A single late moment (this machine is a VM whose
//     CPU can be taken away for some milliseconds, which delays every link, simulated or
//     not) is caught up within a few events and only recorded (lag_max_ms, behind_ms).
//     For the largest lag within any stretch of time (a bench cell: linklab.bench.simlag)
//     the file also keeps lag_peaks, [[end_s, max_ms], ...]: the per-period (100 ms)
//     maxima that no later period reached, oldest first, so their values fall; the
//     largest lag after simulated time T is the first peak whose period ends after T
//     (suffix maxima: a few dozen entries even after hours, as noise has few records;
//     capped at LAG_PEAKS_CAP, lag_peaks_from_s says from when the kept ones are complete).
//     SIGTERM/SIGINT: state "stopped", exit status 0.
//
//   linklab-ns3 curve --distances D1,D2,... --packets N --size BYTES --tx-power DBM
//                     [--interval-ms MS] [--seed N]
//     The paper's validation (§IV, Fig. 4): two nodes at distance D, N packets of BYTES
//     each from one to the other (unicast, with the MAC's retries), in simulated time
//     (no realtime, no TAP). Prints one JSON line per distance: sent, received, loss.
//
// Wi-Fi settings, both modes (002 §III-A): IEEE 802.11a, ad hoc, ConstantRateWifiManager
// with OfdmRate54Mbps, constant positions, YansWifiChannelHelper::Default() (log-distance
// propagation loss, exponent 3, reference loss 46.6777 dB at 1 m; constant-speed delay),
// NistErrorRateModel (the error model of YansWifiPhyHelper::Default() in ns-3.29, the
// version the paper used; 3.37's helper defaults to the table-based model). Everything
// else is ns-3 3.37's default; the transmit power is linklab's calibration (see
// linklab/link/radio.py for the value and why).

#include "ns3/core-module.h"
#include "ns3/mobility-module.h"
#include "ns3/network-module.h"
#include "ns3/wifi-module.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <fstream>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <map>
#include <memory>
#include <net/if_arp.h>
#include <sched.h>
#include <sstream>
#include <string>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace ns3;

namespace
{

[[noreturn]] void Die(const std::string& message, int code = 2)
{
    std::fprintf(stderr, "linklab-ns3: %s\n", message.c_str());
    std::exit(code);
}

std::vector<std::string> Split(const std::string& text, char sep)
{
    std::vector<std::string> out;
    std::stringstream stream(text);
    std::string item;
    while (std::getline(stream, item, sep))
    {
        out.push_back(item);
    }
    return out;
}

double Number(const std::string& text, const std::string& what)
{
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0')
    {
        Die(what + ": '" + text + "' is not a number");
    }
    return value;
}

// The Wi-Fi channel of both modes (see the header comment for each setting's source).
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

void Place(NodeContainer nodes, const std::vector<Vector>& positions)
{
    MobilityHelper mobility;
    Ptr<ListPositionAllocator> alloc = CreateObject<ListPositionAllocator>();
    for (const Vector& p : positions)
    {
        alloc->Add(p);
    }
    mobility.SetPositionAllocator(alloc);
    mobility.SetMobilityModel("ns3::ConstantPositionMobilityModel");
    mobility.Install(nodes);
}

// --- air: the realtime medium ----------------------------------------------------------

struct PairCounters
{
    // sent - acked: frames that did not arrive (retry limit reached, dropped by the full
    // MAC queue) or are still queued
    uint64_t sent = 0;      // unicast frames handed to the MAC for this destination
    uint64_t acked = 0;     // acknowledged by the destination
    uint64_t failed = 0;    // dropped after the retry limit
    uint64_t delivered = 0; // frames of any kind the destination passed up from this source
};

struct Station;

struct Air
{
    std::vector<Station*> stations;
    std::map<Mac48Address, size_t> index;
    std::map<std::pair<size_t, size_t>, PairCounters> pairs;
    std::string statsPath;
    double lagLimitMs = 10.0;
    double lagHoldMs = 500.0;
    double behindSinceS = -1.0; // simulated time the current stretch behind began
    double behindMs = 0.0;      // simulated time spent more than lagLimitMs behind, total
    double lagMs = 0.0;
    double lagMaxMs = 0.0;
    double lagMaxAtS = 0.0;
    // lag_peaks (see the header comment): (end of period s, largest lag in it ms), each
    // larger than every later one; periodMaxMs is the open period's largest lag so far.
    std::deque<std::pair<double, double>> lagPeaks;
    double lagPeaksFromS = 0.0; // the kept peaks cover every window starting at or after
    double periodMaxMs = 0.0;
    uint64_t periodTicks = 0;
    uint64_t ticks = 0;
    bool lagging = false;
    Ptr<RealtimeSimulatorImpl> impl;

    void WriteStats(const char* state);
    void ClosePeriod();
    void Tick();
    PairCounters& Pair(size_t src, size_t dst)
    {
        return pairs[{src, dst}];
    }
};

class TapReader : public FdReader
{
  private:
    FdReader::Data DoRead() override
    {
        auto* buf = static_cast<uint8_t*>(std::malloc(65536));
        ssize_t len = read(m_fd, buf, 65536);
        if (len <= 0)
        {
            std::free(buf);
            buf = nullptr;
            len = len < 0 && errno == EINTR ? -1 : 0;
        }
        return FdReader::Data(buf, len);
    }
};

struct Station
{
    Air* air = nullptr;
    size_t id = 0;
    std::string name;
    std::string tap;
    Mac48Address mac;
    Vector position;
    int fd = -1;
    Ptr<Node> node;
    Ptr<WifiNetDevice> dev;
    Ptr<TapReader> reader;
    uint64_t fromHost = 0;      // frames read from the TAP
    uint64_t fromHostBytes = 0;
    uint64_t toHost = 0;        // frames written to the TAP
    uint64_t toHostBytes = 0;
    uint64_t groupSent = 0;     // broadcast/multicast frames handed to the MAC
    uint64_t notEthernet = 0;   // frames the bridge cannot carry (802.3 length field)

    void OpenTap()
    {
        fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
        if (fd < 0)
        {
            Die("cannot open /dev/net/tun: " + std::string(std::strerror(errno)));
        }
        struct ifreq ifr;
        std::memset(&ifr, 0, sizeof(ifr));
        ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
        std::strncpy(ifr.ifr_name, tap.c_str(), IFNAMSIZ - 1);
        if (ioctl(fd, TUNSETIFF, &ifr) < 0)
        {
            Die("TUNSETIFF " + tap + ": " + std::strerror(errno));
        }
        // The TAP carries the Wi-Fi device's MAC address: ARP and the hosts' neighbour
        // tables then name the addresses the simulated MACs filter on.
        int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        struct ifreq hw;
        std::memset(&hw, 0, sizeof(hw));
        std::strncpy(hw.ifr_name, tap.c_str(), IFNAMSIZ - 1);
        hw.ifr_hwaddr.sa_family = ARPHRD_ETHER;
        mac.CopyTo(reinterpret_cast<uint8_t*>(hw.ifr_hwaddr.sa_data));
        if (sock < 0 || ioctl(sock, SIOCSIFHWADDR, &hw) < 0)
        {
            Die("setting the MAC address of " + tap + ": " + std::strerror(errno));
        }
        close(sock);
    }

    void Start()
    {
        node->RegisterProtocolHandler(MakeCallback(&Station::FromAir, this), 0, dev, true);
        dev->GetMac()->TraceConnectWithoutContext("AckedMpdu",
                                                  MakeCallback(&Station::Acked, this));
        dev->GetMac()->TraceConnectWithoutContext("DroppedMpdu",
                                                  MakeCallback(&Station::Dropped, this));
        reader = Create<TapReader>();
        reader->Start(fd, MakeCallback(&Station::ReadFromThread, this));
    }

    // Runs in the reader thread: hand the frame to the simulation, now (realtime).
    void ReadFromThread(uint8_t* buf, ssize_t len)
    {
        Simulator::ScheduleWithContext(node->GetId(),
                                       Seconds(0),
                                       MakeEvent(&Station::FromHost, this, buf, len));
    }

    void FromHost(uint8_t* buf, ssize_t len)
    {
        fromHost++;
        fromHostBytes += len;
        if (len < 14)
        {
            std::free(buf);
            return;
        }
        Mac48Address dst;
        dst.CopyFrom(buf);
        uint16_t type = static_cast<uint16_t>(buf[12] << 8 | buf[13]);
        if (type < 1536)
        {
            notEthernet++;
            std::free(buf);
            return;
        }
        Ptr<Packet> packet = Create<Packet>(buf + 14, static_cast<uint32_t>(len - 14));
        std::free(buf);
        if (dst.IsGroup())
        {
            groupSent++;
        }
        else
        {
            auto found = air->index.find(dst);
            if (found != air->index.end())
            {
                air->Pair(id, found->second).sent++;
            }
        }
        dev->Send(packet, dst, type);
    }

    bool FromAir(Ptr<NetDevice>,
                 Ptr<const Packet> packet,
                 uint16_t protocol,
                 const Address& from,
                 const Address& to,
                 NetDevice::PacketType type)
    {
        if (type == NetDevice::PACKET_OTHERHOST)
        {
            return true;
        }
        Mac48Address src = Mac48Address::ConvertFrom(from);
        Mac48Address dst = Mac48Address::ConvertFrom(to);
        auto found = air->index.find(src);
        if (found != air->index.end())
        {
            air->Pair(found->second, id).delivered++;
        }
        uint32_t size = packet->GetSize();
        std::vector<uint8_t> frame(14 + size);
        dst.CopyTo(frame.data());
        src.CopyTo(frame.data() + 6);
        frame[12] = static_cast<uint8_t>(protocol >> 8);
        frame[13] = static_cast<uint8_t>(protocol & 0xff);
        packet->CopyData(frame.data() + 14, size);
        if (write(fd, frame.data(), frame.size()) == static_cast<ssize_t>(frame.size()))
        {
            toHost++;
            toHostBytes += frame.size();
        }
        return true;
    }

    void Acked(Ptr<const WifiMpdu> mpdu)
    {
        auto found = air->index.find(mpdu->GetHeader().GetAddr1());
        if (found != air->index.end())
        {
            air->Pair(id, found->second).acked++;
        }
    }

    void Dropped(WifiMacDropReason reason, Ptr<const WifiMpdu> mpdu)
    {
        if (reason == WIFI_MAC_DROP_REACHED_RETRY_LIMIT)
        {
            auto found = air->index.find(mpdu->GetHeader().GetAddr1());
            if (found != air->index.end())
            {
                air->Pair(id, found->second).failed++;
            }
        }
    }

};

void Air::WriteStats(const char* state)
{
    std::ostringstream out;
    out.precision(6);
    out << std::fixed;
    out << "{\"state\": \"" << state << "\", \"pid\": " << getpid()
        << ", \"sim_s\": " << Simulator::Now().GetSeconds() << ", \"lag_ms\": " << lagMs
        << ", \"lag_max_ms\": " << lagMaxMs << ", \"lag_max_at_s\": " << lagMaxAtS
        << ", \"lag_limit_ms\": " << lagLimitMs << ", \"lag_hold_ms\": " << lagHoldMs
        << ", \"behind_since_s\": " << behindSinceS << ", \"behind_ms\": " << behindMs
        << ", \"ticks\": " << ticks << ", \"lag_peaks_from_s\": " << lagPeaksFromS
        << ", \"lag_peaks\": [";
    for (size_t i = 0; i < lagPeaks.size(); i++)
    {
        out << (i ? ", " : "") << "[" << lagPeaks[i].first << ", " << lagPeaks[i].second
            << "]";
    }
    out << "], \"stations\": [";
    for (size_t i = 0; i < stations.size(); i++)
    {
        const Station* s = stations[i];
        out << (i ? ", " : "") << "{\"name\": \"" << s->name << "\", \"tap\": \"" << s->tap
            << "\", \"x\": " << s->position.x << ", \"y\": " << s->position.y
            << ", \"from_host\": " << s->fromHost << ", \"from_host_bytes\": "
            << s->fromHostBytes << ", \"to_host\": " << s->toHost
            << ", \"to_host_bytes\": " << s->toHostBytes << ", \"group_sent\": " << s->groupSent
            << ", \"not_ethernet\": "
            << s->notEthernet << "}";
    }
    out << "], \"pairs\": [";
    bool first = true;
    for (const auto& [key, c] : pairs)
    {
        out << (first ? "" : ", ") << "{\"src\": \"" << stations[key.first]->name
            << "\", \"dst\": \"" << stations[key.second]->name << "\", \"sent\": " << c.sent
            << ", \"acked\": " << c.acked << ", \"failed\": " << c.failed
            << ", \"delivered\": " << c.delivered << "}";
        first = false;
    }
    out << "]}\n";
    std::string tmp = statsPath + ".tmp";
    {
        std::ofstream file(tmp, std::ios::trunc);
        file << out.str();
    }
    std::rename(tmp.c_str(), statsPath.c_str());
}

const Time TICK = MilliSeconds(1);
const uint64_t TICKS_PER_STATS = 100;
const size_t LAG_PEAKS_CAP = 256;

// Ends the open period: its maximum joins lag_peaks, and every earlier peak it reaches or
// exceeds leaves (that one no longer is the largest lag after its time). Beyond the cap
// the oldest (largest) peak leaves too, and windows that start before its period's end
// are no longer covered (lag_peaks_from_s; the reader then falls back to lag_max_ms).
void Air::ClosePeriod()
{
    if (periodTicks == 0)
    {
        return;
    }
    while (!lagPeaks.empty() && lagPeaks.back().second <= periodMaxMs)
    {
        lagPeaks.pop_back();
    }
    lagPeaks.emplace_back(Simulator::Now().GetSeconds(), periodMaxMs);
    if (lagPeaks.size() > LAG_PEAKS_CAP)
    {
        lagPeaksFromS = lagPeaks.front().first;
        lagPeaks.pop_front();
    }
    periodTicks = 0;
}

// The realtime scheduler runs each event when the wall clock reaches its time; when the
// simulation cannot keep up, events run late. A tick every millisecond of simulated time
// measures that lateness: wall clock (RealtimeNow) minus simulated time (Now).
void Air::Tick()
{
    ticks++;
    lagMs = (impl->RealtimeNow() - Simulator::Now()).GetSeconds() * 1e3;
    if (lagMs > lagMaxMs)
    {
        lagMaxMs = lagMs;
        lagMaxAtS = Simulator::Now().GetSeconds();
    }
    periodMaxMs = periodTicks == 0 ? lagMs : std::max(periodMaxMs, lagMs);
    periodTicks++;
    double now = Simulator::Now().GetSeconds();
    if (lagMs > lagLimitMs)
    {
        behindMs += TICK.GetSeconds() * 1e3;
        if (behindSinceS < 0)
        {
            behindSinceS = now;
        }
    }
    else
    {
        behindSinceS = -1.0;
    }
    if (behindSinceS >= 0 && (now - behindSinceS) * 1e3 >= lagHoldMs)
    {
        lagging = true;
        ClosePeriod();
        WriteStats("lagging");
        std::fprintf(stderr,
                     "linklab-ns3: the simulation stayed more than %.1f ms behind real time "
                     "for %.0f ms (from %.3f s; lag now %.1f ms): more traffic than this "
                     "machine can simulate in real time; the link is taken down\n",
                     lagLimitMs,
                     lagHoldMs,
                     behindSinceS,
                     lagMs);
        Simulator::Stop();
        return;
    }
    if (ticks % TICKS_PER_STATS == 0)
    {
        ClosePeriod();
        WriteStats("running");
    }
    Simulator::Schedule(TICK, &Air::Tick, this);
}

sigset_t StopSignals()
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    return set;
}

int RunAir(const std::vector<std::string>& args)
{
    std::vector<std::string> stationArgs;
    double txPower = 16.0206;
    int seed = 1;
    int priority = 0;
    Air air;
    for (size_t i = 0; i < args.size(); i++)
    {
        const std::string& a = args[i];
        if (i + 1 >= args.size())
        {
            Die(a + " needs a value");
        }
        const std::string& v = args[++i];
        if (a == "--station")
            stationArgs.push_back(v);
        else if (a == "--tx-power")
            txPower = Number(v, a);
        else if (a == "--stats")
            air.statsPath = v;
        else if (a == "--lag-limit-ms")
            air.lagLimitMs = Number(v, a);
        else if (a == "--lag-hold-ms")
            air.lagHoldMs = Number(v, a);
        else if (a == "--seed")
            seed = static_cast<int>(Number(v, a));
        else if (a == "--priority")
            priority = static_cast<int>(Number(v, a));
        else
            Die("unknown option " + a);
    }
    // SCHED_FIFO (as linklab's relay): a realtime simulation must not fall behind because
    // other processes are busy. Its threads (the TAP readers) inherit it.
    if (priority > 0)
    {
        struct sched_param param;
        param.sched_priority = priority;
        if (sched_setscheduler(0, SCHED_FIFO, &param) != 0)
        {
            std::fprintf(stderr,
                         "linklab-ns3: warning: SCHED_FIFO priority %d: %s (normal "
                         "scheduling)\n",
                         priority,
                         std::strerror(errno));
        }
    }
    if (stationArgs.size() < 2 || air.statsPath.empty())
    {
        Die("air needs at least two --station NAME,TAP,X,Y and --stats FILE");
    }
    // The stop signals are handled by a thread of their own (below), not by handlers.
    sigset_t stop = StopSignals();
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);

    GlobalValue::Bind("SimulatorImplementationType",
                      StringValue("ns3::RealtimeSimulatorImpl"));
    GlobalValue::Bind("ChecksumEnabled", BooleanValue(true));
    RngSeedManager::SetSeed(static_cast<uint32_t>(seed));

    std::vector<std::unique_ptr<Station>> owned;
    std::vector<Vector> positions;
    for (const std::string& text : stationArgs)
    {
        std::vector<std::string> f = Split(text, ',');
        if (f.size() != 4)
        {
            Die("--station " + text + ": expected NAME,TAP,X,Y");
        }
        auto s = std::make_unique<Station>();
        s->air = &air;
        s->id = owned.size();
        s->name = f[0];
        s->tap = f[1];
        s->position = Vector(Number(f[2], "X"), Number(f[3], "Y"), 0.0);
        positions.push_back(s->position);
        air.stations.push_back(s.get());
        owned.push_back(std::move(s));
    }
    NodeContainer nodes;
    nodes.Create(static_cast<uint32_t>(owned.size()));
    NetDeviceContainer devices = InstallWifi(nodes, txPower);
    Place(nodes, positions);
    for (size_t i = 0; i < owned.size(); i++)
    {
        owned[i]->node = nodes.Get(static_cast<uint32_t>(i));
        owned[i]->dev = DynamicCast<WifiNetDevice>(devices.Get(static_cast<uint32_t>(i)));
        owned[i]->mac = Mac48Address::ConvertFrom(owned[i]->dev->GetAddress());
        air.index[owned[i]->mac] = i;
        owned[i]->OpenTap();
    }
    air.impl = DynamicCast<RealtimeSimulatorImpl>(Simulator::GetImplementation());
    if (!air.impl)
    {
        Die("the realtime simulator implementation is not available");
    }
    for (auto& s : owned)
    {
        s->Start();
    }
    std::thread waiter([]() {
        sigset_t set = StopSignals();
        int sig = 0;
        sigwait(&set, &sig);
        Simulator::ScheduleWithContext(Simulator::NO_CONTEXT, Seconds(0), MakeEvent(&Simulator::Stop));
    });
    waiter.detach();
    air.WriteStats("running");
    Simulator::Schedule(TICK, &Air::Tick, &air);
    Simulator::Run();
    for (auto& s : owned)
    {
        s->reader->Stop();
    }
    air.ClosePeriod();
    air.WriteStats(air.lagging ? "lagging" : "stopped");
    for (auto& s : owned)
    {
        close(s->fd);
    }
    Simulator::Destroy();
    return air.lagging ? 3 : 0;
}

// --- curve: the paper's Fig. 4 validation, in simulated time ----------------------------

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

int RunCurve(const std::vector<std::string>& args)
{
    std::vector<double> distances;
    uint32_t packets = 1000;
    uint32_t size = 60;
    double txPower = 16.0206;
    double intervalMs = 10.0;
    int seed = 1;
    for (size_t i = 0; i < args.size(); i++)
    {
        const std::string& a = args[i];
        if (i + 1 >= args.size())
        {
            Die(a + " needs a value");
        }
        const std::string& v = args[++i];
        if (a == "--distances")
            for (const std::string& d : Split(v, ','))
                distances.push_back(Number(d, a));
        else if (a == "--packets")
            packets = static_cast<uint32_t>(Number(v, a));
        else if (a == "--size")
            size = static_cast<uint32_t>(Number(v, a));
        else if (a == "--tx-power")
            txPower = Number(v, a);
        else if (a == "--interval-ms")
            intervalMs = Number(v, a);
        else if (a == "--seed")
            seed = static_cast<int>(Number(v, a));
        else
            Die("unknown option " + a);
    }
    if (distances.empty() || packets == 0)
    {
        Die("curve needs --distances D1,D2,... and --packets N > 0");
    }
    GlobalValue::Bind("ChecksumEnabled", BooleanValue(true));
    for (size_t k = 0; k < distances.size(); k++)
    {
        RngSeedManager::SetSeed(static_cast<uint32_t>(seed));
        RngSeedManager::SetRun(k + 1);
        NodeContainer nodes;
        nodes.Create(2);
        NetDeviceContainer devices = InstallWifi(nodes, txPower);
        Place(nodes, {Vector(0, 0, 0), Vector(distances[k], 0, 0)});
        Counter counter;
        nodes.Get(1)->RegisterProtocolHandler(MakeCallback(&Counter::Receive, &counter),
                                              0,
                                              devices.Get(1),
                                              true);
        auto sender = DynamicCast<WifiNetDevice>(devices.Get(0));
        for (uint32_t n = 0; n < packets; n++)
        {
            Simulator::Schedule(MilliSeconds(100) + MicroSeconds(intervalMs * 1000 * n),
                                &SendOne,
                                sender,
                                devices.Get(1)->GetAddress(),
                                size);
        }
        Simulator::Stop(MilliSeconds(100) + MicroSeconds(intervalMs * 1000 * packets) +
                        Seconds(1));
        Simulator::Run();
        Simulator::Destroy();
        std::printf("{\"distance_m\": %.3f, \"size_bytes\": %u, \"tx_power_dbm\": %.4f, "
                    "\"sent\": %u, \"received\": %llu, \"loss\": %.6f}\n",
                    distances[k],
                    size,
                    txPower,
                    packets,
                    static_cast<unsigned long long>(counter.received),
                    1.0 - static_cast<double>(counter.received) / packets);
        std::fflush(stdout);
    }
    return 0;
}

} // namespace

int main(int argc, char** argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || (args[0] != "air" && args[0] != "curve"))
    {
        Die("usage: linklab-ns3 air|curve OPTIONS (see the comment at the top of "
            "ns3/linklab-ns3.cc)");
    }
    std::vector<std::string> rest(args.begin() + 1, args.end());
    return args[0] == "air" ? RunAir(rest) : RunCurve(rest);
}
