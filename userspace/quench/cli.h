// cli.h - quench's command line on CLI11: options of quench's own kinds (times, rates, sizes,
// counts in a range, KEY=VALUE lists) that parse with userspace/common/units.h and fail with the
// option's name, and the one way every command parses and reports errors (docs/cli.md).
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "common/units.h"
#include "transport/engine.h"

namespace qn::cli {

// A value of one of quench's unit kinds, parsed by `parse` (units.h) into `out`.
inline CLI::Option *unit(CLI::App &app, const std::string &name, uint64_t &out,
			 Result<uint64_t> (*parse)(std::string_view), const std::string &doc)
{
	return app.add_option_function<std::string>(
		name,
		[&out, name, parse](const std::string &v) {
			auto r = parse(v);
			if (!r)
				throw CLI::ValidationError(name, r.error().message);
			out = *r;
		},
		doc);
}
// A time ("55us"), a rate ("10Gbps"), a size ("64KB") into `out`.
inline CLI::Option *time(CLI::App &app, const std::string &name, uint64_t &out, const std::string &doc)
{
	return unit(app, name, out, parse_time_ns, doc);
}
inline CLI::Option *rate(CLI::App &app, const std::string &name, uint64_t &out, const std::string &doc)
{
	return unit(app, name, out, parse_rate_bps, doc);
}
inline CLI::Option *size(CLI::App &app, const std::string &name, uint64_t &out, const std::string &doc)
{
	return unit(app, name, out, parse_size_bytes, doc);
}
// A number in [lo, hi] into `out` (any arithmetic type; integers must be whole).
template <typename T>
CLI::Option *number(CLI::App &app, const std::string &name, T &out, double lo, double hi, const std::string &doc)
{
	return app.add_option_function<std::string>(
		name,
		[&out, name, lo, hi](const std::string &v) {
			char *end = nullptr;
			const double d = std::strtod(v.c_str(), &end);
			const bool whole = !std::is_integral_v<T> || d == double(static_cast<long long>(d));
			if (v.empty() || *end || !(d >= lo && d <= hi) || !whole) {
				char b[160];
				std::snprintf(b, sizeof(b), "'%s' is not %s in [%g, %g]", v.c_str(),
					      std::is_integral_v<T> ? "an integer" : "a number", lo, hi);
				throw CLI::ValidationError(name, b);
			}
			out = static_cast<T>(d);
		},
		doc);
}
// KEY=VALUE, repeatable, into `out` (the last value of a key wins).
inline CLI::Option *key_values(CLI::App &app, const std::string &name, std::map<std::string, std::string> &out,
			       const std::string &doc)
{
	return app
		.add_option_function<std::vector<std::string>>(
			name,
			[&out, name](const std::vector<std::string> &vs) {
				for (const auto &v : vs) {
					auto eq = v.find('=');
					if (eq == std::string::npos || eq == 0)
						throw CLI::ValidationError(name, "needs KEY=VALUE, got '" + v + "'");
					out[v.substr(0, eq)] = v.substr(eq + 1);
				}
			},
			doc)
		->take_all()
		->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
		->expected(1);
}

// The commands and their one-line descriptions: the one source of `quench --help`'s list and
// of each command's own `quench CMD --help` (every command builds its CLI::App with about()).
struct Command {
	const char *name;
	const char *about;
};
inline const std::vector<Command> &commands()
{
	static const std::vector<Command> c = {
		{"topo", "topologies: check, up, down, show, fattree"},
		{"switch", "switches: stats, set, keys"},
		{"gen", "run a workload on the host engine (AF_XDP): FCTs, counters and the validity verdict"},
		{"engine", "serve a topology's hosts and cables (idle) until Ctrl-C or --timeout"},
		{"run", "an experiment end to end: calibration, every scheme on the same flows, a results folder"},
		{"compare", "two results folders side by side as ratios (B / A)"},
		{"analyze", "analyses of a run's outputs, as JSON (goodput windows, Jain's index, convergence, percentiles)"},
		{"model", "the reference model of one bottleneck: an ideal network to hold the emulator against (no root)"},
		{"agent", "the Soft-RoCE agent: CC for the rdma_rxe QPs of a topology's rxe hosts"},
		{"schemes", "the congestion-control schemes that exist, their parts and parameters"},
		{"jitter", "how often this machine stops a spinning loop for more than G us (preemption, steal)"},
		{"bench", "benchmarks: switch, transport, rxe, fabric (ratios against a baseline in the same run)"},
	};
	return c;
}
inline std::string about(const std::string &name)
{
	for (const auto &c : commands())
		if (name == c.name)
			return c.about;
	return {};
}

// Parse argv[first..] into `app` (a command's options; argv[first - 1] is the command's name).
// Return: -1 when parsed; else the exit status, after printing the error (2) or the help (0).
inline int parse(CLI::App &app, int argc, char **argv, int first, std::FILE *help_out = stdout)
{
	// "quench gen": the usage line and every message name the command as it is typed
	if (app.get_name().rfind("quench", 0) != 0)
		app.name("quench " + app.get_name());
	const std::string who = app.get_name();
	std::vector<std::string> args;
	for (int i = argc - 1; i >= first; i--)
		args.emplace_back(argv[i]); // CLI11 takes them last first
	try {
		app.parse(args);
	} catch (const CLI::CallForVersion &e) {
		std::printf("%s\n", e.what());
		return 0;
	} catch (const CLI::CallForHelp &) {
		std::fputs(app.help().c_str(), help_out);
		return 0;
	} catch (const CLI::ParseError &e) {
		std::fprintf(stderr, "%s: %s (%s --help for the usage)\n", who.c_str(), e.what(), who.c_str());
		return 2;
	}
	// QN_CLI_DRY=1: parse only (tests/build/test_cli_examples.sh runs every documented form)
	if (const char *dry = std::getenv("QN_CLI_DRY"); dry && *dry == '1') {
		std::printf("parsed: %s\n", who.c_str());
		return 0;
	}
	return -1;
}

// The engine's options, one table for every command that opens an engine (gen, engine, run,
// bench fabric): an engine option added here is a flag of each of them, and reaches the
// EngineOptions each one builds (apply: only the flags given; the rest keep the command's own
// values, e.g. a preset's NIC delays).
struct EngineFlags {
	struct Flag {
		const char *name, *doc;
		double lo, hi;
		bool whole;                 // an integer
		double EngineFlags::*value; // NaN: not given
		void (*set)(tp::EngineOptions &, double);
	};
	double link_credit = std::numeric_limits<double>::quiet_NaN();
	double shards = std::numeric_limits<double>::quiet_NaN();
	static std::vector<Flag> table()
	{
		return {
			{"--link-credit", "the link pacer's credit in frames (default 0.5)", 0, 64, false, &EngineFlags::link_credit,
			 [](tp::EngineOptions &o, double v) { o.link_credit_frames = v; }},
			{"--shards", "the engine's threads, each with its own hosts and cables (0, the default: one per CPU on a fabric of more than one switch, else one)",
			 0, 64, true, &EngineFlags::shards, [](tp::EngineOptions &o, double v) { o.shards = uint32_t(v); }},
		};
	}
	void add_to(CLI::App &app)
	{
		for (const Flag &f : table()) {
			double *out = &(this->*f.value);
			app.add_option_function<std::string>(
				f.name,
				[out, f](const std::string &v) {
					char *end = nullptr;
					const double d = std::strtod(v.c_str(), &end);
					if (v.empty() || *end || !(d >= f.lo && d <= f.hi) || (f.whole && d != std::floor(d))) {
						char b[160];
						std::snprintf(b, sizeof(b), "'%s' is not %s in [%g, %g]", v.c_str(),
							      f.whole ? "an integer" : "a number", f.lo, f.hi);
						throw CLI::ValidationError(f.name, b);
					}
					*out = d;
				},
				f.doc);
		}
	}
	void apply(tp::EngineOptions &o) const
	{
		for (const Flag &f : table())
			if (!std::isnan(this->*f.value))
				f.set(o, this->*f.value);
	}
};

} // namespace qn::cli
