// runner.cc - the experiment runner (runner.h).
#include "control/runner.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <unistd.h>

#include "common/units.h"
#include "control/bringup.h"
#include "control/capacity.h"
#include "control/engine_desc.h"
#include "control/flows.h"
#include "control/gauges.h"
#include "control/swcfg.h"
#include "control/switch_loader.h"
#include "transport/cc/cc.h"

namespace qn {

using namespace qn::tp;

namespace {

double wall_s()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string fmt(double v, const char *f)
{
	char b[64];
	std::snprintf(b, sizeof(b), f, v);
	return b;
}

Error interrupted() { return make_error("interrupted by a signal"); }

// A lossless run is a result only without a loss: a drop in the lossless class, or a PAUSE that
// let more slip than the link's headroom holds (its latency past the budget), invalidates it.
void lossless_fidelity(SchemeResult &s)
{
	auto get = [&](const char *k) {
		auto it = s.counters.find(k);
		return it == s.counters.end() ? uint64_t(0) : it->second;
	};
	if (uint64_t n = get("switch.drops.lossless"))
		s.reasons.push_back(std::to_string(n) + " drops in the lossless class (PFC headroom overrun)");
	if (uint64_t n = get("switch.pfc_slip_over"))
		s.reasons.push_back(std::to_string(n) + " PAUSEs let more data slip than the link's headroom holds "
							"(the pause latency exceeded its budget; docs/switch.md \"PFC\")");
	if (!s.reasons.empty())
		s.valid = false;
}

// An engine of the run that gives its ports back to the run's pool when it goes (reset() or
// the end of its scope), so the next engine opens none of them again.
class PooledEngine {
public:
	PooledEngine(std::unique_ptr<Engine> e, std::shared_ptr<tp::PortPool> pool)
		: e_(std::move(e)), pool_(std::move(pool))
	{
	}
	PooledEngine(PooledEngine &&) noexcept = default;
	PooledEngine &operator=(PooledEngine &&) = delete;
	PooledEngine(const PooledEngine &) = delete;
	~PooledEngine() { reset(); }
	Engine &operator*() const { return *e_; }
	Engine *operator->() const { return e_.get(); }
	void reset()
	{
		if (e_ && pool_ && !e_->topology_gone())
			e_->release_ports(*pool_);
		e_.reset();
	}

private:
	std::unique_ptr<Engine> e_;
	std::shared_ptr<tp::PortPool> pool_;
};

Result<PooledEngine> open_engine(ExperimentRun &r)
{
	auto t = load_running(r.name);
	if (!t)
		return t.error();
	auto d = running_dilation(r.name);
	if (!d)
		return d.error();
	auto e = Engine::open(engine_desc(*t), *d, r.eo, r.pool.get());
	if (!e)
		return e.error();
	return PooledEngine(std::move(*e), r.pool);
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

} // namespace

Result<std::vector<SwitchInForce>> set_running_switches(const std::string &topo,
							  const std::vector<std::pair<std::string, std::string>> &kv)
{
	auto t = load_running(topo);
	if (!t)
		return t.error();
	std::vector<SwitchInForce> in_force;
	for (const Node &n : t->nodes) {
		if (n.kind != NodeKind::Switch)
			continue;
		const std::string dir = switch_pin_dir(*t, n.id);
		auto cfg = read_swcfg(dir);
		if (!cfg)
			return cfg.error();
		for (const auto &[k, v] : kv)
			QN_TRY(apply_swcfg(*cfg, k, v));
		if (auto st = validate_swcfg(*cfg); !st.ok())
			return make_error("switch " + n.name + ": " + st.error().message);
		QN_TRY(write_swcfg(dir, *cfg));
		auto back = read_swcfg(dir);
		if (!back)
			return back.error();
		SwitchInForce f{n.name, swcfg_values(*back), {}};
		if (back->red.on && back->pfc.on) {
			// the headroom PFC reserves: the setting's per port, else each port's (the loader's)
			uint64_t hdrm = 0;
			const size_t nports = t->ports_of(n.id).size();
			if (back->pfc.hdrm_bytes)
				hdrm = back->pfc.hdrm_bytes * nports;
			else if (auto d = running_dilation(topo); d)
				for (uint64_t h : switch_headrooms(*t, n.id, *d))
					hdrm += h;
			if (std::string w = ecn_before_pfc(*back, nports, hdrm); !w.empty())
				f.warnings.push_back(std::move(w));
		}
		in_force.push_back(std::move(f));
	}
	return in_force;
}

// ---------------------------------------------------------------------------------------------
// Counters by name

Counters switch_counter_delta(const std::vector<SwitchCounters> &before, const std::vector<SwitchCounters> &after)
{
	Counters c;
	for (size_t i = 0; i < after.size(); i++)
		for (size_t p = 0; p < after[i].ports.size(); p++) {
			NamedCounters b;
			if (i < before.size() && p < before[i].ports.size())
				b = counters_by_name(before[i].ports[p]);
			const NamedCounters a = counters_by_name(after[i].ports[p]);
			for (size_t k = 0; k < a.size(); k++) {
				if (a[k].kind != CounterKind::Count) // a level since the topology came up: no delta
					continue;
				const uint64_t b0 = k < b.size() && b[k].name == a[k].name ? b[k].value : 0;
				c["switch." + a[k].name] += a[k].value >= b0 ? a[k].value - b0 : 0;
			}
		}
	// Peak gauges: the highest over switches (each was zeroed when the attempt started).
	for (const SwitchCounters &s : after)
		for (const auto &[k, v] : s.gauges)
			if (is_peak_gauge(k))
				c["switch." + k] = std::max(c["switch." + k], v);
	return c;
}

Counters host_counter_sum(const std::vector<HostCounters> &hosts)
{
	Counters c;
	for (const auto &h : hosts)
		for (const auto &[k, v, kind] : host_counters_by_name(h)) {
			auto &x = c["host." + k];
			x = combine_counter(x, v, kind);
		}
	return c;
}

Counters report_counters(const RunReport &r)
{
	Counters c{{"qp.packets_sent", r.tx_pkts},       {"qp.retransmitted", r.retx_pkts},
		   {"qp.timeouts", r.timeouts},          {"qp.duplicates", r.dup_pkts},
		   {"qp.delivered_bytes", r.delivered_bytes}, {"qp.corrupt_messages", r.corrupt_msgs}};
	for (const auto &[k, v] : r.cc) // the CC parts' own counters (cc::CounterList)
		c["cc." + k] = v;
	return c;
}

std::vector<CounterColumn> headline_counters(const std::vector<std::string> &schemes)
{
	std::vector<CounterColumn> v = {
		{"CNPs", "host.cnp_rx"},       {"PAUSE", "host.pfc_xoff"}, {"drops", "switch.drops"},
		{"tail drops", "switch.drops.buffer"}, {"ECN marks", "switch.ecn_marked"}, {"retx", "qp.retransmitted"},
	};
	for (const auto &s : schemes)
		for (const auto &c : tp::cc::summary_columns(s))
			if (std::none_of(v.begin(), v.end(), [&](const CounterColumn &x) { return x.counter == c.counter; }))
				v.push_back(CounterColumn{c.title, c.counter});
	return v;
}

uint64_t SchemeResult::queue_p99() const
{
	uint64_t p99 = 0;
	for (const auto &p : ports)
		p99 = std::max(p99, p.st.p99);
	return p99;
}

void summarize_flows(SchemeResult &s, size_t nflows)
{
	s.done = s.bad = 0;
	s.sent_bytes = 0;
	s.sd.clear();
	s.fct.clear();
	std::vector<std::pair<uint64_t, double>> sz;
	for (const auto &f : s.rep.flows) {
		s.sent_bytes += f.spec.size;
		if (!f.done)
			continue;
		s.done++;
		s.fct.push_back(f.fct_ns);
		if (f.standalone_ns) {
			s.sd.push_back(f.slowdown());
			sz.emplace_back(f.spec.size, f.slowdown());
		}
		if (!f.content_ok)
			s.bad++;
	}
	s.delivered = s.rep.delivered_bytes;
	std::sort(s.sd.begin(), s.sd.end());
	std::sort(s.fct.begin(), s.fct.end());
	s.nbins = nflows >= 200 ? 20 : std::max<size_t>(1, std::min<size_t>(10, nflows / 5));
	s.bins = size_bins(sz, s.nbins);
	const double secs = double(s.rep.elapsed_ns) / 1e9;
	s.goodput_gbps = secs > 0 ? double(s.delivered) * 8 / secs / 1e9 : 0;
	s.valid = s.rep.health.valid;
	s.reasons = s.rep.health.reasons;
	if (s.rep.interrupted)
		s.reasons.insert(s.reasons.begin(), "interrupted by a signal after " + format_time(s.rep.elapsed_ns) +
							     " of fabric time: partial");
	if (s.done != nflows)
		s.reasons.push_back(std::to_string(nflows - s.done) + " flows did not complete within the time limit");
	if (s.bad || s.rep.corrupt_msgs)
		s.reasons.push_back(std::to_string(s.bad) + " flows delivered wrong content");
	if (!s.reasons.empty())
		s.valid = false;
}

std::vector<std::pair<std::string, std::string>>
switch_settings_for(const Experiment &x, const std::string &scheme,
		    const std::vector<std::pair<std::string, std::string>> &derived)
{
	auto v = derived;
	for (const std::string &key : {std::string(), scheme})
		if (auto it = x.switch_settings.find(key); it != x.switch_settings.end())
			v.insert(v.end(), it->second.begin(), it->second.end());
	return v;
}

uint64_t ExperimentRun::queue_interval_ns() const
{
	return x.queue_interval_ns ? x.queue_interval_ns : std::max<uint64_t>(1000, cal.base_rtt_min_ns);
}

// ---------------------------------------------------------------------------------------------
// Bring-up

Result<ExperimentRun> prepare_run(const Experiment &x, const std::string &name)
{
	ExperimentRun r;
	r.x = x;
	auto t = load_topology_file(x.topology, x.params);
	if (!t)
		return t.error();
	r.topo = *t;
	if (!x.preset.empty()) {
		auto p = load_preset(x.preset);
		if (!p)
			return p.error();
		r.preset = *p;
		r.have_preset = true;
		apply_preset(r.topo, r.preset);
		r.eo.switch_delay_ns = r.preset.switch_delay_ns;
		r.eo.nic_tx_delay_ns = r.preset.nic_delay_ns;
		r.eo.nic_rx_delay_ns = r.preset.nic_delay_ns;
	}
	r.name = name;
	if (r.name.empty()) {
		std::string n;
		for (char ch : x.name)
			if (std::isalnum(uint8_t(ch)) && n.size() < 8)
				n += char(std::tolower(uint8_t(ch)));
		r.name = (n.empty() ? "x" : n) + std::to_string(getpid() % 10000);
	}
	r.topo.name = r.name;
	QN_TRY(derive(r.topo));
	auto flows = build_flows(x.workloads, x.seed, r.topo, x.source);
	if (!flows)
		return flows.error();
	r.flows = std::move(*flows);
	r.hash = flow_list_hash(r.flows);
	for (uint64_t id : x.trace_flows)
		if (std::none_of(r.flows.begin(), r.flows.end(), [&](const FlowSpec &f) { return f.id == id; }))
			return make_error(x.source + ": trace: no flow " + std::to_string(id) + " (the workloads make " +
					  std::to_string(r.flows.size()) + " flows, numbered from 0 in workload order)");
	return r;
}

Status bring_up(ExperimentRun &r, double d)
{
	// A running topology changes D in place (topo_up: the namespaces and veths stay)
	auto dl = Dilation::make(d);
	if (!dl)
		return dl.error();
	UpOptions uo = r.up_opts;
	uo.dilation = *dl;
	// The pooled ports live as long as the namespaces: a topology made again (not changed in
	// place: another namespace inode) or not up before has none of them.
	auto inode = [&] {
		struct stat st;
		return r.topo.nodes.empty() || stat(("/run/netns/" + r.topo.netns(0)).c_str(), &st) != 0 ? uint64_t(0)
													: uint64_t(st.st_ino);
	};
	const uint64_t before = r.up ? inode() : 0;
	Status up = topo_up(r.topo, uo);
	if (!up.ok() || before == 0 || inode() != before)
		r.pool->clear();
	QN_TRY(up);
	r.up = true;
	r.d_now = d;
	return ok_status();
}

void take_down(ExperimentRun &r)
{
	r.pool->clear();
	if (r.up)
		(void)topo_down(r.name);
	r.up = false;
}

// ---------------------------------------------------------------------------------------------
// Calibration

Status calibrate(ExperimentRun &c, double forced_d)
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
	c.hooks.phase("calibration: timer jitter", 0);
	// three 100 ms measurements, the quietest one: a transient burst of preemption must not
	// set D for the whole run (the run's own validity check catches stalls during it)
	k.jitter_wall_ns = UINT64_MAX;
	for (int i = 0; i < 3; i++)
		k.jitter_wall_ns = std::min(k.jitter_wall_ns, measure_jitter_ns(100));
	const cc::Fabric links = links_fabric(c.topo);
	k.host_rate_bps = links.line_rate_bps;
	k.mtu = links.mtu;
	std::set<std::string> senders;
	for (const auto &f : c.flows)
		senders.insert(f.src);
	k.offered_bps = double(senders.size()) * double(k.host_rate_bps);
	// Base RTTs over every host pair of the flow list (common.md §4).
	auto base_rtts = [&](Engine &en) -> Status {
		auto f = flows_fabric(c.topo, en, c.flows);
		if (!f)
			return f.error();
		k.base_rtt_min_ns = f->base_rtt_ns;
		k.network_rtt_min_ns = f->min_base_rtt_ns;
		k.base_rtt_max_ns = f->max_base_rtt_ns;
		return ok_status();
	};
	// The experiment's own concurrency: every sender of the workload at once, 16 MB in all
	// (at least 1 MB each). This is the load the engine, the switch programs and the veths
	// carry together in the run; one pair alone leaves the per-host work of the loop and
	// the other senders' kernel paths out. Each sender sends to the next host of the
	// topology (a ring), so no receiver takes more than one sender's load: at the run's D
	// no host receives more than its link rate, while an incast at D = 1 would overrun
	// the receiver's socket (drops, retransmissions) in a way the dilated run never does.
	std::vector<std::string> sender_list;
	for (const auto &f : c.flows)
		sender_list.push_back(f.src);
	const std::vector<FlowSpec> conc = ring_flows(hosts, sender_list);
	if (forced_d > 0) {
		k.d = forced_d;
	} else {
		k.d_auto = true;
		// CPU: how much the workload's senders move together at D = 1 (the engine, the
		// switch programs and the kernel's veths at full speed); D >= offered / that.
		c.hooks.phase("calibration: capacity at D=1", 0);
		QN_TRY(bring_up(c, 1));
		auto e = open_engine(c);
		if (!e)
			return e.error();
		QN_TRY(base_rtts(**e));
		if (auto st = set_running_switches(c.name, {{"pfc", "on"}}); !st)
			return st.error();
		const RunOptions ro = capacity_run_options(conc, c.hooks.stop);
		// The payload bit/s a flow list moved at once (control/capacity.h: the best of three).
		auto aggregate = [&](const std::vector<FlowSpec> &fl) { return capacity_of(**e, fl, ro); };
		// One pair alone (reported: what the engine moves for a single flow).
		auto pair = aggregate({FlowSpec{0, a, b, 16'000'000, 0, 100}});
		if (!pair)
			return pair.error();
		k.capacity_pair_wall_bps = *pair;
		auto all = aggregate(conc);
		if (!all)
			return all.error();
		k.capacity_wall_bps = *all;
		k.capacity_senders = conc.size();
		e->reset(); // close the engine before the topology comes up again at D
		if (k.capacity_wall_bps <= 0)
			return make_error("calibration: the capacity flows (" + std::to_string(conc.size()) +
					  " senders at once) did not complete at D=1 within " +
					  fmt(double(capacity_timeout_ns(conc)) / 1e9, "%g") + " s");
		k.adapt = true;
		k.rule = dilation_rule(DRuleInput{k.offered_bps, k.capacity_wall_bps, k.capacity_pair_wall_bps,
						  k.jitter_wall_ns, k.base_rtt_min_ns});
		k.d = k.rule.d;
	}
	if (k.d_auto) {
		// The paced checks (calibration.h PacedTrial, paced_search): the same senders at once,
		// each to its own receiver at line rate.
		Status err = ok_status();
		auto run_check = [&](double d) -> Result<PacedTrial> {
			c.hooks.phase("calibration: paced check at D=" + fmt(d, "%g"), 0);
			QN_TRY(bring_up(c, d));
			if (auto st = set_running_switches(c.name, {{"pfc", "on"}}); !st)
				return st.error();
			auto e = open_engine(c);
			if (!e)
				return e.error();
			RunOptions ro;
			ro.qp.cc.scheme = "none";
			ro.stop = c.hooks.stop;
			auto rep = run_flows(**e, conc, ro);
			if (!rep)
				return rep.error();
			if (rep->interrupted)
				return interrupted();
			PacedTrial t;
			t.d = d;
			const double run_wall = double(rep->elapsed_ns) * d;
			t.busy_frac = run_wall > 0 ? double(rep->health.busy_wall_ns) / run_wall : 0.0;
			t.pass_p90_wall_ns = rep->health.pass_p90_wall_ns;
			t.frame_wall_ns = uint64_t(double(tp::serialization_ns(uint64_t{k.mtu} + QN_ETH_HLEN + QN_WIRE_OVERHEAD, k.host_rate_bps)) * d);
			t.need = paced_dilation(t);
			k.paced.push_back(t);
			return t;
		};
		const double chosen = paced_search(k.d, [&](double d, PacedTrial &out) {
			auto t = run_check(d);
			if (!t) {
				err = t.error();
				return false;
			}
			out = *t;
			return true;
		});
		if (!err)
			return err.error();
		k.d = chosen;
		if (c.d_now != k.d)
			QN_TRY(bring_up(c, k.d));
	}
	c.hooks.phase("calibration: base RTT and link rate at D=" + fmt(k.d, "%g"), 0);
	if (!k.d_auto)
		QN_TRY(bring_up(c, k.d));
	if (auto st = set_running_switches(c.name, {{"pfc", "on"}}); !st)
		return st.error();
	auto e = open_engine(c);
	if (!e)
		return e.error();
	if (!k.d_auto)
		QN_TRY(base_rtts(**e));
	{
		RunOptions ro;
		ro.qp.cc.scheme = "none";
		ro.stop = c.hooks.stop;
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
		ro.stop = c.hooks.stop;
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

Result<Calibration> up_calibrated(const Topology &t, const UpOptions &base, const RunHooks &hooks)
{
	ExperimentRun c;
	c.topo = t;
	c.name = t.name;
	c.up_opts = base;
	c.hooks = hooks;
	std::vector<std::string> hosts;
	for (const auto &n : t.nodes) {
		if (n.kind != NodeKind::Host)
			continue;
		if (is_rxe_stack(n.stack))
			return make_error(t.source + ": --dilation auto: host " + n.name +
					  " runs rdma_rxe, which the engine does not serve; calibrate without it or give D");
		hosts.push_back(n.name);
	}
	if (hosts.size() < 2)
		return make_error(t.source + ": --dilation auto needs at least two hosts");
	for (size_t i = 0; i < hosts.size(); i++)
		c.flows.push_back(FlowSpec{i, hosts[i], hosts[(i + 1) % hosts.size()], 1'000'000, 0, 100});
	if (auto st = calibrate(c, 0); !st) {
		take_down(c);
		return st.error();
	}
	return c.cal;
}

// ---------------------------------------------------------------------------------------------
// One scheme

cc::Fabric links_fabric(const Topology &t)
{
	cc::Fabric f{0, 0, UINT32_MAX, 0, 0};
	for (const auto &l : t.links) {
		if (t.nodes[size_t(l.a)].kind == NodeKind::Host || t.nodes[size_t(l.b)].kind == NodeKind::Host)
			f.line_rate_bps = std::max(f.line_rate_bps, l.rate_bps);
		f.mtu = std::min(f.mtu, l.mtu);
	}
	return f;
}

Result<cc::Fabric> flows_fabric(const Topology &t, const Engine &e, const std::vector<FlowSpec> &flows)
{
	cc::Fabric f = links_fabric(t);
	uint64_t lo = UINT64_MAX;
	for (const auto &fl : flows) {
		auto p = e.path(fl.src, fl.dst);
		if (!p.ok)
			return make_error("no path from " + fl.src + " to " + fl.dst + " in " + t.source);
		lo = std::min(lo, p.base_rtt_ns);
	}
	// The parameters scale with the flows' smallest base RTT; the network-wide range is the
	// fabric's (every host pair), the same for every flow list on it: SFC's BDP and PB-FS's
	// datacenter RTT come out the same in `gen` and `run` (issue 44).
	f.base_rtt_ns = flows.empty() ? 0 : lo;
	f.min_base_rtt_ns = e.min_base_rtt_ns();
	f.max_base_rtt_ns = e.max_base_rtt_ns();
	return f;
}

Result<SchemeResult> run_scheme(ExperimentRun &c, const std::string &scheme, size_t idx)
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
	cc::Fabric fab{k.host_rate_bps, k.base_rtt_min_ns, k.mtu, k.network_rtt_min_ns, k.base_rtt_max_ns};
	auto dv = cc::derive(scheme, fab, scale);
	if (!dv)
		return dv.error();
	if (!dv->refused.empty()) {
		s.skipped = dv->refused;
		return s;
	}
	if (!scale && sc.params == "derived" && paper_fabric)
		dv->notes.insert(dv->notes.begin(), scheme + ": preset " + c.preset.name + " is the paper's fabric");
	s.derived_notes = dv->notes;
	s.switch_applied = switch_settings_for(c.x, scheme, dv->switch_settings);
	auto in_force = set_running_switches(c.name, s.switch_applied);
	if (!in_force)
		return make_error(c.x.source + ": scheme " + scheme + ": switch settings: " + in_force.error().to_string());
	s.switch_in_force = std::move(*in_force);
	for (const auto &sw : s.switch_in_force)
		for (const auto &w : sw.warnings)
			s.warnings.push_back(sw.sw + ": " + w);
	auto e = open_engine(c);
	if (!e)
		return e.error();
	Engine &en = **e;
	QN_TRY(en.sample_all_queues(c.queue_interval_ns()));
	auto before = read_all_counters(c.name);
	if (!before)
		return before.error();
	if (auto t = load_running(c.name); !t)
		return t.error();
	else
		QN_TRY(zero_switch_peak_gauges(*t));
	RunOptions ro;
	ro.qp.mode = c.x.mode == "sr" ? Reliability::SelectiveRepeat : Reliability::GoBackN;
	ro.qp.cc.scheme = scheme;
	ro.qp.cc.params = sc.params == "mellanox" ? "mellanox" : "paper";
	ro.qp.cc.overrides = sc.params == "derived" ? dv->overrides : std::map<std::string, std::string>{};
	for (const auto &[kk, v] : sc.overrides)
		ro.qp.cc.overrides[kk] = v;
	ro.timeout_ns = c.x.duration_ns;
	ro.qp_per_flow = true;
	ro.trace_flows = c.x.trace_flows;
	ro.stop = c.hooks.stop;
	const double expected_s = expected_attempt_wall_s(c, c.d_now);
	const std::string label = "scheme " + std::to_string(idx + 1) + "/" + std::to_string(c.x.schemes.size()) + " " + scheme;
	const double t0 = wall_s();
	ro.progress = [&](size_t done, size_t total, uint64_t fabric_ns) {
		c.hooks.tick(label + ": " + std::to_string(done) + "/" + std::to_string(total) + " flows, fabric " +
				     format_time(fabric_ns) + ", " + fmt(wall_s() - t0, "%.1f") + " s",
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
	summarize_flows(s, c.flows.size());
	const uint64_t t0_ns = s.rep.t0_ns;
	auto rel = [t0_ns](uint64_t t) { return t >= t0_ns ? t - t0_ns : 0; };
	for (const auto &qs : en.queue_series()) {
		QueueTrace q{qs.label, {}};
		std::vector<uint64_t> v;
		for (const auto &[t, b] : qs.samples) {
			q.samples.emplace_back(rel(t), b);
			v.push_back(b);
		}
		s.ports.push_back(PortQueue{qs.label, series_stats(v)});
		s.series.push_back(std::move(q));
	}
	std::stable_sort(s.ports.begin(), s.ports.end(),
			 [](const PortQueue &x, const PortQueue &y) { return x.st.max > y.st.max; });
	for (const auto &[t, b] : en.rx_series())
		s.rx.emplace_back(rel(t), b);
	for (const auto &[label2, h] : s.rep.traced) {
		RateTrace rt{label2, 0, en.trace(h)};
		if (auto sp = label2.find(' '); label2.rfind("flow ", 0) == 0 && sp != std::string::npos)
			rt.flow = std::strtoull(label2.c_str() + 5, nullptr, 10);
		for (auto &p : rt.points)
			p.t_ns = rel(p.t_ns);
		s.rates.push_back(std::move(rt));
	}
	std::vector<HostCounters> hc;
	for (const auto &h : en.host_names())
		hc.push_back(en.host_counters(h));
	s.counters = switch_counter_delta(*before, *after);
	for (const auto &m : {host_counter_sum(hc), report_counters(s.rep)})
		s.counters.insert(m.begin(), m.end());
	lossless_fidelity(s);
	// signal loop delays (send of the PSN a signal names -> the sender's reaction), fabric ns
	for (size_t sg = 0; sg < size_t(tp::Signal::Count); sg++)
		if (const auto &hg = en.loop_delay(tp::Signal(sg)); hg.count()) {
			const std::string p = "loop." + tp::to_string(tp::Signal(sg));
			s.counters[p + ".n"] = hg.count();
			s.counters[p + ".p50_ns"] = hg.quantile(0.5);
			s.counters[p + ".p99_ns"] = hg.quantile(0.99);
		}
	e->reset();
	return s;
}

double expected_attempt_wall_s(const ExperimentRun &c, double d, double fixed_s)
{
	if (c.flows.empty())
		return fixed_s;
	uint64_t last_start = 0, busiest = 0;
	std::map<std::string, uint64_t> in, out;
	for (const auto &f : c.flows) {
		last_start = std::max(last_start, f.start_ns);
		busiest = std::max({busiest, in[f.dst] += f.size, out[f.src] += f.size});
	}
	const double rate = double(c.cal.host_rate_bps ? c.cal.host_rate_bps : 1);
	const double fabric_ns = double(last_start) + double(busiest) * 8 / rate * 1e9;
	return std::min(fabric_ns, double(last_start + c.x.duration_ns)) * d / 1e9 + fixed_s;
}

Result<SchemeResult> run_scheme_attempts(ExperimentRun &c, const std::string &scheme, size_t idx)
{
	const Calibration &k = c.cal;
	Result<SchemeResult> r = make_error("no attempt");
	std::vector<std::string> earlier;
	for (int at = 1; at <= c.x.attempts && !c.hooks.stop(); at++) {
		const double need = expected_attempt_wall_s(c, at == 1 ? k.d : c.d_now);
		if (std::string why = c.hooks.budget(need); !why.empty()) {
			if (at == 1) { // not started: skipped with the reason, as a refused fabric is
				SchemeResult s;
				s.scheme = scheme;
				s.skipped = why;
				return s;
			}
			earlier.push_back("attempt " + std::to_string(at) + " not started: " + why);
			r->earlier = earlier;
			break;
		}
		if (at == 1 && c.d_now != k.d)
			QN_TRY(bring_up(c, k.d));
		r = run_scheme(c, scheme, idx);
		if (!r)
			return r.error();
		if (!r->skipped.empty())
			return r;
		r->attempt = at;
		r->earlier = earlier;
		r->d = c.d_now;
		if (r->valid || r->rep.interrupted)
			break;
		std::string why;
		for (const auto &w : r->reasons)
			why += (why.empty() ? "" : "; ") + w;
		earlier.push_back("attempt " + std::to_string(at) + " at D=" + fmt(c.d_now, "%g") + ": " + why);
		if (k.adapt && r->rep.health.cpu_bound && at < c.x.attempts && c.d_now < kMaxDilation)
			QN_TRY(bring_up(c, next_dilation(c.d_now)));
	}
	return r;
}

} // namespace qn
