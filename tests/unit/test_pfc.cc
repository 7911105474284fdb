// 802.1Qbb PFC frames (common.md §2).
#include <catch2/catch.hpp>

#include "control/pfc.h"

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
