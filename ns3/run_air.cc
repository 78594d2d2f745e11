// air: the realtime medium (see the comment at the top of linklab-ns3.cc).
#include "air.h"
#include "args.h"
#include "modes.h"
#include "tap_bridge.h"
#include "wifi.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <pthread.h>
#include <sched.h>
#include <thread>
#include <unistd.h>

using namespace ns3;

namespace linklab_ns3
{

namespace
{

struct AirOptions
{
    std::vector<std::string> stationArgs;
    std::vector<std::string> moveArgs;
    double txPower = 16.0206;
    int seed = 1;
    int priority = 0;
};

// Reads the options of mode air; the stats path and lag limits go straight into AIR.
AirOptions ParseAirOptions(const std::vector<std::string>& args, Air& air)
{
    AirOptions o;
    ForEachOption(args, [&](const std::string& a, const std::string& v) {
        if (a == "--station")
            o.stationArgs.push_back(v);
        else if (a == "--move")
            o.moveArgs.push_back(v);
        else if (a == "--tx-power")
            o.txPower = Number(v, a);
        else if (a == "--stats")
            air.statsPath = v;
        else if (a == "--lag-limit-ms")
            air.lagLimitMs = Number(v, a);
        else if (a == "--lag-hold-ms")
            air.lagHoldMs = Number(v, a);
        else if (a == "--seed")
            o.seed = static_cast<int>(Number(v, a));
        else if (a == "--priority")
            o.priority = static_cast<int>(Number(v, a));
        else
            return false;
        return true;
    });
    return o;
}

// SCHED_FIFO (as linklab's relay): a realtime simulation must not fall behind because
// other processes are busy. Its threads (the TAP readers) inherit it.
void SetRealtimePriority(int priority)
{
    if (priority <= 0)
    {
        return;
    }
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

sigset_t StopSignals()
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    return set;
}

// One Station per --station NAME,TAP,X,Y, registered in AIR.
std::vector<std::unique_ptr<Station>> MakeStations(const std::vector<std::string>& stationArgs,
                                                   Air& air)
{
    std::vector<std::unique_ptr<Station>> owned;
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
        air.stations.push_back(s.get());
        owned.push_back(std::move(s));
    }
    return owned;
}

// Each --move NAME,X,Y,SECONDS: station NAME goes in a straight line from its position to
// (X, Y) over SECONDS from the simulation's start (linklab's link.motion), then stays.
void ReadMoves(const std::vector<std::string>& moveArgs,
               const std::vector<std::unique_ptr<Station>>& owned)
{
    for (const std::string& text : moveArgs)
    {
        std::vector<std::string> f = Split(text, ',');
        if (f.size() != 4)
        {
            Die("--move " + text + ": expected NAME,X,Y,SECONDS");
        }
        auto found = std::find_if(owned.begin(), owned.end(), [&](const auto& s) {
            return s->name == f[0];
        });
        if (found == owned.end())
        {
            Die("--move " + text + ": no --station named " + f[0]);
        }
        double seconds = Number(f[3], "SECONDS");
        if (!(seconds > 0))
        {
            Die("--move " + text + ": SECONDS must be above 0");
        }
        Station& s = **found;
        s.moves = true;
        s.target = Vector(Number(f[1], "X"), Number(f[2], "Y"), 0.0);
        s.moveSeconds = seconds;
    }
}

// The nodes and their Wi-Fi devices on the channel, each bridged to its TAP device; the
// moving ones set off.
void InstallStations(const std::vector<std::unique_ptr<Station>>& owned, Air& air,
                     double txPower)
{
    std::vector<Vector> positions;
    bool movable = false;
    for (const auto& s : owned)
    {
        positions.push_back(s->position);
        movable = movable || s->moves;
    }
    NodeContainer nodes;
    nodes.Create(static_cast<uint32_t>(owned.size()));
    NetDeviceContainer devices = InstallWifi(nodes, txPower);
    Place(nodes, positions, movable);
    for (size_t i = 0; i < owned.size(); i++)
    {
        owned[i]->node = nodes.Get(static_cast<uint32_t>(i));
        owned[i]->dev = DynamicCast<WifiNetDevice>(devices.Get(static_cast<uint32_t>(i)));
        owned[i]->mac = Mac48Address::ConvertFrom(owned[i]->dev->GetAddress());
        air.index[owned[i]->mac] = i;
        owned[i]->OpenTap();
        if (owned[i]->moves)
        {
            Move(owned[i]->node, owned[i]->target, owned[i]->moveSeconds);
        }
    }
}

// The stop signals are handled by a thread of their own, not by handlers: it stops the
// simulation on the first one.
void StopOnSignal()
{
    std::thread waiter([]() {
        sigset_t set = StopSignals();
        int sig = 0;
        sigwait(&set, &sig);
        Simulator::ScheduleWithContext(Simulator::NO_CONTEXT, Seconds(0), MakeEvent(&Simulator::Stop));
    });
    waiter.detach();
}

} // namespace

int RunAir(const std::vector<std::string>& args)
{
    Air air;
    AirOptions options = ParseAirOptions(args, air);
    SetRealtimePriority(options.priority);
    if (options.stationArgs.size() < 2 || air.statsPath.empty())
    {
        Die("air needs at least two --station NAME,TAP,X,Y and --stats FILE");
    }
    // The stop signals are handled by a thread of their own (StopOnSignal), not by handlers.
    sigset_t stop = StopSignals();
    pthread_sigmask(SIG_BLOCK, &stop, nullptr);

    GlobalValue::Bind("SimulatorImplementationType",
                      StringValue("ns3::RealtimeSimulatorImpl"));
    GlobalValue::Bind("ChecksumEnabled", BooleanValue(true));
    RngSeedManager::SetSeed(static_cast<uint32_t>(options.seed));

    std::vector<std::unique_ptr<Station>> owned = MakeStations(options.stationArgs, air);
    ReadMoves(options.moveArgs, owned);
    InstallStations(owned, air, options.txPower);
    air.impl = DynamicCast<RealtimeSimulatorImpl>(Simulator::GetImplementation());
    if (!air.impl)
    {
        Die("the realtime simulator implementation is not available");
    }
    for (auto& s : owned)
    {
        s->Start();
    }
    StopOnSignal();
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

} // namespace linklab_ns3
