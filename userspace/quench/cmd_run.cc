// cmd_run.cc - `quench run EXPERIMENT` (an experiment end to end: calibration, every scheme on
// the identical flow list, results folder with tables and plots) and `quench compare RUN_A
// RUN_B`. docs/experiments.md.
#include "quench/cmd_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <sys/utsname.h>
#include <unistd.h>
#include <vector>

#include "common/units.h"
#include "control/bringup.h"
#include "control/engine_desc.h"
#include "control/exec.h"
#include "control/experiment.h"
#include "control/flows.h"
#include "control/stats.h"
#include "control/swcfg.h"
#include "control/switch_loader.h"
#include "quench/cli.h"
#include "transport/cc/cc.h"
#include "transport/engine.h"
#include "transport/metrics.h"
#include "transport/traffic.h"

namespace {

using namespace qn;
using namespace qn::tp;
namespace fs = std::filesystem;

// SIGINT or SIGTERM: every engine run stops at its next loop iteration (RunOptions::stop), the
// topology is taken down and what was measured is written, marked interrupted.
volatile std::sig_atomic_t g_stop = 0;
bool stopped() { return g_stop != 0; }
Error interrupted() { return make_error("interrupted by a signal"); }

int die(const std::string &m)
{
	std::fprintf(stderr, "quench: %s\n", m.c_str());
	return 1;
}

double wall_s()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string f2(double v, const char *fmt = "%.2f")
{
	char b[64];
	std::snprintf(b, sizeof(b), fmt, v);
	return b;
}

std::string human_ns(uint64_t ns)
{
	if (ns >= 1'000'000)
		return f2(double(ns) / 1e6, "%.3g") + " ms";
	if (ns >= 1'000)
		return f2(double(ns) / 1e3, "%.3g") + " us";
	return std::to_string(ns) + " ns";
}

std::string human_bytes(double b)
{
	if (b >= 1e6)
		return f2(b / 1e6, "%.3g") + " MB";
	if (b >= 1e3)
		return f2(b / 1e3, "%.3g") + " KB";
	return f2(b, "%.0f") + " B";
}

// Progress on a TTY: one line rewritten in place; nothing otherwise (CI logs stay quiet).
struct Progress {
	bool on = false;
	double t0 = wall_s();
	double last = 0;
	void phase(const std::string &what, double expected_s = 0)
	{
		if (!on)
			return;
		std::fprintf(stderr, "\r\033[K[%6.1f s] %s%s", wall_s() - t0, what.c_str(),
			     expected_s > 0 ? (" (expected ~" + f2(expected_s, "%.0f") + " s)").c_str() : "");
		std::fflush(stderr);
	}
	void tick(const std::string &what, double expected_s)
	{
		double now = wall_s();
		if (!on || now - last < 0.25)
			return;
		last = now;
		phase(what, expected_s);
	}
	void done()
	{
		if (on)
			std::fprintf(stderr, "\r\033[K");
	}
};

// ---------------------------------------------------------------------------------------------
// The flow list

// ---------------------------------------------------------------------------------------------
// Calibration

// Timer jitter of this machine: spin for `ms` milliseconds reading the clock; in every 100 us
// window keep the largest gap between two reads (preemption, interrupts). Return: the p99 of
// those per-window maxima, wall ns.
uint64_t measure_jitter_ns(int ms)
{
	std::vector<uint64_t> maxima;
	auto now = [] { return qn::tp::mono_wall_ns(); };
	const uint64_t start = now(), end = start + uint64_t{1'000'000} * static_cast<uint64_t>(ms);
	uint64_t prev = start, win_start = start, win_max = 0;
	while (prev < end) {
		uint64_t t = now();
		win_max = std::max(win_max, t - prev);
		prev = t;
		if (t - win_start >= 100'000) {
			maxima.push_back(win_max);
			win_max = 0;
			win_start = t;
		}
	}
	std::sort(maxima.begin(), maxima.end());
	return percentile(maxima, 0.99);
}

struct Calibration {
	uint64_t jitter_wall_ns = 0;
	double capacity_wall_bps = 0;     // what the workload's senders moved at once at D=1 (payload, wall)
	double capacity_pair_wall_bps = 0; // what one host pair alone moved at D=1 (reported)
	size_t capacity_senders = 0;      // how many senders ran at once for capacity_wall_bps
	double d_pair = 0;                // the auto D one pair's capacity would give (reported)
	double offered_bps = 0;           // fabric bit/s the senders can offer at once
	double d_cpu = 0, d_timer = 0, d = 0;
	bool d_auto = false;
	bool adapt = false;                // retry CPU-bound INVALID attempts at a larger D (auto D, --adapt-from)
	bool d_clamped = false;           // auto D above the largest factor, clamped to it
	uint64_t base_rtt_min_ns = 0, base_rtt_max_ns = 0; // computed (common.md §4)
	uint64_t rtt_measured_ns = 0;     // ping-pong FCT of a 64 B message (median of 20)
	uint64_t rtt_expected_ns = 0;     // its standalone FCT
	double link_rate_ratio = 0;       // one line-rate flow's goodput / its payload line rate
	std::string pair;                 // the host pair calibrated
	uint64_t host_rate_bps = 0;
	uint32_t mtu = 0;
};

struct Ctx {
	Experiment x;
	Topology topo;
	Preset preset;
	bool have_preset = false;
	std::string name;                 // running topology name
	fs::path out;
	EngineOptions eo;
	Progress prog;
	bool quiet = false;
	bool up = false;
	double d_now = 0;                  // the D the topology runs at
	Calibration cal;
	std::vector<FlowSpec> flows;
	uint64_t hash = 0;
	bool interrupted = false;          // a signal stopped the run (summary and metadata say so)
};

Status bring_up(Ctx &c, double d)
{
	if (c.up) {
		QN_TRY(topo_down(c.name));
		c.up = false;
	}
	auto dl = Dilation::make(d);
	if (!dl)
		return dl.error();
	UpOptions uo;
	uo.dilation = *dl;
	QN_TRY(topo_up(c.topo, uo));
	c.up = true;
	c.d_now = d;
	return ok_status();
}

Result<std::unique_ptr<Engine>> engine(Ctx &c)
{
	auto t = load_running(c.name);
	if (!t)
		return t.error();
	auto d = running_dilation(c.name);
	if (!d)
		return d.error();
	return Engine::open(engine_desc(*t), *d, c.eo);
}

Status set_switches(Ctx &c, const std::vector<std::pair<std::string, std::string>> &kv)
{
	auto t = load_running(c.name);
	if (!t)
		return t.error();
	for (const Node &n : t->nodes) {
		if (n.kind != NodeKind::Switch)
			continue;
		const std::string dir = switch_pin_dir(*t, n.id);
		auto cfg = read_swcfg(dir);
		if (!cfg)
			return cfg.error();
		for (const auto &[k, v] : kv)
			QN_TRY(apply_swcfg(*cfg, k, v));
		QN_TRY(validate_swcfg(*cfg));
		QN_TRY(write_swcfg(dir, *cfg));
	}
	return ok_status();
}

Status calibrate(Ctx &c, double forced_d)
{
	Calibration &k = c.cal;
	std::vector<std::string> hosts;
	for (const auto &n : c.topo.nodes)
		if (n.kind == NodeKind::Host)
			hosts.push_back(n.name);
	if (hosts.size() < 2)
		return make_error(c.topo.source + ": an experiment needs at least two hosts");
	// The pair calibrated: the first flow's (the workload's own path).
	const std::string a = c.flows.front().src, b = c.flows.front().dst;
	k.pair = a + "->" + b;
	c.prog.phase("calibration: timer jitter");
	// three 100 ms measurements, the quietest one: a transient burst of preemption must not
	// set D for the whole run (the run's own validity check catches stalls during it)
	k.jitter_wall_ns = UINT64_MAX;
	for (int i = 0; i < 3; i++)
		k.jitter_wall_ns = std::min(k.jitter_wall_ns, measure_jitter_ns(100));
	// The fabric's base RTTs (computed, common.md §4) and its rates.
	{
		k.base_rtt_min_ns = UINT64_MAX;
		k.host_rate_bps = 0;
		k.mtu = UINT32_MAX;
		for (const auto &l : c.topo.links) {
			if (c.topo.nodes[size_t(l.a)].kind == NodeKind::Host || c.topo.nodes[size_t(l.b)].kind == NodeKind::Host)
				k.host_rate_bps = std::max(k.host_rate_bps, l.rate_bps);
			k.mtu = std::min(k.mtu, l.mtu);
		}
	}
	std::set<std::string> senders;
	for (const auto &f : c.flows)
		senders.insert(f.src);
	k.offered_bps = double(senders.size()) * double(k.host_rate_bps);
	// Base RTTs over every host pair of the flow list (common.md §4).
	auto base_rtts = [&](Engine &en) -> Status {
		for (const auto &f : c.flows) {
			auto p = en.path(f.src, f.dst);
			if (!p.ok)
				return make_error("no path from " + f.src + " to " + f.dst + " in " + c.topo.source);
			k.base_rtt_min_ns = std::min(k.base_rtt_min_ns, p.base_rtt_ns);
			k.base_rtt_max_ns = std::max(k.base_rtt_max_ns, p.base_rtt_ns);
		}
		return ok_status();
	};
	if (forced_d > 0) {
		k.d = forced_d;
	} else {
		k.d_auto = true;
		// CPU: how much the workload's senders move together at D = 1 (the engine, the
		// switch programs and the kernel's veths at full speed); D >= offered / that.
		c.prog.phase("calibration: capacity at D=1");
		QN_TRY(bring_up(c, 1));
		auto e = engine(c);
		if (!e)
			return e.error();
		QN_TRY(base_rtts(**e));
		QN_TRY(set_switches(c, {{"pfc", "on"}}));
		RunOptions ro;
		ro.qp.cc.scheme = "none";
		ro.stop = stopped;
		ro.timeout_ns = 4'000'000'000ULL;
		// Return: the payload bit/s a flow list moved at once (total bytes over the span from
		// the first post to the last completion), the best of three runs of about 0.1 s (as
		// for the jitter: one stall of this VM, up to 14 ms, must not set D for the whole
		// run), or 0 when a flow did not complete.
		auto aggregate = [&](const std::vector<FlowSpec> &fl) -> Result<double> {
			double best = 0;
			for (int i = 0; i < 3; i++) {
				auto rep = run_flows(**e, fl, ro);
				if (!rep)
					return rep.error();
				if (rep->interrupted)
					return interrupted();
				uint64_t first = UINT64_MAX, last = 0, bytes = 0;
				for (const auto &r : rep->flows) {
					if (!r.done || !r.fct_ns)
						return 0.0;
					first = std::min(first, r.post_ns);
					last = std::max(last, r.post_ns + r.fct_ns);
					bytes += r.spec.size;
				}
				if (last > first)
					best = std::max(best, double(bytes) * 8 / (double(last - first) / 1e9));
			}
			return best;
		};
		// One pair alone (reported: what the engine moves for a single flow).
		auto pair = aggregate({FlowSpec{0, a, b, 16'000'000, 0, 100}});
		if (!pair)
			return pair.error();
		k.capacity_pair_wall_bps = *pair;
		// The experiment's own concurrency: every sender of the workload at once, 16 MB in all
		// (at least 1 MB each). This is the load the engine, the switch programs and the veths
		// carry together in the run; one pair alone leaves the per-host work of the loop and
		// the other senders' kernel paths out. Each sender sends to the next host of the
		// topology (a ring), so no receiver takes more than one sender's load: at the run's D
		// no host receives more than its link rate, while an incast at D = 1 would overrun
		// the receiver's socket (drops, retransmissions) in a way the dilated run never does.
		std::vector<FlowSpec> conc;
		std::set<std::string> seen;
		for (const auto &f : c.flows) {
			if (!seen.insert(f.src).second)
				continue;
			const size_t at = size_t(std::find(hosts.begin(), hosts.end(), f.src) - hosts.begin());
			conc.push_back(FlowSpec{conc.size(), f.src, hosts[(at + 1) % hosts.size()], 0, 0, 100});
		}
		for (auto &f : conc)
			f.size = std::max<uint64_t>(1'000'000, 16'000'000 / conc.size());
		auto all = aggregate(conc);
		if (!all)
			return all.error();
		k.capacity_wall_bps = *all;
		k.capacity_senders = conc.size();
		e->reset(); // close the engine before the topology comes up again at D
		if (k.capacity_wall_bps <= 0)
			return make_error("calibration: the capacity flows (" + std::to_string(conc.size()) +
					  " senders at once) did not complete at D=1 within 4 s");
	}
	if (k.d_auto) {
		k.adapt = true;
		// DESIGN.md §5: D >= offered / capacity (CPU) and the timer jitter must be a few
		// percent (5%) of the dilated base RTT; a factor 2 of margin, rounded up to 10s.
		k.d_cpu = k.offered_bps / k.capacity_wall_bps;
		k.d_timer = double(k.jitter_wall_ns) / (0.05 * double(k.base_rtt_min_ns));
		double d = 2 * std::max({k.d_cpu, k.d_timer, 1.0});
		k.d = std::ceil(d / 10) * 10;
		// the D the one-pair capacity would give (reported next to it, for comparison)
		if (k.capacity_pair_wall_bps > 0)
			k.d_pair = std::ceil(2 * std::max({k.offered_bps / k.capacity_pair_wall_bps, k.d_timer, 1.0}) / 10) * 10;
		k.d_clamped = k.d > 10000;
		k.d = std::min(k.d, 10000.0); // Dilation's largest factor
	}
	c.prog.phase("calibration: base RTT and link rate at D=" + f2(k.d, "%g"));
	QN_TRY(bring_up(c, k.d));
	QN_TRY(set_switches(c, {{"pfc", "on"}}));
	auto e = engine(c);
	if (!e)
		return e.error();
	if (!k.d_auto)
		QN_TRY(base_rtts(**e));
	{
		RunOptions ro;
		ro.qp.cc.scheme = "none";
		ro.stop = stopped;
		ro.serial_per_pair = true;
		std::vector<FlowSpec> pp;
		for (uint64_t i = 0; i < 21; i++)
			pp.push_back(FlowSpec{i, a, b, 64, 0, 100});
		auto rep = run_flows(**e, pp, ro);
		if (!rep)
			return rep.error();
		if (rep->interrupted)
			return interrupted();
		std::vector<uint64_t> f;
		for (const auto &r : rep->flows)
			if (r.done)
				f.push_back(r.fct_ns);
		std::sort(f.begin(), f.end());
		k.rtt_measured_ns = percentile(f, 0.5);
		k.rtt_expected_ns = rep->flows[0].standalone_ns;
	}
	{
		RunOptions ro;
		ro.qp.cc.scheme = "none";
		ro.stop = stopped;
		// 50 BDPs of the pair, at least 1 MB: long enough for the rate, short enough to be quick
		const uint64_t size = std::max<uint64_t>(1'000'000, 50 * k.host_rate_bps / 8 * k.base_rtt_max_ns / 1'000'000'000ULL);
		auto rep = run_flows(**e, {FlowSpec{0, a, b, size, 0, 100}}, ro);
		if (!rep)
			return rep.error();
		if (rep->interrupted)
			return interrupted();
		const FlowResult &r = rep->flows[0];
		if (r.done && r.fct_ns > r.standalone_ns / 2)
			k.link_rate_ratio = double(r.standalone_ns) / double(r.fct_ns);
	}
	return ok_status();
}

// ---------------------------------------------------------------------------------------------
// One scheme

struct PortQ {
	std::string label;
	SeriesStats st;
};

struct SchemeResult {
	std::string scheme;
	std::string cc_describe;
	std::vector<std::string> derived_notes;
	std::vector<std::pair<std::string, std::string>> switch_settings;
	RunReport rep;
	size_t done = 0, bad = 0;
	uint64_t delivered = 0, sent_bytes = 0;
	double goodput_gbps = 0;
	std::vector<double> sd;            // sorted slowdowns of completed flows
	std::vector<uint64_t> fct;         // sorted FCTs
	std::vector<SizeBin> bins;
	size_t nbins = 0;
	std::vector<PortQ> ports;          // by peak, descending
	std::vector<QueueSeries> series;
	std::vector<std::pair<uint64_t, uint64_t>> rx;
	uint64_t cnp_rx = 0, cnp_tx = 0, pause_rx = 0, xoff_sent = 0, ecn_marked = 0, drops = 0;
	std::map<std::string, uint64_t> drop_reasons;
	bool valid = true;
	std::vector<std::string> reasons;
	double wall_s = 0;
	int attempt = 1;                   // which attempt this is (the first VALID one, or the last)
	double d = 0;                      // the dilation it ran at
	std::vector<std::string> earlier;  // why earlier attempts were INVALID
};

const char *drop_name(int r)
{
	static const char *n[QN_DROP_MAX] = {"none", "truncated", "not_ipv4", "bad_ip", "ttl", "no_route",
					     "unknown_port", "host_bts", "host_postcard", "host_pfc",
					     "malformed_roce", "vlan_depth", "pfc_frame", "redirect", "buffer",
					     "injected"};
	return r >= 0 && r < QN_DROP_MAX ? n[r] : "?";
}

Result<std::vector<SwitchCounters>> read_all_counters(const std::string &name)
{
	auto t = load_running(name);
	if (!t)
		return t.error();
	std::vector<SwitchCounters> v;
	for (const Node &n : t->nodes)
		if (n.kind == NodeKind::Switch) {
			auto s = read_switch_counters(*t, n.id);
			if (!s)
				return s.error();
			v.push_back(*s);
		}
	return v;
}

Result<SchemeResult> run_scheme(Ctx &c, const std::string &scheme, size_t idx)
{
	SchemeResult s;
	s.scheme = scheme;
	const Calibration &k = c.cal;
	SchemeCc sc;
	if (auto it = c.x.cc.find(scheme); it != c.x.cc.end())
		sc = it->second;
	// The paper's fabric keeps the paper's constants (common.md §7); elsewhere they are derived.
	// A preset's `paper` names the base algorithm whose paper defined the fabric (its variants,
	// e.g. dcqcn+w of dcqcn, share it).
	auto sch = cc::scheme(scheme);
	if (!sch)
		return sch.error();
	const bool paper_fabric = c.have_preset && !c.preset.paper.empty() && sch->base.rfind(c.preset.paper, 0) == 0;
	const bool scale = sc.params == "derived" && !paper_fabric;
	cc::Fabric fab{k.host_rate_bps, k.base_rtt_min_ns, k.mtu, k.base_rtt_min_ns, k.base_rtt_max_ns};
	auto dv = cc::derive(scheme, fab, scale);
	if (!dv)
		return dv.error();
	if (!scale && sc.params == "derived" && paper_fabric)
		dv->notes.insert(dv->notes.begin(), scheme + ": preset " + c.preset.name + " is the paper's fabric");
	s.derived_notes = dv->notes;
	s.switch_settings = dv->switch_settings;
	QN_TRY(set_switches(c, dv->switch_settings));
	auto e = engine(c);
	if (!e)
		return e.error();
	Engine &en = **e;
	const uint64_t qi = c.x.queue_interval_ns ? c.x.queue_interval_ns : std::max<uint64_t>(1000, k.base_rtt_min_ns);
	QN_TRY(en.sample_all_queues(qi));
	auto before = read_all_counters(c.name);
	if (!before)
		return before.error();
	RunOptions ro;
	ro.qp.mode = c.x.mode == "sr" ? Reliability::SelectiveRepeat : Reliability::GoBackN;
	ro.qp.cc.scheme = scheme;
	ro.qp.cc.params = sc.params == "mellanox" ? "mellanox" : "paper";
	ro.qp.cc.overrides = sc.params == "derived" ? dv->overrides : std::map<std::string, std::string>{};
	for (const auto &[kk, v] : sc.overrides)
		ro.qp.cc.overrides[kk] = v;
	ro.timeout_ns = c.x.duration_ns;
	ro.qp_per_flow = true;
	ro.stop = stopped;
	uint64_t last_start = c.flows.back().start_ns, bytes = 0;
	for (const auto &f : c.flows)
		bytes += f.size;
	// expected wall time: the flows' span plus every byte once through one host link (a rough
	// upper bound for incasts), capped by the time limit
	const double fabric_est_ns = double(last_start) + double(bytes) * 8 / double(k.host_rate_bps) * 1e9;
	const double expected_s = std::min(fabric_est_ns, double(last_start + c.x.duration_ns)) * c.d_now / 1e9;
	const std::string label = "scheme " + std::to_string(idx + 1) + "/" + std::to_string(c.x.schemes.size()) + " " + scheme;
	const double t0 = wall_s();
	ro.progress = [&](size_t done, size_t total, uint64_t fabric_ns) {
		c.prog.tick(label + ": " + std::to_string(done) + "/" + std::to_string(total) + " flows, fabric " +
				    human_ns(fabric_ns) + ", " + f2(wall_s() - t0, "%.1f") + " s",
			    expected_s);
	};
	auto rep = run_flows(en, c.flows, ro);
	if (!rep)
		return make_error("scheme " + scheme + ": " + rep.error().to_string());
	s.wall_s = wall_s() - t0;
	auto after = read_all_counters(c.name);
	if (!after)
		return after.error();
	s.rep = std::move(*rep);
	s.cc_describe = s.rep.cc_describe;
	for (const auto &f : s.rep.flows) {
		s.sent_bytes += f.spec.size;
		if (f.done) {
			s.done++;
			s.fct.push_back(f.fct_ns);
			if (f.standalone_ns)
				s.sd.push_back(f.slowdown());
			if (!f.content_ok)
				s.bad++;
		}
	}
	s.delivered = s.rep.delivered_bytes;
	std::sort(s.sd.begin(), s.sd.end());
	std::sort(s.fct.begin(), s.fct.end());
	std::vector<std::pair<uint64_t, double>> sz;
	for (const auto &f : s.rep.flows)
		if (f.done && f.standalone_ns)
			sz.emplace_back(f.spec.size, f.slowdown());
	s.nbins = c.flows.size() >= 200 ? 20 : std::max<size_t>(1, std::min<size_t>(10, c.flows.size() / 5));
	s.bins = size_bins(sz, s.nbins);
	const double secs = double(s.rep.elapsed_ns) / 1e9;
	s.goodput_gbps = secs > 0 ? double(s.delivered) * 8 / secs / 1e9 : 0;
	// queues: series relative to the run's start
	for (const auto &qs : en.queue_series()) {
		QueueSeries r{qs.label, {}};
		std::vector<uint64_t> v;
		for (const auto &[t, b] : qs.samples) {
			r.samples.emplace_back(t >= s.rep.t0_ns ? t - s.rep.t0_ns : 0, b);
			v.push_back(b);
		}
		s.ports.push_back(PortQ{qs.label, series_stats(v)});
		s.series.push_back(std::move(r));
	}
	std::stable_sort(s.ports.begin(), s.ports.end(), [](const PortQ &x, const PortQ &y) { return x.st.max > y.st.max; });
	for (const auto &[t, b] : en.rx_series())
		s.rx.emplace_back(t >= s.rep.t0_ns ? t - s.rep.t0_ns : 0, b);
	for (const auto &h : en.host_names()) {
		const auto &hc = en.host_counters(h);
		s.cnp_rx += hc.cnp_rx;
		s.cnp_tx += hc.cnp_tx;
		s.pause_rx += hc.pfc_xoff;
	}
	for (size_t i = 0; i < after->size() && i < before->size(); i++)
		for (size_t p = 0; p < (*after)[i].ports.size() && p < (*before)[i].ports.size(); p++) {
			const auto &x1 = (*after)[i].ports[p].s, &x0 = (*before)[i].ports[p].s;
			s.xoff_sent += x1.pfc_xoff_sent - x0.pfc_xoff_sent;
			s.ecn_marked += x1.ecn_marked - x0.ecn_marked;
			for (int r = 1; r < QN_DROP_MAX; r++) {
				uint64_t d = x1.drops[r] - x0.drops[r];
				if (d) {
					s.drops += d;
					s.drop_reasons[drop_name(r)] += d;
				}
			}
		}
	s.valid = s.rep.health.valid;
	s.reasons = s.rep.health.reasons;
	if (s.rep.interrupted)
		s.reasons.insert(s.reasons.begin(), "interrupted by a signal after " + human_ns(s.rep.elapsed_ns) +
							     " of fabric time: partial");
	if (s.done != c.flows.size())
		s.reasons.push_back(std::to_string(c.flows.size() - s.done) + " flows did not complete within the time limit");
	if (s.bad || s.rep.corrupt_msgs)
		s.reasons.push_back(std::to_string(s.bad) + " flows delivered wrong content");
	if (!s.reasons.empty())
		s.valid = false;
	e->reset();
	return s;
}

// ---------------------------------------------------------------------------------------------
// Outputs

std::string safe(const std::string &scheme)
{
	std::string r;
	for (char ch : scheme)
		r += std::isalnum(uint8_t(ch)) || ch == '-' ? ch : '_';
	return r;
}

Status write_scheme_files(const Ctx &c, const SchemeResult &s)
{
	fs::path d = c.out / safe(s.scheme);
	fs::create_directories(d);
	auto open = [&](const fs::path &p) -> Result<std::ofstream> {
		std::ofstream o(p);
		if (!o)
			return sys_error(errno, "cannot write " + p.string());
		return o;
	};
	{
		auto o = open(d / "fct.txt");
		if (!o)
			return o.error();
		for (const auto &f : s.rep.flows)
			if (f.done)
				*o << ns3_fct_line(f) << '\n';
	}
	{
		auto o = open(d / "flows.csv");
		if (!o)
			return o.error();
		// the size bin of every flow: its index in s.bins by size range
		*o << "scheme,id,src,dst,size,dport,start_ns,fct_ns,standalone_ns,slowdown,done,content_ok,size_bin,tagged,affected_frac,touched\n";
		// each completed flow's bin, by the rule the bins were counted with (-1: not completed)
		std::vector<uint64_t> sizes;
		for (const auto &f : s.rep.flows)
			if (f.done && f.standalone_ns)
				sizes.push_back(f.spec.size);
		const auto idx = size_bin_index(sizes, s.nbins);
		size_t next = 0;
		for (const auto &f : s.rep.flows) {
			const int bin = f.done && f.standalone_ns ? int(idx[next++]) : -1;
			*o << s.scheme << ',' << f.spec.id << ',' << f.spec.src << ',' << f.spec.dst << ',' << f.spec.size << ','
			   << f.spec.dport << ',' << f.spec.start_ns << ',' << (f.done ? f.fct_ns : 0) << ',' << f.standalone_ns
			   << ',' << (f.done ? f.slowdown() : 0.0) << ',' << (f.done ? 1 : 0) << ',' << (f.content_ok ? 1 : 0)
			   << ',' << bin << ',' << (f.tagged ? 1 : 0) << ',' << f.affected_frac << ',' << (f.touched ? 1 : 0) << '\n';
		}
	}
	{
		auto o = open(d / "queues.csv");
		if (!o)
			return o.error();
		*o << "port,t_ns,bytes\n";
		for (const auto &q : s.series)
			for (const auto &[t, b] : q.samples)
				*o << q.label << ',' << t << ',' << b << '\n';
	}
	{
		auto o = open(d / "throughput.csv");
		if (!o)
			return o.error();
		*o << "t_ns,rx_data_bytes_total\n";
		for (const auto &[t, b] : s.rx)
			*o << t << ',' << b << '\n';
	}
	{
		auto o = open(d / "counters.txt");
		if (!o)
			return o.error();
		*o << "cnp_sent " << s.cnp_tx << "\ncnp_received " << s.cnp_rx << "\npause_frames_received " << s.pause_rx
		   << "\nswitch_xoff_sent " << s.xoff_sent << "\necn_marked " << s.ecn_marked << "\nswitch_drops " << s.drops
		   << '\n';
		for (const auto &[r, n] : s.drop_reasons)
			*o << "switch_drops_" << r << ' ' << n << '\n';
		*o << "packets_sent " << s.rep.tx_pkts << "\nretransmitted " << s.rep.retx_pkts << "\ntimeouts "
		   << s.rep.timeouts << "\nduplicates " << s.rep.dup_pkts << "\ndelivered_bytes " << s.delivered << '\n';
		*o << "# queue per port: samples mean p50 p99 max (bytes)\n";
		for (const auto &p : s.ports)
			*o << "queue " << p.label << ' ' << p.st.samples << ' ' << uint64_t(p.st.mean) << ' ' << p.st.p50 << ' '
			   << p.st.p99 << ' ' << p.st.max << '\n';
	}
	{
		auto o = open(d / "validity.txt");
		if (!o)
			return o.error();
		*o << (s.valid ? "VALID" : "INVALID") << '\n';
		for (const auto &r : s.reasons)
			*o << "reason: " << r << '\n';
		*o << s.rep.health.to_text();
	}
	{
		auto o = open(d / "cc.txt");
		if (!o)
			return o.error();
		*o << s.cc_describe << '\n';
		for (const auto &n : s.derived_notes)
			*o << n << '\n';
		for (const auto &[k, v] : s.switch_settings)
			*o << "switch " << k << '=' << v << '\n';
	}
	return ok_status();
}

std::string git_commit()
{
	auto r = run_ok({"git", "-C", QN_SOURCE_DIR, "rev-parse", "--short=12", "HEAD"});
	if (!r || r->empty())
		return "unknown";
	std::string s = *r;
	while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
		s.pop_back();
	auto dirty = run_ok({"git", "-C", QN_SOURCE_DIR, "status", "--porcelain", "--untracked-files=no"});
	if (dirty && !dirty->empty())
		s += "-dirty";
	return s;
}

// The port whose queue peaked highest in any scheme: the bottleneck the plots follow.
std::string bottleneck_port(const std::vector<SchemeResult> &rs)
{
	std::string best;
	uint64_t peak = 0;
	for (const auto &s : rs)
		for (const auto &p : s.ports)
			if (best.empty() || p.st.max > peak) {
				peak = p.st.max;
				best = p.label;
			}
	return best;
}

Status write_summary(Ctx &c, const std::vector<SchemeResult> &rs, const std::string &meta, std::string &table)
{
	std::ostringstream md, tb;
	const Calibration &k = c.cal;
	bool all_valid = true;
	for (const auto &s : rs)
		all_valid = all_valid && s.valid;
	md << "# " << c.x.name << "\n\n";
	md << "Experiment `" << c.x.source << "`, " << c.flows.size() << " flows, flow-list hash `" << std::hex << c.hash
	   << std::dec << "` (identical for every scheme), D = " << f2(k.d, "%g") << (k.d_auto ? " (auto)" : "")
	   << ". Times are fabric time; slowdown = FCT / standalone FCT (common.md §4).\n\n";
	if (c.interrupted)
		md << "Interrupted: **yes**, by a signal: " << rs.size() << " of " << c.x.schemes.size()
		   << " schemes have results; a scheme that was running is partial and INVALID.\n\n";
	md << "Validity: **" << (all_valid ? "VALID" : "INVALID") << "**";
	if (!all_valid)
		md << " (an INVALID scheme's numbers are not results: see its reasons below)";
	md << "\n\n";
	tb << "| scheme | valid | D | flows done | goodput Gbit/s | slowdown p50 | p95 | p99 | FCT p99 | peak queue | p99 queue "
	      "| CNPs | PAUSE | drops | ECN marks | retx |\n";
	tb << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
	for (const auto &s : rs) {
		uint64_t peak = s.ports.empty() ? 0 : s.ports.front().st.max, p99 = 0;
		for (const auto &p : s.ports)
			p99 = std::max(p99, p.st.p99);
		tb << "| " << s.scheme << " | " << (s.valid ? "VALID" : "INVALID")
		   << (s.attempt > 1 ? " (try " + std::to_string(s.attempt) + ")" : "") << " | " << f2(s.d, "%g") << " | "
		   << s.done << "/" << c.flows.size()
		   << " | " << f2(s.goodput_gbps, "%.3f") << " | " << f2(percentile(s.sd, 0.5)) << " | "
		   << f2(percentile(s.sd, 0.95)) << " | " << f2(percentile(s.sd, 0.99)) << " | "
		   << human_ns(percentile(s.fct, 0.99)) << " | " << human_bytes(double(peak)) << " | "
		   << human_bytes(double(p99)) << " | " << s.cnp_rx << " | " << s.pause_rx << " | " << s.drops << " | "
		   << s.ecn_marked << " | " << s.rep.retx_pkts << " |\n";
	}
	table = tb.str();
	md << "## Summary\n\n" << table << "\n";
	md << "Goodput: bytes delivered / time until the last completion. CNPs: received by senders. PAUSE: PFC XOFF "
	      "frames received by hosts. Peak/p99 queue: the highest over switch ports (samples every "
	   << human_ns(c.x.queue_interval_ns ? c.x.queue_interval_ns : std::max<uint64_t>(1000, k.base_rtt_min_ns))
	   << ").\n\n";
	md << "## Fidelity\n\nPeriods when the emulator was not the fabric it models (event-loop stalls; link time "
	      "lost beyond one frame, measured at the switches on arrival from hosts and at departure from queues) "
	      "and the flows they touched; a flow is tagged (flows.csv `tagged`) when such periods covered at least "
	      "1% of its lifetime; slowdowns over all flows and over the untagged ones. A run whose tagged flows "
	      "carry more than half of its bytes is INVALID (docs/experiments.md \"Validity\").\n\n"
	      "| scheme | affected periods | fabric time affected | touched flows (bytes) | tagged flows (bytes) | "
	      "arrivals kept | departures kept | fast windows | slowdown p50 / p99 (all) | p50 / p99 (untagged) |\n"
	      "|---|---|---|---|---|---|---|---|---|---|\n";
	for (const auto &s : rs) {
		const FidelityReport &fr = s.rep.fidelity;
		const Health &h = s.rep.health;
		std::vector<double> untagged;
		for (const auto &f : s.rep.flows)
			if (f.done && f.standalone_ns && !f.tagged)
				untagged.push_back(f.slowdown());
		std::sort(untagged.begin(), untagged.end());
		char b[256];
		std::snprintf(b, sizeof(b), "| %s | %llu | %.2f%% | %zu/%zu (%.1f%%) | %zu/%zu (%.1f%%) | %.2f%% | %.2f%% | %.2f%% | ",
			      s.scheme.c_str(), static_cast<unsigned long long>(fr.periods), 100 * fr.time_affected_frac,
			      fr.flows_touched, s.rep.flows.size(), 100 * fr.bytes_touched_frac, fr.flows_tagged,
			      s.rep.flows.size(), 100 * fr.bytes_tagged_frac, 100 * h.sw_arrival_eff,
			      100 * h.sw_departure_eff, 100 * h.sw_fast_frac);
		md << b << f2(percentile(s.sd, 0.5)) << " / " << f2(percentile(s.sd, 0.99)) << " | "
		   << f2(percentile(untagged, 0.5)) << " / " << f2(percentile(untagged, 0.99)) << " |\n";
	}
	md << "\n";
	md << "## Slowdown by flow size\n\nFlows sorted by size, bins of equal flow count; each row: the bin's largest "
	      "size (common.md §4).\n\n";
	for (const auto &s : rs) {
		md << "### " << s.scheme << "\n\n| bin | sizes | flows | p50 | p95 | p99 |\n|---|---|---|---|---|---|\n";
		for (size_t b = 0; b < s.bins.size(); b++)
			md << "| " << b << " | " << human_bytes(double(s.bins[b].min_size)) << " - "
			   << human_bytes(double(s.bins[b].max_size)) << " | " << s.bins[b].count << " | "
			   << f2(s.bins[b].p50) << " | " << f2(s.bins[b].p95) << " | " << f2(s.bins[b].p99) << " |\n";
		md << "\n";
	}
	md << "## Queues per port\n\nPeak / p99 of every switch egress port that queued, highest peak first (all ports, "
	      "with mean and p50: `<scheme>/counters.txt`).\n\n";
	for (const auto &s : rs) {
		md << "- " << s.scheme << ":";
		size_t shown = 0;
		for (const auto &p : s.ports)
			if (p.st.max > 0)
				md << (shown++ ? "," : "") << " " << p.label << " " << human_bytes(double(p.st.max)) << " / "
				   << human_bytes(double(p.st.p99));
		md << (shown ? "" : " no queue at any port") << "\n";
	}
	md << "\n## Signals and drops\n\n";
	for (const auto &s : rs) {
		md << "- " << s.scheme << ": CNPs sent " << s.cnp_tx << ", received " << s.cnp_rx << "; switch XOFF events "
		   << s.xoff_sent << ", PAUSE frames at hosts " << s.pause_rx << "; ECN marks " << s.ecn_marked << "; drops "
		   << s.drops;
		for (const auto &[r, n] : s.drop_reasons)
			md << " " << r << "=" << n;
		md << "; retransmitted " << s.rep.retx_pkts << ", timeouts " << s.rep.timeouts << "\n";
	}
	md << "\n## Validity\n\n";
	for (const auto &s : rs) {
		md << "- " << s.scheme << ": " << (s.valid ? "VALID" : "INVALID");
		for (const auto &r : s.reasons)
			md << "; " << r;
		md << " (attempt " << s.attempt << "; pacer lateness p99 " << s.rep.health.late_p99_ns << " ns, stalls "
		   << s.rep.health.stalls << ", " << f2(s.wall_s, "%.1f") << " s wall)\n";
		for (const auto &e : s.earlier)
			md << "  - INVALID " << e << "\n";
	}
	md << "\n## Parameters\n\n";
	for (const auto &s : rs) {
		md << "- " << s.scheme << ": `" << s.cc_describe << "`\n";
		for (const auto &n : s.derived_notes)
			md << "  - " << n << "\n";
	}
	md << "\n## Calibration and metadata\n\n```\n" << meta << "```\n";
	if (fs::exists(c.out / "queue.png"))
		md << "\n![queue](queue.png) ![slowdown](slowdown.png) ![throughput](throughput.png)\n";
	std::ofstream o(c.out / "summary.md");
	if (!o)
		return sys_error(errno, "cannot write " + (c.out / "summary.md").string());
	o << md.str();
	// machine-readable summary: `quench compare` reads it
	std::ofstream cs(c.out / "summary.csv");
	cs << "scheme,valid,flows,done,goodput_gbps,fct_p50_ns,fct_p99_ns,slowdown_p50,slowdown_p95,slowdown_p99,"
	      "queue_peak_bytes,queue_p99_bytes,cnps,pauses,drops,ecn_marks,retransmitted,dilation,bytes_tagged_frac,"
	      "bytes_touched_frac,time_affected_frac,arrivals_kept,departures_kept,fast_windows_frac,flow_hash\n";
	for (const auto &s : rs) {
		uint64_t peak = s.ports.empty() ? 0 : s.ports.front().st.max, p99 = 0;
		for (const auto &p : s.ports)
			p99 = std::max(p99, p.st.p99);
		char h[32];
		std::snprintf(h, sizeof(h), "%016llx", static_cast<unsigned long long>(c.hash));
		cs << s.scheme << ',' << (s.valid ? 1 : 0) << ',' << c.flows.size() << ',' << s.done << ','
		   << f2(s.goodput_gbps, "%.4f") << ',' << percentile(s.fct, 0.5) << ',' << percentile(s.fct, 0.99) << ','
		   << f2(percentile(s.sd, 0.5), "%.4f") << ',' << f2(percentile(s.sd, 0.95), "%.4f") << ','
		   << f2(percentile(s.sd, 0.99), "%.4f") << ',' << peak << ',' << p99 << ',' << s.cnp_rx << ',' << s.pause_rx
		   << ',' << s.drops << ',' << s.ecn_marked << ',' << s.rep.retx_pkts << ',' << f2(s.d, "%.3f") << ','
		   << f2(s.rep.fidelity.bytes_tagged_frac, "%.5f") << ',' << f2(s.rep.fidelity.bytes_touched_frac, "%.5f")
		   << ',' << f2(s.rep.fidelity.time_affected_frac, "%.6f") << ',' << f2(s.rep.health.sw_arrival_eff, "%.5f")
		   << ',' << f2(s.rep.health.sw_departure_eff, "%.5f") << ',' << f2(s.rep.health.sw_fast_frac, "%.5f") << ','
		   << h << '\n';
	}
	std::ofstream bs(c.out / "bins.csv");
	bs << "scheme,bin,min_size,max_size,flows,slowdown_p50,slowdown_p95,slowdown_p99\n";
	for (const auto &s : rs)
		for (size_t b = 0; b < s.bins.size(); b++)
			bs << s.scheme << ',' << b << ',' << s.bins[b].min_size << ',' << s.bins[b].max_size << ','
			   << s.bins[b].count << ',' << s.bins[b].p50 << ',' << s.bins[b].p95 << ',' << s.bins[b].p99 << '\n';
	return ok_status();
}

// PNG plots with gnuplot (Debian's gnuplot-nox, installed by scripts/install-deps.sh).
std::string write_plots(const Ctx &c, const std::vector<SchemeResult> &rs)
{
	const std::string port = bottleneck_port(rs);
	fs::path pd = c.out / "plot";
	fs::create_directories(pd);
	// data files gnuplot reads: one per scheme
	for (const auto &s : rs) {
		std::ofstream q(pd / (safe(s.scheme) + ".queue"));
		for (const auto &qs : s.series)
			if (qs.label == port)
				for (const auto &[t, b] : qs.samples)
					q << double(t) / 1e6 << ' ' << double(b) / 1e3 << '\n';
		std::ofstream b(pd / (safe(s.scheme) + ".bins"));
		for (const auto &x : s.bins)
			b << x.max_size << ' ' << x.p50 << ' ' << x.p99 << '\n';
		// throughput in windows of ~1/100 of the run (at least one sample interval)
		std::ofstream th(pd / (safe(s.scheme) + ".tput"));
		if (s.rx.size() >= 2) {
			const uint64_t span = s.rx.back().first - s.rx.front().first;
			const uint64_t win = std::max<uint64_t>(span / 100, 1);
			size_t j = 0;
			for (size_t i = 1; i < s.rx.size(); i++)
				if (s.rx[i].first - s.rx[j].first >= win) {
					double gbps = double(s.rx[i].second - s.rx[j].second) * 8 / double(s.rx[i].first - s.rx[j].first);
					th << double(s.rx[i].first) / 1e6 << ' ' << gbps << '\n';
					j = i;
				}
		}
	}
	std::ostringstream g;
	auto plot_all = [&](const std::string &ext, const std::string &using_) {
		std::string p = "plot ";
		for (size_t i = 0; i < rs.size(); i++)
			p += std::string(i ? ", " : "") + "'" + (pd / (safe(rs[i].scheme) + ext)).string() + "' using " + using_ +
			     " with lines lw 2 title '" + rs[i].scheme + "'";
		return p + "\n";
	};
	g << "set terminal pngcairo size 900,500 noenhanced\nset grid\nset key top right\n";
	g << "set output '" << (c.out / "queue.png").string() << "'\nset title 'queue at " << port
	  << " (fabric time)'\nset xlabel 'time (ms)'\nset ylabel 'queue (KB)'\n"
	  << plot_all(".queue", "1:2");
	g << "set output '" << (c.out / "slowdown.png").string()
	  << "'\nset title 'FCT slowdown p99 by size bin'\nset logscale x\nset xlabel 'flow size, bin maximum (bytes)'\nset "
	     "ylabel 'slowdown p99'\n"
	  << plot_all(".bins", "1:3") << "unset logscale x\n";
	g << "set output '" << (c.out / "throughput.png").string()
	  << "'\nset title 'delivered throughput, all hosts'\nset xlabel 'time (ms)'\nset ylabel 'Gbit/s'\n"
	  << plot_all(".tput", "1:2");
	{
		std::ofstream f(pd / "plots.gp");
		f << g.str();
	}
	auto r = run_ok({"gnuplot", (pd / "plots.gp").string()});
	if (!r)
		return "plots not drawn: " + r.error().to_string() + " (scripts/install-deps.sh installs gnuplot-nox)";
	return "";
}

struct RunArgs {
	std::string exp, out, name;
	double dilation = 0;
	int attempts = 0;
	int link_credit = -1; // frames a late host link absorbs (-1: the engine's default)
	double adapt_from = 0; // start at this D and adapt it as with auto D (controls, tests)
	bool quiet = false;
	std::vector<std::string> schemes;
};

} // namespace

int cmd_run(int argc, char **argv, int first)
{
	RunArgs a;
	CLI::App app{"an experiment end to end: calibration, every scheme on the same flows, a results folder", "run"};
	app.add_option("EXPERIMENT", a.exp, "experiment file (netns/experiments/*.exp)");
	app.add_option("--out", a.out, "results folder (default results/<time>-<name>)");
	app.add_option("--name", a.name, "running topology name");
	app.add_flag("--quiet", a.quiet, "no progress line");
	cli::number(app, "--attempts", a.attempts, 1, 10, "runs per scheme until one is VALID");
	// negative control of the pacer's credit (docs/transport.md "The NIC model")
	cli::number(app, "--link-credit", a.link_credit, 0, 64, "the link pacer's credit in frames");
	auto *adapt = cli::number(app, "--adapt-from", a.adapt_from, 1, 10000, "first D; CPU-bound attempts retried at 1.5 x D");
	cli::number(app, "--dilation", a.dilation, 1, 1e5, "the D every scheme runs at (no calibration of D)")->excludes(adapt);
	app.add_option_function<std::string>(
		"--schemes",
		[&a](const std::string &v) {
			std::istringstream ss(v);
			for (std::string x; std::getline(ss, x, ',');)
				if (!x.empty())
					a.schemes.push_back(x);
		},
		"comma-separated schemes instead of the experiment's");
	if (int rc = cli::parse(app, argc, argv, first); rc >= 0)
		return rc;
	if (a.exp.empty())
		return die("run: needs an experiment file (netns/experiments/*.exp)");
	Ctx c;
	auto x = load_experiment(
		a.exp, SchemeCatalog(
			       cc::schemes(),
			       [](const std::string &n) -> std::string {
				       auto s = cc::scheme(n);
				       return s ? "" : s.error().to_string() + " (quench schemes lists the parts)";
			       },
			       [](const std::string &n, const std::string &k, const std::string &v) -> std::string {
				       auto st = cc::check_param(n, k, v);
				       return st.ok() ? "" : st.error().to_string();
			       }));
	if (!x)
		return die("run: " + x.error().to_string());
	c.x = *x;
	if (a.attempts)
		c.x.attempts = a.attempts;
	if (a.link_credit >= 0)
		c.eo.link_credit_frames = uint32_t(a.link_credit);
	if (!a.schemes.empty()) {
		for (const auto &s : a.schemes)
			if (auto sch = cc::scheme(s); !sch)
				return die("run: --schemes: " + sch.error().to_string() + " (quench schemes lists the parts)");
		c.x.schemes = a.schemes;
	}
	auto t = load_topology_file(c.x.topology, c.x.params);
	if (!t)
		return die("run: " + t.error().to_string());
	c.topo = *t;
	if (!c.x.preset.empty()) {
		auto p = load_preset(c.x.preset);
		if (!p)
			return die("run: " + p.error().to_string());
		c.preset = *p;
		c.have_preset = true;
		apply_preset(c.topo, c.preset);
		c.eo.switch_delay_ns = c.preset.switch_delay_ns;
		c.eo.nic_tx_delay_ns = c.preset.nic_delay_ns;
		c.eo.nic_rx_delay_ns = c.preset.nic_delay_ns;
	}
	if (a.name.empty()) {
		std::string n;
		for (char ch : c.x.name)
			if (std::isalnum(uint8_t(ch)) && n.size() < 8)
				n += char(std::tolower(uint8_t(ch)));
		a.name = (n.empty() ? "x" : n) + std::to_string(getpid() % 10000);
	}
	c.name = a.name;
	c.topo.name = c.name;
	if (auto st = derive(c.topo); !st.ok())
		return die("run: " + st.error().to_string());
	for (const auto &r : running_topologies())
		if (r == c.name)
			return die("run: a topology named " + c.name + " is already up (give --name)");
	auto flows = build_flows(c.x.workloads, c.x.seed, c.topo, c.x.source);
	if (!flows)
		return die("run: " + flows.error().to_string());
	c.flows = std::move(*flows);
	c.hash = flow_list_hash(c.flows);
	if (a.out.empty()) {
		char ts[32];
		std::time_t now = std::time(nullptr);
		std::strftime(ts, sizeof(ts), "%Y%m%d-%H%M%S", std::localtime(&now));
		a.out = std::string("results/") + ts + "-" + c.x.name;
	}
	c.out = a.out;
	std::error_code ec;
	fs::create_directories(c.out, ec);
	if (ec)
		return die("run: cannot create " + c.out.string() + ": " + ec.message());
	c.prog.on = !a.quiet && isatty(STDERR_FILENO);
	setup_libbpf_logging(false);
	std::signal(SIGINT, [](int) { g_stop = 1; });
	std::signal(SIGTERM, [](int) { g_stop = 1; });
	const double t_start = wall_s();
	std::printf("run %s: topology %s (%s), preset %s, %zu flows, flow-list hash %016llx, schemes", c.x.name.c_str(),
		    c.x.topology.c_str(), c.name.c_str(), c.have_preset ? c.preset.name.c_str() : "none", c.flows.size(),
		    static_cast<unsigned long long>(c.hash));
	for (const auto &s : c.x.schemes)
		std::printf(" %s", s.c_str());
	std::printf("\n");
	std::fflush(stdout);
	auto cleanup = [&] {
		if (c.up)
			(void)topo_down(c.name);
		c.up = false;
	};
	if (a.adapt_from > 0 && a.dilation > 0)
		return die("run: --adapt-from and --dilation exclude each other");
	if (auto st = calibrate(c, a.adapt_from > 0 ? a.adapt_from : a.dilation > 0 ? a.dilation : c.x.dilation);
	    !st.ok()) {
		cleanup();
		c.prog.done();
		if (stopped()) { // nothing measured yet: say so where the results would be
			std::ofstream m(c.out / "summary.md");
			m << "# " << c.x.name << "\n\nInterrupted: **yes**, by a signal during calibration; no scheme ran.\n";
			std::fprintf(stderr, "quench: run: interrupted during calibration; topology %s taken down\n",
				     c.name.c_str());
			return 130;
		}
		return die("run: calibration: " + st.error().to_string());
	}
	if (a.adapt_from > 0)
		c.cal.adapt = true;
	const Calibration &k = c.cal;
	std::ostringstream meta;
	{
		utsname u{};
		uname(&u);
		char ts[64];
		std::time_t now = std::time(nullptr);
		std::strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
		meta << "date " << ts << "\nkernel " << u.release << "\ncommit " << git_commit() << "\nexperiment "
		     << c.x.source << "\ntopology " << c.x.topology << " (running as " << c.name << ")\npreset "
		     << (c.have_preset ? c.preset.name + " (" + c.preset.source + ")" : "none") << "\nseed " << c.x.seed
		     << "\nflows " << c.flows.size() << "\nflow_hash " << std::hex << c.hash << std::dec << "\nmode "
		     << c.x.mode << "\ndilation " << f2(k.d, "%g") << (k.d_auto ? " (auto)" : " (given)") << "\n";
		if (k.d_auto)
			meta << "dilation_cpu " << f2(k.d_cpu, "%.1f") << " (offered " << f2(k.offered_bps / 1e9, "%.1f")
			     << " Gbit/s / capacity " << f2(k.capacity_wall_bps / 1e9, "%.2f") << " Gbit/s wall at D=1 with "
			     << k.capacity_senders << " senders at once; one pair alone (" << k.pair << ") "
			     << f2(k.capacity_pair_wall_bps / 1e9, "%.2f") << " Gbit/s, D=" << f2(k.d_pair, "%g")
			     << " from it)\ndilation_timer " << f2(k.d_timer, "%.1f") << " (jitter p99 "
			     << k.jitter_wall_ns / 1000 << " us wall / 5% of the base RTT)"
			     << (k.d_clamped ? "; clamped to 10000, the largest factor: expect an INVALID run" : "") << "\n";
		meta << "timer_jitter_p99_wall_ns " << k.jitter_wall_ns << "\nhost_rate " << format_rate(k.host_rate_bps)
		     << "\nmtu " << k.mtu << "\nbase_rtt_ns " << k.base_rtt_min_ns << " .. " << k.base_rtt_max_ns
		     << " (computed, common.md §4)\nrtt_check " << k.pair << " 64 B ping-pong FCT median " << k.rtt_measured_ns
		     << " ns (the base RTT above counts a full frame per hop; a 64 B message's standalone FCT is "
		     << k.rtt_expected_ns << " ns by that definition)\nlink_rate_check " << k.pair << " one flow reached "
		     << f2(100 * k.link_rate_ratio, "%.1f") << "% of its standalone rate\n";
		meta << "queue_interval_ns "
		     << (c.x.queue_interval_ns ? c.x.queue_interval_ns : std::max<uint64_t>(1000, k.base_rtt_min_ns)) << "\n";
	}
	std::printf("%s", meta.str().c_str());
	if (k.link_rate_ratio < 0.97)
		std::printf("warning: one line-rate flow reached only %.1f%% of the link: the CPU, not the scheme, limits "
			    "this fabric at D=%g\n",
			    100 * k.link_rate_ratio, k.d);
	std::fflush(stdout);
	std::vector<SchemeResult> rs;
	for (size_t i = 0; i < c.x.schemes.size() && !g_stop; i++) {
		// An INVALID attempt is not a result (a stall of this VM, not the scheme): run the
		// identical flow list again, up to `attempts` times, and keep the first VALID one.
		// With D chosen by calibration, an attempt that failed because the engine's CPU did
		// not keep the pace is retried at 1.5 x D (a stall or a drop is retried at the same
		// D); every scheme starts at the calibrated D. A D given by the user is kept.
		Result<SchemeResult> r = make_error("no attempt");
		std::vector<std::string> earlier;
		for (int at = 1; at <= c.x.attempts && !g_stop; at++) {
			if (at == 1 && c.d_now != k.d) {
				if (auto st = bring_up(c, k.d); !st.ok()) {
					cleanup();
					c.prog.done();
					return die("run: " + st.error().to_string());
				}
			}
			r = run_scheme(c, c.x.schemes[i], i);
			if (!r) {
				cleanup();
				c.prog.done();
				return die("run: " + r.error().to_string());
			}
			r->attempt = at;
			r->earlier = earlier;
			r->d = c.d_now;
			if (r->valid || r->rep.interrupted)
				break;
			std::string why;
			for (const auto &why_one : r->reasons)
				why += (why.empty() ? "" : "; ") + why_one;
			earlier.push_back("attempt " + std::to_string(at) + " at D=" + f2(c.d_now, "%g") + ": " + why);
			if (k.adapt && r->rep.health.cpu_bound && at < c.x.attempts && c.d_now < 10000) {
				const double next_d = std::min(10000.0, std::ceil(c.d_now * 1.5 / 10) * 10);
				if (auto st = bring_up(c, next_d); !st.ok()) {
					cleanup();
					c.prog.done();
					return die("run: " + st.error().to_string());
				}
			}
		}
		if (!r)
			break;
		if (auto st = write_scheme_files(c, *r); !st.ok()) {
			cleanup();
			c.prog.done();
			return die("run: " + st.error().to_string());
		}
		for (const auto &n : r->derived_notes)
			meta << "derived " << n << "\n";
		rs.push_back(std::move(*r));
	}
	cleanup();
	c.prog.phase("plots and summary");
	c.interrupted = stopped();
	if (c.interrupted)
		meta << "interrupted yes (a signal stopped the run; " << rs.size() << " of " << c.x.schemes.size()
		     << " schemes have results, the last one partial if it was running)\n";
	std::string plot_err = write_plots(c, rs);
	std::string table;
	meta << "wall_seconds " << f2(wall_s() - t_start, "%.1f") << "\n";
	{
		std::ofstream m(c.out / "metadata.txt");
		m << meta.str();
		std::ifstream src(c.x.source);
		std::ofstream cp(c.out / "experiment.exp");
		cp << src.rdbuf();
	}
	if (auto st = write_summary(c, rs, meta.str(), table); !st.ok()) {
		c.prog.done();
		return die("run: " + st.error().to_string());
	}
	c.prog.done();
	std::printf("\n%s\n", table.c_str());
	for (const auto &s : rs)
		if (!s.valid) {
			std::printf("%s INVALID:", s.scheme.c_str());
			for (const auto &r : s.reasons)
				std::printf(" %s;", r.c_str());
			std::printf("\n");
		}
	if (!plot_err.empty())
		std::printf("%s\n", plot_err.c_str());
	if (c.interrupted) {
		std::printf("interrupted: partial results in %s; topology %s taken down\n", c.out.string().c_str(),
			    c.name.c_str());
		return 130;
	}
	std::printf("results: %s (summary.md, metadata.txt, per scheme fct.txt flows.csv queues.csv throughput.csv "
		    "counters.txt validity.txt; queue.png slowdown.png throughput.png) in %.1f s\n",
		    c.out.string().c_str(), wall_s() - t_start);
	return 0;
}

// ---------------------------------------------------------------------------------------------
// jitter: how often this machine stops a spinning process (hypervisor preemption, interrupts)

int cmd_jitter(int argc, char **argv, int first)
{
	double secs = 2, gap_us = 500;
	int threads = 1;
	CLI::App app{"how often this machine stops a spinning loop for more than G us (preemption, steal)", "jitter"};
	cli::number(app, "--seconds", secs, 1e-3, 60, "how long to spin");
	cli::number(app, "--gap-us", gap_us, 1e-3, 1e9, "a stop longer than this counts");
	cli::number(app, "--threads", threads, 1, 64, "spinning threads (one per CPU: every CPU busy)");
	if (int rc = cli::parse(app, argc, argv, first); rc >= 0)
		return rc;
	auto steal = [] {
		std::ifstream f("/proc/stat");
		std::string cpu;
		unsigned long long v[8] = {};
		f >> cpu >> v[0] >> v[1] >> v[2] >> v[3] >> v[4] >> v[5] >> v[6] >> v[7];
		return v[7]; // USER_HZ ticks, all CPUs
	};
	auto now = [] { return qn::tp::mono_wall_ns(); };
	// One spinning loop per thread (with as many threads as CPUs, every CPU is busy, as during a
	// run: the engine on one, the kernel's datapath on the others).
	struct Gaps {
		uint64_t gaps = 0, mx = 0, total = 0;
	};
	const unsigned long long st0 = steal();
	const uint64_t start = now(), end = start + uint64_t(secs * 1e9), thr = uint64_t(gap_us * 1e3);
	std::vector<Gaps> per(static_cast<size_t>(threads));
	auto spin = [&](Gaps &g) {
		uint64_t prev = now();
		while (prev < end) {
			uint64_t t = now();
			uint64_t d = t - prev;
			if (d > thr) {
				g.gaps++;
				g.total += d;
			}
			g.mx = std::max(g.mx, d);
			prev = t;
		}
	};
	std::vector<std::thread> ts;
	for (size_t k = 1; k < per.size(); k++)
		ts.emplace_back(spin, std::ref(per[k]));
	spin(per[0]);
	for (auto &t : ts)
		t.join();
	Gaps all;
	for (const auto &g : per) {
		all.gaps += g.gaps;
		all.total += g.total;
		all.mx = std::max(all.mx, g.mx);
	}
	const double el = double(now() - start) / 1e9;
	const double st = double(steal() - st0) / (100.0 * double(sysconf(_SC_NPROCESSORS_ONLN)) * el) * 100;
	std::printf("jitter: %llu gaps over %.0f us in %.1f s (%.1f per second, %.1f ms in all), longest %.0f us; "
		    "steal %.1f%% of the CPUs%s\n",
		    static_cast<unsigned long long>(all.gaps), gap_us, el, double(all.gaps) / el, double(all.total) / 1e6,
		    double(all.mx) / 1e3, st,
		    per.size() > 1 ? (" (" + std::to_string(per.size()) + " spinning threads, gaps summed)").c_str() : "");
	return 0;
}

// ---------------------------------------------------------------------------------------------
// compare

namespace {

struct CsvTable {
	std::vector<std::string> header;
	std::vector<std::vector<std::string>> rows;
};

Result<CsvTable> read_csv(const std::string &path)
{
	std::ifstream f(path);
	if (!f)
		return sys_error(errno, "cannot open " + path);
	CsvTable t;
	std::string line;
	int n = 0;
	while (std::getline(f, line)) {
		n++;
		std::vector<std::string> cells;
		std::stringstream ss(line);
		for (std::string c; std::getline(ss, c, ',');)
			cells.push_back(c);
		if (n == 1)
			t.header = cells;
		else if (!cells.empty()) {
			if (cells.size() != t.header.size())
				return make_error(path + ":" + std::to_string(n) + ": " + std::to_string(cells.size()) +
						  " fields, the header has " + std::to_string(t.header.size()));
			t.rows.push_back(cells);
		}
	}
	if (t.header.empty() || t.header[0] != "scheme")
		return make_error(path + ":1: not a quench summary.csv (first column must be 'scheme')");
	return t;
}

} // namespace

int cmd_compare(int argc, char **argv, int first)
{
	std::string ra, rb;
	CLI::App app{"two results folders side by side as ratios (B / A)", "compare"};
	app.add_option("RUN_A", ra, "results folder A")->required();
	app.add_option("RUN_B", rb, "results folder B")->required();
	if (int rc = cli::parse(app, argc, argv, first); rc >= 0)
		return rc;
	auto A = read_csv(ra + "/summary.csv");
	if (!A)
		return die("compare: " + A.error().to_string());
	auto B = read_csv(rb + "/summary.csv");
	if (!B)
		return die("compare: " + B.error().to_string());
	if (A->header != B->header)
		return die("compare: " + ra + " and " + rb + " have different summary.csv columns");
	std::printf("B / A: A = %s, B = %s (ratios of B to A; - where A is 0 or not numeric)\n", ra.c_str(), rb.c_str());
	const auto &h = A->header;
	const size_t hash_col = size_t(std::find(h.begin(), h.end(), "flow_hash") - h.begin());
	std::printf("%-10s", "scheme");
	for (size_t i = 1; i < h.size(); i++)
		if (i != hash_col)
			std::printf(" %14s", h[i].c_str());
	std::printf("\n");
	int matched = 0;
	for (const auto &rowa : A->rows) {
		const std::vector<std::string> *rowb = nullptr;
		for (const auto &r : B->rows)
			if (r[0] == rowa[0])
				rowb = &r;
		if (!rowb) {
			std::printf("%-10s only in %s\n", rowa[0].c_str(), ra.c_str());
			continue;
		}
		matched++;
		std::printf("%-10s", rowa[0].c_str());
		for (size_t i = 1; i < h.size(); i++) {
			if (i == hash_col)
				continue;
			char *e1 = nullptr, *e2 = nullptr;
			double x = std::strtod(rowa[i].c_str(), &e1), y = std::strtod((*rowb)[i].c_str(), &e2);
			if (*e1 || *e2 || x == 0)
				std::printf(" %14s", (rowa[i] + "/" + (*rowb)[i]).c_str());
			else
				std::printf(" %14.3f", y / x);
		}
		std::printf("\n");
		if (hash_col < h.size() && rowa[hash_col] != (*rowb)[hash_col])
			std::printf("  note: %s ran different flow lists (hash %s vs %s)\n", rowa[0].c_str(),
				    rowa[hash_col].c_str(), (*rowb)[hash_col].c_str());
		if (rowa[1] != "1" || (*rowb)[1] != "1")
			std::printf("  note: %s is INVALID in %s: its ratios are not results\n", rowa[0].c_str(),
				    rowa[1] != "1" ? ra.c_str() : rb.c_str());
	}
	for (const auto &r : B->rows) {
		bool in_a = false;
		for (const auto &x : A->rows)
			in_a = in_a || x[0] == r[0];
		if (!in_a)
			std::printf("%-10s only in %s\n", r[0].c_str(), rb.c_str());
	}
	return matched ? 0 : 1;
}
