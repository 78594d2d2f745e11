#include "tap_bridge.h"

#include "air.h"
#include "args.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <net/if_arp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

using namespace ns3;

namespace linklab_ns3
{

FdReader::Data TapReader::DoRead()
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

void Station::OpenTap()
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

void Station::Start()
{
    node->RegisterProtocolHandler(MakeCallback(&Station::FromAir, this), 0, dev, true);
    dev->GetMac()->TraceConnectWithoutContext("AckedMpdu",
                                              MakeCallback(&Station::Acked, this));
    dev->GetMac()->TraceConnectWithoutContext("DroppedMpdu",
                                              MakeCallback(&Station::Dropped, this));
    reader = Create<TapReader>();
    reader->Start(fd, MakeCallback(&Station::ReadFromThread, this));
}

void Station::ReadFromThread(uint8_t* buf, ssize_t len)
{
    Simulator::ScheduleWithContext(node->GetId(),
                                   Seconds(0),
                                   MakeEvent(&Station::FromHost, this, buf, len));
}

void Station::FromHost(uint8_t* buf, ssize_t len)
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

bool Station::FromAir(Ptr<NetDevice>,
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

void Station::Acked(Ptr<const WifiMpdu> mpdu)
{
    auto found = air->index.find(mpdu->GetHeader().GetAddr1());
    if (found != air->index.end())
    {
        air->Pair(id, found->second).acked++;
    }
}

void Station::Dropped(WifiMacDropReason reason, Ptr<const WifiMpdu> mpdu)
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

} // namespace linklab_ns3
