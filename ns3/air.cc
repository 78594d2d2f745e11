#include "air.h"

#include "tap_bridge.h"

#include "ns3/mobility-module.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace ns3;

namespace linklab_ns3
{

const Time TICK = MilliSeconds(1);
const uint64_t TICKS_PER_STATS = 100;
const size_t LAG_PEAKS_CAP = 256;

namespace
{

void WriteStations(std::ostream& out, const std::vector<Station*>& stations)
{
    for (size_t i = 0; i < stations.size(); i++)
    {
        const Station* s = stations[i];
        // where it is now (a moving station's position changes: --move)
        Vector at = s->node->GetObject<MobilityModel>()->GetPosition();
        out << (i ? ", " : "") << "{\"name\": \"" << s->name << "\", \"tap\": \"" << s->tap
            << "\", \"x\": " << at.x << ", \"y\": " << at.y
            << ", \"from_host\": " << s->fromHost << ", \"from_host_bytes\": "
            << s->fromHostBytes << ", \"to_host\": " << s->toHost
            << ", \"to_host_bytes\": " << s->toHostBytes << ", \"group_sent\": " << s->groupSent
            << ", \"not_ethernet\": "
            << s->notEthernet << "}";
    }
}

void WritePairs(std::ostream& out,
                const std::vector<Station*>& stations,
                const std::map<std::pair<size_t, size_t>, PairCounters>& pairs)
{
    bool first = true;
    for (const auto& [key, c] : pairs)
    {
        out << (first ? "" : ", ") << "{\"src\": \"" << stations[key.first]->name
            << "\", \"dst\": \"" << stations[key.second]->name << "\", \"sent\": " << c.sent
            << ", \"acked\": " << c.acked << ", \"failed\": " << c.failed
            << ", \"delivered\": " << c.delivered << "}";
        first = false;
    }
}

// Replaces PATH with TEXT in one step (a reader never sees half a file).
void WriteAtomically(const std::string& path, const std::string& text)
{
    std::string tmp = path + ".tmp";
    {
        std::ofstream file(tmp, std::ios::trunc);
        file << text;
    }
    std::rename(tmp.c_str(), path.c_str());
}

} // namespace

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
    WriteStations(out, stations);
    out << "], \"pairs\": [";
    WritePairs(out, stations, pairs);
    out << "]}\n";
    WriteAtomically(statsPath, out.str());
}

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
void Air::MeasureLag()
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
}

void Air::FallBehind()
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
}

void Air::Tick()
{
    MeasureLag();
    double now = Simulator::Now().GetSeconds();
    if (behindSinceS >= 0 && (now - behindSinceS) * 1e3 >= lagHoldMs)
    {
        FallBehind();
        return;
    }
    if (ticks % TICKS_PER_STATS == 0)
    {
        ClosePeriod();
        WriteStats("running");
    }
    Simulator::Schedule(TICK, &Air::Tick, this);
}

} // namespace linklab_ns3
