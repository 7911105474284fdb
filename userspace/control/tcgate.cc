// tcgate.cc - the pause gate over netlink (tcgate.h).
#include "control/tcgate.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <unistd.h>

#include <libmnl/libmnl.h>

#include "common/abi.h"
#include "control/netns.h"

namespace qn {

namespace {

constexpr uint32_t kGateHandle = 0x00200000u; // 20:, the data leaf (bringup.cc)

} // namespace

GateConfig gate_config(uint64_t wall_rate_bps, uint32_t mtu, uint64_t fifo_limit)
{
	GateConfig g;
	// Open: 16x the wall rate and at least 32 Gbit/s, a 1 MB bucket: never the bottleneck.
	g.open_rate_Bps = std::max<uint64_t>(wall_rate_bps / 8 * 16, 4'000'000'000ull);
	g.open_burst = 1u << 20;
	g.closed_burst = mtu + QN_ETH_HLEN + 4; // one frame (a VLAN tag's room)
	g.limit = uint32_t(std::min<uint64_t>(fifo_limit, 0xFFFFFFFFu));
	return g;
}

std::string gate_tc_line(const std::string &ifname, const GateConfig &g)
{
	return "qdisc replace dev " + ifname + " parent 1:20 handle 20: tbf rate " + std::to_string(g.open_rate_Bps * 8) +
	       "bit burst " + std::to_string(g.open_burst) + " limit " + std::to_string(g.limit) + "\n";
}

Result<TcGate> TcGate::open(const std::string &netns)
{
	NetnsScope in(netns);
	if (!in.ok())
		return in.status().error();
	TcGate g;
	g.nl_ = mnl_socket_open(NETLINK_ROUTE);
	if (!g.nl_)
		return sys_error(errno, "netlink socket in " + netns);
	if (mnl_socket_bind(g.nl_, 0, MNL_SOCKET_AUTOPID) < 0)
		return sys_error(errno, "bind netlink socket in " + netns);
	g.portid_ = mnl_socket_get_portid(g.nl_);
	g.seq_ = uint32_t(time(nullptr));
	return g;
}

TcGate::TcGate(TcGate &&o) noexcept : nl_(o.nl_), seq_(o.seq_), portid_(o.portid_) { o.nl_ = nullptr; }

TcGate &TcGate::operator=(TcGate &&o) noexcept
{
	if (this != &o) {
		if (nl_)
			mnl_socket_close(nl_);
		nl_ = o.nl_;
		seq_ = o.seq_;
		portid_ = o.portid_;
		o.nl_ = nullptr;
	}
	return *this;
}

TcGate::~TcGate()
{
	if (nl_)
		mnl_socket_close(nl_);
}

Status TcGate::set(int ifindex, const GateConfig &g, bool closed)
{
	char buf[8192];
	nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_NEWQDISC;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK; // no CREATE/REPLACE: change the existing tbf
	nlh->nlmsg_seq = ++seq_;
	auto *tcm = static_cast<tcmsg *>(mnl_nlmsg_put_extra_header(nlh, sizeof(tcmsg)));
	tcm->tcm_family = AF_UNSPEC;
	tcm->tcm_ifindex = ifindex;
	tcm->tcm_handle = kGateHandle;
	tcm->tcm_parent = QN_HTB_CLASS_DATA;
	mnl_attr_put_strz(nlh, TCA_KIND, "tbf");
	nlattr *opts = mnl_attr_nest_start(nlh, TCA_OPTIONS);
	uint64_t rate = closed ? 1 : g.open_rate_Bps;
	uint32_t burst = closed ? g.closed_burst : g.open_burst;
	tc_tbf_qopt q{};
	q.rate.linklayer = TC_LINKLAYER_ETHERNET; // no rate table needed
	q.rate.rate = uint32_t(std::min<uint64_t>(rate, 0xFFFFFFFFu));
	q.limit = g.limit;
	mnl_attr_put(nlh, TCA_TBF_PARMS, sizeof(q), &q);
	if (rate > 0xFFFFFFFFu)
		mnl_attr_put_u64(nlh, TCA_TBF_RATE64, rate);
	mnl_attr_put_u32(nlh, TCA_TBF_BURST, burst);
	mnl_attr_nest_end(nlh, opts);
	if (mnl_socket_sendto(nl_, nlh, nlh->nlmsg_len) < 0)
		return sys_error(errno, "netlink send (tbf change)");
	int n = int(mnl_socket_recvfrom(nl_, buf, sizeof(buf)));
	if (n < 0)
		return sys_error(errno, "netlink receive (tbf change)");
	int r = mnl_cb_run(buf, size_t(n), seq_, portid_, nullptr, nullptr);
	if (r < 0)
		return sys_error(errno, std::string("tbf change on ifindex ") + std::to_string(ifindex));
	return ok_status();
}

} // namespace qn
