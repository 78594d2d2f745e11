// linklab-ns3: an ns-3 802.11a ad-hoc medium for linklab (paper 002, Thulasiraman et al.,
// "Evaluation of ROS 2 in Lossy Unmanned Networks", SYSCON 2020, §III-A and §IV).
//
// Two modes:
//
//   linklab-ns3 air --station NAME,TAP,X,Y ... --tx-power DBM --stats FILE
//                   [--move NAME,X,Y,SECONDS ...]
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
//     --move: station NAME moves in a straight line from its X,Y to the given X,Y over
//     SECONDS from the start of the simulation (ConstantVelocityMobilityModel; every node
//     gets that model when any moves, the others at rest), then stays there; the stats
//     file's stations carry their positions now.
//     SIGTERM/SIGINT: state "stopped", exit status 0.
//
//   linklab-ns3 curve --distances D1,D2,... --packets N --size BYTES --tx-power DBM
//                     [--interval-ms MS] [--seed N]
//     The paper's validation (§IV, Fig. 4): two nodes at distance D, N packets of BYTES
//     each from one to the other (unicast, with the MAC's retries), in simulated time
//     (no realtime, no TAP). Prints one JSON line per distance: sent, received, loss.
//
// Wi-Fi settings, both modes (002 §III-A): IEEE 802.11a, ad hoc, ConstantRateWifiManager
// with OfdmRate54Mbps, constant positions (constant velocity: --move),
// YansWifiChannelHelper::Default() (log-distance propagation loss, exponent 3, reference
// loss 46.6777 dB at 1 m; constant-speed delay),
// NistErrorRateModel (the error model of YansWifiPhyHelper::Default() in ns-3.29, the
// version the paper used; 3.37's helper defaults to the table-based model). Everything
// else is ns-3 3.37's default; the transmit power is linklab's calibration (see
// linklab/link/radio.py for the value and why).

// The program's parts, by idea:
//   args.cc        the command line (Die, Split, Number, OPTION VALUE pairs)
//   wifi.cc        the simulated medium: the 802.11a channel and the nodes' positions
//   tap_bridge.cc  a station: its Wi-Fi device bridged to its host's TAP device
//   air.cc         the realtime medium's state: lag, lag peaks, counters, the stats file
//   run_air.cc     mode air: options, stations, signals, the realtime run
//   run_curve.cc   mode curve: the Fig. 4 validation in simulated time
//   run_per_table.cc  mode per-table: ns-3's frame error rates by MCS and SNR (the relay
//                  medium's channel from distance, src/linklab/model/wifi_channel.py)
// Built by scripts/setup.sh (g++ ns3/*.cc) into build/ns3/linklab-ns3.

#include "args.h"
#include "modes.h"

#include <string>
#include <vector>

using namespace linklab_ns3;

int main(int argc, char** argv)
{
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || (args[0] != "air" && args[0] != "curve" && args[0] != "saturation" &&
                         args[0] != "per-table"))
    {
        Die("usage: linklab-ns3 air|curve|saturation|per-table OPTIONS (see the comment at the "
            "top of ns3/linklab-ns3.cc; saturation: ns3/run_saturation.cc; per-table: "
            "ns3/run_per_table.cc)");
    }
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (args[0] == "saturation")
    {
        return RunSaturation(rest);
    }
    if (args[0] == "per-table")
    {
        return RunPerTable(rest);
    }
    return args[0] == "air" ? RunAir(rest) : RunCurve(rest);
}
