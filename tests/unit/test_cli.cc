// The engine's flags (userspace/quench/cli.h EngineFlags): one table every command that opens
// an engine adds; only the flags given change the options the command built.
#include <catch2/catch.hpp>

#include "quench/cli.h"

using namespace qn;

namespace {

// Parse `args` with the engine's flags on an app of its own; apply them over `o`.
bool parse_engine_flags(std::vector<std::string> args, tp::EngineOptions &o)
{
	CLI::App app{"test"};
	cli::EngineFlags f;
	f.add_to(app);
	std::vector<std::string> rev(args.rbegin(), args.rend());
	try {
		app.parse(rev);
	} catch (const CLI::ParseError &) {
		return false;
	}
	f.apply(o);
	return true;
}

} // namespace

TEST_CASE("cli__engine_flags_set_only_what_is_given", "[cli]")
{
	tp::EngineOptions o;
	o.link_credit_frames = 3;   // as a command set it (a preset, a default of its own)
	o.shards = 7;
	REQUIRE(parse_engine_flags({}, o));
	CHECK(o.link_credit_frames == 3);
	CHECK(o.shards == 7);
	REQUIRE(parse_engine_flags({"--shards", "2"}, o));
	CHECK(o.shards == 2);
	CHECK(o.link_credit_frames == 3);
	REQUIRE(parse_engine_flags({"--link-credit", "0", "--shards", "0"}, o));
	CHECK(o.link_credit_frames == 0);
	CHECK(o.shards == 0);
	// out of range or not whole: an error naming the flag, the options untouched
	tp::EngineOptions d;
	CHECK_FALSE(parse_engine_flags({"--shards", "1.5"}, d));
	CHECK_FALSE(parse_engine_flags({"--shards", "65"}, d));
	CHECK_FALSE(parse_engine_flags({"--link-credit", "-1"}, d));
	CHECK(d.shards == tp::EngineOptions{}.shards);
}
