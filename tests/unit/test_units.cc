// Unit conversions and the dilation contract (docs/units.md).
#include <catch2/catch.hpp>

#include "common/units.h"
#include "control/bringup.h"

using namespace qn;

TEST_CASE("parse_rate_bps__accepts_units", "[units]")
{
	CHECK(*parse_rate_bps("10Gbps") == 10'000'000'000ULL);
	CHECK(*parse_rate_bps("10G") == 10'000'000'000ULL);
	CHECK(*parse_rate_bps("2.5Gbit") == 2'500'000'000ULL);
	CHECK(*parse_rate_bps("400Mbps") == 400'000'000ULL);
	CHECK(*parse_rate_bps("100Kbps") == 100'000ULL);
	CHECK(*parse_rate_bps("1e9") == 1'000'000'000ULL);
	CHECK(*parse_rate_bps("100Gbps") == 100'000'000'000ULL);
}

TEST_CASE("parse_rate_bps__rejects_garbage", "[units]")
{
	CHECK_FALSE(parse_rate_bps("").ok());
	CHECK_FALSE(parse_rate_bps("fast").ok());
	CHECK_FALSE(parse_rate_bps("10Gxps").ok());
	CHECK_FALSE(parse_rate_bps("0").ok());
	CHECK_FALSE(parse_rate_bps("-1G").ok());
	CHECK_FALSE(parse_rate_bps("1e30").ok());
	auto r = parse_rate_bps("10Gxps");
	CHECK_THAT(r.error().message, Catch::Contains("unknown unit 'Gxps'"));
}

TEST_CASE("parse_time_ns__ns3_style_values", "[units]")
{
	CHECK(*parse_time_ns("1us") == 1000);
	CHECK(*parse_time_ns("0.001ms") == 1000);
	CHECK(*parse_time_ns("2000ns") == 2000);
	CHECK(*parse_time_ns("1s") == 1'000'000'000ULL);
	CHECK(*parse_time_ns("0") == 0);
	CHECK(*parse_time_ns("1.5us") == 1500);
	CHECK_FALSE(parse_time_ns("1 hour").ok());
	CHECK_FALSE(parse_time_ns("us").ok());
	CHECK_FALSE(parse_time_ns("-5us").ok());
}

TEST_CASE("parse_size_bytes__decimal_and_binary", "[units]")
{
	CHECK(*parse_size_bytes("2048") == 2048);
	CHECK(*parse_size_bytes("12MB") == 12'000'000ULL);
	CHECK(*parse_size_bytes("64KB") == 64'000ULL);
	CHECK(*parse_size_bytes("4KiB") == 4096);
	CHECK(*parse_size_bytes("1MiB") == 1048576);
	CHECK_FALSE(parse_size_bytes("12Mb").ok());
}

TEST_CASE("format__round_trips_through_parse", "[units]")
{
	CHECK(format_rate(10'000'000'000ULL) == "10Gbit/s");
	CHECK(format_rate(400'000'000ULL) == "400Mbit/s");
	CHECK(format_time(1000) == "1us");
	CHECK(format_time(12'500) == "12.5us");
	CHECK(format_size(12'000'000) == "12MB");
	CHECK(format_size(2048) == "2048B");
	CHECK(format_size(2'000'000'000) == "2GB"); // and it reads back
	CHECK(*parse_size_bytes(format_size(2'000'000'000)) == 2'000'000'000);
}

TEST_CASE("Dilation__applies_only_where_named", "[units]")
{
	auto d = Dilation::make(4.0);
	REQUIRE(d.ok());
	// Expect: links run at rate / D, times stretch by D, fabric time = wall / D.
	CHECK(d->to_wall_rate_bps(100'000'000'000ULL) == 25'000'000'000ULL);
	CHECK(d->to_wall_ns(10'000) == 40'000);
	CHECK(d->to_fabric_ns(40'000) == 10'000);
	CHECK(d->milli() == 4000);
	// Expect: D = 1 is the identity.
	auto one = Dilation::make(1.0);
	CHECK(one->to_wall_rate_bps(123'456'789ULL) == 123'456'789ULL);
	CHECK(one->to_wall_ns(777) == 777);
	// Expect: out-of-range factors are refused with the value in the message.
	CHECK_FALSE(Dilation::make(0.5).ok());
	CHECK_FALSE(Dilation::make(0).ok());
	CHECK_THAT(Dilation::make(200000).error().message, Catch::Contains("200000"));
	CHECK(Dilation::make(kMaxDilation).ok()); // D = 100,000 is allowed (a k=8 fat-tree needs more than 10,000)
}

TEST_CASE("wire_bytes__charges_overhead_and_mpu", "[units]")
{
	CHECK(wire_bytes(2062) == 2086); // 2048 IP MTU + 14 Ethernet + 24 (preamble, IFG, FCS)
	CHECK(wire_bytes(42) == 84);     // below the minimum frame: mpu
}

TEST_CASE("plan_htb__burst_rate_and_fifo", "[units][htb]")
{
	auto d1 = Dilation::make(1.0);
	HtbPlan h = plan_htb(8'000'000'000ULL, 2048, 12'000'000, *d1);
	CHECK(h.rate_bps == 8'000'000'000ULL);
	// Expect: at 8 Gbit/s the burst covers 25 us of the dequeue's lateness (tc's default burst
	// reaches 74% of 8 Gbit/s), several frames.
	CHECK(h.burst_bytes >= 8'000'000'000ULL / 8 * 25 / 1'000'000);
	// Expect: the leaf fifo is deeper than the switch buffer, so BPF admission decides drops.
	CHECK(h.fifo_limit_bytes > 12'000'000ULL);
	// Expect: the leaves have no bucket of their own to speak of, so 1:1's is the only one.
	CHECK(h.leaf_rate_bps * 1000 < h.rate_bps);
	// Expect: where a frame takes longer than 25 us (10 Mbit/s, D=10,000), the burst is one
	// frame of wire time: the catch-up the departure monitor allows, no more, no less.
	auto d10k = Dilation::make(10000.0);
	HtbPlan hs = plan_htb(100'000'000'000ULL, 2048, 12'000'000, *d10k);
	CHECK(hs.rate_bps == 10'000'000ULL);
	CHECK(hs.burst_bytes == 2048 + 14 + 24);
	// Expect: dilation divides the shaper rate, never the buffer.
	auto d4 = Dilation::make(4.0);
	HtbPlan h4 = plan_htb(100'000'000'000ULL, 2048, 12'000'000, *d4);
	CHECK(h4.rate_bps == 25'000'000'000ULL);
	CHECK(h4.fifo_limit_bytes == h.fifo_limit_bytes);
}

// RPS masks for the switch ports (bringup.h cpu_mask_of_list): every online CPU, in the format
// rps_cpus takes; anything else is an error naming the text.
TEST_CASE("cpu_mask_of_list: the online CPUs as an rps_cpus mask", "[bringup]")
{
	CHECK(*qn::cpu_mask_of_list("0-1\n") == "3");
	CHECK(*qn::cpu_mask_of_list("0") == "1");
	CHECK(*qn::cpu_mask_of_list("0,2-5") == "3d");
	CHECK(*qn::cpu_mask_of_list("0-31") == "ffffffff");
	CHECK(*qn::cpu_mask_of_list("0-32") == "1,ffffffff");
	CHECK(*qn::cpu_mask_of_list("33") == "2,00000000");
	for (const char *bad : {"", "x", "1-0", "0-", "0,,1", "0;1", "9000"}) {
		auto r = qn::cpu_mask_of_list(bad);
		REQUIRE_FALSE(r);
		CHECK(r.error().message.find("not a CPU list") != std::string::npos);
	}
}
