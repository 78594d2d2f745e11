// linklab-ns3's modes (see the comment at the top of linklab-ns3.cc): each takes the
// arguments after its name and returns the program's exit status.
#pragma once

#include <string>
#include <vector>

namespace linklab_ns3
{

// air: the realtime medium bridged to TAP devices (run_air.cc).
int RunAir(const std::vector<std::string>& args);

// curve: the paper's Fig. 4 validation, in simulated time (run_curve.cc).
int RunCurve(const std::vector<std::string>& args);

// saturation: N saturated 802.11ac stations and an AP, in simulated time
// (run_saturation.cc).
int RunSaturation(const std::vector<std::string>& args);

// per-table: frame error rate by MCS and SNR from ns-3's error rate model (run_per_table.cc).
int RunPerTable(const std::vector<std::string>& args);

} // namespace linklab_ns3
