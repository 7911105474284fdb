// cmd_engine.cc - `quench gen` (run a workload on the host engine) and `quench engine` (serve
// the hosts and cables of a running topology until stopped). docs/cli.md, docs/transport.md.
#include "cmd_engine.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bringup.h"
#include "cc.h"
#include "swcfg.h"
#include "switch_loader.h"
#include "engine.h"
#include "traffic.h"
#include "units.h"

namespace {

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
	std::string dst;
	std::vector<std::string> senders;
	int nsenders = 0;
	uint64_t size = 64 * 1024;
	uint64_t count = 1;
	uint64_t window_ns = 0;
	uint64_t interval_ns = 0;
	double load = 0.3;
	std::string cdf;
	uint64_t duration_ns = 1'000'000;
	uint64_t timeout_ns = 0;
	uint64_t seed = 1;
	std::string out;
	size_t trace_pairs = 0;
	std::string trace_out;
	std::string queues;                  // "all" or SW:PORT[,SW:PORT...]
	uint64_t queue_interval_ns = 5'000;
	std::string queue_out;
	std::string fct_out;
	bool keep_switch = false;            // do not set the switches' PFC for the scheme
	QpOptions qp;
	EngineOptions eng;
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

// Return: "" or an error naming the option.
std::string parse_gen(int argc, char **argv, int first, GenArgs &g)
{
	for (int i = first; i < argc; i++) {
		std::string s = argv[i];
		auto val = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
		auto size_opt = [&](uint64_t &out) -> std::string {
			std::string v = val();
			auto r = parse_size_bytes(v);
			if (!r)
				return s + ": " + r.error().to_string();
			out = *r;
			return "";
		};
		auto time_opt = [&](uint64_t &out) -> std::string {
			std::string v = val();
			auto r = parse_time_ns(v);
			if (!r)
				return s + ": " + r.error().to_string();
			out = *r;
			return "";
		};
		auto num_opt = [&](uint64_t &out, uint64_t lo, uint64_t hi) -> std::string {
			std::string v = val();
			char *end = nullptr;
			unsigned long long x = std::strtoull(v.c_str(), &end, 10);
			if (v.empty() || *end || x < lo || x > hi)
				return s + " needs an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + v + "'";
			out = x;
			return "";
		};
		std::string e;
		uint64_t n = 0;
		if (s == "--pattern") {
			g.pattern = val();
			if (g.pattern != "incast" && g.pattern != "long" && g.pattern != "poisson" && g.pattern != "pingpong")
				return "--pattern must be incast, long, poisson or pingpong, got '" + g.pattern + "'";
		} else if (s == "--dst") {
			g.dst = val();
		} else if (s == "--senders") {
			std::string v = val();
			char *end = nullptr;
			long k = std::strtol(v.c_str(), &end, 10);
			if (!v.empty() && !*end) {
				if (k < 1)
					return "--senders needs a count >= 1 or a list of hosts";
				g.nsenders = int(k);
			} else {
				g.senders = split(v, ',');
			}
		} else if (s == "--size") {
			e = size_opt(g.size);
		} else if (s == "--count") {
			e = num_opt(g.count, 1, 10'000'000);
		} else if (s == "--sync-window") {
			e = time_opt(g.window_ns);
		} else if (s == "--interval") {
			e = time_opt(g.interval_ns);
		} else if (s == "--load") {
			std::string v = val();
			char *end = nullptr;
			g.load = std::strtod(v.c_str(), &end);
			if (v.empty() || *end || g.load <= 0 || g.load > 1)
				return "--load needs a number in (0, 1]";
		} else if (s == "--cdf") {
			g.cdf = val();
		} else if (s == "--duration") {
			e = time_opt(g.duration_ns);
		} else if (s == "--timeout") {
			e = time_opt(g.timeout_ns);
		} else if (s == "--seed") {
			e = num_opt(g.seed, 0, UINT64_MAX);
		} else if (s == "--out") {
			g.out = val();
		} else if (s == "--mode") {
			std::string v = val();
			if (v == "gbn")
				g.qp.mode = Reliability::GoBackN;
			else if (v == "sr")
				g.qp.mode = Reliability::SelectiveRepeat;
			else
				return "--mode must be gbn or sr, got '" + v + "'";
		} else if (s == "--ack-every") {
			e = num_opt(n, 1, 1024);
			g.qp.ack_every = uint32_t(n);
		} else if (s == "--window-bytes") {
			e = size_opt(g.qp.window_bytes);
		} else if (s == "--qp-rate") {
			std::string v = val();
			auto r = parse_rate_bps(v);
			if (!r)
				return "--qp-rate: " + r.error().to_string();
			g.qp.rate_bps = *r;
		} else if (s == "--rto-low") {
			e = time_opt(g.qp.rto_low_ns);
		} else if (s == "--rto-high") {
			e = time_opt(g.qp.rto_high_ns);
		} else if (s == "--cc") {
			g.qp.cc.scheme = val();
		} else if (s == "--cc-params") {
			g.qp.cc.params = val();
		} else if (s == "--cc-set") {
			std::string kv = val();
			auto eq = kv.find('=');
			if (eq == std::string::npos || eq == 0)
				return "--cc-set needs KEY=VALUE, got '" + kv + "'";
			g.qp.cc.overrides[kv.substr(0, eq)] = kv.substr(eq + 1);
		} else if (s == "--no-np") {
			g.qp.cc.np = false;
		} else if (s == "--keep-switch-pfc") {
			g.keep_switch = true;
		} else if (s == "--trace") {
			e = num_opt(n, 1, 1000);
			g.trace_pairs = size_t(n);
		} else if (s == "--trace-out") {
			g.trace_out = val();
		} else if (s == "--queues") {
			g.queues = val();
		} else if (s == "--queue-interval") {
			e = time_opt(g.queue_interval_ns);
			if (e.empty() && g.queue_interval_ns == 0)
				e = "--queue-interval must be positive";
		} else if (s == "--queue-out") {
			g.queue_out = val();
		} else if (s == "--fct-out") {
			g.fct_out = val();
		} else if (s == "--icrc") {
			g.eng.icrc = true;
		} else if (s == "--nic-delay") {
			e = time_opt(g.eng.nic_rx_delay_ns);
		} else if (s == "--switch-delay") {
			e = time_opt(g.eng.switch_delay_ns);
		} else if (s == "--base-rtt") {
			e = time_opt(g.eng.base_rtt_ns);
		} else if (s == "--link-credit") {
			// frames of lateness a backlogged host link absorbs (0: none, 48ec9aa's pacer)
			const std::string v = val();
			char *end = nullptr;
			const unsigned long frames = std::strtoul(v.c_str(), &end, 10);
			if (v.empty() || *end || frames > 64)
				e = "--link-credit needs a frame count 0..64, got '" + v + "'";
			else
				g.eng.link_credit_frames = uint32_t(frames);
		} else if (s.size() > 1 && s[0] == '-') {
			return "unknown option '" + s + "'";
		} else if (g.topo.empty()) {
			g.topo = s;
		} else {
			return "unexpected argument '" + s + "'";
		}
		if (!e.empty())
			return e;
	}
	if (g.topo.empty())
		return "needs the name of a running topology";
	return "";
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
	return Engine::open(*t, *d, eo);
}

void print_hosts(Engine &e)
{
	for (const auto &h : e.host_names()) {
		const HostCounters &c = e.host_counters(h);
		uint64_t badf = 0;
		for (auto b : c.bad)
			badf += b;
		std::printf("host %s: tx %llu rx %llu pfc_rx %llu (xoff %llu xon %llu, paused prio3 %s) ce_rx %llu cnp_rx %llu cnp_tx %llu bts_rx %llu postcard_rx %llu malformed %llu unknown_qp %llu signal_unknown_qp %llu link_errors %llu\n",
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
		std::printf("loop delay %s: n %llu p50 %s p99 %s max %s (fabric)\n", to_string(Signal(s)).c_str(),
			    static_cast<unsigned long long>(hg.count()), fmt_ns(hg.quantile(0.5)).c_str(),
			    fmt_ns(hg.quantile(0.99)).c_str(), fmt_ns(hg.max()).c_str());
	}
}

} // namespace

int cmd_gen(int argc, char **argv, int first)
{
	GenArgs g;
	std::string err = parse_gen(argc, argv, first, g);
	if (!err.empty())
		return die("gen: " + err);
	auto eng = open_engine(g.topo, g.eng);
	if (!eng)
		return die("gen: " + eng.error().to_string());
	Engine &e = **eng;
	std::vector<std::string> hosts = e.host_names();
	auto known = [&](const std::string &h) { return std::find(hosts.begin(), hosts.end(), h) != hosts.end(); };
	if (g.dst.empty())
		g.dst = hosts.front();
	if (!known(g.dst))
		return die("gen: --dst: no host '" + g.dst + "' in topology " + g.topo);
	if (g.senders.empty()) {
		for (const auto &h : hosts)
			if (h != g.dst && (g.nsenders == 0 || int(g.senders.size()) < g.nsenders))
				g.senders.push_back(h);
		if (g.nsenders > 0 && int(g.senders.size()) < g.nsenders)
			return die("gen: --senders " + std::to_string(g.nsenders) + ": topology " + g.topo + " has only " +
				   std::to_string(g.senders.size()) + " other hosts");
	}
	for (const auto &s : g.senders)
		if (!known(s))
			return die("gen: --senders: no host '" + s + "' in topology " + g.topo);
	// The scheme's loss mode decides whether the fabric is lossless: PFC on every switch for a
	// lossless scheme, off for a lossy one (unless --keep-switch-pfc).
	auto sch = cc::scheme(g.qp.cc.scheme);
	if (!sch)
		return die("gen: --cc: " + sch.error().to_string() + " (quench schemes lists the parts)");
	if (!g.keep_switch) {
		auto t = load_running(g.topo);
		if (!t)
			return die("gen: " + t.error().to_string());
		const bool pfc = sch->lossless();
		for (const Node &n : t->nodes) {
			if (n.kind != NodeKind::Switch)
				continue;
			const std::string dir = switch_pin_dir(*t, n.id);
			auto c = read_swcfg(dir);
			if (!c)
				return die("gen: " + c.error().to_string());
			c->pfc = pfc ? 1 : 0;
			if (auto st = write_swcfg(dir, *c); !st.ok())
				return die("gen: " + n.name + ": " + st.error().to_string());
		}
	}
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
	if (g.pattern == "incast") {
		for (uint64_t r = 0; r < g.count; r++) {
			auto v = gen_incast(g.senders, g.dst, g.size, g.window_ns, g.seed + r, flows.size());
			for (auto &f : v)
				f.start_ns += r * g.interval_ns; // round r starts r intervals after the first
			flows.insert(flows.end(), v.begin(), v.end());
		}
	} else if (g.pattern == "long") {
		for (uint64_t r = 0; r < g.count; r++) {
			auto v = gen_long(g.senders, g.dst, g.size, flows.size());
			for (size_t i = 0; i < v.size(); i++)
				v[i].start_ns = (r * v.size() + i) * g.interval_ns; // sender i starts i intervals later
			flows.insert(flows.end(), v.begin(), v.end());
		}
	} else if (g.pattern == "pingpong") {
		for (uint64_t r = 0; r < g.count; r++)
			flows.push_back(FlowSpec{flows.size(), g.senders.front(), g.dst, g.size, 0, 100});
		ro.serial_per_pair = true;
	} else {
		if (g.cdf.empty())
			return die("gen: --pattern poisson needs --cdf FILE");
		auto cdf = Cdf::load(g.cdf);
		if (!cdf)
			return die("gen: " + cdf.error().to_string());
		auto t = load_running(g.topo);
		uint64_t link = t->defaults.rate_bps;
		flows = gen_poisson(hosts, g.load, link, *cdf, g.duration_ns, g.seed);
	}
	ro.timeout_ns = g.timeout_ns ? g.timeout_ns : 1'000'000'000ULL;
	ro.trace_pairs = g.trace_pairs;
	if (g.trace_pairs && g.trace_out.empty())
		return die("gen: --trace needs --trace-out FILE");
	std::printf("gen %s: %zu flows (%s), flow-list hash %016llx, reliability %s, D %.10g, %zu cables\n", g.topo.c_str(),
		    flows.size(), g.pattern.c_str(), static_cast<unsigned long long>(flow_list_hash(flows)),
		    to_string(g.qp.mode).c_str(), double(e.clock().d_milli()) / 1000.0, e.cable_count());
	auto rep = run_flows(e, flows, ro);
	if (!rep)
		return die("gen: " + rep.error().to_string());
	std::printf("cc %s; switch PFC %s\n", rep->cc_describe.c_str(),
		    g.keep_switch ? "as set" : (sch->lossless() ? "on" : "off"));
	std::vector<uint64_t> fct;
	size_t done = 0, bad = 0;
	uint64_t bytes = 0;
	for (const auto &f : rep->flows) {
		if (f.done) {
			done++;
			fct.push_back(f.fct_ns);
			bytes += f.spec.size;
		}
		if (f.done && !f.content_ok)
			bad++;
	}
	std::sort(fct.begin(), fct.end());
	auto pct = [&](double p) { return fct.empty() ? 0 : fct[std::min(fct.size() - 1, size_t(p * double(fct.size())))]; };
	std::printf("flows done %zu/%zu, content errors %zu, corrupt messages %llu\n", done, flows.size(), bad,
		    static_cast<unsigned long long>(rep->corrupt_msgs));
	std::printf("fct p50 %s  p99 %s  max %s (fabric)\n", fmt_ns(pct(0.5)).c_str(), fmt_ns(pct(0.99)).c_str(),
		    fmt_ns(fct.empty() ? 0 : fct.back()).c_str());
	{
		std::vector<double> sd;
		for (const auto &f : rep->flows)
			if (f.done && f.standalone_ns)
				sd.push_back(f.slowdown());
		std::sort(sd.begin(), sd.end());
		auto sp = [&](double p) { return sd.empty() ? 0.0 : sd[std::min(sd.size() - 1, size_t(p * double(sd.size())))]; };
		std::printf("slowdown p50 %.2f  p99 %.2f  max %.2f (FCT / standalone FCT, common.md §4)\n", sp(0.5), sp(0.99),
			    sd.empty() ? 0.0 : sd.back());
	}
	double secs = double(rep->elapsed_ns) / 1e9;
	std::printf("goodput %.3f Gbit/s over %s (fabric), packets %llu, retransmitted %llu, timeouts %llu, duplicates %llu\n",
		    secs > 0 ? double(bytes) * 8 / secs / 1e9 : 0.0, fmt_ns(rep->elapsed_ns).c_str(),
		    static_cast<unsigned long long>(rep->tx_pkts), static_cast<unsigned long long>(rep->retx_pkts),
		    static_cast<unsigned long long>(rep->timeouts), static_cast<unsigned long long>(rep->dup_pkts));
	print_hosts(e);
	std::fputs(rep->health.to_text().c_str(), stdout);
	{
		// Flows an affected period touched (fidelity.h), and the slowdowns without them.
		const FidelityReport &fr = rep->fidelity;
		std::vector<double> sd;
		for (const auto &f : rep->flows)
			if (f.done && f.standalone_ns && !f.tagged)
				sd.push_back(f.slowdown());
		std::sort(sd.begin(), sd.end());
		auto sp = [&](double p) { return sd.empty() ? 0.0 : sd[std::min(sd.size() - 1, size_t(p * double(sd.size())))]; };
		char un[64] = "none untagged";
		if (!sd.empty())
			std::snprintf(un, sizeof(un), "p50 %.2f p99 %.2f", sp(0.5), sp(0.99));
		std::printf("fidelity: %llu affected periods, %.2f%% of fabric time; touched flows %zu/%zu (%.1f%% of bytes); "
			    "tagged flows %zu/%zu (%.1f%% of bytes); untagged slowdown %s\n",
			    static_cast<unsigned long long>(fr.periods), 100 * fr.time_affected_frac, fr.flows_touched,
			    rep->flows.size(), 100 * fr.bytes_touched_frac, fr.flows_tagged, rep->flows.size(),
			    100 * fr.bytes_tagged_frac, un);
	}
	for (const auto &qs : e.queue_series()) {
		std::vector<uint64_t> v;
		double sum = 0;
		for (const auto &[t, b] : qs.samples) {
			v.push_back(b);
			sum += double(b);
		}
		std::sort(v.begin(), v.end());
		auto q = [&](double p) { return v.empty() ? 0 : v[std::min(v.size() - 1, size_t(p * double(v.size())))]; };
		std::printf("queue %s: samples %zu every %s, mean %.0f B, p50 %llu B, p99 %llu B, max %llu B\n",
			    qs.label.c_str(), v.size(), format_time(g.queue_interval_ns).c_str(),
			    v.empty() ? 0.0 : sum / double(v.size()), static_cast<unsigned long long>(q(0.5)),
			    static_cast<unsigned long long>(q(0.99)), static_cast<unsigned long long>(v.empty() ? 0 : v.back()));
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
	return done == flows.size() && bad == 0 && rep->corrupt_msgs == 0 ? 0 : 3;
}

int cmd_engine(int argc, char **argv, int first)
{
	GenArgs g;
	std::string err = parse_gen(argc, argv, first, g);
	if (!err.empty())
		return die("engine: " + err);
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
