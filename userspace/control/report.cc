// report.cc - an experiment's results folder (report.h).
#include "control/report.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <sys/utsname.h>

#include <nlohmann/json.hpp>

#include "common/units.h"
#include "common/version.h"
#include "control/exec.h"

namespace qn {

using namespace qn::tp;
namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

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

std::string hex16(uint64_t h)
{
	char b[32];
	std::snprintf(b, sizeof(b), "%016llx", static_cast<unsigned long long>(h));
	return b;
}

// A scheme's folder name.
std::string safe(const std::string &scheme)
{
	std::string r;
	for (char ch : scheme)
		r += std::isalnum(uint8_t(ch)) || ch == '-' ? ch : '_';
	return r;
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

std::vector<double> untagged_slowdowns(const SchemeResult &s)
{
	std::vector<double> v;
	for (const auto &f : s.rep.flows)
		if (f.done && f.standalone_ns && !f.tagged)
			v.push_back(f.slowdown());
	std::sort(v.begin(), v.end());
	return v;
}

std::string kv_words(const std::vector<std::pair<std::string, std::string>> &kv)
{
	std::string s;
	for (const auto &[k, v] : kv)
		s += (s.empty() ? "" : " ") + k + "=" + v;
	return s;
}

// Every counter name any scheme has, in name order.
std::vector<std::string> counter_names(const std::vector<SchemeResult> &rs)
{
	std::set<std::string> n;
	for (const auto &s : rs)
		for (const auto &[k, v] : s.counters)
			n.insert(k);
	return {n.begin(), n.end()};
}

Status write_file(const fs::path &p, const std::string &text)
{
	std::ofstream o(p);
	if (!o)
		return sys_error(errno, "cannot write " + p.string());
	o << text;
	o.close();
	if (!o)
		return sys_error(errno, "cannot write " + p.string());
	return ok_status();
}

} // namespace

std::string metadata_text(const ExperimentRun &c)
{
	const Calibration &k = c.cal;
	std::ostringstream meta;
	utsname u{};
	uname(&u);
	char ts[64];
	std::time_t now = std::time(nullptr);
	std::strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
	meta << "date " << ts << "\nkernel " << u.release << "\ncommit " << build_commit() << "\nversion " << build_version() << "\nexperiment " << c.x.source
	     << "\ntopology " << c.x.topology << " (running as " << c.name << ")\npreset "
	     << (c.have_preset ? c.preset.name + " (" + c.preset.source + ")" : "none") << "\nseed " << c.x.seed
	     << "\nflows " << c.flows.size() << "\nflow_hash " << std::hex << c.hash << std::dec << "\nmode " << c.x.mode
	     << "\ndilation " << f2(k.d, "%g") << (k.d_auto ? " (auto)" : " (given)") << "\n";
	if (k.d_auto)
		meta << "dilation_cpu " << f2(k.rule.d_cpu, "%.1f") << " (offered " << f2(k.offered_bps / 1e9, "%.1f")
		     << " Gbit/s / capacity " << f2(k.capacity_wall_bps / 1e9, "%.2f") << " Gbit/s wall at D=1 with "
		     << k.capacity_senders << " senders at once; one pair alone (" << k.pair << ") "
		     << f2(k.capacity_pair_wall_bps / 1e9, "%.2f") << " Gbit/s, D=" << f2(k.rule.d_pair, "%g")
		     << " from it)\ndilation_timer " << f2(k.rule.d_timer, "%.1f") << " (jitter p99 "
		     << k.jitter_wall_ns / 1000 << " us wall / 5% of the base RTT)"
		     << (k.rule.clamped ? "; clamped to " + f2(kMaxDilation, "%g") + ", the largest factor" : std::string()) << "\n";
	for (const auto &t : k.paced)
		meta << "dilation_paced at D=" << f2(t.d, "%g") << ": engine busy " << f2(100 * t.busy_frac, "%.1f")
		     << "% of the wall time, passes p90 " << t.pass_p90_wall_ns / 1000 << " us = "
		     << f2(t.frame_wall_ns ? double(t.pass_p90_wall_ns) / double(t.frame_wall_ns) : 0.0, "%.2f")
		     << " frame times (" << t.frame_wall_ns / 1000 << " us); needs D=" << f2(t.need, "%g") << "\n";
	meta << "timer_jitter_p99_wall_ns " << k.jitter_wall_ns << "\nhost_rate " << format_rate(k.host_rate_bps)
	     << "\nmtu " << k.mtu << "\nbase_rtt_ns " << k.base_rtt_min_ns << " (the flows' smallest) network " << k.network_rtt_min_ns << " .. "
	     << k.base_rtt_max_ns
	     << " (computed, common.md §4)\nrtt_check " << k.pair << " 64 B ping-pong FCT median " << k.rtt_measured_ns
	     << " ns (the base RTT above counts a full frame per hop; a 64 B message's standalone FCT is "
	     << k.rtt_expected_ns << " ns by that definition)\nlink_rate_check " << k.pair << " one flow reached "
	     << f2(100 * k.link_rate_ratio, "%.1f") << "% of its standalone rate\n";
	meta << "queue_interval_ns " << c.queue_interval_ns() << "\n";
	return meta.str();
}

std::string scheme_metadata(const SchemeResult &s)
{
	std::ostringstream m;
	for (const auto &n : s.derived_notes)
		m << "derived " << n << "\n";
	for (const auto &w : s.warnings)
		m << "warning " << s.scheme << " " << w << "\n";
	m << "switch_applied " << s.scheme << " " << kv_words(s.switch_applied) << "\n";
	for (const auto &sw : s.switch_in_force)
		m << "switch_in_force " << s.scheme << " " << sw.sw << " " << kv_words(sw.settings) << "\n";
	return m.str();
}

Status write_scheme_files(const std::string &out, const SchemeResult &s)
{
	const fs::path d = fs::path(out) / safe(s.scheme);
	std::error_code ec;
	fs::create_directories(d, ec);
	if (ec)
		return make_error("cannot create " + d.string() + ": " + ec.message());
	{
		std::ostringstream o;
		for (const auto &f : s.rep.flows)
			if (f.done)
				o << ns3_fct_line(f) << '\n';
		QN_TRY(write_file(d / "fct.txt", o.str()));
	}
	{
		std::ostringstream o;
		o << "scheme,id,src,dst,size,dport,start_ns,fct_ns,standalone_ns,slowdown,done,content_ok,size_bin,tagged,"
		     "affected_frac,touched\n";
		// each completed flow's bin, by the rule the bins were counted with (-1: not completed)
		std::vector<uint64_t> sizes;
		for (const auto &f : s.rep.flows)
			if (f.done && f.standalone_ns)
				sizes.push_back(f.spec.size);
		const auto idx = size_bin_index(sizes, s.nbins);
		size_t next = 0;
		for (const auto &f : s.rep.flows) {
			const int bin = f.done && f.standalone_ns ? int(idx[next++]) : -1;
			o << s.scheme << ',' << f.spec.id << ',' << f.spec.src << ',' << f.spec.dst << ',' << f.spec.size << ','
			  << f.spec.dport << ',' << f.spec.start_ns << ',' << (f.done ? f.fct_ns : 0) << ',' << f.standalone_ns
			  << ',' << (f.done ? f.slowdown() : 0.0) << ',' << (f.done ? 1 : 0) << ',' << (f.content_ok ? 1 : 0)
			  << ',' << bin << ',' << (f.tagged ? 1 : 0) << ',' << f.affected_frac << ',' << (f.touched ? 1 : 0)
			  << '\n';
		}
		QN_TRY(write_file(d / "flows.csv", o.str()));
	}
	{
		std::ostringstream o;
		o << "port,t_ns,bytes\n";
		for (const auto &q : s.series)
			for (const auto &[t, b] : q.samples)
				o << q.label << ',' << t << ',' << b << '\n';
		QN_TRY(write_file(d / "queues.csv", o.str()));
	}
	{
		std::ostringstream o;
		o << "t_ns,rx_data_bytes_total\n";
		for (const auto &[t, b] : s.rx)
			o << t << ',' << b << '\n';
		QN_TRY(write_file(d / "throughput.csv", o.str()));
	}
	if (!s.rates.empty()) {
		// the same columns as `quench gen --trace-out` (pair = the flow's label)
		std::ostringstream o;
		o << "flow,t_ns,rate_bps,window_bytes,acked_bytes\n";
		for (const auto &r : s.rates)
			for (const auto &p : r.points)
				o << r.flow << ',' << p.t_ns << ',' << p.rate_bps << ',' << p.window_bytes << ',' << p.acked_bytes
				  << '\n';
		QN_TRY(write_file(d / "rates.csv", o.str()));
	}
	{
		std::ostringstream o;
		for (const auto &[k, v] : s.counters)
			o << k << ' ' << v << '\n';
		o << "# queue per port: samples mean p50 p99 max (bytes)\n";
		for (const auto &p : s.ports)
			o << "queue " << p.label << ' ' << p.st.samples << ' ' << uint64_t(p.st.mean) << ' ' << p.st.p50 << ' '
			  << p.st.p99 << ' ' << p.st.max << '\n';
		QN_TRY(write_file(d / "counters.txt", o.str()));
	}
	{
		std::ostringstream o;
		o << (s.valid ? "VALID" : "INVALID") << '\n';
		for (const auto &r : s.reasons)
			o << "reason: " << r << '\n';
		o << s.rep.health.to_text();
		QN_TRY(write_file(d / "validity.txt", o.str()));
	}
	{
		std::ostringstream o;
		o << s.cc_describe << '\n';
		for (const auto &n : s.derived_notes)
			o << n << '\n';
		for (const auto &w : s.warnings)
			o << "warning: " << w << '\n';
		for (const auto &[k, v] : s.switch_applied)
			o << "switch " << k << '=' << v << '\n';
		for (const auto &sw : s.switch_in_force)
			o << "in force at " << sw.sw << ": " << kv_words(sw.settings) << '\n';
		QN_TRY(write_file(d / "cc.txt", o.str()));
	}
	return ok_status();
}

// A counter column's value: the counter, or for "A/B" counter A over counter B ("-" when B is 0).
static std::string column_value(const SchemeResult &s, const std::string &counter)
{
	const auto slash = counter.find('/');
	if (slash == std::string::npos)
		return std::to_string(s.counter(counter));
	const uint64_t b = s.counter(counter.substr(slash + 1));
	return b ? f2(double(s.counter(counter.substr(0, slash))) / double(b), "%.2f") : "-";
}

std::string summary_table(const ExperimentRun &c, const std::vector<SchemeResult> &rs)
{
	std::ostringstream tb;
	tb << "| scheme | valid | D | flows done | goodput Gbit/s | slowdown p50 | p95 | p99 | FCT p99 | peak queue | p99 queue ";
	const std::vector<CounterColumn> cols = headline_counters(c.x.schemes);
	for (const auto &h : cols)
		tb << "| " << h.title << " ";
	tb << "|\n|---|---|---|---|---|---|---|---|---|---|---|";
	for (size_t i = 0; i < cols.size(); i++)
		tb << "---|";
	tb << "\n";
	for (const auto &s : rs) {
		tb << "| " << s.scheme << " | " << (s.valid ? "VALID" : "INVALID")
		   << (s.attempt > 1 ? " (try " + std::to_string(s.attempt) + ")" : "") << " | " << f2(s.d, "%g") << " | "
		   << s.done << "/" << c.flows.size() << " | " << f2(s.goodput_gbps, "%.3f") << " | "
		   << f2(percentile(s.sd, 0.5)) << " | " << f2(percentile(s.sd, 0.95)) << " | " << f2(percentile(s.sd, 0.99))
		   << " | " << human_ns(percentile(s.fct, 0.99)) << " | " << human_bytes(double(s.queue_peak())) << " | "
		   << human_bytes(double(s.queue_p99())) << " ";
		for (const auto &h : cols)
			tb << "| " << column_value(s, h.counter) << " ";
		tb << "|\n";
	}
	for (const auto &[scheme, why] : c.skipped)
		tb << "\nskipped " << scheme << ": " << why << "\n";
	for (const auto &s : rs)
		for (const auto &w : s.warnings)
			tb << "\nwarning " << s.scheme << ": " << w << "\n";
	return tb.str();
}

std::string summary_markdown(const ExperimentRun &c, const std::vector<SchemeResult> &rs, const std::string &meta,
			     bool with_plots)
{
	std::ostringstream md;
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
	md << "## Summary\n\n" << summary_table(c, rs) << "\n";
	md << "Goodput: bytes delivered / time until the last completion. Counter columns (every counter by name: "
	      "`<scheme>/counters.txt`, summary.json):";
	for (const auto &h : headline_counters(c.x.schemes))
		md << " " << h.title << " = `" << h.counter << "`;";
	md << " Peak/p99 queue: the highest over switch ports (samples every " << human_ns(c.queue_interval_ns())
	   << ").\n\n";
	md << "## Fidelity\n\nPeriods when the emulator was not the fabric it models (event-loop stalls; link time "
	      "lost beyond one frame, measured at the switches on arrival from hosts and at departure from queues) "
	      "and the flows they touched; a flow is tagged (flows.csv `tagged`) when such periods covered at least "
	      "1% of its lifetime; bytes affected: each flow's bytes weighted by that share; slowdowns over all "
	      "flows and over the untagged ones. A run with more than 5% of its bytes affected is INVALID "
	      "(docs/experiments.md \"Validity\").\n\n"
	      "| scheme | affected periods | fabric time affected | touched flows (bytes) | tagged flows (bytes) | "
	      "bytes affected | arrivals kept | departures kept | fast windows | slowdown p50 / p99 (all) | "
	      "p50 / p99 (untagged) |\n"
	      "|---|---|---|---|---|---|---|---|---|---|---|\n";
	for (const auto &s : rs) {
		const FidelityReport &fr = s.rep.fidelity;
		const Health &h = s.rep.health;
		const auto untagged = untagged_slowdowns(s);
		char b[256];
		std::snprintf(b, sizeof(b), "| %s | %llu | %.2f%% | %zu/%zu (%.1f%%) | %zu/%zu (%.1f%%) | %.2f%% | %.2f%% | %.2f%% | %.2f%% | ",
			      s.scheme.c_str(), static_cast<unsigned long long>(fr.periods), 100 * fr.time_affected_frac,
			      fr.flows_touched, s.rep.flows.size(), 100 * fr.bytes_touched_frac, fr.flows_tagged,
			      s.rep.flows.size(), 100 * fr.bytes_tagged_frac, 100 * fr.bytes_affected_frac, 100 * h.sw_arrival_eff,
			      100 * h.sw_departure_eff, 100 * h.sw_fast_frac);
		md << b << f2(percentile(s.sd, 0.5)) << " / " << f2(percentile(s.sd, 0.99)) << " | "
		   << f2(percentile(untagged, 0.5)) << " / " << f2(percentile(untagged, 0.99)) << " |\n";
	}
	md << "\n## Slowdown by flow size\n\nFlows sorted by size and binned at size percentiles (common.md §4); a size "
	      "never spans two bins, so a size that many flows share is one bin.\n\n";
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
	md << "\n## Counters\n\nEvery counter that is not zero, by name (switch: summed over ports; host: over "
	      "hosts; qp: the transport's totals).\n\n";
	for (const auto &s : rs) {
		md << "- " << s.scheme << ":";
		for (const auto &[name, v] : s.counters)
			if (v)
				md << " " << name << "=" << v;
		md << "\n";
	}
	md << "\n## Switch settings\n\nApplied to every switch before the scheme ran: its derived profile, then the "
	      "experiment's `switch` lines; read back from each switch's pinned map.\n\n";
	for (const auto &s : rs) {
		md << "- " << s.scheme << ": applied `" << kv_words(s.switch_applied) << "`\n";
		for (const auto &sw : s.switch_in_force)
			md << "  - in force at " << sw.sw << ": `" << kv_words(sw.settings) << "`\n";
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
		for (const auto &w : s.warnings)
			md << "  - **warning** " << w << "\n";
	}
	md << "\n## Calibration and metadata\n\n```\n" << meta << "```\n";
	if (with_plots)
		md << "\n![queue](queue.png) ![slowdown](slowdown.png) ![throughput](throughput.png)\n";
	return md.str();
}

std::string summary_csv(const ExperimentRun &c, const std::vector<SchemeResult> &rs)
{
	const auto names = counter_names(rs);
	std::ostringstream cs;
	cs << "scheme,valid,flows,done,goodput_gbps,fct_p50_ns,fct_p99_ns,slowdown_p50,slowdown_p95,slowdown_p99,"
	      "queue_peak_bytes,queue_p99_bytes,dilation,bytes_tagged_frac,bytes_touched_frac,time_affected_frac,"
	      "bytes_affected_frac,arrivals_kept,departures_kept,fast_windows_frac,flow_hash";
	for (const auto &n : names)
		cs << ",c." << n;
	cs << "\n";
	for (const auto &s : rs) {
		cs << s.scheme << ',' << (s.valid ? 1 : 0) << ',' << c.flows.size() << ',' << s.done << ','
		   << f2(s.goodput_gbps, "%.4f") << ',' << percentile(s.fct, 0.5) << ',' << percentile(s.fct, 0.99) << ','
		   << f2(percentile(s.sd, 0.5), "%.4f") << ',' << f2(percentile(s.sd, 0.95), "%.4f") << ','
		   << f2(percentile(s.sd, 0.99), "%.4f") << ',' << s.queue_peak() << ',' << s.queue_p99() << ','
		   << f2(s.d, "%.3f") << ',' << f2(s.rep.fidelity.bytes_tagged_frac, "%.5f") << ','
		   << f2(s.rep.fidelity.bytes_touched_frac, "%.5f") << ',' << f2(s.rep.fidelity.time_affected_frac, "%.6f")
		   << ',' << f2(s.rep.fidelity.bytes_affected_frac, "%.5f") << ',' << f2(s.rep.health.sw_arrival_eff, "%.5f") << ',' << f2(s.rep.health.sw_departure_eff, "%.5f")
		   << ',' << f2(s.rep.health.sw_fast_frac, "%.5f") << ',' << hex16(c.hash);
		for (const auto &n : names)
			cs << ',' << s.counter(n);
		cs << '\n';
	}
	return cs.str();
}

json paced_trials_json(const std::vector<PacedTrial> &paced)
{
	json a = json::array();
	for (const auto &t : paced)
		a.push_back(json{{"d", t.d},
				 {"busy_frac", t.busy_frac},
				 {"pass_p90_wall_ns", t.pass_p90_wall_ns},
				 {"frame_wall_ns", t.frame_wall_ns},
				 {"need", t.need}});
	return a;
}

std::string summary_json(const ExperimentRun &c, const std::vector<SchemeResult> &rs)
{
	const Calibration &k = c.cal;
	json doc;
	doc["experiment"] = c.x.name;
	doc["source"] = c.x.source;
	doc["topology"] = c.x.topology;
	doc["preset"] = c.have_preset ? c.preset.name : "";
	doc["flows"] = c.flows.size();
	doc["flow_hash"] = hex16(c.hash);
	doc["seed"] = c.x.seed;
	doc["interrupted"] = c.interrupted;
	bool all_valid = !rs.empty();
	for (const auto &s : rs)
		all_valid = all_valid && s.valid;
	doc["valid"] = all_valid;
	doc["skipped"] = json::array();
	for (const auto &[scheme, why] : c.skipped)
		doc["skipped"].push_back(json{{"scheme", scheme}, {"reason", why}});
	// The engines' sockets opened once and reused (tp::PortPool): how many ports later engines
	// took instead of opening them.
	doc["engine_ports_reused"] = c.pool ? c.pool->reused : 0;
	doc["calibration"] = json{{"dilation", k.d},
				  {"dilation_auto", k.d_auto},
				  {"dilation_cpu", k.rule.d_cpu},
				  {"dilation_timer", k.rule.d_timer},
				  {"dilation_paced", paced_trials_json(k.paced)},
				  {"dilation_clamped", k.rule.clamped},
				  {"timer_jitter_p99_wall_ns", k.jitter_wall_ns},
				  {"capacity_wall_bps", k.capacity_wall_bps},
				  {"capacity_pair_wall_bps", k.capacity_pair_wall_bps},
				  {"offered_bps", k.offered_bps},
				  {"host_rate_bps", k.host_rate_bps},
				  {"mtu", k.mtu},
				  {"base_rtt_min_ns", k.base_rtt_min_ns},
				  {"network_rtt_min_ns", k.network_rtt_min_ns},
				  {"base_rtt_max_ns", k.base_rtt_max_ns},
				  {"rtt_measured_ns", k.rtt_measured_ns},
				  {"link_rate_ratio", k.link_rate_ratio},
				  {"queue_interval_ns", c.queue_interval_ns()}};
	doc["schemes"] = json::array();
	for (const auto &s : rs) {
		json j;
		j["scheme"] = s.scheme;
		j["valid"] = s.valid;
		j["attempt"] = s.attempt;
		j["dilation"] = s.d;
		j["reasons"] = s.reasons;
		j["earlier"] = s.earlier;
		j["interrupted"] = s.rep.interrupted;
		j["flows"] = s.rep.flows.size();
		j["flows_done"] = s.done;
		j["content_errors"] = s.bad;
		j["sent_bytes"] = s.sent_bytes;
		j["delivered_bytes"] = s.delivered;
		j["elapsed_ns"] = s.rep.elapsed_ns;
		j["goodput_gbps"] = s.goodput_gbps;
		j["fct_ns"] = json{{"p50", percentile(s.fct, 0.5)},
				   {"p95", percentile(s.fct, 0.95)},
				   {"p99", percentile(s.fct, 0.99)},
				   {"max", s.fct.empty() ? 0 : s.fct.back()}};
		j["slowdown"] = json{{"p50", percentile(s.sd, 0.5)},
				     {"p95", percentile(s.sd, 0.95)},
				     {"p99", percentile(s.sd, 0.99)},
				     {"max", s.sd.empty() ? 0.0 : s.sd.back()}};
		const auto ut = untagged_slowdowns(s);
		j["slowdown_untagged"] = json{{"flows", ut.size()}, {"p50", percentile(ut, 0.5)}, {"p99", percentile(ut, 0.99)}};
		j["queue_peak_bytes"] = s.queue_peak();
		j["queue_p99_bytes"] = s.queue_p99();
		j["queues"] = json::array();
		for (const auto &p : s.ports)
			j["queues"].push_back(json{{"port", p.label},
						   {"samples", p.st.samples},
						   {"mean", p.st.mean},
						   {"p50", p.st.p50},
						   {"p99", p.st.p99},
						   {"max", p.st.max}});
		j["counters"] = json::object();
		for (const auto &[n, v] : s.counters)
			j["counters"][n] = v;
		j["switch_applied"] = json::object();
		for (const auto &[kk, v] : s.switch_applied)
			j["switch_applied"][kk] = v;
		j["switch_in_force"] = json::object();
		for (const auto &sw : s.switch_in_force) {
			json m = json::object();
			for (const auto &[kk, v] : sw.settings)
				m[kk] = v;
			j["switch_in_force"][sw.sw] = std::move(m);
		}
		j["cc"] = s.cc_describe;
		j["derived"] = s.derived_notes;
		j["warnings"] = s.warnings;
		j["bins"] = json::array();
		for (const auto &b : s.bins)
			j["bins"].push_back(json{{"min_size", b.min_size},
						 {"max_size", b.max_size},
						 {"flows", b.count},
						 {"p50", b.p50},
						 {"p95", b.p95},
						 {"p99", b.p99}});
		const FidelityReport &fr = s.rep.fidelity;
		j["fidelity"] = json::object();
		for (const auto &f : tp::fidelity_figures(fr))
			j["fidelity"][f.name] = f.count ? json(uint64_t(f.value)) : json(f.value);
		const Health &h = s.rep.health;
		j["health"] = json{{"cpu_bound", h.cpu_bound},
				   {"late_p99_ns", h.late_p99_ns},
				   {"stalls", h.stalls},
				   {"stall_max_wall_ns", h.stall_max_wall_ns},
				   {"arrivals_kept", h.sw_arrival_eff},
				   {"departures_kept", h.sw_departure_eff},
				   {"fast_windows_frac", h.sw_fast_frac}};
		j["rate_traces"] = json::array();
		for (const auto &r : s.rates)
			j["rate_traces"].push_back(json{{"flow", r.flow}, {"label", r.label}, {"points", r.points.size()}});
		j["wall_s"] = s.wall_s;
		doc["schemes"].push_back(std::move(j));
	}
	return doc.dump(1, '\t') + "\n";
}

Status write_summary(const std::string &out, const ExperimentRun &c, const std::vector<SchemeResult> &rs,
		     const std::string &meta)
{
	const fs::path o(out);
	QN_TRY(write_file(o / "summary.md", summary_markdown(c, rs, meta, fs::exists(o / "queue.png"))));
	QN_TRY(write_file(o / "summary.csv", summary_csv(c, rs)));
	QN_TRY(write_file(o / "summary.json", summary_json(c, rs)));
	std::ostringstream bs;
	bs << "scheme,bin,min_size,max_size,flows,slowdown_p50,slowdown_p95,slowdown_p99\n";
	for (const auto &s : rs)
		for (size_t b = 0; b < s.bins.size(); b++)
			bs << s.scheme << ',' << b << ',' << s.bins[b].min_size << ',' << s.bins[b].max_size << ','
			   << s.bins[b].count << ',' << s.bins[b].p50 << ',' << s.bins[b].p95 << ',' << s.bins[b].p99 << '\n';
	return write_file(o / "bins.csv", bs.str());
}

std::string write_plots(const std::string &out, const std::vector<SchemeResult> &rs)
{
	const fs::path o(out);
	const std::string port = bottleneck_port(rs);
	const fs::path pd = o / "plot";
	std::error_code ec;
	fs::create_directories(pd, ec);
	if (ec)
		return "plots not drawn: cannot create " + pd.string() + ": " + ec.message();
	bool any_bins = false;
	for (const auto &s : rs) {
		std::ofstream q(pd / (safe(s.scheme) + ".queue"));
		for (const auto &qs : s.series)
			if (qs.label == port)
				for (const auto &[t, b] : qs.samples)
					q << double(t) / 1e6 << ' ' << double(b) / 1e3 << '\n';
		std::ofstream b(pd / (safe(s.scheme) + ".bins"));
		for (const auto &x : s.bins)
			b << x.max_size << ' ' << x.p50 << ' ' << x.p99 << '\n';
		any_bins = any_bins || !s.bins.empty();
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
	if (rs.empty() || !any_bins)
		return "plots not drawn: no scheme completed a flow";
	std::ostringstream g;
	auto plot_all = [&](const std::string &ext, const std::string &using_, const std::string &style,
			    const std::string &suffix) {
		std::string p;
		for (size_t i = 0; i < rs.size(); i++)
			p += std::string(p.empty() ? "" : ", ") + "'" + (pd / (safe(rs[i].scheme) + ext)).string() + "' using " +
			     using_ + " with " + style + " lw 2 lc " + std::to_string(i + 1) + " title '" + rs[i].scheme + suffix + "'";
		return p;
	};
	g << "set terminal pngcairo size 900,500 noenhanced\nset grid\nset key top right\n";
	g << "set output '" << (o / "queue.png").string() << "'\nset title 'queue at " << port
	  << " (fabric time)'\nset xlabel 'time (ms)'\nset ylabel 'queue (KB)'\nplot "
	  << plot_all(".queue", "1:2", "lines", "") << "\n";
	// slowdown by size bin (bins at size percentiles, metrics.h size_bins), as the simulator's
	// fct_analysis plots it: one x position per bin, labelled with the bin's largest size, so a
	// size most flows share is one point and does not squeeze the others into a line; slowdown
	// on a log axis, p99 solid, p50 dashed. The x labels are the first scheme's bins (every
	// scheme ran the same flow list; bins differ only where a scheme left flows incomplete).
	{
		std::string tics;
		for (size_t b = 0; b < rs.front().bins.size(); b++)
			tics += std::string(b ? ", " : "") + "'" + human_bytes(double(rs.front().bins[b].max_size)) + "' " +
				std::to_string(b);
		g << "set output '" << (o / "slowdown.png").string()
		  << "'\nset title 'FCT slowdown by flow size (bins at size percentiles; p99 solid, p50 dashed)'\n"
		     "set logscale y\nset xtics (" << tics << ") rotate by -30\nset xrange [-0.5:"
		  << (rs.front().bins.empty() ? 0.5 : double(rs.front().bins.size()) - 0.5)
		  << "]\nset xlabel 'flow size (bin maximum)'\nset ylabel 'slowdown'\nplot "
		  << plot_all(".bins", "0:3", "linespoints pt 7", " p99") << ", "
		  << plot_all(".bins", "0:2", "linespoints dt 2 pt 6", " p50")
		  << "\nunset logscale y\nset xtics autofreq norotate\nset autoscale x\n";
	}
	g << "set output '" << (o / "throughput.png").string()
	  << "'\nset title 'delivered throughput, all hosts'\nset xlabel 'time (ms)'\nset ylabel 'Gbit/s'\nplot "
	  << plot_all(".tput", "1:2", "lines", "") << "\n";
	{
		std::ofstream f(pd / "plots.gp");
		f << g.str();
	}
	auto r = run_ok({"gnuplot", (pd / "plots.gp").string()});
	if (!r)
		return "plots not drawn: " + r.error().to_string() + " (scripts/install-deps.sh installs gnuplot-nox)";
	return "";
}

Result<std::vector<TraceSeries>> parse_rate_trace(const std::string &text, const std::string &source)
{
	std::vector<TraceSeries> out;
	std::map<std::string, size_t> index;
	std::istringstream is(text);
	std::string line;
	int n = 0;
	static const char *kCols[] = {"t_ns", "rate_bps", "window_bytes", "acked_bytes"};
	while (std::getline(is, line)) {
		n++;
		if (line.empty())
			continue;
		std::vector<std::string> c;
		std::stringstream ss(line);
		for (std::string x; std::getline(ss, x, ',');)
			c.push_back(x);
		auto at = [&](const std::string &what) { return source + ":" + std::to_string(n) + ": " + what; };
		if (n == 1) {
			if (c.size() != 5 || (c[0] != "pair" && c[0] != "flow") || c[1] != "t_ns" || c[2] != "rate_bps" ||
			    c[3] != "window_bytes" || c[4] != "acked_bytes")
				return make_error(at("not a rate trace (header pair|flow,t_ns,rate_bps,window_bytes,acked_bytes)"));
			continue;
		}
		if (c.size() != 5)
			return make_error(at(std::to_string(c.size()) + " fields, expected 5"));
		uint64_t v[4];
		for (int k = 0; k < 4; k++) {
			char *end = nullptr;
			errno = 0;
			v[k] = std::strtoull(c[size_t(k) + 1].c_str(), &end, 10);
			if (c[size_t(k) + 1].empty() || *end || errno || c[size_t(k) + 1][0] == '-')
				return make_error(at("field '" + std::string(kCols[k]) + "': '" + c[size_t(k) + 1] +
						     "' is not a non-negative integer"));
		}
		auto [it, fresh] = index.emplace(c[0], out.size());
		if (fresh)
			out.push_back(TraceSeries{c[0], {}});
		auto &ser = out[it->second].samples;
		if (!ser.empty() && v[0] < ser.back().t_ns)
			return make_error(at("field 't_ns': " + std::to_string(v[0]) + " is before the previous sample of '" +
					     c[0] + "' (" + std::to_string(ser.back().t_ns) + ")"));
		ser.push_back(TraceSample{v[0], v[1], v[3]});
	}
	if (n == 0)
		return make_error(source + ": empty (not a rate trace)");
	return out;
}

// ---------------------------------------------------------------------------------------------
// compare

namespace {

struct CsvTable {
	std::vector<std::string> header;
	std::vector<std::vector<std::string>> rows;
	size_t col(const std::string &name) const
	{
		return size_t(std::find(header.begin(), header.end(), name) - header.begin());
	}
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

Result<std::string> compare_runs(const std::string &ra, const std::string &rb, int &matched)
{
	auto A = read_csv(ra + "/summary.csv");
	if (!A)
		return A.error();
	auto B = read_csv(rb + "/summary.csv");
	if (!B)
		return B.error();
	// columns: A's order, then B's columns A lacks; flow_hash and valid are notes, not ratios
	std::vector<std::string> cols;
	for (size_t i = 1; i < A->header.size(); i++)
		cols.push_back(A->header[i]);
	std::vector<std::string> only_a, only_b;
	for (size_t i = 1; i < B->header.size(); i++)
		if (A->col(B->header[i]) == A->header.size()) {
			cols.push_back(B->header[i]);
			only_b.push_back(B->header[i]);
		}
	for (const auto &h : cols)
		if (B->col(h) == B->header.size())
			only_a.push_back(h);
	std::ostringstream o;
	char line[256];
	o << "B / A: A = " << ra << ", B = " << rb << " (ratios of B to A; a/b where A is 0 or not numeric)\n";
	for (const auto &[what, v] : {std::pair{ra, only_a}, std::pair{rb, only_b}})
		if (!v.empty()) {
			o << "columns only in " << what << ":";
			for (const auto &c : v)
				o << " " << c;
			o << "\n";
		}
	// one row per column, one column per scheme both runs have; rows that are 0 in both runs
	// for every scheme (counters nothing touched) are left out
	std::vector<std::pair<const std::vector<std::string> *, const std::vector<std::string> *>> pairs;
	for (const auto &rowa : A->rows) {
		const std::vector<std::string> *rowb = nullptr;
		for (const auto &r : B->rows)
			if (r[0] == rowa[0])
				rowb = &r;
		if (rowb)
			pairs.emplace_back(&rowa, rowb);
		else
			o << rowa[0] << " only in " << ra << "\n";
	}
	for (const auto &r : B->rows)
		if (std::none_of(A->rows.begin(), A->rows.end(), [&](const auto &x) { return x[0] == r[0]; }))
			o << r[0] << " only in " << rb << "\n";
	matched = int(pairs.size());
	std::snprintf(line, sizeof(line), "%-32s", "B / A");
	o << line;
	for (const auto &[pa, pb] : pairs) {
		std::snprintf(line, sizeof(line), " %14s", (*pa)[0].c_str());
		o << line;
	}
	o << "\n";
	size_t zero_rows = 0;
	for (const auto &h : cols) {
		if (h == "flow_hash" || h == "valid")
			continue;
		const size_t ia = A->col(h), ib = B->col(h);
		std::string cells;
		bool all_zero = true;
		for (const auto &[pa, pb] : pairs) {
			const std::string va = ia < pa->size() ? (*pa)[ia] : "-", vb = ib < pb->size() ? (*pb)[ib] : "-";
			char *e1 = nullptr, *e2 = nullptr;
			const double x = std::strtod(va.c_str(), &e1), y = std::strtod(vb.c_str(), &e2);
			const bool numeric = !*e1 && !*e2 && va != "-" && vb != "-";
			all_zero = all_zero && numeric && x == 0 && y == 0;
			if (!numeric || x == 0)
				std::snprintf(line, sizeof(line), " %14s", (va + "/" + vb).c_str());
			else
				std::snprintf(line, sizeof(line), " %14.3f", y / x);
			cells += line;
		}
		if (all_zero && !pairs.empty()) {
			zero_rows++;
			continue;
		}
		std::snprintf(line, sizeof(line), "%-32s", h.c_str());
		o << line << cells << "\n";
	}
	if (zero_rows)
		o << "(" << zero_rows << " columns are 0 in both runs for every scheme, not shown)\n";
	for (const auto &[pa, pb] : pairs) {
		const auto &rowa = *pa;
		const auto &rowb = *pb;
		const size_t ha = A->col("flow_hash"), hb = B->col("flow_hash");
		if (ha < rowa.size() && hb < rowb.size() && rowa[ha] != rowb[hb])
			o << "note: " << rowa[0] << " ran different flow lists (hash " << rowa[ha] << " vs " << rowb[hb] << ")\n";
		const size_t va = A->col("valid"), vb = B->col("valid");
		if (va < rowa.size() && vb < rowb.size() && (rowa[va] != "1" || rowb[vb] != "1"))
			o << "note: " << rowa[0] << " is INVALID in " << (rowa[va] != "1" ? ra : rb)
			  << ": its ratios are not results\n";
	}
	return o.str();
}

} // namespace qn
