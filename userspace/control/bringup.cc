// bringup.cc - topology bring-up and tear-down through `ip -batch` / `tc -batch`, setns() and
// libbpf.
#include "control/bringup.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>

#include "control/exec.h"
#include "control/netns.h"
#include "control/rxe_host.h"
#include "control/tcgate.h"
#include "control/switch_loader.h"
#include "control/switchd.h"
#include "qn_steer.skel.h"

namespace qn {
namespace {

constexpr const char *kGatewayIp = "169.254.0.1"; // on-link next hop of every host


Status write_file(const std::string &path, const std::string &text)
{
	std::string tmp = path + ".tmp";
	{
		std::ofstream f(tmp, std::ios::trunc);
		if (!f)
			return sys_error(errno, "write " + tmp);
		f << text;
		if (!f.flush())
			return sys_error(errno, "write " + tmp);
	}
	if (rename(tmp.c_str(), path.c_str()) < 0)
		return sys_error(errno, "rename " + tmp);
	return ok_status();
}

// "PID STARTTIME": a process's identity that a reused pid does not share (STARTTIME, field 22
// of /proc/PID/stat, in clock ticks since boot); "" when the process does not exist.
std::string process_identity(pid_t pid)
{
	std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
	std::string stat;
	if (!f || !std::getline(f, stat))
		return "";
	// the command name (field 2) is in parentheses and may hold spaces: count after the last ')'
	const size_t rp = stat.rfind(')');
	if (rp == std::string::npos)
		return "";
	std::istringstream is(stat.substr(rp + 2));
	std::string field;
	for (int i = 3; i <= 22 && (is >> field); i++)
		if (i == 22)
			return std::to_string(pid) + " " + field;
	return "";
}

Result<std::string> read_file(const std::string &path)
{
	std::ifstream f(path);
	if (!f)
		return sys_error(errno, "read " + path);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

std::string bits(uint64_t bps) { return std::to_string(bps) + "bit"; }

// Pin qn_steer's XSKMAP and counters under `dir` (replacing old pins), where the engine opens
// them; used for host steering and for cable ends.
Status pin_steer_maps(qn_steer *skel, const std::string &dir)
{
	for (bpf_map *m : {skel->maps.qn_xsks, skel->maps.qn_steer_stats}) {
		std::string path = dir + "/" + bpf_map__name(m);
		unlink(path.c_str());
		if (int err = bpf_map__pin(m, path.c_str()); err)
			return sys_error(err, "pin " + path);
	}
	return ok_status();
}

// qn_steer with the topology's shared qn_dqmarks (dqmark.h), loaded. Return: null on error.
qn_steer *load_steer(const Topology &t)
{
	qn_steer *skel = qn_steer__open();
	if (!skel)
		return nullptr;
	std::string top = topo_pin_dir(t.name);
	mkdir(kPinRoot, 0700);
	mkdir(top.c_str(), 0700);
	if (int e = bpf_map__set_pin_path(skel->maps.qn_dqmarks, dqmarks_pin(t).c_str()); e) {
		qn_steer__destroy(skel);
		errno = -e;
		return nullptr;
	}
	if (int e = qn_steer__load(skel); e) {
		qn_steer__destroy(skel);
		errno = -e;
		return nullptr;
	}
	return skel;
}

std::vector<int> cable_links(const Topology &t)
{
	std::vector<int> v;
	for (size_t li = 0; li < t.links.size(); li++)
		if (is_cable_link(t, t.links[li]))
			v.push_back(int(li));
	return v;
}

CableSpec cable_spec(const Topology &t, int li)
{
	CableSpec c;
	c.link = li;
	c.name = "cb" + std::to_string(li);
	c.netns = cable_netns(t);
	c.delay_ns = t.links[size_t(li)].delay_ns;
	c.rate_bps = t.links[size_t(li)].rate_bps;
	c.error_rate = t.links[size_t(li)].error_rate;
	for (int k = 0; k < 2; k++) {
		c.ifname[k] = c.name + (k == 0 ? "a" : "b");
		// Distinct from every port's ifindex (kIfindexBase + port index).
		c.ifindex[k] = 20000 + uint32_t(li) * 2 + uint32_t(k);
		c.xskmap_pin[k] = cable_pin_dir(t.name, c.ifname[k]) + "/qn_xsks";
	}
	return c;
}

// Attach qn_xdp_cable (every frame to the AF_XDP socket) on both ends of a cable and pin the
// XSKMAP of each end where the engine finds it.
Status attach_cable_xdp(const Topology &t, const CableSpec &c)
{
	for (int k = 0; k < 2; k++) {
		qn_steer *skel = load_steer(t);
		if (!skel)
			return sys_error(errno, "load qn_steer for cable " + c.name);
		std::string dir = cable_pin_dir(t.name, c.ifname[k]);
		mkdir(topo_pin_dir(t.name).c_str(), 0700);
		mkdir((topo_pin_dir(t.name) + "/cables").c_str(), 0700);
		mkdir(dir.c_str(), 0700);
		Status st = pin_steer_maps(skel, dir);
		if (st.ok()) {
			NetnsScope ns(c.netns);
			if (!ns.ok()) {
				st = ns.status();
			} else if (int err = bpf_xdp_attach(int(c.ifindex[k]), bpf_program__fd(skel->progs.qn_xdp_cable),
							    XDP_FLAGS_DRV_MODE, nullptr);
				   err) {
				st = sys_error(err, "attach XDP on cable end " + c.ifname[k]);
			}
		}
		qn_steer__destroy(skel);
		QN_TRY(st);
	}
	return ok_status();
}

// Attach qn_steer (native XDP) on a host veth and pin its maps under the host's pin dir, so
// the engine can bind AF_XDP sockets into qn_xsks.
Status attach_steering(const Topology &t, int host)
{
	const Port &p = t.ports[size_t(t.ports_of(host)[0])];
	qn_steer *skel = load_steer(t);
	if (!skel)
		return sys_error(errno, "load qn_steer");
	std::string dir = node_pin_dir(t.name, t.nodes[size_t(host)].name);
	mkdir(topo_pin_dir(t.name).c_str(), 0700);
	mkdir(dir.c_str(), 0700);
	Status st = pin_steer_maps(skel, dir);
	if (st.ok()) {
		std::string path = dir + "/prog_steer";
		unlink(path.c_str());
		if (int err = bpf_program__pin(skel->progs.qn_xdp_steer, path.c_str()); err)
			st = sys_error(err, "pin " + path);
	}
	if (st.ok()) {
		NetnsScope ns(t.netns(host));
		if (!ns.ok()) {
			st = ns.status();
		} else {
			int err = bpf_xdp_attach(int(p.ifindex), bpf_program__fd(skel->progs.qn_xdp_steer),
						 XDP_FLAGS_DRV_MODE, nullptr);
			if (err)
				st = sys_error(err, "attach XDP steering on " + p.ifname);
		}
	}
	qn_steer__destroy(skel);
	return st;
}

// An rxe host in the initial namespace (kStackRxeInitNs; docs/agent.md "Layout per kernel"):
// its veth up with its address on the prefix that covers every host of the topology, so each
// such host has a connected route to the others through its own veth (rxe looks its route up
// bound to its device; without that route the kernel's local table sends it over lo), and the
// sysctls that let a namespace send to its own addresses over a wire: accept_local (the source is
// local too) and rp_filter off; a static neighbour per other host (the switch port's MAC). No
// default route and no gateway: the initial namespace's own routing stays as it was.
Status initns_host_up(const Topology &t, int host)
{
	const Port &p = t.ports[size_t(t.ports_of(host)[0])];
	uint32_t lo = UINT32_MAX, hi = 0;
	for (const auto &n : t.nodes)
		if (n.kind == NodeKind::Host) {
			lo = std::min(lo, n.ip);
			hi = std::max(hi, n.ip);
		}
	int prefix = 32;
	while (prefix > 8 && (lo >> (32 - prefix)) != (hi >> (32 - prefix)))
		prefix--;
	std::string batch = "link set " + p.ifname + " up\naddr add " + ip_to_string(t.nodes[size_t(host)].ip) + "/" +
			    std::to_string(prefix) + " dev " + p.ifname + "\n";
	// Every other host behind the switch port's MAC, as the gateway is in a host namespace: the
	// switch answers no ARP.
	const Port &peer = t.ports[size_t(p.peer_port)];
	for (const auto &n : t.nodes)
		if (n.kind == NodeKind::Host && n.id != host)
			batch += "neigh replace " + ip_to_string(n.ip) + " lladdr " + mac_to_string(peer.mac) + " dev " +
				 p.ifname + " nud permanent\n";
	// IPv6 off before the link is up (no RS/MLD frames for the switch to drop as not IPv4), as
	// in the host namespaces, but for this device alone.
	QN_TRY(write_sysctl("net/ipv6/conf/" + p.ifname + "/disable_ipv6", "1"));
	QN_TRY(run_ok({"ip", "-batch", "-"}, batch));
	for (const std::string dev : {"all", p.ifname.c_str()}) {
		QN_TRY(write_sysctl("net/ipv4/conf/" + dev + "/accept_local", "1"));
		QN_TRY(write_sysctl("net/ipv4/conf/" + dev + "/rp_filter", "0"));
	}
	return ok_status();
}

bool healthy(const Topology &t)
{
	for (const auto &n : t.nodes)
		if (!t.netns(n.id).empty() && !netns_exists(t.netns(n.id)))
			return false;
	for (const auto &n : t.nodes) {
		if (n.kind != NodeKind::Switch)
			continue;
		struct stat st;
		if (stat((switch_pin_dir(t, n.id) + "/qn_fib").c_str(), &st) != 0)
			return false;
	}
	std::ifstream pf(switchd_pid_path(t.name));
	pid_t pid = 0;
	return (pf >> pid) && pid > 0 && kill(pid, 0) == 0;
}

} // namespace

HtbPlan plan_htb(uint64_t fabric_rate_bps, uint32_t mtu, uint64_t buffer_bytes, const Dilation &d)
{
	HtbPlan h;
	h.rate_bps = d.to_wall_rate_bps(fabric_rate_bps);
	// One token bucket shapes the port: the parent 1:1. Both leaves have the least rate HTB
	// takes (8 bit/s: a frame leaves their own buckets a minute in debt, HTB's floor), so every
	// frame is sent on tokens borrowed from 1:1, the control leaf first (prio 0). With rates of
	// their own (5% and 95% of R, as before) each leaf had a bucket of its own beside the
	// parent's, and after a quiet spell both emptied theirs at once: more than a frame ahead of
	// the line, which the departure monitor counts as a fast window (docs/switch.md "HTB on
	// every egress port").
	h.leaf_rate_bps = 8;
	// burst = cburst: one frame of wire time, or 25 us at the wall rate when that is more. A
	// bucket holds what it may send at once after a quiet spell, and a real link sends nothing
	// ahead of its line rate: the departure monitor allows one frame of catch-up (fidmon.h), so
	// two frames (as before) put every busy period's first windows ahead of the line; at
	// D=10,000 on a k=4 fat-tree that was 1.3% of all windows. Tokens beyond the burst are
	// lost when HTB's dequeue runs late, so at high wall rates the burst covers that lateness:
	// 25 us (measured: 10 us left 1 Gbit/s at 0.986 under a heavy offered load; tc's default
	// burst reaches 74% of 8 Gbit/s). Where a frame takes longer than 25 us, one frame covers
	// it.
	uint64_t frame_wire = uint64_t(mtu) + 14 + 24;
	h.burst_bytes = std::max<uint64_t>(frame_wire, h.rate_bps / 8 / 40000);
	h.quantum_bytes = std::min<uint64_t>(200000, std::max<uint64_t>(frame_wire, h.rate_bps / 8 / 10000));
	h.fifo_limit_bytes = 2 * buffer_bytes + 4 * frame_wire;
	return h;
}

static Status finish_up(const Topology &t, const UpOptions &o, const std::string &meta);

const std::vector<UpFlag> &up_flags()
{
	static const std::vector<UpFlag> flags = {
		{"--no-steering", "no XDP steering on host ports", &UpOptions::attach_steering, true, "steering"},
		{"--no-cables", "delayed switch links become plain veths", &UpOptions::cables, true, "cables"},
		{"--rps", "switch ports spread what they receive over every online CPU (RPS)", &UpOptions::rps, false, "rps"},
	};
	return flags;
}

std::string up_flags_meta(const Topology &t, const UpOptions &o)
{
	std::string m;
	for (const UpFlag &f : up_flags()) {
		bool on = o.*f.field;
		if (f.field == &UpOptions::cables)
			on = on && !cable_links(t).empty();
		m += std::string(f.meta) + (on ? " yes\n" : " no\n");
	}
	return m;
}

// Run `step` for every switch of `t`, on as many threads as the machine has CPUs (at most 4).
// Each switch's step is its own (namespace, BPF objects, pins, tc) and most of it is the
// kernel's verifier on the switch programs, CPU-bound (about 0.29 s a switch), so a fabric's
// switches load in about 1/CPUs of the time (docs/PERFORMANCE.md "Switches loaded on every CPU").
// Every switch is tried until one fails; then no new one starts and the first error is returned.
static Status for_each_switch(const Topology &t, const std::function<Status(int sw)> &step)
{
	std::vector<int> sws;
	for (const auto &n : t.nodes)
		if (n.kind == NodeKind::Switch)
			sws.push_back(n.id);
	const size_t nthreads = std::min<size_t>({sws.size(), 4, std::max(1u, std::thread::hardware_concurrency())});
	std::atomic<size_t> next{0};
	std::atomic<bool> failed{false};
	std::mutex mu;
	Status first = ok_status();
	auto work = [&] {
		for (size_t i; !failed.load() && (i = next.fetch_add(1)) < sws.size();) {
			Status st = step(sws[i]);
			if (!st.ok()) {
				std::lock_guard<std::mutex> g(mu);
				if (!failed.exchange(true))
					first = st;
			}
		}
	};
	std::vector<std::thread> pool;
	for (size_t k = 1; k < nthreads; k++)
		pool.emplace_back(work);
	work();
	for (auto &th : pool)
		th.join();
	return first;
}

Result<std::string> cpu_mask_of_list(const std::string &online)
{
	std::vector<uint32_t> words;
	auto bad = [&] { return make_error("not a CPU list: '" + online + "' (want e.g. 0-1 or 0,2-5)"); };
	size_t i = 0;
	const std::string s = online.substr(0, online.find_last_not_of(" \n") + 1);
	if (s.empty())
		return bad();
	while (i < s.size()) {
		size_t used = 0;
		unsigned long a, b;
		try {
			a = std::stoul(s.substr(i), &used);
		} catch (...) {
			return bad();
		}
		i += used;
		b = a;
		if (i < s.size() && s[i] == '-') {
			try {
				b = std::stoul(s.substr(++i), &used);
			} catch (...) {
				return bad();
			}
			i += used;
		}
		if (b < a || b >= 8192)
			return bad();
		for (unsigned long c = a; c <= b; c++) {
			if (words.size() <= c / 32)
				words.resize(c / 32 + 1, 0);
			words[c / 32] |= 1u << (c % 32);
		}
		if (i < s.size() && s[i++] != ',')
			return bad();
	}
	std::string out;
	for (size_t w = words.size(); w-- > 0;) {
		char buf[16];
		std::snprintf(buf, sizeof(buf), w + 1 == words.size() ? "%x" : ",%08x", words[w]);
		out += buf;
	}
	return out;
}

// IPv6 off in namespace `ns` before any interface of it exists: no router solicitations or MLD
// reports for a switch to drop as not IPv4.
static Status ipv6_off(const std::string &ns)
{
	NetnsScope in(ns);
	QN_TRY(in.status());
	QN_TRY(write_sysctl("net/ipv6/conf/all/disable_ipv6", "1"));
	QN_TRY(write_sysctl("net/ipv6/conf/default/disable_ipv6", "1"));
	return ok_status();
}

// RPS on switch `sw`'s ports: a frame a port receives through the veth (netif_rx) is processed
// on the CPU its flow hashes to among `mask`, not on the CPU that sent it. A flow keeps one CPU
// per port (no reordering). sysfs shows a device only inside its namespace: one `ip netns exec`.
static Status set_rps(const Topology &t, int sw, const std::string &mask)
{
	std::string script = "set -e\n";
	for (int pi : t.ports_of(sw))
		script += "for f in /sys/class/net/" + t.ports[size_t(pi)].ifname + "/queues/rx-*/rps_cpus; do echo " +
			  mask + " > \"$f\"; done\n";
	QN_TRY(run_ok({"ip", "netns", "exec", t.netns(sw), "sh", "-c", script}));
	return ok_status();
}

// The shapers of one switch's egress ports at dilation d: HTB with a control and a data leaf,
// a bfifo under each (a tbf pause gate under a switch-facing port's data leaf). Every line is
// a `replace`, so the same batch without the root re-shapes a running switch
// (topo_up_in_place).
static std::string htb_batch(const Topology &t, const Node &n, const Dilation &d, bool root)
{
	std::string batch;
	for (int pi : t.ports_of(n.id)) {
		const Port &p = t.ports[size_t(pi)];
		const Link &l = t.links[size_t(p.link)];
		HtbPlan h = plan_htb(l.rate_bps, l.mtu, n.buffer_bytes, d);
		std::string common = " burst " + std::to_string(h.burst_bytes) + " cburst " +
				     std::to_string(h.burst_bytes) + " overhead 24 mpu 84 quantum " +
				     std::to_string(h.quantum_bytes);
		if (root) // HTB's root has no rate (and no change operation): made once
			batch += "qdisc replace dev " + p.ifname + " root handle 1: htb default 20\n";
		batch += "class replace dev " + p.ifname + " parent 1: classid 1:1 htb rate " + bits(h.rate_bps) +
			 " ceil " + bits(h.rate_bps) + common + "\n";
		batch += "class replace dev " + p.ifname + " parent 1:1 classid 1:10 htb rate " +
			 bits(h.leaf_rate_bps) + " ceil " + bits(h.rate_bps) + " prio 0" + common + "\n";
		batch += "class replace dev " + p.ifname + " parent 1:1 classid 1:20 htb rate " +
			 bits(h.leaf_rate_bps) + " ceil " + bits(h.rate_bps) + " prio 1" + common + "\n";
		batch += "qdisc replace dev " + p.ifname + " parent 1:10 handle 10: bfifo limit " +
			 std::to_string(h.fifo_limit_bytes) + "\n";
		// A switch-facing port's data leaf is its pause gate (tcgate.h): a PAUSE from the
		// neighbouring switch closes it, so the paused backlog stays in this queue.
		if (t.nodes[size_t(p.peer_node)].kind == NodeKind::Switch)
			batch += gate_tc_line(p.ifname, gate_config(h.rate_bps, l.mtu, h.fifo_limit_bytes));
		else
			batch += "qdisc replace dev " + p.ifname + " parent 1:20 handle 20: bfifo limit " +
				 std::to_string(h.fifo_limit_bytes) + "\n";
	}
	return batch;
}

// Change the D of a running topology in place (the same topology text, brought up with the
// same options but another D): what depends on D is re-made, the namespaces, veths, addresses,
// host programs and cables stay. That is the shapers (htb_batch), the switch programs (D is in
// their read-only data: each is loaded again, with fresh maps and the topology's settings, as
// at `up`), the dequeue marks pending between hops (cleared), switchd (it reads D when it
// starts) and the meta file. About ten times faster than down and up on the 26-host star
// (0.4 s against 4 s: docs/experiments.md "Changing D in place"), which calibration and every INVALID attempt's
// retry at a larger D pay. The meta file is removed first and written last: a failure part-way
// leaves a topology that is not healthy, which the next `up` re-makes from scratch.
static Status topo_up_in_place(const Topology &t, const UpOptions &o, const std::string &meta)
{
	stop_switchd(t.name);
	unlink(meta_path(t.name).c_str());
	QN_TRY(ensure_topology_bpf(t));
	const Status loaded = for_each_switch(t, [&](int sw) -> Status {
		const Node &n = t.nodes[size_t(sw)];
		QN_TRY(run_ok({"tc", "-n", t.netns(n.id), "-batch", "-"}, htb_batch(t, n, o.dilation, false)));
		// load_switch makes the recirculation veth pair again
		QN_TRY(run_ok({"ip", "-n", t.netns(n.id), "link", "del", n.name + "-rc"}));
		return load_switch(t, n.id, o.dilation);
	});
	if (!loaded.ok())
		return loaded;
	{
		int fd = bpf_obj_get(dqmarks_pin(t).c_str());
		if (fd >= 0) {
			bpf_map_info info{};
			uint32_t len = sizeof(info);
			if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) {
				std::vector<unsigned char> next(info.key_size);
				// delete the first key until none is left (bounded by the map's size)
				for (uint32_t i = 0; i <= info.max_entries && bpf_map_get_next_key(fd, nullptr, next.data()) == 0; i++)
					bpf_map_delete_elem(fd, next.data());
			}
			close(fd);
		}
	}
	return finish_up(t, o, meta);
}

Status topo_up(const Topology &t, const UpOptions &o)
{
	if (geteuid() != 0)
		return make_error("topo up needs root (namespaces, tc, BPF)");
	if (has_rxe_hosts(t) && o.dilation.factor() != 1.0)
		return make_error("topology " + t.name + " has rxe hosts (stack=rxe): rdma_rxe cannot be slowed down, "
				  "so it runs at D = 1 (--dilation 1; shape its links at or below 100 Mbit/s, docs/agent.md)");
	std::string text = t.to_text();
	char dil[32];
	std::snprintf(dil, sizeof(dil), "%.6g", o.dilation.factor());
	std::string meta = std::string("dilation ") + dil + "\nsource " + t.source + "\n" + up_flags_meta(t, o);
	{
		auto old = read_file(state_path(t.name));
		auto old_meta = read_file(meta_path(t.name));
		if (old && old_meta && *old == text && *old_meta == meta && healthy(t)) {
			std::fprintf(stderr, "topology %s is already up\n", t.name.c_str());
			return ok_status();
		}
		// The same topology and options at another D: changed in place.
		auto rest = [](const std::string &m) { return m.substr(std::min(m.size(), m.find('\n'))); };
		if (old && old_meta && *old == text && rest(*old_meta) == rest(meta) && healthy(t)) {
			Status st = topo_up_in_place(t, o, meta);
			if (st.ok())
				return st;
			std::fprintf(stderr, "topology %s: changing D in place failed (%s); bringing it up again\n",
				     t.name.c_str(), st.error().message.c_str());
		}
	}
	// Whatever is there (a different topology of this name, or a half-made one) goes first.
	QN_TRY(topo_down(t.name));
	mkdir(kStateDir, 0755);
	QN_TRY(ensure_bpffs());

	// 1. namespaces, IPv6 off before any interface exists (no RS/MLD noise in the counters).
	std::string batch;
	for (const auto &n : t.nodes)
		if (!t.netns(n.id).empty()) // an rxe host in the initial namespace has none
			batch += "netns add " + t.netns(n.id) + "\n";
	QN_TRY(run_ok({"ip", "-batch", "-"}, batch));
	for (const auto &n : t.nodes) {
		if (t.netns(n.id).empty())
			continue;
		QN_TRY(ipv6_off(t.netns(n.id)));
	}

	// 2. veth pairs, created directly inside their namespaces with explicit ifindex and MAC.
	batch.clear();
	const bool with_cables = o.cables && !cable_links(t).empty();
	if (with_cables) {
		QN_TRY(run_ok({"ip", "netns", "add", cable_netns(t)}));
		// IPv6 off there too before its veths exist: with it on, each cable end sent router
		// solicitations and MLD reports straight to the switch port it faces, which dropped
		// them as not_ipv4 in the runs (k=8: 45-132 a run).
		QN_TRY(ipv6_off(cable_netns(t)));
	}
	auto in_ns = [&](int node) { return t.netns(node).empty() ? std::string() : " netns " + t.netns(node); };
	for (size_t li = 0; li < t.links.size(); li++) {
		const Link &l = t.links[li];
		const Port *a = nullptr, *b = nullptr;
		for (const auto &p : t.ports)
			if (p.link == int(li))
				(a ? b : a) = &p;
		if (with_cables && is_cable_link(t, l)) {
			CableSpec c = cable_spec(t, int(li));
			const Port *ends[2] = {a, b};
			for (int k = 0; k < 2; k++)
				batch += "link add " + ends[k]->ifname + " index " + std::to_string(ends[k]->ifindex) +
					 " mtu " + std::to_string(l.mtu) + " address " + mac_to_string(ends[k]->mac) +
					 " netns " + t.netns(ends[k]->node) + " type veth peer name " + c.ifname[k] +
					 " index " + std::to_string(c.ifindex[k]) + " mtu " + std::to_string(l.mtu) +
					 " netns " + c.netns + "\n";
			continue;
		}
		batch += "link add " + a->ifname + " index " + std::to_string(a->ifindex) + " mtu " +
			 std::to_string(l.mtu) + " address " + mac_to_string(a->mac) + in_ns(a->node) +
			 " type veth peer name " + b->ifname + " index " + std::to_string(b->ifindex) + " mtu " +
			 std::to_string(l.mtu) + " address " + mac_to_string(b->mac) + in_ns(b->node) + "\n";
	}
	QN_TRY(run_ok({"ip", "-batch", "-"}, batch));

	// 3. per namespace: links up; hosts get their address, an on-link gateway and a static
	//    neighbour for it (the switch port's MAC), so no ARP is ever needed.
	for (const auto &n : t.nodes) {
		if (t.netns(n.id).empty()) {
			QN_TRY(initns_host_up(t, n.id));
			continue;
		}
		batch = "link set lo up\n";
		for (int pi : t.ports_of(n.id)) {
			const Port &p = t.ports[size_t(pi)];
			batch += "link set " + p.ifname + " up\n";
			if (n.kind == NodeKind::Host) {
				const Port &peer = t.ports[size_t(p.peer_port)];
				batch += "addr add " + ip_to_string(n.ip) + "/32 dev " + p.ifname + "\n";
				batch += "neigh replace " + std::string(kGatewayIp) + " lladdr " + mac_to_string(peer.mac) +
					 " dev " + p.ifname + " nud permanent\n";
				batch += "route add default via " + std::string(kGatewayIp) + " dev " + p.ifname +
					 " onlink\n";
			}
		}
		QN_TRY(run_ok({"ip", "-n", t.netns(n.id), "-batch", "-"}, batch));
	}

	if (with_cables) {
		batch = "link set lo up\n";
		for (int li : cable_links(t)) {
			CableSpec c = cable_spec(t, li);
			for (int k = 0; k < 2; k++)
				batch += "link set " + c.ifname[k] + " up\n";
		}
		QN_TRY(run_ok({"ip", "-n", cable_netns(t), "-batch", "-"}, batch));
		for (int li : cable_links(t))
			QN_TRY(attach_cable_xdp(t, cable_spec(t, li)));
	}

	std::string rps_mask;
	if (o.rps) {
		auto online = read_file("/sys/devices/system/cpu/online");
		if (!online)
			return online.error();
		auto m = cpu_mask_of_list(*online);
		if (!m)
			return m.error();
		rps_mask = *m;
	}
	// 4. and 5. per switch, on every CPU: HTB on every egress port, RPS on its ports if asked,
	// then the switch programs:
	// load, pin, fill, validate, attach (the topology's departure dispatcher first).
	QN_TRY(ensure_topology_bpf(t));
	const Status loaded = for_each_switch(t, [&](int sw) -> Status {
		QN_TRY(run_ok({"tc", "-n", t.netns(sw), "-batch", "-"}, htb_batch(t, t.nodes[size_t(sw)], o.dilation, true)));
		if (o.rps)
			QN_TRY(set_rps(t, sw, rps_mask));
		return load_switch(t, sw, o.dilation);
	});
	if (!loaded.ok())
		return loaded;

	// 6. host steering (skipped where the MTU is too large for native XDP on veth).
	if (o.attach_steering) {
		for (const auto &n : t.nodes) {
			if (n.kind != NodeKind::Host || is_rxe_stack(n.stack))
				continue;
			const Link &l = t.links[size_t(t.ports[size_t(t.ports_of(n.id)[0])].link)];
			if (l.mtu > 3506)
				continue;
			QN_TRY(attach_steering(t, n.id));
		}
	}

	// 6b. Soft-RoCE hosts: rdma_rxe on the veth, fq and the qn_rxe programs (docs/agent.md).
	for (const auto &n : t.nodes)
		if (n.kind == NodeKind::Host && is_rxe_stack(n.stack))
			QN_TRY(rxe_host_up(t, n.id));

	return finish_up(t, o, meta);
}

// The last step of `up`: the state files (the meta file marks the topology complete), then the
// control process (PFC frames), which reads them.
static Status finish_up(const Topology &t, const UpOptions &o, const std::string &meta)
{
	const std::string text = t.to_text();
	QN_TRY(write_file(meta_path(t.name), meta));
	if (o.owned)
		QN_TRY(write_file(owner_path(t.name), process_identity(getpid()) + "\n"));
	else
		unlink(owner_path(t.name).c_str());
	QN_TRY(write_file(state_path(t.name), text));
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return sys_error(errno, "readlink /proc/self/exe");
	self[n] = '\0';
	size_t switches = 0;
	for (const auto &nd : t.nodes)
		switches += nd.kind == NodeKind::Switch;
	return spawn_switchd(self, t.name, switches);
}

bool is_cable_link(const Topology &t, const Link &l)
{
	return l.delay_ns > 0 && t.nodes[size_t(l.a)].kind == NodeKind::Switch &&
	       t.nodes[size_t(l.b)].kind == NodeKind::Switch;
}

std::string cable_netns(const Topology &t) { return "qn-" + t.name + "-cable-ns"; }

std::vector<CableSpec> cable_specs(const Topology &t)
{
	std::vector<CableSpec> v;
	if (!netns_exists(cable_netns(t)))
		return v;
	for (int li : cable_links(t))
		v.push_back(cable_spec(t, li));
	return v;
}

Status topo_down(const std::string &name)
{
	stop_switchd(name);
	rxe_hosts_down(name);
	std::string prefix = "qn-" + name + "-";
	std::string batch;
	for (const auto &ns : list_netns())
		if (ns.rfind(prefix, 0) == 0)
			batch += "netns del " + ns + "\n";
	Status st = ok_status();
	if (!batch.empty()) {
		auto r = run({"ip", "-force", "-batch", "-"}, batch);
		if (!r)
			st = r.error();
	}
	for (const auto &ns : list_netns())
		if (ns.rfind(prefix, 0) == 0)
			st = make_error("namespace " + ns + " is still there after 'ip netns del'");
	Status pins = remove_tree(topo_pin_dir(name));
	if (!pins.ok())
		st = pins;
	unlink(state_path(name).c_str());
	unlink(meta_path(name).c_str());
	unlink(owner_path(name).c_str());
	unlink(switchd_log_path(name).c_str());
	return st;
}

std::vector<std::string> running_topologies()
{
	std::vector<std::string> out;
	auto r = run({"ls", "-1", kStateDir});
	if (!r || r->status != 0)
		return out;
	std::istringstream in(r->out);
	std::string f;
	while (std::getline(in, f))
		if (f.size() > 5 && f.substr(f.size() - 5) == ".topo")
			out.push_back(f.substr(0, f.size() - 5));
	std::sort(out.begin(), out.end());
	return out;
}

std::vector<std::string> orphaned_topologies()
{
	std::vector<std::string> out;
	for (const auto &n : running_topologies()) {
		auto owner = read_file(owner_path(n));
		if (!owner)
			continue;
		std::istringstream is(*owner);
		long pid = 0;
		is >> pid;
		std::string id = *owner;
		while (!id.empty() && (id.back() == '\n' || id.back() == ' '))
			id.pop_back();
		if (pid <= 0 || process_identity(pid_t(pid)) != id)
			out.push_back(n);
	}
	return out;
}

Status topo_down_all()
{
	Status st = ok_status();
	std::vector<std::string> names = running_topologies();
	// Half-made topologies have no state file: find them by namespace prefix.
	for (const auto &ns : list_netns()) {
		if (ns.rfind("qn-", 0) != 0)
			continue;
		auto dash = ns.find('-', 3);
		if (dash != std::string::npos)
			names.push_back(ns.substr(3, dash - 3));
	}
	std::sort(names.begin(), names.end());
	names.erase(std::unique(names.begin(), names.end()), names.end());
	for (const auto &n : names) {
		Status s = topo_down(n);
		if (!s.ok())
			st = s;
	}
	Status pins = remove_tree(kPinRoot);
	if (!pins.ok())
		st = pins;
	return st;
}

Result<Topology> load_running(const std::string &name)
{
	auto text = read_file(state_path(name));
	if (!text)
		return make_error("topology '" + name + "' is not up (no " + state_path(name) + ")");
	auto t = parse_topology(*text, state_path(name));
	if (!t)
		return t.error();
	if (auto meta = read_file(meta_path(name))) {
		auto pos = meta->find("source ");
		if (pos != std::string::npos) {
			auto end = meta->find('\n', pos);
			t->source = meta->substr(pos + 7, end == std::string::npos ? std::string::npos : end - pos - 7);
		}
	}
	return t;
}

Result<Dilation> running_dilation(const std::string &name)
{
	auto meta = read_file(meta_path(name));
	if (!meta)
		return meta.error();
	double d = 1.0;
	if (std::sscanf(meta->c_str(), "dilation %lf", &d) != 1)
		return make_error(meta_path(name) + ": no dilation line");
	return Dilation::make(d);
}

Result<std::string> topo_show(const std::string &only, bool detail)
{
	std::ostringstream o;
	auto names = running_topologies();
	if (!only.empty()) {
		if (std::find(names.begin(), names.end(), only) == names.end())
			return make_error("no running topology named '" + only + "' (quench topo show lists them)");
		names = {only};
	}
	if (names.empty())
		o << "no topology is up\n";
	for (const auto &n : names) {
		auto t = load_running(n);
		if (!t)
			return t.error();
		auto d = running_dilation(n);
		size_t present = 0;
		for (const auto &node : t->nodes)
			present += netns_exists(t->netns(node.id));
		const bool all = detail || t->nodes.size() <= kShowAllNodes;
		o << (all ? t->describe() : t->summary());
		o << "  dilation " << (d ? d->factor() : 0.0) << ", namespaces present " << present << "/"
		  << t->nodes.size() << ", pins " << kPinRoot << "/" << n << "/\n";
		const auto cables = cable_specs(*t);
		if (all) {
			for (const CableSpec &c : cables) {
				const Link &l = t->links[size_t(c.link)];
				o << "  cable " << c.name << ": " << t->nodes[size_t(l.a)].name << " <-> "
				  << t->nodes[size_t(l.b)].name << " delay " << format_time(c.delay_ns) << " (" << c.netns
				  << ": " << c.ifname[0] << ", " << c.ifname[1] << "; carried while an engine runs)\n";
			}
		} else if (!cables.empty()) {
			std::map<uint64_t, size_t> by_delay;
			for (const CableSpec &c : cables)
				by_delay[c.delay_ns]++;
			o << "  cables    " << cables.size() << " in namespace " << cables.front().netns
			  << ", carried while an engine runs:";
			for (const auto &[delay, count] : by_delay)
				o << " " << count << " of " << format_time(delay);
			o << "\n";
		}
		o << "\n";
	}
	return o.str();
}

} // namespace qn
