// cli.h - quench's command line on CLI11: options of quench's own kinds (times, rates, sizes,
// counts in a range, KEY=VALUE lists) that parse with userspace/common/units.h and fail with the
// option's name, and the one way every command parses and reports errors (docs/cli.md).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "common/units.h"

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

// Parse argv[first..] into `app` (a command's options; argv[first - 1] is the command's name).
// Return: -1 when parsed; else the exit status, after printing the error (2) or the help (0).
inline int parse(CLI::App &app, int argc, char **argv, int first)
{
	std::vector<std::string> args;
	for (int i = argc - 1; i >= first; i--)
		args.emplace_back(argv[i]); // CLI11 takes them last first
	try {
		app.parse(args);
	} catch (const CLI::CallForHelp &) {
		std::fputs(app.help().c_str(), stdout);
		return 0;
	} catch (const CLI::ParseError &e) {
		const std::string who = app.get_name() == "quench" ? "quench" : "quench " + app.get_name();
		std::fprintf(stderr, "%s: %s (quench help for the usage)\n", who.c_str(), e.what());
		return 2;
	}
	// QN_CLI_DRY=1: parse only (tests/build/test_cli_examples.sh runs every documented form)
	if (const char *dry = std::getenv("QN_CLI_DRY"); dry && *dry == '1') {
		std::printf("parsed: quench %s\n", app.get_name().c_str());
		return 0;
	}
	return -1;
}

} // namespace qn::cli
