// cmd_run.cc - `quench run EXPERIMENT` (an experiment end to end: calibration, every scheme on
// the identical flow list, results folder with tables and plots), `quench jitter` and
// `quench compare RUN_A RUN_B`: thin commands over the experiment library (control/runner.h,
// control/report.h, control/calibration.h). docs/experiments.md.
#include "quench/cmd_run.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <iostream>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "control/bringup.h"
#include "control/calibration.h"
#include "control/experiment.h"
#include "control/report.h"
#include "control/runner.h"
#include "control/switch_loader.h"
#include "control/topology.h"
#include "quench/cli.h"
#include "transport/cc/cc.h"
#include "transport/metrics.h"

namespace {

using namespace qn;
using namespace qn::tp;
namespace cc = qn::tp::cc;
namespace fs = std::filesystem;

// SIGINT or SIGTERM: every engine run stops at its next check (RunOptions::stop), the topology
// is taken down and what was measured is written, marked interrupted.
volatile std::sig_atomic_t g_stop = 0;
bool stopped() { return g_stop != 0; }

int die(const std::string &m)
{
	std::fprintf(stderr, "quench: %s\n", m.c_str());
	return 1;
}

double wall_s()
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
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
		std::fprintf(stderr, "\r\033[K[%6.1f s] %s", wall_s() - t0, what.c_str());
		if (expected_s > 0)
			std::fprintf(stderr, " (expected ~%.0f s)", expected_s);
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

struct RunArgs {
	std::string exp, out, name, format = "table";
	double dilation = 0;
	int attempts = 0;
	cli::EngineFlags engine_flags; // the engine's options given (applied over the experiment's)
	double adapt_from = 0; // start at this D and adapt it as with auto D (controls, tests)
	bool quiet = false;
	double max_wall_s = 0; // --max-wall: no attempt starts that would end after this
	std::vector<std::string> schemes;
};

} // namespace

int cmd_run(int argc, char **argv, int first)
{
	RunArgs a;
	CLI::App app{cli::about("run"), "run"};
	app.add_option("EXPERIMENT", a.exp, "experiment file (netns/experiments/*.exp)");
	app.add_option("--out", a.out, "results folder (default results/<time>-<name>)");
	app.add_option("--name", a.name, "running topology name");
	app.add_flag("--quiet", a.quiet, "no progress line");
	app.add_option("--format", a.format, "table: the summary table on stdout; json: summary.json on stdout, "
					     "everything else on stderr")
		->check(CLI::IsMember({"table", "json"}));
	cli::number(app, "--attempts", a.attempts, 1, 10, "runs per scheme until one is VALID");
	// negative control of the pacer's credit (docs/transport.md "The NIC model")
	a.engine_flags.add_to(app);
	auto *adapt = cli::number(app, "--adapt-from", a.adapt_from, 1, kMaxDilation, "first D; CPU-bound attempts retried at 1.5 x D");
	cli::number(app, "--dilation", a.dilation, 1, 1e5, "the D every scheme runs at (no calibration of D)")->excludes(adapt);
	cli::number(app, "--max-wall", a.max_wall_s, 1, 1e7,
		    "seconds: an attempt expected to end after this much wall time since the start is not started "
		    "(its scheme is skipped, or keeps its last attempt)");
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
	// with --format json stdout carries only the JSON document
	FILE *txt = a.format == "json" ? stderr : stdout;
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
	if (a.attempts)
		x->attempts = a.attempts;
	if (!a.schemes.empty()) {
		for (const auto &s : a.schemes)
			if (auto sch = cc::scheme(s); !sch)
				return die("run: --schemes: " + sch.error().to_string() + " (quench schemes lists the parts)");
		x->schemes = a.schemes;
	}
	auto prepared = prepare_run(*x, a.name);
	if (!prepared)
		return die("run: " + prepared.error().to_string());
	ExperimentRun &c = *prepared;
	a.engine_flags.apply(c.eo);
	// topologies of runs that were killed (SIGKILL: no handler ran) go first
	for (const auto &o : orphaned_topologies()) {
		std::fprintf(stderr, "quench: run: taking down topology %s, left up by a quench run that is gone\n", o.c_str());
		if (auto st = topo_down(o); !st.ok())
			return die("run: topology " + o + " of a killed run: " + st.error().to_string());
	}
	for (const auto &r : running_topologies())
		if (r == c.name)
			return die("run: a topology named " + c.name + " is already up (give --name)");
	if (a.out.empty()) {
		char ts[32];
		std::time_t now = std::time(nullptr);
		std::strftime(ts, sizeof(ts), "%Y%m%d-%H%M%S", std::localtime(&now));
		a.out = std::string("results/") + ts + "-" + c.x.name;
	}
	std::error_code ec;
	fs::create_directories(a.out, ec);
	if (ec)
		return die("run: cannot create " + a.out + ": " + ec.message());
	Progress prog;
	prog.on = !a.quiet && isatty(STDERR_FILENO);
	c.hooks.stop = stopped;
	c.hooks.phase = [&prog](const std::string &w, double e) { prog.phase(w, e); };
	c.hooks.tick = [&prog](const std::string &w, double e) { prog.tick(w, e); };
	const double t_begin = wall_s();
	c.hooks.budget = [&a, t_begin](double need) -> std::string {
		if (a.max_wall_s <= 0)
			return "";
		const double used = wall_s() - t_begin;
		if (used + need <= a.max_wall_s)
			return "";
		char b[160];
		std::snprintf(b, sizeof(b), "--max-wall %g s: an attempt is expected to take %.0f s and %.0f s are left",
			      a.max_wall_s, need, std::max(0.0, a.max_wall_s - used));
		return b;
	};
	setup_libbpf_logging(false);
	std::signal(SIGINT, [](int) { g_stop = 1; });
	std::signal(SIGTERM, [](int) { g_stop = 1; });
	const double t_start = wall_s();
	std::fprintf(txt, "run %s: topology %s (%s), preset %s, %zu flows, flow-list hash %016llx, schemes",
		     c.x.name.c_str(), c.x.topology.c_str(), c.name.c_str(), c.have_preset ? c.preset.name.c_str() : "none",
		     c.flows.size(), static_cast<unsigned long long>(c.hash));
	for (const auto &s : c.x.schemes)
		std::fprintf(txt, " %s", s.c_str());
	std::fprintf(txt, "\n");
	std::fflush(txt);
	auto fail = [&](const std::string &m) {
		take_down(c);
		prog.done();
		return die("run: " + m);
	};
	if (auto st = calibrate(c, a.adapt_from > 0 ? a.adapt_from : a.dilation > 0 ? a.dilation : c.x.dilation); !st.ok()) {
		take_down(c);
		prog.done();
		if (stopped()) { // nothing measured yet: say so where the results would be
			std::ofstream m(fs::path(a.out) / "summary.md");
			m << "# " << c.x.name << "\n\nInterrupted: **yes**, by a signal during calibration; no scheme ran.\n";
			std::fprintf(stderr, "quench: run: interrupted during calibration; topology %s taken down\n",
				     c.name.c_str());
			return 130;
		}
		return die("run: calibration: " + st.error().to_string());
	}
	if (a.adapt_from > 0)
		c.cal.adapt = true;
	std::string meta = metadata_text(c);
	{
		// The plan: the D chosen and the wall time it implies, before anything runs.
		const double per = expected_attempt_wall_s(c, c.cal.d), n = double(c.x.schemes.size());
		char b[320];
		std::snprintf(b, sizeof(b),
			      "expected_wall_s %.0f per scheme at D=%g (the flows' span plus the busiest host link's "
			      "bytes, x D), %.0f for %zu schemes, %.0f if every scheme took all %d attempts (a retry at "
			      "1.5 x D)\n",
			      per, c.cal.d, per * n, c.x.schemes.size(),
			      [&] {
				      double t = 0, d = c.cal.d;
				      for (int i = 0; i < c.x.attempts; i++, d = c.cal.adapt ? next_dilation(d) : d)
					      t += expected_attempt_wall_s(c, d);
				      return t * n;
			      }(),
			      c.x.attempts);
		meta += b;
	}
	std::fprintf(txt, "%s", meta.c_str());
	if (c.cal.link_rate_ratio < 0.97)
		std::fprintf(txt,
			     "warning: one line-rate flow reached only %.1f%% of the link: the CPU, not the scheme, limits "
			     "this fabric at D=%g\n",
			     100 * c.cal.link_rate_ratio, c.cal.d);
	std::fflush(txt);
	std::vector<SchemeResult> rs;
	for (size_t i = 0; i < c.x.schemes.size() && !stopped(); i++) {
		auto r = run_scheme_attempts(c, c.x.schemes[i], i);
		if (!r) {
			if (stopped())
				break;
			return fail(r.error().to_string());
		}
		if (!r->skipped.empty()) { // the scheme refuses this fabric: skipped with its reason
			std::fprintf(txt, "%s skipped: %s\n", r->scheme.c_str(), r->skipped.c_str());
			meta += "skipped " + r->scheme + ": " + r->skipped + "\n";
			c.skipped.emplace_back(r->scheme, r->skipped);
			continue;
		}
		if (auto st = write_scheme_files(a.out, *r); !st.ok())
			return fail(st.error().to_string());
		meta += scheme_metadata(*r);
		rs.push_back(std::move(*r));
	}
	take_down(c);
	prog.phase("plots and summary");
	c.interrupted = stopped();
	if (c.interrupted)
		meta += "interrupted yes (a signal stopped the run; " + std::to_string(rs.size()) + " of " +
			std::to_string(c.x.schemes.size()) + " schemes have results, the last one partial if it was running)\n";
	const std::string plot_err = write_plots(a.out, rs);
	char wall[64];
	std::snprintf(wall, sizeof(wall), "wall_seconds %.1f\n", wall_s() - t_start);
	meta += wall;
	{
		std::ofstream m(fs::path(a.out) / "metadata.txt");
		m << meta;
		std::ifstream src(c.x.source);
		std::ofstream cp(fs::path(a.out) / "experiment.exp");
		cp << src.rdbuf();
	}
	if (auto st = write_summary(a.out, c, rs, meta); !st.ok()) {
		prog.done();
		return die("run: " + st.error().to_string());
	}
	prog.done();
	if (a.format == "json")
		std::printf("%s", summary_json(c, rs).c_str());
	std::fprintf(txt, "\n%s\n", summary_table(c, rs).c_str());
	for (const auto &s : rs)
		if (!s.valid) {
			std::fprintf(txt, "%s INVALID:", s.scheme.c_str());
			for (const auto &r : s.reasons)
				std::fprintf(txt, " %s;", r.c_str());
			std::fprintf(txt, "\n");
		}
	if (!plot_err.empty())
		std::fprintf(txt, "%s\n", plot_err.c_str());
	if (c.interrupted) {
		std::fprintf(txt, "interrupted: partial results in %s; topology %s taken down\n", a.out.c_str(), c.name.c_str());
		return 130;
	}
	std::fprintf(txt,
		     "results: %s (summary.md, summary.json, summary.csv, metadata.txt, per scheme fct.txt flows.csv "
		     "queues.csv throughput.csv counters.txt validity.txt; queue.png slowdown.png throughput.png) in %.1f s\n",
		     a.out.c_str(), wall_s() - t_start);
	return 0;
}

// ---------------------------------------------------------------------------------------------
// jitter: how often this machine stops a spinning process (hypervisor preemption, interrupts)

int cmd_jitter(int argc, char **argv, int first)
{
	double secs = 2, gap_us = 500;
	int threads = 1;
	CLI::App app{cli::about("jitter"), "jitter"};
	cli::number(app, "--seconds", secs, 1e-3, 60, "how long to spin");
	cli::number(app, "--gap-us", gap_us, 1e-3, 1e9, "a stop longer than this counts");
	cli::number(app, "--threads", threads, 1, 64, "spinning threads (one per CPU: every CPU busy)");
	if (int rc = cli::parse(app, argc, argv, first); rc >= 0)
		return rc;
	const GapReport r = measure_gaps(secs, uint64_t(gap_us * 1e3), size_t(threads));
	std::printf("%s\n", r.to_text(gap_us).c_str());
	return 0;
}

// ---------------------------------------------------------------------------------------------
// compare

int cmd_compare(int argc, char **argv, int first)
{
	std::string ra, rb;
	CLI::App app{cli::about("compare"), "compare"};
	app.add_option("RUN_A", ra, "results folder A")->required();
	app.add_option("RUN_B", rb, "results folder B")->required();
	if (int rc = cli::parse(app, argc, argv, first); rc >= 0)
		return rc;
	int matched = 0;
	auto t = compare_runs(ra, rb, matched);
	if (!t)
		return die("compare: " + t.error().to_string());
	std::printf("%s", t->c_str());
	return matched ? 0 : 1;
}

// ---------------------------------------------------------------------------------------------
// analyze: the analyses tests and users apply to a run's outputs, in tested C++
// (transport/metrics.h) rather than awk; JSON on stdout.

namespace {

Result<std::string> read_input(const std::string &path)
{
	std::stringstream ss;
	if (path == "-") {
		ss << std::cin.rdbuf();
		return ss.str();
	}
	std::ifstream f(path);
	if (!f)
		return sys_error(errno, "cannot open " + path);
	ss << f.rdbuf();
	return ss.str();
}

} // namespace

int cmd_analyze(int argc, char **argv, int first)
{
	CLI::App app{cli::about("analyze"), "analyze"};
	app.require_subcommand(1);
	std::string trace_file, numbers_file = "-";
	uint64_t from = 0, to = 0, win = 0, cap = 0, absent = 0;
	std::vector<uint64_t> sum_at;
	double jain_at = 0.95;
	size_t run = 3;
	auto *tr = app.add_subcommand("trace", "goodput per window and convergence from a rate trace "
					       "(gen --trace-out, a run's rates.csv)");
	tr->add_option("TRACE", trace_file, "rate trace CSV")->required();
	cli::time(*tr, "--from", from, "first window's start (fabric)");
	cli::time(*tr, "--to", to, "no window ends after this (fabric; default: the last sample)");
	cli::time(*tr, "--window", win, "window length (fabric; default: no windows)");
	cli::number(*tr, "--jain", jain_at, 0, 1, "Jain's index a converged window reaches");
	cli::number(*tr, "--run", run, 1, 1000, "consecutive windows at --jain for convergence");
	cli::rate(*tr, "--rate-cap", cap, "also: the first time the series' latest rates sum to at most this");
	std::vector<std::string> sum_at_s;
	tr->add_option("--sum-at", sum_at_s, "also: the series' summed latest rates at this time (repeatable)")
		->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
		->check([](const std::string &v) {
			auto r = parse_time_ns(v);
			return r ? std::string() : r.error().message;
		});
	cli::rate(*tr, "--absent-rate", absent, "with --sum-at: the rate of a series with no sample yet (default 0)");
	auto *nu = app.add_subcommand("numbers", "count, mean, min, max and percentiles of one number per line");
	nu->add_option("FILE", numbers_file, "input (default -: stdin)");
	if (int rc = cli::parse(app, argc, argv, first); rc >= 0)
		return rc;
	for (const auto &v : sum_at_s)
		sum_at.push_back(*parse_time_ns(v)); // checked above
	using json = nlohmann::ordered_json;
	json out;
	if (tr->parsed()) {
		auto text = read_input(trace_file);
		if (!text)
			return die("analyze: " + text.error().to_string());
		auto series = parse_rate_trace(*text, trace_file);
		if (!series)
			return die("analyze: " + series.error().to_string());
		uint64_t last = 0;
		for (const auto &s : *series)
			if (!s.samples.empty())
				last = std::max(last, s.samples.back().t_ns);
		if (to == 0)
			to = last;
		out["series"] = json::array();
		for (const auto &s : *series) {
			const auto cut = s.samples.empty() ? std::nullopt : first_cut(s);
			out["series"].push_back(json{{"label", s.label},
						     {"samples", s.samples.size()},
						     {"acked_bytes", s.samples.empty() ? 0 : s.samples.back().acked_bytes},
						     {"first_cut_ns", cut ? json(cut->t_ns) : json(nullptr)},
						     {"first_cut_bps", cut ? json(cut->rate_bps) : json(nullptr)},
						     {"lowest_rate_bps", s.samples.empty() ? 0 : std::min_element(s.samples.begin(), s.samples.end(), [](const auto &a, const auto &b) { return a.rate_bps < b.rate_bps; })->rate_bps},
						     {"highest_rate_bps", s.samples.empty() ? 0 : std::max_element(s.samples.begin(), s.samples.end(), [](const auto &a, const auto &b) { return a.rate_bps < b.rate_bps; })->rate_bps}});
		}
		if (!sum_at.empty()) {
			out["sums"] = json::array();
			for (uint64_t t : sum_at)
				out["sums"].push_back(json{{"t_ns", t}, {"bps", rate_sum_at(*series, t, double(absent))}});
		}
		if (win) {
			const auto w = goodput_windows(*series, from, to, win);
			out["from_ns"] = from;
			out["to_ns"] = to;
			out["window_ns"] = win;
			out["windows"] = json::array();
			std::vector<double> totals, jains;
			for (const auto &x : w) {
				out["windows"].push_back(json{{"t_ns", x.t_ns}, {"jain", x.jain}, {"total_gbps", x.total_gbps}, {"gbps", x.gbps}});
				totals.push_back(x.total_gbps);
			}
			double mean = 0;
			for (double t : totals)
				mean += t;
			out["mean_gbps"] = totals.empty() ? 0.0 : mean / double(totals.size());
			out["lowest_gbps"] = totals.empty() ? 0.0 : *std::min_element(totals.begin(), totals.end());
			const auto conv = jain_convergence(w, jain_at, run);
			out["jain_convergence_ns"] = conv ? json(*conv) : json(nullptr);
			// the mean Jain index from convergence on (null when it never converged)
			if (conv) {
				double s = 0;
				size_t n = 0;
				for (const auto &x : w)
					if (x.t_ns >= *conv) {
						s += x.jain;
						n++;
					}
				out["jain_mean_after"] = s / double(n);
			} else {
				out["jain_mean_after"] = nullptr;
			}
		}
		if (cap) {
			const auto t = rate_sum_within(*series, double(cap));
			out["rate_cap_bps"] = cap;
			out["rate_cap_ns"] = t ? json(*t) : json(nullptr);
		}
	} else {
		auto text = read_input(numbers_file);
		if (!text)
			return die("analyze: " + text.error().to_string());
		std::vector<double> v;
		std::istringstream is(*text);
		std::string w;
		int line = 0;
		for (std::string l; std::getline(is, l);) {
			line++;
			std::istringstream ls(l);
			if (!(ls >> w))
				continue;
			char *end = nullptr;
			const double d = std::strtod(w.c_str(), &end);
			if (*end || !std::isfinite(d))
				return die("analyze numbers: " + numbers_file + ":" + std::to_string(line) + ": '" + w + "' is not a number");
			v.push_back(d);
		}
		std::sort(v.begin(), v.end());
		double sum = 0;
		for (double d : v)
			sum += d;
		out = json{{"n", v.size()},
			   {"mean", v.empty() ? 0.0 : sum / double(v.size())},
			   {"min", v.empty() ? 0.0 : v.front()},
			   {"max", v.empty() ? 0.0 : v.back()},
			   {"p50", percentile(v, 0.5)},
			   {"p95", percentile(v, 0.95)},
			   {"p99", percentile(v, 0.99)}};
	}
	std::printf("%s\n", out.dump(1, '\t').c_str());
	return 0;
}
