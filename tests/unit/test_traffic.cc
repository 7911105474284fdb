// Workload generators (transport/traffic.h): CDF parsing errors name file, line and field; the
// sampler reproduces its CDF (Kolmogorov-Smirnov bound); incast and Poisson generators follow
// their definitions (common.md §5); the flow-list hash identifies a list.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "transport/traffic.h"

using namespace qn::tp;

namespace {
const char *kWebSearch = "# WebSearch (common.md §5)\n0 0\n10000 15\n20000 20\n30000 30\n50000 40\n80000 53\n"
			 "200000 60\n1000000 70\n2000000 80\n5000000 90\n10000000 97\n30000000 100\n";
}

TEST_CASE("cdf_parse__rejects_malformed_with_file_and_line", "[traffic]")
{
	auto bad = [](const char *text) {
		auto r = Cdf::parse(text, "w.cdf");
		REQUIRE_FALSE(r.ok());
		return r.error().message;
	};
	CHECK(bad("0 0\n100 50\n50 100\n").find("w.cdf:3: not monotonic") != std::string::npos);
	CHECK(bad("0 0\n100 60\n200 40\n").find("w.cdf:3: not monotonic") != std::string::npos);
	CHECK(bad("0 0\nabc 100\n").find("w.cdf:2: size") != std::string::npos);
	CHECK(bad("0 0\n100 101\n").find("w.cdf:2: percentile") != std::string::npos);
	CHECK(bad("0 0\n100\n").find("w.cdf:2: expected 'size percentile'") != std::string::npos);
	CHECK(bad("0 0\n100 50 7\n").find("w.cdf:2: unexpected field") != std::string::npos);
	CHECK(bad("0 0\n100 90\n").find("last percentile must be 100") != std::string::npos);
	CHECK(bad("# nothing\n").find("at least two points") != std::string::npos);
}

TEST_CASE("cdf_sample__reproduces_the_cdf_ks_bound", "[traffic]")
{
	auto c = Cdf::parse(kWebSearch, "websearch");
	REQUIRE(c.ok());
	std::mt19937_64 rng(11);
	std::uniform_real_distribution<double> u(0, 1);
	const int n = 200000;
	std::vector<double> x(n);
	for (auto &v : x)
		v = double(c->sample(u(rng)));
	std::sort(x.begin(), x.end());
	// Expect: at every CDF point, the empirical fraction <= size is within the KS bound of the
	// CDF (1.63 / sqrt(n) is the 99% critical value).
	double worst = 0;
	for (const auto &[size, pct] : c->points()) {
		double emp = double(std::upper_bound(x.begin(), x.end(), size) - x.begin()) / n;
		worst = std::max(worst, std::fabs(emp - pct / 100.0));
	}
	INFO("max deviation " << worst);
	CHECK(worst < 1.63 / std::sqrt(double(n)));
	// Expect: the sample mean matches the CDF's mean (piecewise-linear) within 2%.
	double mean = 0;
	for (double v : x)
		mean += v / n;
	CHECK(std::fabs(mean - c->mean()) / c->mean() < 0.02);
}

TEST_CASE("gen_incast__senders_sizes_and_window", "[traffic]")
{
	auto f = gen_incast({"h2", "h3", "h4"}, "h1", 250000, 100000, 5);
	REQUIRE(f.size() == 3);
	for (const auto &x : f) {
		CHECK(x.dst == "h1");
		CHECK(x.size == 250000);
		CHECK(x.start_ns < 100000);
		CHECK(x.dport == 200);
	}
	CHECK(flow_list_hash(f) == flow_list_hash(gen_incast({"h2", "h3", "h4"}, "h1", 250000, 100000, 5)));
	CHECK(flow_list_hash(f) != flow_list_hash(gen_incast({"h2", "h3", "h4"}, "h1", 250000, 100000, 6)));
}

TEST_CASE("gen_poisson__offered_load_matches", "[traffic]")
{
	auto c = Cdf::parse(kWebSearch, "websearch");
	REQUIRE(c.ok());
	std::vector<std::string> hosts{"h1", "h2", "h3", "h4"};
	const uint64_t dur = 2'000'000'000; // 2 s of fabric time: many flows
	auto f = gen_poisson(hosts, 0.5, 10'000'000'000ULL, *c, dur, 3);
	REQUIRE(f.size() > 1000);
	double bytes = 0;
	for (size_t i = 0; i < f.size(); i++) {
		bytes += double(f[i].size);
		CHECK(f[i].src != f[i].dst);
		if (i)
			CHECK(f[i].start_ns >= f[i - 1].start_ns);
	}
	// Expect: offered load = bytes*8 / (hosts * rate * duration) ~ 0.5 (heavy-tailed: 10%).
	double load = bytes * 8 / (4.0 * 10e9 * 2.0);
	INFO("offered load " << load);
	CHECK(std::fabs(load - 0.5) < 0.05);
}

TEST_CASE("ns3_fct_line__matches_the_simulator_format", "[traffic]")
{
	// Expect: "%08x %08x %u %u %lu %lu %lu %lu" (sip dip sport dport size start fct standalone).
	FlowResult f;
	f.sip = 0x0B000201;
	f.dip = 0x0B000101;
	f.sport = 49408;
	f.spec.dport = 200;
	f.spec.size = 100000;
	f.post_ns = 10;
	f.fct_ns = 210489;
	f.standalone_ns = 90458;
	CHECK(ns3_fct_line(f) == "0b000201 0b000101 49408 200 100000 10 210489 90458");
	CHECK(f.slowdown() == Approx(210489.0 / 90458.0));
	// Slowdown is floored at 1 (common.md §4).
	f.fct_ns = 80000;
	CHECK(f.slowdown() == 1.0);
}
