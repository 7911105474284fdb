// switch_loader.cc - skeleton loading, pinning, map filling and tc attachment for switches.
#include "control/switch_loader.h"

#include <arpa/inet.h>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <net/if.h>
#include <sys/stat.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/abi.h"
#include "control/bringup.h"
#include "control/exec.h"
#include "control/netns.h"
#include "control/swcfg.h"
#include "qn_bare.skel.h"
#include "qn_dqdisp.skel.h"
#include "qn_switch.skel.h"

namespace qn {
namespace {

bool g_libbpf_verbose = false;
constexpr uint64_t kSampleIntervalFabricNs = 10'000;

int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && !g_libbpf_verbose)
		return 0;
	char buf[8192];
	std::vsnprintf(buf, sizeof(buf), fmt, args);
	// bpf_tc_hook_create() on a port that already has clsact returns -EEXIST, which we
	// accept (idempotent attach); libbpf still prints the kernel's extack for it.
	if (!g_libbpf_verbose && std::strstr(buf, "Exclusivity flag on"))
		return 0;
	// Likewise detaching an egress filter that is not there (-ENOENT, accepted).
	if (!g_libbpf_verbose && std::strstr(buf, "Cannot find specified filter chain"))
		return 0;
	return std::fputs(buf, stderr);
}

// Move-only owner of a generated skeleton (STYLE.md §4).
template <typename Skel, void (*Destroy)(Skel *)> class SkelPtr {
public:
	explicit SkelPtr(Skel *s) : s_(s) {}
	~SkelPtr()
	{
		if (s_)
			Destroy(s_);
	}
	SkelPtr(SkelPtr &&o) noexcept : s_(o.s_) { o.s_ = nullptr; }
	SkelPtr(const SkelPtr &) = delete;
	SkelPtr &operator=(const SkelPtr &) = delete;
	Skel *operator->() const { return s_; }
	Skel *get() const { return s_; }

private:
	Skel *s_;
};

uint32_t seed_for(const Topology &t, int sw)
{
	uint32_t h = 2166136261u; // FNV-1a over "<topology>/<switch>"
	for (char c : t.name + "/" + t.nodes[size_t(sw)].name)
		h = (h ^ uint8_t(c)) * 16777619u;
	return h;
}

Status mkdir_p(const std::string &path)
{
	std::string cur;
	for (size_t i = 1; i <= path.size(); i++) {
		if (i == path.size() || path[i] == '/') {
			cur = path.substr(0, i);
			if (mkdir(cur.c_str(), 0700) < 0 && errno != EEXIST)
				return sys_error(errno, "mkdir " + cur);
		}
	}
	return ok_status();
}

// Check, inside the switch namespace, that ifindex names the expected port of this switch.
// A redirect to an ifindex of another namespace silently drops (notes/datapath.md).
Status validate_ifindex(uint32_t ifindex, const std::string &expect, const std::string &sw)
{
	char name[IF_NAMESIZE] = {};
	if (!if_indextoname(ifindex, name))
		return sys_error(errno, "switch " + sw + ": ifindex " + std::to_string(ifindex) + " (" + expect +
						") does not exist in its namespace");
	if (expect != name)
		return make_error("switch " + sw + ": ifindex " + std::to_string(ifindex) + " is '" + name +
				  "' in its namespace, expected '" + expect + "'");
	return ok_status();
}

Status fill_and_validate(const Topology &t, int sw, const Dilation &d, int ports_fd, int fib_fd, int fid_fd)
{
	const std::string &swname = t.nodes[size_t(sw)].name;
	const std::vector<uint64_t> hdrm = switch_headrooms(t, sw, d);
	for (int pi : t.ports_of(sw)) {
		const Port &p = t.ports[size_t(pi)];
		const Link &l = t.links[size_t(p.link)];
		qn_port v{};
		v.port_no = uint32_t(p.port_no);
		v.role = t.nodes[size_t(p.peer_node)].kind == NodeKind::Host ? QN_ROLE_HOST : QN_ROLE_SWITCH;
		v.rate_bps = l.rate_bps;
		v.mtu = l.mtu;
		v.burst_bytes = uint32_t(plan_htb(l.rate_bps, l.mtu, t.nodes[size_t(sw)].buffer_bytes, d).burst_bytes);
		v.hdrm_bytes = uint32_t(hdrm[size_t(p.port_no)]);
		std::memcpy(v.mac, p.mac.data(), 6);
		uint32_t key = p.ifindex;
		if (bpf_map_update_elem(ports_fd, &key, &v, BPF_ANY))
			return sys_error(errno, "switch " + swname + ": update qn_ports");
		// The fidelity monitor's clock: wall ps per wire byte at the port's fabric rate
		// under dilation D (8e12 ps/s x D / rate), and one maximum frame as its credit.
		qn_fid_port f{};
		f.ps_per_byte = uint64_t(8e9 * double(d.milli()) / double(l.rate_bps));
		f.credit_wall_ns = (uint64_t(l.mtu) + QN_ETH_HLEN + QN_WIRE_OVERHEAD) * f.ps_per_byte / 1000;
		uint32_t pno = uint32_t(p.port_no);
		if (bpf_map_update_elem(fid_fd, &pno, &f, BPF_ANY))
			return sys_error(errno, "switch " + swname + ": update qn_fid");
	}
	for (const Route &r : t.routes_for(sw)) {
		qn_fib_key k{};
		k.prefixlen = uint32_t(r.prefix_len);
		k.addr_be = htonl(r.dst_ip);
		qn_fib_val v{};
		if (r.nexthops.size() > QN_MAX_NEXTHOPS)
			return make_error("switch " + swname + ": " + std::to_string(r.nexthops.size()) +
					  " equal-cost next hops to " + ip_to_string(r.dst_ip) + ", at most " +
					  std::to_string(QN_MAX_NEXTHOPS));
		v.n_nexthops = uint32_t(r.nexthops.size());
		for (size_t i = 0; i < r.nexthops.size(); i++) {
			const Port &out = t.ports[size_t(r.nexthops[i].port)];
			const Port &peer = t.ports[size_t(out.peer_port)];
			v.nh[i].ifindex = out.ifindex;
			v.nh[i].port_no = uint32_t(out.port_no);
			std::memcpy(v.nh[i].dmac, peer.mac.data(), 6);
			std::memcpy(v.nh[i].smac, out.mac.data(), 6);
		}
		if (bpf_map_update_elem(fib_fd, &k, &v, BPF_ANY))
			return sys_error(errno, "switch " + swname + ": update qn_fib for " + ip_to_string(r.dst_ip));
	}
	// Validate every ifindex now in the maps, from inside the switch namespace.
	NetnsScope ns(t.netns(sw));
	QN_TRY(ns.status());
	uint32_t key, next;
	bool first = true;
	while (bpf_map_get_next_key(ports_fd, first ? nullptr : &key, &next) == 0) {
		first = false;
		key = next;
		std::string expect;
		for (const auto &p : t.ports)
			if (p.node == sw && p.ifindex == key)
				expect = p.ifname;
		if (expect.empty())
			return make_error("switch " + swname + ": qn_ports holds ifindex " + std::to_string(key) +
					  " that is not one of its ports");
		QN_TRY(validate_ifindex(key, expect, swname));
	}
	qn_fib_key fk{}, fnext{};
	first = true;
	while (bpf_map_get_next_key(fib_fd, first ? nullptr : &fk, &fnext) == 0) {
		first = false;
		fk = fnext;
		qn_fib_val v{};
		if (bpf_map_lookup_elem(fib_fd, &fk, &v))
			return sys_error(errno, "switch " + swname + ": read back qn_fib");
		for (uint32_t i = 0; i < v.n_nexthops && i < QN_MAX_NEXTHOPS; i++) {
			std::string expect;
			for (const auto &p : t.ports)
				if (p.node == sw && p.ifindex == v.nh[i].ifindex)
					expect = p.ifname;
			if (expect.empty())
				return make_error("switch " + swname + ": qn_fib next hop ifindex " +
						  std::to_string(v.nh[i].ifindex) + " is not one of its ports");
			QN_TRY(validate_ifindex(v.nh[i].ifindex, expect, swname));
		}
	}
	return ok_status();
}

using SwitchSkel = SkelPtr<qn_switch, qn_switch__destroy>;

} // namespace

uint64_t pfc_headroom_bytes(const Link &l, const Dilation &d) // switch_loader.h
{
	// The bytes a paused neighbour may still send: the wall rate times (the worst measured time
	// from a PAUSE's arrival to the port going quiet + the link's round trip), plus a frame in
	// each direction's serialisation (docs/switch.md "PFC", "Headroom").
	uint64_t wall_bps = d.to_wall_rate_bps(l.rate_bps);
	uint64_t t_ns = kPfcPauseLatencyWallNs + 2 * d.to_wall_ns(l.delay_ns);
	uint64_t frame = uint64_t(l.mtu) + QN_ETH_HLEN + QN_WIRE_OVERHEAD;
	return uint64_t(static_cast<unsigned __int128>(wall_bps) * t_ns / 8'000'000'000ull) + 2 * frame;
}

std::vector<uint64_t> switch_headrooms(const Topology &t, int sw, const Dilation &d) // switch_loader.h
{
	std::vector<uint64_t> h(t.ports_of(sw).size(), 0);
	uint64_t total = 0;
	for (int pi : t.ports_of(sw)) {
		const Port &p = t.ports[size_t(pi)];
		if (size_t(p.port_no) < h.size()) {
			h[size_t(p.port_no)] = pfc_headroom_bytes(t.links[size_t(p.link)], d);
			total += h[size_t(p.port_no)];
		}
	}
	const uint64_t cap = t.nodes[size_t(sw)].buffer_bytes / 2;
	if (total > cap)
		for (auto &x : h)
			x = uint64_t(static_cast<unsigned __int128>(x) * cap / total);
	return h;
}

namespace {

Result<SwitchSkel> open_and_load(const Topology &t, int sw, const Dilation &d)
{
	SwitchSkel skel(qn_switch__open());
	if (!skel.get())
		return sys_error(errno, "open qn_switch skeleton");
	skel->rodata->qn_cfg.switch_id = uint32_t(sw);
	skel->rodata->qn_cfg.ecmp_seed = seed_for(t, sw);
	skel->rodata->qn_cfg.dilation_milli = d.milli();
	skel->rodata->qn_cfg.addr_be = htonl(t.nodes[size_t(sw)].ip); // source of the signals it originates
	// A BPF time: fabric 10 us between queue samples per port, dilated to wall ns at load.
	skel->rodata->qn_cfg.sample_interval_wall_ns = d.to_wall_ns(kSampleIntervalFabricNs);
	// PFC headroom: the sum of the ports' (pfc.h reserves it from the shared buffer).
	uint64_t hdrm = 0;
	for (uint64_t h : switch_headrooms(t, sw, d))
		hdrm += h;
	skel->rodata->qn_cfg.nports = uint32_t(t.ports_of(sw).size());
	uint32_t host_ports = 0;
	for (int pi : t.ports_of(sw))
		if (t.nodes[size_t(t.ports[size_t(pi)].peer_node)].kind == NodeKind::Host)
			host_ports++;
	skel->rodata->qn_cfg.host_ports = host_ports;
	skel->rodata->qn_cfg.hdrm_total_bytes = hdrm;
	// Dequeue-time marks go to the next hop through one map per topology (dqmark.h).
	QN_TRY(mkdir_p(topo_pin_dir(t.name)));
	if (int e = bpf_map__set_pin_path(skel->maps.qn_dqmarks, dqmarks_pin(t).c_str()); e)
		return sys_error(e, "set the pin path of qn_dqmarks");
	int err = qn_switch__load(skel.get());
	if (err)
		return sys_error(err, "load qn_switch for " + t.nodes[size_t(sw)].name +
					      " (the verifier log is printed above)");
	return skel;
}

Status attach_all(const Topology &t, int sw, int ingress_fd, int egress_fd)
{
	NetnsScope ns(t.netns(sw));
	QN_TRY(ns.status());
	for (int pi : t.ports_of(sw)) {
		const Port &p = t.ports[size_t(pi)];
		QN_TRY(tc_attach(p.ifindex, BPF_TC_INGRESS, ingress_fd, "ingress of " + p.ifname));
		if (egress_fd >= 0)
			QN_TRY(tc_attach(p.ifindex, BPF_TC_EGRESS, egress_fd, "egress of " + p.ifname));
		else
			QN_TRY(tc_detach(p.ifindex, BPF_TC_EGRESS));
	}
	return ok_status();
}

} // namespace

Status pin_map(bpf_map *m, const std::string &dir)
{
	std::string path = dir + "/" + bpf_map__name(m);
	unlink(path.c_str());
	int err = bpf_map__pin(m, path.c_str());
	if (err)
		return sys_error(err, "pin map " + path);
	return ok_status();
}

// Attach prog to a port's clsact hook (created if missing) with a fixed handle/priority so a
// re-attach replaces it. Must run inside the switch namespace.
Status tc_attach(uint32_t ifindex, bpf_tc_attach_point where, int prog_fd, const std::string &what)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = int(ifindex), .attach_point = BPF_TC_INGRESS);
	hook.attach_point = bpf_tc_attach_point(BPF_TC_INGRESS | BPF_TC_EGRESS);
	int err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST)
		return sys_error(err, "create clsact on ifindex " + std::to_string(ifindex));
	hook.attach_point = where;
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = prog_fd, .flags = BPF_TC_F_REPLACE, .handle = 1,
			    .priority = 1);
	err = bpf_tc_attach(&hook, &opts);
	if (err)
		return sys_error(err, "attach " + what + " on ifindex " + std::to_string(ifindex));
	return ok_status();
}

Status tc_detach(uint32_t ifindex, bpf_tc_attach_point where)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = int(ifindex), .attach_point = where);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = 1, .priority = 1);
	int err = bpf_tc_detach(&hook, &opts);
	if (err && err != -ENOENT)
		return sys_error(err, "detach on ifindex " + std::to_string(ifindex));
	return ok_status();
}


void setup_libbpf_logging(bool verbose)
{
	g_libbpf_verbose = verbose;
	libbpf_set_print(libbpf_print);
}

std::string dqmarks_pin(const Topology &t) { return topo_pin_dir(t.name) + "/qn_dqmarks"; }

namespace {

std::string dq_pin(const Topology &t, const char *name) { return topo_pin_dir(t.name) + "/" + name; }

// The inode number of node `n`'s network namespace (the kernel's ns.inum, which the dispatcher
// reads from the departing device).
Result<uint32_t> netns_inum(const Topology &t, int n)
{
	std::string path = "/run/netns/" + t.netns(n);
	struct stat st;
	if (stat(path.c_str(), &st) != 0)
		return sys_error(errno, "stat " + path);
	return uint32_t(st.st_ino);
}

// Whether the pinned map at `path` exists with at least `entries` entries.
bool pinned_map_fits(const std::string &path, uint32_t entries)
{
	int fd = bpf_obj_get(path.c_str());
	if (fd < 0)
		return false;
	bpf_map_info info{};
	uint32_t len = sizeof(info);
	bool ok = bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.max_entries >= entries;
	close(fd);
	return ok;
}

} // namespace

Status ensure_topology_bpf(const Topology &t)
{
	QN_TRY(ensure_bpffs());
	const std::string top = topo_pin_dir(t.name);
	QN_TRY(mkdir_p(top));
	uint32_t switches = 0;
	for (const auto &n : t.nodes)
		switches += n.kind == NodeKind::Switch ? 1 : 0;
	const uint32_t slots = uint32_t(t.nodes.size());
	struct stat st;
	if (pinned_map_fits(dq_pin(t, "qn_dq_nets"), std::max(1u, switches)) &&
	    pinned_map_fits(dq_pin(t, "qn_dq_progs"), std::max(1u, slots)) &&
	    stat(dq_pin(t, "link_dequeue").c_str(), &st) == 0 && stat(dq_pin(t, "prog_dqdisp").c_str(), &st) == 0 &&
	    pinned_map_fits(dqmarks_pin(t), 1))
		return ok_status();
	SkelPtr<qn_dqdisp, qn_dqdisp__destroy> skel(qn_dqdisp__open());
	if (!skel.get())
		return sys_error(errno, "open qn_dqdisp skeleton");
	if (int e = bpf_map__set_max_entries(skel->maps.qn_dq_nets, std::max(1u, switches)); e)
		return sys_error(e, "size qn_dq_nets");
	if (int e = bpf_map__set_max_entries(skel->maps.qn_dq_progs, std::max(1u, slots)); e)
		return sys_error(e, "size qn_dq_progs");
	// The dequeue-time marks every switch shares: made (or found) here, once, so the switches
	// loading in parallel all find the pin (two creating it at once would race for it).
	if (int e = bpf_map__set_pin_path(skel->maps.qn_dqmarks, dqmarks_pin(t).c_str()); e)
		return sys_error(e, "set the pin path of qn_dqmarks");
	if (int e = qn_dqdisp__load(skel.get()); e)
		return sys_error(e, "load qn_dqdisp (the verifier log is printed above)");
	QN_TRY(pin_map(skel->maps.qn_dq_nets, top));
	QN_TRY(pin_map(skel->maps.qn_dq_progs, top));
	{
		std::string pp = dq_pin(t, "prog_dqdisp");
		unlink(pp.c_str());
		if (int err = bpf_program__pin(skel->progs.qn_dq_disp, pp.c_str()); err)
			return sys_error(err, "pin " + pp);
	}
	{
		bpf_link *link = bpf_program__attach(skel->progs.qn_dq_disp);
		if (!link)
			return sys_error(errno, "attach the departure dispatcher (tp_btf/qdisc_dequeue)");
		std::string lp = dq_pin(t, "link_dequeue");
		unlink(lp.c_str());
		int err = bpf_link__pin(link, lp.c_str());
		bpf_link__destroy(link); // the pin keeps it attached
		if (err)
			return sys_error(err, "pin " + lp);
	}
	return ok_status();
}

// Put switch `sw`'s departure program in the dispatcher's slot for it (prog_fd < 0: take it
// out), and its namespace in qn_dq_nets.
static Status register_departures(const Topology &t, int sw, int prog_fd)
{
	const std::string pp = dq_pin(t, "qn_dq_progs"), np = dq_pin(t, "qn_dq_nets");
	int progs = bpf_obj_get(pp.c_str());
	if (progs < 0)
		return sys_error(errno, "open " + pp + " (the topology's departure dispatcher; `topo up` makes it)");
	int nets = bpf_obj_get(np.c_str());
	if (nets < 0) {
		int e = errno;
		close(progs);
		return sys_error(e, "open " + np);
	}
	Status s = ok_status();
	const uint32_t slot = uint32_t(sw);
	const std::string &name = t.nodes[size_t(sw)].name;
	const std::string lp = dq_pin(t, "link_dequeue");
	auto inum = netns_inum(t, sw);
	if (!inum) {
		s = inum.error();
	} else if (prog_fd < 0) {
		// Out: the namespace first, then the slot. With no switch left (the bare baseline of
		// `bench switch`), the dispatcher is detached too, so the baseline pays no departure
		// hook at all, as before the dispatcher.
		uint32_t key;
		if (bpf_map_delete_elem(nets, &*inum) && errno != ENOENT)
			s = sys_error(errno, "switch " + name + ": take its namespace out of " + np);
		else if (bpf_map_delete_elem(progs, &slot) && errno != ENOENT)
			s = sys_error(errno, "switch " + name + ": take its departures out of " + pp);
		else if (bpf_map_get_next_key(nets, nullptr, &key) != 0)
			unlink(lp.c_str());
	} else if (bpf_map_update_elem(progs, &slot, &prog_fd, BPF_ANY)) {
		s = sys_error(errno, "switch " + name + ": put its departure program in " + pp);
	} else if (bpf_map_update_elem(nets, &*inum, &slot, BPF_ANY)) {
		s = sys_error(errno, "switch " + name + ": write " + np);
	} else {
		// In: the dispatcher attached (again, after a bare baseline took it off).
		struct stat st;
		if (stat(lp.c_str(), &st) != 0) {
			const std::string dp = dq_pin(t, "prog_dqdisp");
			int dfd = bpf_obj_get(dp.c_str());
			if (dfd < 0) {
				s = sys_error(errno, "open pinned " + dp);
			} else {
				int lfd = bpf_raw_tracepoint_open(nullptr, dfd);
				close(dfd);
				if (lfd < 0) {
					s = sys_error(errno, "attach the departure dispatcher " + dp);
				} else {
					if (bpf_obj_pin(lfd, lp.c_str()) && errno != EEXIST)
						s = sys_error(errno, "pin " + lp);
					close(lfd);
				}
			}
		}
	}
	close(progs);
	close(nets);
	return s;
}

std::string switch_pin_dir(const Topology &t, int sw)
{
	return node_pin_dir(t.name, t.nodes[size_t(sw)].name);
}

Status load_switch(const Topology &t, int sw, const Dilation &d)
{
	QN_TRY(ensure_bpffs());
	auto loaded = open_and_load(t, sw, d);
	if (!loaded)
		return loaded.error();
	SwitchSkel &skel = *loaded;
	std::string dir = switch_pin_dir(t, sw);
	QN_TRY(remove_tree(dir));
	QN_TRY(mkdir_p(dir));
	QN_TRY(pin_map(skel->maps.qn_ports, dir));
	QN_TRY(pin_map(skel->maps.qn_fib, dir));
	QN_TRY(pin_map(skel->maps.qn_port_stats, dir));
	QN_TRY(pin_map(skel->maps.qn_orphan_drops, dir));
	for (bpf_map *m : {skel->maps.qn_swcfg, skel->maps.qn_qstate, skel->maps.qn_buffer, skel->maps.qn_test_qdepth,
			   skel->maps.qn_dev_port, skel->maps.qn_pfc_acct, skel->maps.qn_pfc_events, skel->maps.qn_qsamples,
			   skel->maps.qn_recirc, skel->maps.qn_fid, skel->maps.qn_fid_events, skel->maps.qn_sig_ring,
			   skel->maps.qn_sfc_cache, skel->maps.qn_sfc_est, skel->maps.qn_sw_gauges})
		QN_TRY(pin_map(m, dir));
	// Run-time configuration: defaults, then the topology's switch settings.
	const Node &node = t.nodes[size_t(sw)];
	qn_swcfg cfg = default_swcfg(node.buffer_bytes);
	for (const auto &[k, v] : node.settings)
		QN_TRY(apply_swcfg(cfg, k, v));
	QN_TRY(validate_swcfg(cfg));
	finalize_swcfg(cfg);
	{
		uint32_t zero = 0;
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.qn_swcfg), &zero, &cfg, BPF_ANY))
			return sys_error(errno, "switch " + node.name + ": write qn_swcfg");
	}
	// The departure program: registered with the topology's dispatcher, which tail-calls it for
	// departures from this switch's namespace (replacing an earlier load's atomically).
	QN_TRY(register_departures(t, sw, bpf_program__fd(skel->progs.qn_tp_dequeue)));
	// The recirculation device: a veth pair inside the switch namespace, builder on its ingress.
	{
		std::string rc = node.name + "-rc", rcp = node.name + "-rcp";
		QN_TRY(run_ok({"ip", "-n", t.netns(sw), "-batch", "-"},
			      "link add " + rc + " mtu 9000 type veth peer name " + rcp + " mtu 9000\nlink set " + rc +
				      " up\nlink set " + rcp + " up\n"));
		uint32_t rc_ifindex;
		{
			NetnsScope ns(t.netns(sw));
			QN_TRY(ns.status());
			rc_ifindex = if_nametoindex(rc.c_str());
			if (!rc_ifindex)
				return sys_error(errno, "switch " + node.name + ": no " + rc);
			QN_TRY(tc_attach(rc_ifindex, BPF_TC_INGRESS, bpf_program__fd(skel->progs.qn_tc_recirc),
					 "recirculation builder on " + rc));
		}
		uint32_t zero = 0;
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.qn_recirc), &zero, &rc_ifindex, BPF_ANY))
			return sys_error(errno, "switch " + node.name + ": write qn_recirc");
	}
	QN_TRY(fill_and_validate(t, sw, d, bpf_map__fd(skel->maps.qn_ports), bpf_map__fd(skel->maps.qn_fib),
				 bpf_map__fd(skel->maps.qn_fid)));
	// Each port's headroom in its queue state too (before any traffic: nothing else writes it
	// yet), where the dequeue hook judges a pause's slip (pfc.h).
	const std::vector<uint64_t> hdrm = switch_headrooms(t, sw, d);
	for (int pi : t.ports_of(sw)) {
		const Port &p = t.ports[size_t(pi)];
		qn_qstate q{};
		q.hdrm_bytes = hdrm[size_t(p.port_no)];
		uint32_t pno = uint32_t(p.port_no);
		if (bpf_map_update_elem(bpf_map__fd(skel->maps.qn_qstate), &pno, &q, BPF_ANY))
			return sys_error(errno, "switch " + node.name + ": write qn_qstate");
	}
	// Pin the programs too, so `bpftool prog show pinned` and a later re-attach find them.
	for (auto [prog, name] : {std::pair{skel->progs.qn_tc_ingress, "prog_ingress"},
				  std::pair{skel->progs.qn_tc_egress, "prog_egress"},
				  std::pair{skel->progs.qn_tp_dequeue, "prog_dequeue"},
				  std::pair{skel->progs.qn_tc_sweep, "prog_sweep"}}) {
		std::string path = dir + "/" + name;
		int err = bpf_program__pin(prog, path.c_str());
		if (err)
			return sys_error(err, "pin " + path);
	}
	return attach_all(t, sw, bpf_program__fd(skel->progs.qn_tc_ingress),
			  bpf_program__fd(skel->progs.qn_tc_egress));
}

Status reattach_switch(const Topology &t, int sw)
{
	std::string dir = switch_pin_dir(t, sw);
	// The departure program, which attach_bare() took out of the dispatcher.
	{
		int pfd = bpf_obj_get((dir + "/prog_dequeue").c_str());
		if (pfd < 0)
			return sys_error(errno, "open pinned " + dir + "/prog_dequeue");
		Status s = register_departures(t, sw, pfd);
		close(pfd);
		QN_TRY(s);
	}
	int in = bpf_obj_get((dir + "/prog_ingress").c_str());
	if (in < 0)
		return sys_error(errno, "open pinned " + dir + "/prog_ingress");
	int eg = bpf_obj_get((dir + "/prog_egress").c_str());
	if (eg < 0) {
		close(in);
		return sys_error(errno, "open pinned " + dir + "/prog_egress");
	}
	Status s = attach_all(t, sw, in, eg);
	close(in);
	close(eg);
	return s;
}

Status attach_bare(const Topology &t, int sw)
{
	SkelPtr<qn_bare, qn_bare__destroy> skel(qn_bare__open_and_load());
	if (!skel.get())
		return sys_error(errno, "load qn_bare");
	int fd = bpf_map__fd(skel->maps.qn_bare_port);
	// The baseline forwards by port: each port sends to the port toward the host it serves.
	// For the bench's two-host star this is "the other port".
	auto ports = t.ports_of(sw);
	if (ports.size() != 2)
		return make_error("bare baseline needs a switch with exactly 2 ports");
	for (size_t i = 0; i < 2; i++) {
		uint32_t in = t.ports[size_t(ports[i])].ifindex;
		uint32_t out = t.ports[size_t(ports[1 - i])].ifindex;
		if (bpf_map_update_elem(fd, &in, &out, BPF_ANY))
			return sys_error(errno, "update qn_bare_port");
	}
	// The baseline has no departure program either: out of the dispatcher.
	QN_TRY(register_departures(t, sw, -1));
	return attach_all(t, sw, bpf_program__fd(skel->progs.qn_bare_ingress), -1);
}

} // namespace qn
