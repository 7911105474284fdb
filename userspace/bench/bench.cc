// bench.cc - switch benchmark (docs/PERFORMANCE.md).
#include "bench/bench.h"

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ifaddrs.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <sstream>
#include <pthread.h>
#include <sched.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench/testrun.h"
#include "common/abi.h"
#include "control/bringup.h"
#include "control/exec.h"
#include "control/tcgate.h"
#include "control/netns.h"
#include "control/rawsock.h"
#include "common/units.h"
#include "control/swcfg.h"
#include "control/switch_loader.h"
#include "qn_bare.skel.h"
#include "qn_switch.skel.h"

namespace qn {
namespace {

const char *kBenchTopo = R"(name qnbench
defaults rate=100Gbps mtu=2048 delay=0ns
host h1
host h2
switch s1
link h1 s1
link h2 s1
)";

// Return: tx packets of `ifname` in namespace `ns`.
Result<uint64_t> tx_packets(const std::string &ns, const std::string &ifname)
{
	auto c = if_counters(ns, ifname);
	if (!c)
		return c.error();
	return c->tx_packets;
}

struct Guard {
	std::string name;
	~Guard() { (void)topo_down(name); }
};

Result<double> measure_mpps(const Topology &t, const BenchOptions &o, const std::vector<Bytes> &frames)
{
	int h1 = t.find("h1"), s1 = t.find("s1");
	const Port &out = t.ports[size_t(t.ports_of(s1)[1])];
	std::atomic<bool> stop{false};
	std::vector<std::thread> threads;
	std::vector<Status> errs(size_t(o.senders), ok_status());
	for (int i = 0; i < o.senders; i++) {
		threads.emplace_back([&, i] {
			// Pin sender i to the last CPUs: the forwarding softirqs run on the sender's CPU
			// (veth -> netif_rx -> backlog), so this fixes where the measured work runs.
			long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(size_t((ncpu - 1 - i % ncpu + ncpu) % ncpu), &set);
			pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
			auto s = RawSocket::open(t.netns(h1), "h1-eth0", true);
			if (!s) {
				errs[size_t(i)] = s.error();
				return;
			}
			while (!stop.load(std::memory_order_relaxed)) {
				auto r = s->send_batch(frames);
				if (!r) {
					errs[size_t(i)] = r.error();
					return;
				}
			}
		});
	}
	std::this_thread::sleep_for(std::chrono::milliseconds(300)); // warm-up
	auto a = tx_packets(t.netns(s1), out.ifname);
	auto t0 = std::chrono::steady_clock::now();
	std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
	auto b = tx_packets(t.netns(s1), out.ifname);
	auto t1 = std::chrono::steady_clock::now();
	stop = true;
	for (auto &th : threads)
		th.join();
	for (const auto &e : errs)
		if (!e.ok())
			return e.error();
	if (!a)
		return a.error();
	if (!b)
		return b.error();
	double dt = std::chrono::duration<double>(t1 - t0).count();
	return double(*b - *a) / dt / 1e6;
}

Status attach_sink(const Topology &t)
{
	int h2 = t.find("h2");
	qn_bare *skel = qn_bare__open_and_load();
	if (!skel)
		return sys_error(errno, "load qn_bare (sink)");
	Status st = ok_status();
	{
		NetnsScope ns(t.netns(h2));
		if (!ns.ok())
			st = ns.status();
		else if (int err = bpf_xdp_attach(int(if_nametoindex("h2-eth0")),
						  bpf_program__fd(skel->progs.qn_xdp_sink), XDP_FLAGS_DRV_MODE, nullptr))
			st = sys_error(err, "attach XDP sink on h2-eth0");
	}
	qn_bare__destroy(skel);
	return st;
}

// Fill a switch object's port and route maps (by name, so an older object of the same map
// layouts works too): port 100 (ingress, host-facing) forwards the frame's destination to lo.
Status testrun_setup(bpf_object *obj, const Bytes &frame)
{
	bpf_map *ports = bpf_object__find_map_by_name(obj, "qn_ports");
	bpf_map *fib = bpf_object__find_map_by_name(obj, "qn_fib");
	if (!ports || !fib)
		return make_error("the switch object has no qn_ports or qn_fib map");
	uint32_t in = 100, lo = 1;
	qn_port p{};
	p.port_no = 0;
	p.role = QN_ROLE_HOST;
	qn_port plo{};
	plo.port_no = 1;
	plo.role = QN_ROLE_HOST;
	plo.rate_bps = 100'000'000'000ULL; // the virtual queue drains between runs
	plo.burst_bytes = 1'000'000;
	uint32_t dst_be;
	std::memcpy(&dst_be, &frame[30], 4);
	qn_fib_key k{32, dst_be};
	qn_fib_val v{};
	v.n_nexthops = 1;
	v.nh[0].ifindex = lo;
	v.nh[0].port_no = 1;
	if (bpf_map_update_elem(bpf_map__fd(ports), &in, &p, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(ports), &lo, &plo, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(fib), &k, &v, BPF_ANY))
		return sys_error(errno, "fill the TEST_RUN switch's maps");
	return ok_status();
}

struct TimedProg {
	const char *label;
	int fd;
	uint32_t ingress, expect;
	std::vector<uint32_t> ns;
};

Result<std::string> testrun_costs(uint32_t repeat, const Bytes &frame, const std::string &baseline_obj)
{
	std::ostringstream o;
	qn_switch *sw = qn_switch__open_and_load();
	if (!sw)
		return sys_error(errno, "load qn_switch for TEST_RUN");
	// A second instance with the default settings written: every stage present, the default
	// ones on (admission, RED), test knobs off. The first has no settings (every stage off).
	qn_switch *swd = qn_switch__open_and_load();
	// The egress classifier on an instance of its own: its run records lo's net_device in the
	// instance's queue state, after which that instance's ingress reads the real qdisc instead
	// of the virtual queue (50-60 ns more, measured), and the ingress rows would not compare.
	qn_switch *swe = qn_switch__open_and_load();
	qn_bare *bare = qn_bare__open_and_load();
	bpf_object *old = nullptr;
	auto cleanup = [&] {
		qn_switch__destroy(sw);
		qn_switch__destroy(swd);
		qn_switch__destroy(swe);
		qn_bare__destroy(bare);
		bpf_object__close(old);
	};
	if (!swd || !swe || !bare) {
		cleanup();
		return sys_error(errno, "load qn_switch/qn_bare for TEST_RUN");
	}
	Status st = testrun_setup(sw->obj, frame);
	if (st.ok())
		st = testrun_setup(swd->obj, frame);
	if (st.ok())
		st = testrun_setup(swe->obj, frame);
	if (st.ok()) {
		// TEST_RUN never dequeues, so the buffer in use only grows: a buffer no run can fill.
		qn_swcfg c = default_swcfg(1'000'000'000'000ULL);
		finalize_swcfg(c);
		uint32_t zero = 0;
		if (bpf_map_update_elem(bpf_map__fd(swd->maps.qn_swcfg), &zero, &c, BPF_ANY))
			st = sys_error(errno, "write qn_swcfg");
	}
	uint32_t in = 100, lo = 1;
	bpf_map_update_elem(bpf_map__fd(bare->maps.qn_bare_port), &in, &lo, BPF_ANY);
	std::vector<TimedProg> progs = {
		{"bare redirect (ingress)", bpf_program__fd(bare->progs.qn_bare_ingress), in, 7, {}},
		{"quench ingress, no settings", bpf_program__fd(sw->progs.qn_tc_ingress), in, 7, {}},
		{"quench ingress, defaults", bpf_program__fd(swd->progs.qn_tc_ingress), in, 7, {}},
		{"quench egress classifier", bpf_program__fd(swe->progs.qn_tc_egress), 0, 0, {}},
	};
	if (st.ok() && !baseline_obj.empty()) {
		// An older build of the switch object (same port and route layouts): its ingress
		// program with no settings, timed interleaved with this build's.
		old = bpf_object__open_file(baseline_obj.c_str(), nullptr);
		if (!old || bpf_object__load(old))
			st = sys_error(errno, "load the baseline object " + baseline_obj);
		else if (bpf_program *pg = bpf_object__find_program_by_name(old, "qn_tc_ingress"); !pg)
			st = make_error(baseline_obj + " has no qn_tc_ingress");
		else if (st = testrun_setup(old, frame); st.ok())
			progs.push_back({"baseline ingress, no settings", bpf_program__fd(pg), in, 7, {}});
	}
	if (!st.ok()) {
		cleanup();
		return st.error();
	}
	// The ingress pipeline rewrites the frame (TTL, MACs), and TEST_RUN's repeat reruns the
	// program on the same buffer: after 63 runs TTL would expire and the cheaper drop path
	// would be timed. So time `repeat` separate single runs of each program, interleaved (one
	// run of each in turn, in ABBA order, so host noise hits all alike), and take the medians of the
	// kernel-measured durations.
	for (auto &p : progs)
		p.ns.reserve(repeat);
	for (uint32_t i = 0; i < repeat && st.ok(); i++)
		for (size_t j = 0; j < progs.size(); j++) {
			// ABBA: forward on even rounds, backward on odd ones, so no program always
			// runs right after another (cache warmth follows the order).
			TimedProg &p = progs[i % 2 ? progs.size() - 1 - j : j];
			auto r = test_run_tc(p.fd, frame, p.ingress, 0, 1);
			if (!r) {
				st = r.error();
				break;
			}
			if (r->retval != p.expect) {
				st = make_error(std::string("TEST_RUN of ") + p.label + ": verdict " + std::to_string(r->retval) +
						", expected " + std::to_string(p.expect));
				break;
			}
			p.ns.push_back(r->duration_ns);
		}
	cleanup();
	if (!st.ok())
		return st.error();
	char line[256];
	std::snprintf(line, sizeof(line),
		      "BPF_PROG_TEST_RUN, interleaved medians of %u single runs, %zu B RoCE frame (kernel-measured ns):\n",
		      repeat, frame.size());
	o << line;
	for (auto &p : progs) {
		std::nth_element(p.ns.begin(), p.ns.begin() + std::ptrdiff_t(p.ns.size() / 2), p.ns.end());
		std::snprintf(line, sizeof(line), "  %-30s %5u ns\n", p.label, p.ns[p.ns.size() / 2]);
		o << line;
	}
	return o.str();
}

} // namespace

// Force the egress depth of switch s1's ports toward node `peer` to `bytes` (the qdepth test
// knob; the switch setting test.qdepth must be on).
static Status force_depth(const Topology &t, int s1, int peer, uint64_t bytes)
{
	int fd = bpf_obj_get((switch_pin_dir(t, s1) + "/qn_test_qdepth").c_str());
	if (fd < 0)
		return sys_error(errno, "open the pinned qn_test_qdepth");
	int rc = 0;
	for (int p : t.ports_of(s1)) {
		if (t.ports[size_t(p)].peer_node != peer)
			continue;
		uint32_t key = uint32_t(t.ports[size_t(p)].port_no);
		qn_test_qdepth v{1, 1000, bytes};
		rc |= bpf_map_update_elem(fd, &key, &v, BPF_ANY);
	}
	close(fd);
	if (rc)
		return sys_error(errno, "write qn_test_qdepth");
	return ok_status();
}

Result<std::string> bench_switch(const BenchOptions &o)
{
	auto topo = parse_topology(kBenchTopo, "<bench>");
	if (!topo)
		return topo.error();
	const Topology &t = *topo;
	Guard guard{t.name};
	UpOptions uo;
	QN_TRY(topo_up(t, uo));
	QN_TRY(attach_sink(t));

	int h2 = t.find("h2"), s1 = t.find("s1");
	if (o.gate_leaf) {
		for (int pi : t.ports_of(s1)) {
			const Port &p = t.ports[size_t(pi)];
			if (p.peer_node != h2)
				continue;
			const Link &l = t.links[size_t(p.link)];
			HtbPlan h = plan_htb(l.rate_bps, l.mtu, t.nodes[size_t(s1)].buffer_bytes, uo.dilation);
			// the bfifo goes first: a qdisc cannot change kind under its handle
			QN_TRY(run_ok({"tc", "-n", t.netns(s1), "-batch", "-"},
				      "qdisc del dev " + p.ifname + " parent 1:20\n" +
					      gate_tc_line(p.ifname, gate_config(h.rate_bps, l.mtu, h.fifo_limit_bytes))));
		}
	}
	if (o.ecn_dequeue) {
		// RED decided in the departure hook for every ECT frame (the frames below are ECT(0)).
		auto c = read_swcfg(switch_pin_dir(t, s1));
		if (!c)
			return c.error();
		c->red.at_dequeue = 1;
		QN_TRY(write_swcfg(switch_pin_dir(t, s1), *c));
	}
	if (o.sfc) {
		// SFC on, the depth toward h2 forced to 2 x Q_Th: the trigger fires for every packet.
		auto c = read_swcfg(switch_pin_dir(t, s1));
		if (!c)
			return c.error();
		c->sfc.on = 1;
		c->sfc.tbf_ns = o.sfc_tbf_ns;
		c->sfc.cache = uint32_t(o.sfc_cache);
		c->sfc.est = o.sfc_est ? 1 : 0;
		c->sfc.est_tau_ns = 10'000;
		c->sfc.est_rate_bps = 0;
		c->test.qdepth = 1;
		QN_TRY(write_swcfg(switch_pin_dir(t, s1), *c));
		QN_TRY(force_depth(t, s1, h2, 2ULL * c->sfc.qth_bytes));
	}
	if (!o.sets.empty() || o.depth_bytes) {
		auto c = read_swcfg(switch_pin_dir(t, s1));
		if (!c)
			return c.error();
		for (const auto &[k, v] : o.sets)
			if (auto st = apply_swcfg(*c, k, v); !st)
				return make_error("bench switch --set " + k + "=" + v + ": " + st.error().to_string());
		if (auto st = validate_swcfg(*c); !st)
			return make_error("bench switch --set: " + st.error().to_string());
		if (o.depth_bytes)
			c->test.qdepth = 1;
		finalize_swcfg(*c);
		QN_TRY(write_swcfg(switch_pin_dir(t, s1), *c));
		if (o.depth_bytes)
			QN_TRY(force_depth(t, s1, h2, o.depth_bytes));
	}
	const Port &sp1 = t.ports[size_t(t.ports_of(s1)[0])];
	std::vector<Bytes> frames;
	for (int i = 0; i < 64; i++) {
		FrameSpec f;
		f.dst = sp1.mac;
		f.src = t.nodes[size_t(t.find("h1"))].mac;
		f.saddr = t.nodes[size_t(t.find("h1"))].ip;
		f.daddr = t.nodes[size_t(h2)].ip;
		f.sport = uint16_t(0xC000 + i);
		f.tos = o.tos >= 0 ? uint8_t(o.tos) : uint8_t(0x02 | (QN_DSCP_DATA << 2));
		size_t hdr = 14 + 20 + 8 + 12;
		f.payload_len = o.frame_bytes > hdr ? o.frame_bytes - hdr : 0;
		frames.push_back(build_frame(f));
	}

	std::vector<double> quench_mpps, bare_mpps;
	// ABBA order (quench, bare, bare, quench, ...) so a drift over the run (caches, CPU
	// frequency, a noisy neighbour) does not favour either variant.
	for (int r = 0; r < o.rounds; r++) {
		for (int k = 0; k < 2; k++) {
			bool quench_now = (k == 0) == (r % 2 == 0);
			if (!o.only.empty() && quench_now != (o.only == "quench"))
				continue;
			if (quench_now)
				QN_TRY(reattach_switch(t, s1));
			else
				QN_TRY(attach_bare(t, s1));
			auto m = measure_mpps(t, o, frames);
			if (!m)
				return m.error();
			(quench_now ? quench_mpps : bare_mpps).push_back(*m);
		}
	}
	// Medians: on a 2-vCPU VM single rounds swing by +-30% (host noise), and a median over
	// interleaved rounds is what survives it.
	auto mean = [](std::vector<double> v) {
		if (v.empty())
			return 0.0;
		std::sort(v.begin(), v.end());
		size_t n = v.size();
		return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	};
	std::ostringstream out;
	char line[512];
	std::snprintf(line, sizeof(line),
		      "quench bench switch: %zu B frames, %d AF_PACKET sender(s) h1 -> s1 -> h2 (star, HTB at "
		      "100 Gbit/s, XDP sink on h2), %d rounds x %.1f s per variant, ABBA order; RED/ECN at %s%s%s\n",
		      frames[0].size(), o.senders, o.rounds, o.seconds, o.ecn_dequeue ? "dequeue" : "enqueue",
		      o.gate_leaf ? "; s1 -> h2 data leaf: the open pause gate (tbf)" : "",
		      o.sfc ? ("; SFC on, depth forced to 2 Q_Th, T_BF " + format_time(o.sfc_tbf_ns) +
			       (o.sfc_tbf_ns ? "" : " (every packet cloned into a BTS)") +
				(o.sfc_cache ? ", pause cache lookup on" : ", pause cache off") +
				(o.sfc_est ? ", incast estimator on" : "")).c_str() : "");
	out << line;
	if (!o.sets.empty() || o.depth_bytes || o.tos >= 0) {
		std::string s;
		for (const auto &[k, v] : o.sets)
			s += " " + k + "=" + v;
		std::snprintf(line, sizeof(line), "settings:%s%s%s\n", s.c_str(),
			      o.depth_bytes ? (" depth forced to " + std::to_string(o.depth_bytes) + " B").c_str() : "",
			      o.tos >= 0 ? (" TOS " + std::to_string(o.tos)).c_str() : "");
		out << line;
	}
	out << bpf_stats_warning();
	out << "variant                 ";
	for (int r = 0; r < o.rounds; r++) {
		std::snprintf(line, sizeof(line), " round%-3d", r + 1);
		out << line;
	}
	out << "  median Mpps\n";
	for (auto [name, v] : {std::pair{"bare redirect", &bare_mpps}, std::pair{"quench switch", &quench_mpps}}) {
		if (v->empty())
			continue;
		std::snprintf(line, sizeof(line), "%-24s", name);
		out << line;
		for (double x : *v) {
			std::snprintf(line, sizeof(line), " %8.3f", x);
			out << line;
		}
		std::snprintf(line, sizeof(line), "  %11.3f\n", mean(*v));
		out << line;
	}
	if (o.only.empty()) {
		double ratio = mean(bare_mpps) > 0 ? mean(quench_mpps) / mean(bare_mpps) : 0;
		std::snprintf(line, sizeof(line), "ratio quench/bare (medians): %.3f (goal >= 0.80)\n", ratio);
		out << line;
	} else {
		out << "only " << o.only << " ran (--only): no ratio\n";
	}
	if (!o.only.empty())
		return out.str(); // a profile of the forwarding path alone
	auto costs = testrun_costs(o.testrun_repeat, frames[0], o.baseline_obj);
	if (!costs)
		return costs.error();
	out << *costs;
	return out.str();
}

} // namespace qn
