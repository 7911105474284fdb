// The analyses the tests used to re-derive in awk (transport/metrics.h, control/report.h):
// Jain's index, goodput per window from rate traces, convergence by Jain's index and by the sum
// of rates, and the rate-trace CSV parser, each against hand-computed cases.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "control/report.h"
#include "transport/metrics.h"

using namespace qn;
using namespace qn::tp;

TEST_CASE("jain_index__equal_shares_one_winner_takes_all_one_over_n", "[metrics]")
{
	CHECK(jain_index({5, 5, 5, 5}) == Approx(1.0));
	CHECK(jain_index({8, 0, 0, 0}) == Approx(0.25));
	// (1 + 3)^2 / (2 (1 + 9)) = 16 / 20
	CHECK(jain_index({1, 3}) == Approx(0.8));
	CHECK(jain_index({}) == 0);
	CHECK(jain_index({0, 0}) == 0);
}

namespace {
// acked bytes at the given times (rates irrelevant here)
TraceSeries acked(const std::string &l, std::vector<std::pair<uint64_t, uint64_t>> pts)
{
	TraceSeries s{l, {}};
	for (auto [t, a] : pts)
		s.samples.push_back(TraceSample{t, 0, a});
	return s;
}
TraceSeries rates(const std::string &l, std::vector<std::pair<uint64_t, uint64_t>> pts)
{
	TraceSeries s{l, {}};
	for (auto [t, r] : pts)
		s.samples.push_back(TraceSample{t, r, 0});
	return s;
}
} // namespace

TEST_CASE("goodput_windows__acked_bytes_between_window_edges", "[metrics]")
{
	// a: 1000 B acked per 1000 ns -> 8 Gbit/s; b: nothing until 2000, then 500 B per 1000 ns
	auto a = acked("a", {{0, 0}, {1000, 1000}, {2000, 2000}, {3000, 3000}, {4000, 4000}});
	auto b = acked("b", {{2500, 250}, {3000, 500}, {4000, 1000}});
	auto w = goodput_windows({a, b}, 1000, 4000, 1000);
	REQUIRE(w.size() == 3); // [1000,2000) [2000,3000) [3000,4000)
	CHECK(w[0].t_ns == 1000);
	CHECK(w[0].gbps[0] == Approx(8.0));
	CHECK(w[0].gbps[1] == Approx(0.0));
	CHECK(w[0].jain == Approx(0.5));
	// b: acked(3000) - acked(2000) = 500 - 0 (its first sample is after 2000)
	CHECK(w[1].gbps[1] == Approx(4.0));
	CHECK(w[1].total_gbps == Approx(12.0));
	CHECK(w[1].jain == Approx(144.0 / (2 * (64 + 16))));
	// the last window ends exactly at `to`; a window past it is not made
	CHECK(w[2].t_ns == 3000);
	CHECK(goodput_windows({a}, 1000, 3999, 1000).size() == 2);
	CHECK(goodput_windows({a}, 0, 4000, 0).empty());
}

TEST_CASE("jain_convergence__first_of_a_run_of_fair_windows", "[metrics]")
{
	std::vector<GoodputWindow> w;
	for (double j : {0.5, 0.96, 0.97, 0.90, 0.95, 0.99, 0.96, 0.99}) {
		GoodputWindow g;
		g.t_ns = w.size() * 100;
		g.jain = j;
		w.push_back(g);
	}
	// windows 1-2 are fair but 3 is not: the first run of three starts at window 4
	CHECK(jain_convergence(w, 0.95, 3) == uint64_t(400));
	CHECK(jain_convergence(w, 0.95, 2) == uint64_t(100));
	CHECK_FALSE(jain_convergence(w, 0.995, 1).has_value());
	CHECK_FALSE(jain_convergence(w, 0.95, 0).has_value());
}

TEST_CASE("rate_sum_within__every_series_seen_and_the_sum_at_most_the_cap", "[metrics]")
{
	auto a = rates("a", {{0, 10'000}, {300, 6'000}, {500, 4'000}});
	auto b = rates("b", {{100, 10'000}, {400, 5'000}, {600, 5'000}});
	// t=100: 10000 + 10000; 300: 16000; 400: 11000; 500: 9000 <= 10000
	CHECK(rate_sum_within({a, b}, 10'000) == uint64_t(500));
	// a series never seen: no convergence, however low the others
	CHECK_FALSE(rate_sum_within({a, b, rates("c", {})}, 1e18).has_value());
	// already within the cap at the moment the last series appears
	CHECK(rate_sum_within({a, b}, 1e9) == uint64_t(100));
}

TEST_CASE("first_cut_and_rate_sum_at__per_series_cut_and_the_sum_at_an_instant", "[metrics]")
{
	auto a = rates("a", {{0, 10'000}, {300, 10'000}, {350, 6'000}, {500, 4'000}});
	auto b = rates("b", {{100, 10'000}, {400, 12'000}});
	auto c = rates("c", {{200, 5'000}});
	// a: cut at 350 to 6000; b never below its start (a rise is no cut); c: one sample, no cut
	REQUIRE(first_cut(a).has_value());
	CHECK(first_cut(a)->t_ns == 350);
	CHECK(first_cut(a)->rate_bps == 6'000);
	CHECK_FALSE(first_cut(b).has_value());
	CHECK_FALSE(first_cut(c).has_value());
	// the latest rate at or before t; a series not yet sampled counts as absent_bps
	CHECK(rate_sum_at({a, b, c}, 50, 99'000) == 10'000 + 99'000 + 99'000);
	CHECK(rate_sum_at({a, b, c}, 350, 99'000) == 6'000 + 10'000 + 5'000);
	CHECK(rate_sum_at({a, b, c}, 349, 0) == 10'000 + 10'000 + 5'000);
	CHECK(rate_sum_at({a, b, c}, 10'000, 0) == 4'000 + 12'000 + 5'000);
}

TEST_CASE("parse_rate_trace__series_by_first_column_and_errors", "[metrics]")
{
	auto t = parse_rate_trace("pair,t_ns,rate_bps,window_bytes,acked_bytes\nh2->h1,0,100,0,0\nh3->h1,5,50,0,0\n"
				  "h2->h1,10,90,0,4096\n",
				  "t.csv");
	REQUIRE(t.ok());
	REQUIRE(t->size() == 2);
	CHECK((*t)[0].label == "h2->h1");
	REQUIRE((*t)[0].samples.size() == 2);
	CHECK((*t)[0].samples[1].t_ns == 10);
	CHECK((*t)[0].samples[1].rate_bps == 90);
	CHECK((*t)[0].samples[1].acked_bytes == 4096);
	CHECK(parse_rate_trace("flow,t_ns,rate_bps,window_bytes,acked_bytes\n0,1,2,3,4\n", "r.csv").ok());
	CHECK(parse_rate_trace("id,t\n", "t.csv").error().to_string().find("t.csv:1: not a rate trace") != std::string::npos);
	CHECK(parse_rate_trace("pair,t_ns,rate_bps,window_bytes,acked_bytes\na,1,x,0,0\n", "t.csv")
		      .error()
		      .to_string()
		      .find("t.csv:2: field 'rate_bps': 'x' is not a non-negative integer") != std::string::npos);
	CHECK(parse_rate_trace("pair,t_ns,rate_bps,window_bytes,acked_bytes\na,5,1,0,0\na,4,1,0,0\n", "t.csv")
		      .error()
		      .to_string()
		      .find("t.csv:3: field 't_ns': 4 is before the previous sample of 'a' (5)") != std::string::npos);
	CHECK(parse_rate_trace("pair,t_ns,rate_bps,window_bytes,acked_bytes\na,5,1\n", "t.csv")
		      .error()
		      .to_string()
		      .find("t.csv:2: 3 fields, expected 5") != std::string::npos);
	CHECK_FALSE(parse_rate_trace("", "e.csv").ok());
}
