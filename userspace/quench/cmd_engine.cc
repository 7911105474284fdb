// cmd_engine.cc - `quench gen` (run a workload on the host engine) and `quench engine` (serve
// the hosts and cables of a running topology until stopped). docs/cli.md, docs/transport.md.
#include "quench/cmd_engine.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/units.h"
#include "control/bringup.h"
#include "control/experiment.h"
#include "control/flows.h"
#include "control/runner.h"
#include "control/stats.h"
#include "control/engine_desc.h"
#include "control/swcfg.h"
#include "control/switch_loader.h"
#include "quench/cli.h"
#include "transport/cc/cc.h"
#include "transport/engine.h"
#include "transport/metrics.h"
#include "transport/traffic.h"

namespace {

// Where gen's human-readable text goes: stdout, or stderr with --format json.
FILE *g_txt = stdout;

using namespace qn;
using namespace qn::tp;

volatile std::sig_atomic_t g_engine_stop = 0;

int die(const std::string &m)
{
	std::fprintf(stderr, "quench: %s\n", m.c_str());
	return 1;
}

struct GenArgs {
	std::string topo;
	std::string pattern = "incast";
	// The workload, as an experiment's `workload` line would give it (control/flows.h builds it);
	// the pattern sets its kind.
	Workload w = [] {
		Workload d;
		d.size = 64 * 1024;
		d.load = 0.3;
		d.duration_ns = 1'000'000;
		return d;
	}();
	uint64_t timeout_ns = 0;
	uint64_t seed = 1;
	std::string out;
	size_t trace_pairs = 0;
	std::string trace_out;
	std::string queues;                  // "all" or SW:PORT[,SW:PORT...]
	uint64_t queue_interval_ns = 5'000;
	std::string queue_out;
	std::string fct_out;
	std::string format = "text";        // text, or json: the JSON document on stdout, the text on stderr
	bool keep_switch = false;            // do not set the switches' PFC for the scheme
	bool keep_stages = false;            // do not set the switches' scheme stages (SFC) for the scheme
	QpOptions qp;
	EngineOptions eng;
	cli::EngineFlags engine_flags; // applied to eng after parsing
};

std::vector<std::string> split(const std::string &s, char sep)
{
	std::vector<std::string> v;
	size_t p = 0;
	while (p <= s.size()) {
		size_t q = s.find(sep, p);
		if (q == std::string::npos)
			q = s.size();
		if (q > p)
			v.push_back(s.substr(p, q - p));
		p = q + 1;
	}
	return v;
}

// Parse `gen`'s (and `engine`'s) options into `g`. Return: -1 when parsed, else the exit status
// after the error (2) or the help (0) was printed.
int parse_gen(int argc, char **argv, int first, GenArgs &g, const char *cmd)
{
	CLI::App app{cli::about(cmd), cmd};
	app.add_option("TOPO", g.topo, "a running topology's name")->required();
	app.add_option("--pattern", g.pattern, "workload")->check(CLI::IsMember({"incast", "long", "poisson", "pingpong"}));
	app.add_option("--dst", g.w.dst, "the receiving host");
	app.add_option_function<std::string>(
		"--senders",
		[&g](const std::string &v) {
			char *end = nullptr;
			const long k = std::strtol(v.c_str(), &end, 10);
			if (!v.empty() && !*end) {
				if (k < 1)
					throw CLI::ValidationError("--senders", "needs a count >= 1 or a list of hosts");
				g.w.nsenders = int(k);
			} else {
				g.w.senders = split(v, ',');
			}
		},
		"a count N or hosts H,H,..");
	cli::size(app, "--size", g.w.size, "message size");
	cli::number(app, "--count", g.w.count, 1, 10'000'000, "messages (incast rounds, ping-pongs)");
	cli::time(app, "--sync-window", g.w.window_ns, "incast start times spread in this window");
	cli::time(app, "--interval", g.w.interval_ns, "between incast rounds; between long senders' starts");
	app.add_option_function<std::string>(
		"--load",
		[&g](const std::string &v) {
			char *end = nullptr;
			const double d = std::strtod(v.c_str(), &end);
			if (v.empty() || *end || !(d > 0 && d <= 1))
				throw CLI::ValidationError("--load", "needs a number in (0, 1], got '" + v + "'");
			g.w.load = d;
		},
		"poisson: offered load");
	app.add_option("--cdf", g.w.cdf, "poisson: flow-size CDF file");
	app.add_option_function<std::string>(
		"--flows", [&g](const std::string &v) { g.w.file = v; g.pattern = "flows"; },
		"replay an ns-3 flow file (node ids are the topology's declaration order)");
	cli::time(app, "--duration", g.w.duration_ns, "poisson: arrivals for this long");
	cli::time(app, "--timeout", g.timeout_ns, "give up after this (fabric)");
	cli::number(app, "--seed", g.seed, 0, 1.8e19, "random seed");
	app.add_option("--out", g.out, "flows CSV");
	app.add_option_function<std::string>(
		"--mode",
		[&g](const std::string &v) {
			if (v == "gbn")
				g.qp.mode = Reliability::GoBackN;
			else if (v == "sr")
				g.qp.mode = Reliability::SelectiveRepeat;
			else
				throw CLI::ValidationError("--mode", "must be gbn or sr, got '" + v + "'");
		},
		"gbn or sr");
	cli::number(app, "--ack-every", g.qp.ack_every, 1, 1024, "an ACK per this many packets");
	cli::size(app, "--window-bytes", g.qp.window_bytes, "a static window");
	cli::rate(app, "--qp-rate", g.qp.rate_bps, "a static per-QP rate limit");
	cli::time(app, "--rto-low", g.qp.rto_low_ns, "RTO with few packets in flight");
	cli::time(app, "--rto-high", g.qp.rto_high_ns, "RTO otherwise");
	app.add_option("--cc", g.qp.cc.scheme, "scheme (quench schemes)");
	app.add_option("--cc-params", g.qp.cc.params, "named parameter set");
	cli::key_values(app, "--cc-set", g.qp.cc.overrides, "one parameter, KEY=VALUE (repeatable)");
	bool no_np = false;
	app.add_flag("--no-np", no_np, "no notification point (negative control)");
	app.add_flag("--keep-switch-pfc", g.keep_switch, "leave the switches' PFC as set");
	app.add_flag("--keep-switch-stages", g.keep_stages,
		     "leave the switches' scheme stages (sfc, sfc_qth, ...) as set instead of the scheme's derived ones");
	bool no_hold = false;
	app.add_flag("--test-no-rto-hold", no_hold,
		     "test switch: a QP's retransmission timer keeps running while flow control pauses it (docs/sfc.md)");
	cli::number(app, "--trace", g.trace_pairs, 1, 1000, "rate traces of the first N flows' QPs (labelled src->dst, #k for a pair's k-th flow)");
	app.add_option("--trace-out", g.trace_out, "rate trace CSV");
	app.add_option("--queues", g.queues, "all or SW:PORT,..");
	cli::time(app, "--queue-interval", g.queue_interval_ns, "queue sample interval")
		->check(CLI::Validator([](std::string &v) { return v.find_first_of("123456789") == std::string::npos ? "must be positive" : ""; }, "T"));
	app.add_option("--queue-out", g.queue_out, "queue samples CSV");
	app.add_option("--fct-out", g.fct_out, "ns-3 fct.txt");
	if (std::string(cmd) == "gen")
		app.add_option("--format", g.format, "text, or json: the results as JSON on stdout (the text goes to stderr)")
			->check(CLI::IsMember({"text", "json"}));
	app.add_flag("--icrc", g.eng.icrc, "compute and check the ICRC");
	cli::time(app, "--nic-delay", g.eng.nic_rx_delay_ns, "NIC receive delay");
	cli::time(app, "--switch-delay", g.eng.switch_delay_ns, "switch delay");
	cli::time(app, "--base-rtt", g.eng.base_rtt_ns, "the base RTT parameters scale with");
	g.engine_flags.add_to(app); // --link-credit, --shards (cli.h)
	if (int rc = cli::parse(app, argc, argv, first); rc >= 0)
		return rc;
	g.engine_flags.apply(g.eng);
	if (no_np)
		g.qp.cc.np = false;
	if (no_hold)
		g.qp.hold_rto_in_pause = false;
	return -1;
}

std::string fmt_ns(uint64_t ns)
{
	char b[64];
	if (ns >= 10'000'000)
		std::snprintf(b, sizeof(b), "%.2f ms", double(ns) / 1e6);
	else
		std::snprintf(b, sizeof(b), "%.2f us", double(ns) / 1e3);
	return b;
}

Result<std::unique_ptr<Engine>> open_engine(const std::string &name, const EngineOptions &eo)
{
	auto t = load_running(name);
	if (!t)
		return t.error();
	auto d = running_dilation(name);
	if (!d)
		return d.error();
	return Engine::open(engine_desc(*t), *d, eo);
}

void print_hosts(Engine &e)
{
	for (const auto &h : e.host_names()) {
		const HostCounters &c = e.host_counters(h);
		uint64_t badf = 0;
		for (auto b : c.bad)
			badf += b;
		std::fprintf(g_txt, "host %s: tx %llu rx %llu pfc_rx %llu (xoff %llu xon %llu, paused prio3 %s) ce_rx %llu cnp_rx %llu cnp_tx %llu bts_rx %llu postcard_rx %llu malformed %llu unknown_qp %llu signal_unknown_qp %llu link_errors %llu\n",
			    h.c_str(), static_cast<unsigned long long>(c.tx_frames), static_cast<unsigned long long>(c.rx_frames),
			    static_cast<unsigned long long>(c.pfc_rx), static_cast<unsigned long long>(c.pfc_xoff),
			    static_cast<unsigned long long>(c.pfc_xon), fmt_ns(c.paused_ns[QN_PRIO_DATA]).c_str(),
			    static_cast<unsigned long long>(c.ce_rx), static_cast<unsigned long long>(c.cnp_rx),
			    static_cast<unsigned long long>(c.cnp_tx), static_cast<unsigned long long>(c.bts_rx),
			    static_cast<unsigned long long>(c.postcard_rx), static_cast<unsigned long long>(badf),
			    static_cast<unsigned long long>(c.unknown_qp), static_cast<unsigned long long>(c.signal_unknown_qp),
			    static_cast<unsigned long long>(c.link_errors));
	}
	// Signal loop delays: from the send of the PSN a signal names to the sender's reaction.
	for (size_t s = 0; s < size_t(Signal::Count); s++) {
		const Histogram &hg = e.loop_delay(Signal(s));
		if (hg.count() == 0)
			continue;
		std::fprintf(g_txt, "loop delay %s: n %llu p50 %s p99 %s max %s (fabric)\n", to_string(Signal(s)).c_str(),
			    static_cast<unsigned long long>(hg.count()), fmt_ns(hg.quantile(0.5)).c_str(),
			    fmt_ns(hg.quantile(0.99)).c_str(), fmt_ns(hg.max()).c_str());
	}
	for (size_t o = 0; o < Engine::kBtsOrigins; o++) {
		const Histogram &hg = e.bts_loop_by_origin(o);
		if (hg.count() == 0)
			continue;
		std::fprintf(g_txt, "loop delay bts origin %zu: n %llu p50 %s p99 %s max %s (fabric)\n", o,
			    static_cast<unsigned long long>(hg.count()), fmt_ns(hg.quantile(0.5)).c_str(),
			    fmt_ns(hg.quantile(0.99)).c_str(), fmt_ns(hg.max()).c_str());
	}
}


// `gen --format json`: the run's figures with exact integers (docs/cli.md "gen"): counters by
// name (qp.*, host.* summed, and per host), FCT and slowdown percentiles, the first completion,
// queues, validity and fidelity.
std::string gen_json(const GenArgs &g, Engine &e, const qn::SchemeResult &s, const std::vector<FlowSpec> &flows)
{
	using json = nlohmann::ordered_json;
	const RunReport &rep = s.rep;
	json j;
	j["topology"] = g.topo;
	j["pattern"] = g.pattern;
	j["flows"] = flows.size();
	char h[32];
	std::snprintf(h, sizeof(h), "%016llx", static_cast<unsigned long long>(flow_list_hash(flows)));
	j["flow_hash"] = h;
	j["dilation"] = double(e.clock().d_milli()) / 1000.0;
	j["cables"] = e.cable_count(); // delayed switch-to-switch links the engine carries
	// the CLOCK_MONOTONIC instant of the run's fabric time 0 (trace and queue times count from
	// it): relates them to the switches' timestamps (bpf_ktime_get_ns, wall = fabric x D)
	j["t0_wall_ns"] = e.clock().to_wall(rep.t0_ns);
	j["t0_ns"] = rep.t0_ns; // fabric ns on the engine's clock: instants (pfc_last_pause_at_ns) minus this are run time
	j["cc"] = rep.cc_describe;
	j["interrupted"] = rep.interrupted;
	j["valid"] = rep.health.valid;
	j["reasons"] = rep.health.reasons;
	j["cpu_bound"] = rep.health.cpu_bound;
	j["stalls"] = rep.health.stalls;
	j["kicks"] = {{"send_calls", rep.health.syscall_kicks}, {"carrying_frames", rep.health.kicks},
		      {"tx_held", rep.health.tx_held}, {"tx_frames_peak", rep.health.tx_frames_peak},
		      {"tx_frames_per_port", rep.health.tx_frames_per_port}};
	j["busy_wall_ns"] = rep.health.busy_wall_ns;
	j["stall_threshold_wall_ns"] = rep.health.stall_threshold_wall_ns;
	j["flows_done"] = s.done;
	j["content_errors"] = s.bad;
	uint64_t first_done = 0;
	bool any = false;
	for (const auto &f : rep.flows)
		if (f.done && (!any || f.post_ns + f.fct_ns < first_done)) {
			first_done = f.post_ns + f.fct_ns;
			any = true;
		}
	j["first_completion_ns"] = any ? json(first_done) : json(nullptr);
	j["elapsed_ns"] = rep.elapsed_ns;
	j["goodput_gbps"] = s.goodput_gbps;
	double fct_sum = 0;
	for (uint64_t f : s.fct)
		fct_sum += double(f);
	j["fct_ns"] = json{{"mean", s.fct.empty() ? 0.0 : fct_sum / double(s.fct.size())},
			   {"p50", percentile(s.fct, 0.5)},
			   {"p99", percentile(s.fct, 0.99)},
			   {"max", s.fct.empty() ? 0 : s.fct.back()}};
	j["slowdown"] = json{{"p50", percentile(s.sd, 0.5)},
			     {"p99", percentile(s.sd, 0.99)},
			     {"max", s.sd.empty() ? 0.0 : s.sd.back()}};
	std::vector<HostCounters> hc;
	json hosts = json::object();
	for (const auto &hn : e.host_names()) {
		hc.push_back(e.host_counters(hn));
		json c = json::object();
		for (const auto &[k, v, kind] : host_counters_by_name(hc.back()))
			c[k] = v;
		hosts[hn] = std::move(c);
	}
	json counters = json::object();
	for (const auto &m : {qn::report_counters(rep), qn::host_counter_sum(hc)})
		for (const auto &[k, v] : m)
			counters[k] = v;
	// The switches' peak gauges, the highest over switches (zeroed when the run started).
	if (auto t = load_running(g.topo))
		for (const auto &[k, v] : switch_peak_gauges(*t))
			counters["switch." + k] = v;
	j["counters"] = std::move(counters);
	j["hosts"] = std::move(hosts);
	j["queues"] = json::array();
	for (const auto &qs : e.queue_series()) {
		std::vector<uint64_t> v;
		uint64_t max_at = 0, top = 0; // the first sample at the peak, ns after t0
		for (const auto &[t, b] : qs.samples) {
			v.push_back(b);
			if (v.size() == 1 || b > top) {
				top = b;
				max_at = t >= rep.t0_ns ? t - rep.t0_ns : 0;
			}
		}
		const SeriesStats st = series_stats(v);
		j["queues"].push_back(json{{"port", qs.label},
					   {"samples", st.samples},
					   {"mean", st.mean},
					   {"p50", st.p50},
					   {"p99", st.p99},
					   {"max", st.max},
					   {"max_at_ns", max_at}});
	}
	const FidelityReport &fr = rep.fidelity;
	j["fidelity"] = json::object();
	for (const auto &f : fidelity_figures(fr))
		j["fidelity"][f.name] = f.count ? json(uint64_t(f.value)) : json(f.value);
	j["affected"] = json::array(); // [from, to) ns after t0_ns, merged, the first 256
	for (const auto &[a, b] : fr.spans)
		j["affected"].push_back(json::array({a, b}));
	j["traced"] = json::array();
	for (const auto &[label, qh] : rep.traced)
		j["traced"].push_back(label);
	return j.dump(1, '\t') + "\n";
}

} // namespace

int cmd_gen(int argc, char **argv, int first)
{
	GenArgs g;
	if (int rc = parse_gen(argc, argv, first, g, "gen"); rc >= 0)
		return rc;
	if (g.format == "json")
		g_txt = stderr;
	auto eng = open_engine(g.topo, g.eng);
	if (!eng)
		return die("gen: " + eng.error().to_string());
	Engine &e = **eng;
	std::vector<std::string> hosts = e.host_names();
	auto known = [&](const std::string &h) { return std::find(hosts.begin(), hosts.end(), h) != hosts.end(); };
	if (g.w.dst.empty())
		g.w.dst = hosts.front();
	if (!known(g.w.dst))
		return die("gen: --dst: no host '" + g.w.dst + "' in topology " + g.topo);
	if (g.w.senders.empty()) {
		for (const auto &h : hosts)
			if (h != g.w.dst && (g.w.nsenders == 0 || int(g.w.senders.size()) < g.w.nsenders))
				g.w.senders.push_back(h);
		if (g.w.nsenders > 0 && int(g.w.senders.size()) < g.w.nsenders)
			return die("gen: --senders " + std::to_string(g.w.nsenders) + ": topology " + g.topo + " has only " +
				   std::to_string(g.w.senders.size()) + " other hosts");
	}
	for (const auto &s : g.w.senders)
		if (!known(s))
			return die("gen: --senders: no host '" + s + "' in topology " + g.topo);
	// The scheme's loss mode decides whether the fabric is lossless: PFC on every switch for a
	// lossless scheme, off for a lossy one (unless --keep-switch-pfc).
	auto sch = cc::scheme(g.qp.cc.scheme);
	if (!sch)
		return die("gen: --cc: " + sch.error().to_string() + " (quench schemes lists the parts)");
	if (!g.keep_switch)
		if (auto st = set_running_switches(g.topo, {{"pfc", sch->lossless() ? "on" : "off"}}); !st)
			return die("gen: " + st.error().to_string());
	if (g.queues == "all") {
		if (auto st = e.sample_all_queues(g.queue_interval_ns); !st.ok())
			return die("gen: --queues: " + st.error().to_string());
	} else if (!g.queues.empty()) {
		for (const auto &q : split(g.queues, ',')) {
			auto colon = q.find(':');
			if (colon == std::string::npos)
				return die("gen: --queues: expected SWITCH:PORT, got '" + q + "'");
			if (auto st = e.sample_queue(q.substr(0, colon), q.substr(colon + 1), g.queue_interval_ns); !st.ok())
				return die("gen: --queues: " + st.error().to_string());
		}
	}
	std::vector<FlowSpec> flows;
	RunOptions ro;
	ro.qp = g.qp;
	if (g.pattern == "pingpong") {
		for (uint64_t r = 0; r < g.w.count; r++)
			flows.push_back(FlowSpec{flows.size(), g.w.senders.front(), g.w.dst, g.w.size, 0, 100});
		ro.serial_per_pair = true;
	} else {
		// The experiment's builder (control/flows.h): `gen --seed S` gives the flows of an
		// experiment with `seed S` and this one workload.
		auto t = load_running(g.topo);
		if (!t)
			return die("gen: " + t.error().to_string());
		Workload &w = g.w;
		w.kind = g.pattern == "incast"	 ? Workload::Kind::Incast
			 : g.pattern == "long"	 ? Workload::Kind::Long
			 : g.pattern == "poisson" ? Workload::Kind::Poisson
						  : Workload::Kind::Flows;
		w.nsenders = 0; // resolved to names above
		if (w.kind == Workload::Kind::Poisson && w.cdf.empty())
			return die("gen: --pattern poisson needs --cdf FILE");
		auto fl = build_flows({w}, g.seed, *t, "gen --pattern " + g.pattern);
		if (!fl)
			return die("gen: " + fl.error().to_string());
		flows = std::move(*fl);
	}
	// The scheme's stages (flow control, start policy) on every switch, derived for this fabric
	// as `quench run` does (cc::derive_stages); the base algorithm's switch profile (RED) stays
	// as set.
	if (!g.keep_stages && !flows.empty()) {
		auto t = load_running(g.topo);
		if (!t)
			return die("gen: " + t.error().to_string());
		auto fab = flows_fabric(*t, e, flows);
		if (!fab)
			return die("gen: " + fab.error().to_string());
		if (g.eng.base_rtt_ns)
			fab->base_rtt_ns = g.eng.base_rtt_ns;
		auto d = cc::derive_stages(g.qp.cc.scheme, *fab);
		if (!d)
			return die("gen: " + d.error().to_string());
		if (!d->refused.empty())
			return die("gen: " + d->refused);
		for (const auto &n : d->notes)
			std::fprintf(g_txt, "derived %s\n", n.c_str());
		if (auto st = set_running_switches(g.topo, d->switch_settings); !st)
			return die("gen: " + st.error().to_string());
		std::string kv;
		for (const auto &[k, v] : d->switch_settings)
			kv += " " + k + "=" + v;
		std::fprintf(g_txt, "switch stages:%s\n", kv.c_str());
	}
	ro.timeout_ns = g.timeout_ns ? g.timeout_ns : 1'000'000'000ULL;
	ro.trace_pairs = g.trace_pairs;
	// Every flow its own QP, as `quench run` (runner.cc) and the ns-3 RDMA simulator: a later
	// message of a pair starts at line rate with a fresh controller, never at the rate an earlier
	// one was cut to (issue 44). Ping-pong keeps one QP per pair (its messages alternate).
	ro.qp_per_flow = true;
	if (g.trace_pairs && g.trace_out.empty())
		return die("gen: --trace needs --trace-out FILE");
	std::fprintf(g_txt, "gen %s: %zu flows (%s), flow-list hash %016llx, reliability %s, D %.10g, %zu cables\n", g.topo.c_str(),
		    flows.size(), g.pattern.c_str(), static_cast<unsigned long long>(flow_list_hash(flows)),
		    to_string(g.qp.mode).c_str(), double(e.clock().d_milli()) / 1000.0, e.cable_count());
	// Ctrl-C or SIGTERM stops the run at the next loop iteration; what was measured is printed.
	std::signal(SIGINT, [](int) { g_engine_stop = 1; });
	std::signal(SIGTERM, [](int) { g_engine_stop = 1; });
	ro.stop = [] { return g_engine_stop != 0; };
	// Peak gauges (gauges.h) cover this run: zeroed now, read after it.
	if (auto t = load_running(g.topo); !t)
		return die("gen: " + t.error().to_string());
	else if (auto st = zero_switch_peak_gauges(*t); !st.ok())
		return die("gen: " + st.error().to_string());
	auto rep = run_flows(e, flows, ro);
	if (!rep)
		return die("gen: " + rep.error().to_string());
	if (rep->interrupted)
		std::fprintf(g_txt, "interrupted by a signal after %s of fabric time: the figures below are partial\n",
			    fmt_ns(rep->elapsed_ns).c_str());
	std::fprintf(g_txt, "cc %s; switch PFC %s\n", rep->cc_describe.c_str(),
		    g.keep_switch ? "as set" : (sch->lossless() ? "on" : "off"));
	// the experiment library's figures (control/runner.h summarize_flows), for the text and JSON
	qn::SchemeResult s;
	s.rep = *rep;
	qn::summarize_flows(s, flows.size());
	const size_t done = s.done, bad = s.bad;
	std::fprintf(g_txt, "flows done %zu/%zu, content errors %zu, corrupt messages %llu\n", done, flows.size(), bad,
		    static_cast<unsigned long long>(rep->corrupt_msgs));
	std::fprintf(g_txt, "fct p50 %s  p99 %s  max %s (fabric)\n", fmt_ns(percentile(s.fct, 0.5)).c_str(),
		     fmt_ns(percentile(s.fct, 0.99)).c_str(), fmt_ns(s.fct.empty() ? 0 : s.fct.back()).c_str());
	std::fprintf(g_txt, "slowdown p50 %.2f  p99 %.2f  max %.2f (FCT / standalone FCT, common.md §4)\n",
		     percentile(s.sd, 0.5), percentile(s.sd, 0.99), s.sd.empty() ? 0.0 : s.sd.back());
	std::fprintf(g_txt, "goodput %.3f Gbit/s over %s (fabric), packets %llu, retransmitted %llu, timeouts %llu, duplicates %llu\n",
		    s.goodput_gbps, fmt_ns(rep->elapsed_ns).c_str(),
		    static_cast<unsigned long long>(rep->tx_pkts), static_cast<unsigned long long>(rep->retx_pkts),
		    static_cast<unsigned long long>(rep->timeouts), static_cast<unsigned long long>(rep->dup_pkts));
	print_hosts(e);
	std::fputs(rep->health.to_text().c_str(), g_txt);
	{
		// Flows an affected period touched (fidelity.h), and the slowdowns without them.
		const FidelityReport &fr = rep->fidelity;
		std::vector<double> sd;
		for (const auto &f : rep->flows)
			if (f.done && f.standalone_ns && !f.tagged)
				sd.push_back(f.slowdown());
		std::sort(sd.begin(), sd.end());
		char un[64] = "none untagged";
		if (!sd.empty())
			std::snprintf(un, sizeof(un), "p50 %.2f p99 %.2f", percentile(sd, 0.5), percentile(sd, 0.99));
		std::fprintf(g_txt, "fidelity: %llu affected periods, %.2f%% of fabric time; touched flows %zu/%zu (%.1f%% of bytes); "
			    "tagged flows %zu/%zu (%.1f%% of bytes); bytes affected %.2f%%; untagged slowdown %s\n",
			    static_cast<unsigned long long>(fr.periods), 100 * fr.time_affected_frac, fr.flows_touched,
			    rep->flows.size(), 100 * fr.bytes_touched_frac, fr.flows_tagged, rep->flows.size(),
			    100 * fr.bytes_tagged_frac, 100 * fr.bytes_affected_frac, un);
	}
	for (const auto &qs : e.queue_series()) {
		std::vector<uint64_t> v;
		for (const auto &[t, b] : qs.samples)
			v.push_back(b);
		const SeriesStats st = series_stats(v);
		std::fprintf(g_txt, "queue %s: samples %zu every %s, mean %.0f B, p50 %llu B, p99 %llu B, max %llu B\n",
			    qs.label.c_str(), st.samples, format_time(g.queue_interval_ns).c_str(), st.mean,
			    static_cast<unsigned long long>(st.p50), static_cast<unsigned long long>(st.p99),
			    static_cast<unsigned long long>(st.max));
	}
	if (!g.queue_out.empty()) {
		std::ofstream o(g.queue_out);
		if (!o)
			return die("gen: cannot write " + g.queue_out);
		o << "queue,t_ns,bytes\n";
		for (const auto &qs : e.queue_series())
			for (const auto &[t, b] : qs.samples)
				o << qs.label << ',' << (t >= rep->t0_ns ? t - rep->t0_ns : 0) << ',' << b << '\n';
	}
	if (!g.fct_out.empty()) {
		std::ofstream o(g.fct_out);
		if (!o)
			return die("gen: cannot write " + g.fct_out);
		for (const auto &f : rep->flows)
			if (f.done)
				o << ns3_fct_line(f) << '\n';
	}
	if (!g.trace_out.empty()) {
		std::ofstream o(g.trace_out);
		if (!o)
			return die("gen: cannot write " + g.trace_out);
		o << "pair,t_ns,rate_bps,window_bytes,acked_bytes\n";
		for (const auto &[label, h] : rep->traced)
			for (const auto &p : e.trace(h))
				o << label << ',' << (p.t_ns >= rep->t0_ns ? p.t_ns - rep->t0_ns : 0) << ',' << p.rate_bps << ','
				  << p.window_bytes << ',' << p.acked_bytes << '\n';
	}
	if (!g.out.empty()) {
		std::ofstream o(g.out);
		if (!o)
			return die("gen: cannot write " + g.out);
		o << "id,src,dst,size,start_ns,post_ns,fct_ns,done,content_ok,standalone_ns,slowdown,tagged,affected_frac,touched\n";
		for (const auto &f : rep->flows)
			o << f.spec.id << ',' << f.spec.src << ',' << f.spec.dst << ',' << f.spec.size << ',' << f.spec.start_ns
			  << ',' << f.post_ns << ',' << f.fct_ns << ',' << (f.done ? 1 : 0) << ',' << (f.content_ok ? 1 : 0)
			  << ',' << f.standalone_ns << ',' << f.slowdown() << ',' << (f.tagged ? 1 : 0) << ',' << f.affected_frac << ',' << (f.touched ? 1 : 0) << '\n';
	}
	if (g.format == "json")
		std::printf("%s", gen_json(g, e, s, flows).c_str());
	if (rep->interrupted)
		return 130;
	return done == flows.size() && bad == 0 && rep->corrupt_msgs == 0 ? 0 : 3;
}

int cmd_engine(int argc, char **argv, int first)
{
	GenArgs g;
	if (int rc = parse_gen(argc, argv, first, g, "engine"); rc >= 0)
		return rc;
	auto eng = open_engine(g.topo, g.eng);
	if (!eng)
		return die("engine: " + eng.error().to_string());
	std::signal(SIGINT, [](int) { g_engine_stop = 1; });
	std::signal(SIGTERM, [](int) { g_engine_stop = 1; });
	Engine &e = **eng;
	std::printf("engine %s: serving %zu hosts and %zu cables until stopped\n", g.topo.c_str(), e.host_names().size(),
		    e.cable_count());
	std::fflush(stdout);
	uint64_t until = g.timeout_ns ? e.now_ns() + g.timeout_ns : UINT64_MAX; // --timeout: serve this long
	e.run([] { return g_engine_stop != 0; }, until);
	if (e.topology_gone())
		return die("engine: topology " + g.topo + " was taken down");
	print_hosts(e);
	std::fputs(e.health().to_text().c_str(), stdout);
	return 0;
}
