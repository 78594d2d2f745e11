// The realtime medium's shared state: its stations, the per-pair frame counters, how far
// the simulation lags behind the wall clock, and the stats file that reports them (see
// the comment at the top of linklab-ns3.cc).
#pragma once

#include "ns3/core-module.h"
#include "ns3/network-module.h"

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace linklab_ns3
{

struct Station;

struct PairCounters
{
    // sent - acked: frames that did not arrive (retry limit reached, dropped by the full
    // MAC queue) or are still queued
    uint64_t sent = 0;      // unicast frames handed to the MAC for this destination
    uint64_t acked = 0;     // acknowledged by the destination
    uint64_t failed = 0;    // dropped after the retry limit
    uint64_t delivered = 0; // frames of any kind the destination passed up from this source
};

// One lag measurement per TICK of simulated time; the stats file every TICKS_PER_STATS.
extern const ns3::Time TICK;
extern const uint64_t TICKS_PER_STATS;
extern const size_t LAG_PEAKS_CAP;

struct Air
{
    std::vector<Station*> stations;
    std::map<ns3::Mac48Address, size_t> index;
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
    ns3::Ptr<ns3::RealtimeSimulatorImpl> impl;

    // Writes the stats file (JSON, atomically) with STATE: running, lagging or stopped.
    void WriteStats(const char* state);
    void ClosePeriod();
    void Tick();
    PairCounters& Pair(size_t src, size_t dst)
    {
        return pairs[{src, dst}];
    }

  private:
    // Measures the lag now and updates its maxima and the stretch behind.
    void MeasureLag();
    // The simulation stayed behind for lagHoldMs: report it and stop.
    void FallBehind();
};

} // namespace linklab_ns3
