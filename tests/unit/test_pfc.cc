// 802.1Qbb PFC frames (common.md §2).
#include <catch2/catch.hpp>

#include "common/abi.h"
#include "control/pfc.h"
#include "control/switch_loader.h"
#include "control/tcgate.h"
#include "control/topology.h"

using namespace qn;

TEST_CASE("build_pfc_frame__802_1Qbb_layout", "[pfc]")
{
	Mac src{0x02, 0x51, 0x01, 0x00, 0x00, 0x03};
	std::array<uint16_t, 8> q{};
	q[3] = 0xFFFF;
	q[6] = 0x1234;
	Bytes f = build_pfc_frame(src, uint8_t((1 << 3) | (1 << 6)), q);
	REQUIRE(f.size() == 60); // 64 with the FCS the NIC adds
	const Bytes expect_head{0x01, 0x80, 0xC2, 0x00, 0x00, 0x01, 0x02, 0x51, 0x01, 0x00, 0x00, 0x03,
				0x88, 0x08, 0x01, 0x01, 0x00, 0x48};
	CHECK(Bytes(f.begin(), f.begin() + 18) == expect_head);
	// Time[0..7], big-endian, Time[0] first; only enabled priorities carry quanta.
	CHECK(f[18 + 2 * 3] == 0xFF);
	CHECK(f[19 + 2 * 3] == 0xFF);
	CHECK(f[18 + 2 * 6] == 0x12);
	CHECK(f[19 + 2 * 6] == 0x34);
	for (int i : {0, 1, 2, 4, 5, 7})
		CHECK((f[size_t(18 + 2 * i)] | f[size_t(19 + 2 * i)]) == 0);
	for (size_t i = 34; i < 60; i++)
		CHECK(f[i] == 0);
}

TEST_CASE("build_pfc_frame__xon_is_quanta_zero", "[pfc]")
{
	std::array<uint16_t, 8> q{};
	Bytes f = build_pfc_frame(Mac{2, 0, 0, 0, 0, 1}, 1 << 3, q);
	auto p = parse_pfc_frame(f);
	REQUIRE(p);
	CHECK(p->prio_mask == 0x08);
	CHECK(p->quanta[3] == 0);
}

TEST_CASE("parse_pfc_frame__round_trip_and_rejects", "[pfc]")
{
	std::array<uint16_t, 8> q{};
	q[5] = 777;
	auto p = parse_pfc_frame(build_pfc_frame(Mac{2, 0, 0, 0, 0, 1}, 1 << 5, q));
	REQUIRE(p);
	CHECK(p->quanta[5] == 777);
	Bytes not_pfc(60, 0);
	not_pfc[12] = 0x08;
	CHECK_FALSE(parse_pfc_frame(not_pfc));
	CHECK_FALSE(parse_pfc_frame(Bytes(20, 0)));
	Bytes pause_8023x = build_pfc_frame(Mac{2, 0, 0, 0, 0, 1}, 1, q);
	pause_8023x[15] = 0x01; // opcode 0x0001: 802.3x, not PFC
	pause_8023x[14] = 0x00;
	CHECK_FALSE(parse_pfc_frame(pause_8023x));
}

TEST_CASE("pfc_quanta_ns__512_bit_times", "[pfc]")
{
	CHECK(pfc_quanta_ns(1, 1'000'000'000ULL) == 512);
	CHECK(pfc_quanta_ns(65535, 10'000'000'000ULL) == 3'355'392); // 3.36 ms at 10G (common.md §2)
	CHECK(pfc_quanta_ns(100, 0) == 0);
}

TEST_CASE("pfc_frame_kick__names_no_priority", "[pfc]")
{
	auto p = parse_pfc_frame(pfc_frame_kick(Mac{2, 0, 0, 0, 0, 1}));
	REQUIRE(p);
	CHECK(p->prio_mask == 0);
	for (auto q : p->quanta)
		CHECK(q == 0);
}

TEST_CASE("gate_config__open_never_binds_closed_holds_one_frame", "[pfc]")
{
	GateConfig g = gate_config(1'000'000'000, 2048, 24'000'000);
	CHECK(g.open_rate_Bps >= 16 * 1'000'000'000ull / 8);
	CHECK(g.open_rate_Bps >= 4'000'000'000ull); // 32 Gbit/s at least
	CHECK(g.open_burst >= 2 * (2048 + 14));
	CHECK(g.closed_burst >= 2048 + 14);          // one maximum frame fits (tbf drops larger ones)
	CHECK(g.closed_burst < 2 * (2048 + 14));     // ... and only one
	CHECK(g.limit == 24'000'000u);
	CHECK(gate_tc_line("s1-p3", g).find("parent 1:20 handle 20: tbf") != std::string::npos);
}

TEST_CASE("switch_headrooms__rate_times_latency_scaled_to_half_the_buffer", "[pfc]")
{
	const char *text = "name hr\n"
			   "defaults rate=1Gbps mtu=2048 delay=1us buffer=12MB\n"
			   "switch s1\nswitch s2\nhost h1\nhost h2\n"
			   "link h1 s1\nlink s1 s2 rate=100Mbps\nlink s2 h2 rate=100Gbps\n";
	auto t = parse_topology(text, "<test>");
	REQUIRE(t);
	auto d = Dilation::make(1);
	REQUIRE(d);
	const int s1 = t->find("s1"), s2 = t->find("s2");
	auto h1 = switch_headrooms(*t, s1, *d);
	REQUIRE(h1.size() == 2);
	// 1 Gbit/s x (L + 2 us) + 2 frames; 100 Mbit/s a tenth of the rate part
	const uint64_t frame = 2048 + QN_ETH_HLEN + QN_WIRE_OVERHEAD;
	CHECK(h1[0] == 1'000'000'000ull * (kPfcPauseLatencyWallNs + 2'000) / 8'000'000'000ull + 2 * frame);
	CHECK(h1[1] == 100'000'000ull * (kPfcPauseLatencyWallNs + 2'000) / 8'000'000'000ull + 2 * frame);
	// s2: 100 Gbit/s asks for more than half its 12 MB buffer: both ports scaled down together
	auto h2 = switch_headrooms(*t, s2, *d);
	REQUIRE(h2.size() == 2);
	CHECK(h2[0] + h2[1] <= 6'000'000u);
	CHECK(h2[0] + h2[1] >= 5'999'990u);
	CHECK(h2[1] > 100 * h2[0] / 2); // proportions kept (100 Gbit/s vs 100 Mbit/s)
	// D = 10: a tenth of the wall rate, the link delay ten times longer
	auto d10 = Dilation::make(10);
	REQUIRE(d10);
	CHECK(switch_headrooms(*t, s1, *d10)[0] ==
	      100'000'000ull * (kPfcPauseLatencyWallNs + 20'000) / 8'000'000'000ull + 2 * frame);
}
