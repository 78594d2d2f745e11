// per-table: ns-3 3.37's frame error rates, MCS by SNR, for the relay's medium (issue 43:
// channel errors from distance; scripts/wifi_per_table.py stores what this prints as
// src/linklab/model/wifi-per-ns3.json, which src/linklab/model/wifi_channel.py reads):
//
//   linklab-ns3 per-table --standard n|ac|ax --width MHZ --gi NS --bytes B
//                         --snr-from DB --snr-to DB --snr-step DB
// Prints one JSON line per MCS: {"standard", "mcs", "width_mhz", "gi_ns", "bytes",
// "snr_db": [...], "per": [...]}.
//
// The model is ns-3's default for these standards, TableBasedErrorRateModel (ns-3
// 3.37: the IEEE 802.11ax evaluation methodology's AWGN tables for BCC, 1458- and 32-byte
// reference sizes, scaled to --bytes; modes without a table, such as HE MCS 10 and 11,
// fall back to YansErrorRateModel), asked for the success rate of the data field of one
// MPDU of --bytes bytes (8 x bytes bits) at each SNR, one spatial stream, one receive
// antenna. PER = 1 - that rate.
#include "args.h"
#include "modes.h"

#include "ns3/core-module.h"
#include "ns3/wifi-module.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace ns3;

namespace linklab_ns3
{

namespace
{

struct TableOptions
{
    std::string standard = "ac";
    uint16_t widthMhz = 80;
    uint16_t giNs = 800;
    uint32_t bytes = 1500;
    double snrFrom = -5.0;
    double snrTo = 45.0;
    double snrStep = 0.5;
};

TableOptions
ParseTable(const std::vector<std::string>& args)
{
    TableOptions o;
    ForEachOption(args, [&o](const std::string& a, const std::string& v) {
        if (a == "--standard") o.standard = v;
        else if (a == "--width") o.widthMhz = static_cast<uint16_t>(Number(v, a));
        else if (a == "--gi") o.giNs = static_cast<uint16_t>(Number(v, a));
        else if (a == "--bytes") o.bytes = static_cast<uint32_t>(Number(v, a));
        else if (a == "--snr-from") o.snrFrom = Number(v, a);
        else if (a == "--snr-to") o.snrTo = Number(v, a);
        else if (a == "--snr-step") o.snrStep = Number(v, a);
        else return false;
        return true;
    });
    if (o.standard != "n" && o.standard != "ac" && o.standard != "ax")
    {
        Die("--standard: n, ac or ax");
    }
    if (o.bytes == 0 || o.snrStep <= 0 || o.snrTo < o.snrFrom)
    {
        Die("--bytes > 0, --snr-step > 0 and --snr-to >= --snr-from");
    }
    return o;
}

// The standard's MCS count and how to make its mode and preamble.
struct Family
{
    int count;
    WifiPreamble preamble;
    WifiMode (*mode)(uint8_t);
};

Family
FamilyOf(const std::string& standard)
{
    if (standard == "n")
    {
        return {8, WIFI_PREAMBLE_HT_MF, &HtPhy::GetHtMcs};
    }
    if (standard == "ac")
    {
        return {10, WIFI_PREAMBLE_VHT_SU, &VhtPhy::GetVhtMcs};
    }
    return {12, WIFI_PREAMBLE_HE_SU, &HePhy::GetHeMcs};
}

} // namespace

int
RunPerTable(const std::vector<std::string>& args)
{
    const TableOptions o = ParseTable(args);
    const Family family = FamilyOf(o.standard);
    Ptr<TableBasedErrorRateModel> model = CreateObject<TableBasedErrorRateModel>();
    const int points = static_cast<int>(std::floor((o.snrTo - o.snrFrom) / o.snrStep + 1e-9)) + 1;
    for (int mcs = 0; mcs < family.count; ++mcs)
    {
        const WifiMode mode = family.mode(static_cast<uint8_t>(mcs));
        const WifiTxVector tx(mode, 0, family.preamble, o.giNs, 1, 1, 0, o.widthMhz, true);
        std::string snrs;
        std::string pers;
        for (int i = 0; i < points; ++i)
        {
            const double snrDb = o.snrFrom + i * o.snrStep;
            const double rate =
                model->GetChunkSuccessRate(mode, tx, std::pow(10.0, snrDb / 10.0), 8ULL * o.bytes);
            char buf[64];
            std::snprintf(buf, sizeof buf, "%s%.2f", i ? "," : "", snrDb);
            snrs += buf;
            std::snprintf(buf, sizeof buf, "%s%.6g", i ? "," : "", 1.0 - rate);
            pers += buf;
        }
        std::printf("{\"standard\":\"%s\",\"mcs\":%d,\"width_mhz\":%u,\"gi_ns\":%u,\"bytes\":%u,"
                    "\"snr_db\":[%s],\"per\":[%s]}\n",
                    o.standard.c_str(), mcs, o.widthMhz, o.giNs, o.bytes, snrs.c_str(),
                    pers.c_str());
    }
    return 0;
}

} // namespace linklab_ns3
