// rxe_host.cc - Soft-RoCE hosts of a topology (rxe_host.h).
#include "control/rxe_host.h"

#include <filesystem>
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/paths.h"
#include "control/exec.h"
#include "control/netns.h"
#include "control/switch_loader.h"
#include "qn_abi.h"
#include "qn_rxe.skel.h"

namespace qn {

std::string rxe_device(const Topology &t, int host) { return "qnr-" + t.name + "-" + t.nodes[size_t(host)].name; }

bool has_rxe_hosts(const Topology &t)
{
	for (const auto &n : t.nodes)
		if (n.kind == NodeKind::Host && is_rxe_stack(n.stack))
			return true;
	return false;
}

namespace {

// argv run inside namespace `ns` ("" = here).
std::vector<std::string> in_netns(const std::string &ns, std::vector<std::string> argv)
{
	if (!ns.empty())
		argv.insert(argv.begin(), {"ip", "netns", "exec", ns});
	return argv;
}

} // namespace

bool rxe_netns_aware()
{
	// rdma_rxe from kernels whose rxe keeps a UDP socket per namespace has rxe_ns.c; the symbols
	// are in /proc/kallsyms while the module is loaded (names are readable without addresses).
	std::ifstream k("/proc/kallsyms");
	std::string line;
	while (std::getline(k, line))
		if (line.find(" rxe_ns_pernet_sk4") != std::string::npos || line.find(" rxe_namespace_init") != std::string::npos)
			return true;
	return false;
}

int place_rxe_hosts(Topology &t)
{
	if (!has_rxe_hosts(t))
		return 0;
	std::error_code ec;
	if (!std::filesystem::exists("/sys/module/rdma_rxe", ec))
		(void)run({"modprobe", "rdma_rxe"}); // `rdma link add` would load it anyway
	if (!std::filesystem::exists("/sys/module/rdma_rxe", ec) || rxe_netns_aware())
		return 0;
	int moved = 0;
	for (auto &n : t.nodes)
		if (n.kind == NodeKind::Host && n.stack == kStackRxe) {
			n.stack = kStackRxeInitNs;
			t.ports[size_t(t.ports_of(n.id)[0])].ifname = initns_ifname(t.name, n.name);
			moved++;
		}
	return moved;
}

Status rxe_host_up(const Topology &t, int host)
{
	const Node &n = t.nodes[size_t(host)];
	const Port &p = t.ports[size_t(t.ports_of(host)[0])];
	const Link &l = t.links[size_t(p.link)];
	const std::string ns = t.netns(host);

	// 1. sch_fq honours the EDT departure times the egress program sets; its per-flow limit
	//    is above rxe's own cap of in-flight packets per QP.
	if (auto r = run_ok(in_netns(ns, {"tc", "qdisc", "replace", "dev", p.ifname, "root", "fq", "flow_limit", "1000"})); !r)
		return make_error("host '" + n.name + "' (stack=rxe): cannot put sch_fq on " + p.ifname + " (" +
				  r.error().to_string() + "): rxe hosts need a kernel with sch_fq and rdma_rxe, e.g. the "
				  "VM kernels of `make vmtest` (docs/agent.md)");

	// 1b. veth delivers through NAPI, one ring per direction, only when the receiver has GRO on
	//     and the sender no TSO (veth_skb_is_eligible_for_gro); otherwise each frame enters the
	//     receiver's backlog of the CPU that sent it, and frames fq releases from its timer on
	//     one CPU and from rxe's send path on the other reach the switch (or rxe) out of order:
	//     rxe then NAKs and resends (measured in the 7.3 VM, docs/agent.md "Ordering").
	const Port &sw_port = t.ports[size_t(p.peer_port)];
	for (const auto &[where, dev] : {std::pair{ns, p.ifname}, std::pair{t.netns(sw_port.node), sw_port.ifname}})
		if (auto r = run_ok(in_netns(where, {"ethtool", "-K", dev, "gro", "on", "tso", "off"})); !r)
			return make_error("host '" + n.name + "' (stack=rxe): cannot set GRO on, TSO off for " + dev + " (" +
					  r.error().to_string() + ")");

	// 2. the programs, with the topology's shared dequeue-mark map, maps pinned per host.
	qn_rxe *skel = qn_rxe__open();
	if (!skel)
		return sys_error(errno, "open qn_rxe");
	struct Guard {
		qn_rxe *s;
		~Guard() { qn_rxe__destroy(s); }
	} guard{skel};
	mkdir(kPinRoot, 0700);
	mkdir(topo_pin_dir(t.name).c_str(), 0700);
	if (int e = bpf_map__set_pin_path(skel->maps.qn_dqmarks, dqmarks_pin(t).c_str()); e)
		return sys_error(e, "set the pin path of qn_dqmarks");
	if (int e = qn_rxe__load(skel); e)
		return sys_error(e, "load qn_rxe (the rxe host's tc programs)");
	const std::string dir = node_pin_dir(t.name, n.name);
	mkdir(dir.c_str(), 0700);
	for (bpf_map *m : {skel->maps.qn_rxe_qps, skel->maps.qn_rxe_rate, skel->maps.qn_rxe_pace, skel->maps.qn_rxe_ce,
			   skel->maps.qn_rxe_cfg, skel->maps.qn_rxe_events, skel->maps.qn_rxe_stats, skel->maps.qn_rxe_pause})
		QN_TRY(pin_map(m, dir));
	qn_rxe_cfg cfg{};
	cfg.link_bps = l.rate_bps; // rxe hosts are not dilated: the fabric rate is the wall rate
	cfg.honor = QN_RXE_HONOR_PFC | QN_RXE_HONOR_BTS; // a NIC obeys PFC (and SFC's BTS), agent or not
	uint32_t zero = 0;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.qn_rxe_cfg), &zero, &cfg, BPF_ANY) != 0)
		return sys_error(errno, "write qn_rxe_cfg");
	{
		NetnsScope scope(ns);
		QN_TRY(scope.status());
		QN_TRY(tc_attach(p.ifindex, BPF_TC_EGRESS, bpf_program__fd(skel->progs.qn_rxe_egress),
				 "qn_rxe egress of " + p.ifname));
		QN_TRY(tc_attach(p.ifindex, BPF_TC_INGRESS, bpf_program__fd(skel->progs.qn_rxe_ingress),
				 "qn_rxe ingress of " + p.ifname));
	}

	// 3. the rxe device on the veth, inside the host's namespace (netns-aware rxe: 7.x kernels) or
	//    in the initial one (6.1: place_rxe_hosts).
	auto r = run(in_netns(ns, {"rdma", "link", "add", rxe_device(t, host), "type", "rxe", "netdev", p.ifname}));
	if (!r)
		return r.error();
	if (r->status != 0)
		return make_error("host '" + n.name + "' (stack=rxe): rdma link add " + rxe_device(t, host) + " on " +
				  p.ifname + " failed (" + r->err + "): rxe hosts need a kernel with rdma_rxe, e.g. the "
				  "VM kernels of `make vmtest` (docs/agent.md)");
	return ok_status();
}

void rxe_hosts_down(const std::string &name)
{
	std::error_code ec;
	const std::string prefix = "qnr-" + name + "-";
	for (const auto &e : std::filesystem::directory_iterator("/sys/class/infiniband", ec)) {
		const std::string dev = e.path().filename().string();
		if (dev.rfind(prefix, 0) == 0)
			(void)run({"rdma", "link", "delete", dev});
	}
}

} // namespace qn
