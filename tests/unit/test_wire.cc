// The engine's RoCEv2 codec (transport/wire.h): round trips, the ICRC test vector of
// ../shared/specs/common.md §1.3, and malformed input.
#include <catch2/catch.hpp>

#include <random>

#include "packet.h"
#include "pfc.h"
#include "wire.h"

using namespace qn;
using namespace qn::tp;

namespace {

TxHeader header()
{
	TxHeader h;
	h.src = {{0x02, 0x51, 0, 0, 0, 1}, 0x0B000101};
	h.dst = {{0x02, 0x51, 0, 0, 0, 2}, 0x0B000201};
	h.sport = qpn_to_sport(0x123);
	h.dest_qp = 0xABCDEF;
	h.psn = 0xFFFFFE;
	h.ip_id = 7;
	return h;
}

std::vector<uint8_t> data_frame(const TxHeader &h, size_t n, bool icrc)
{
	std::vector<uint8_t> f(4096);
	size_t len = encode_data(h, n, icrc, f.data(), f.size(), [&](uint8_t *d) {
		for (size_t i = 0; i < n; i++)
			d[i] = uint8_t(i * 7 + 3);
	});
	f.resize(len);
	return f;
}

} // namespace

TEST_CASE("encode_data__round_trip_every_pad", "[wire]")
{
	for (bool icrc : {false, true}) {
		for (size_t n : {0u, 1u, 2u, 3u, 4u, 5u, 2040u}) {
			TxHeader h = header();
			h.opcode = QN_OP_RC_SEND_MIDDLE;
			h.ack_req = true;
			auto f = data_frame(h, n, icrc);
			// Expect: headers + payload + pad to 4 bytes + optional ICRC.
			REQUIRE(f.size() == kDataHdrBytes + ((n + 3) & ~size_t(3)) + (icrc ? 4 : 0));
			Packet p;
			REQUIRE(parse(f, icrc, p) == ParseError::None);
			CHECK(p.kind == Kind::Data);
			CHECK(p.opcode == QN_OP_RC_SEND_MIDDLE);
			CHECK(p.ack_req);
			CHECK(p.dest_qp == 0xABCDEF);
			CHECK(p.psn == 0xFFFFFE);
			CHECK(p.sport == 0xC123);
			CHECK(p.dscp == QN_DSCP_DATA);
			CHECK(p.ecn == 2);
			CHECK(p.src.ip == 0x0B000101);
			CHECK(p.dst.mac == h.dst.mac);
			REQUIRE(p.payload.size() == n);
			for (size_t i = 0; i < n; i++)
				REQUIRE(p.payload[i] == uint8_t(i * 7 + 3));
			// The IPv4 header checksum is valid.
			CHECK(ipv4_checksum(f.data() + 14, 20) == 0);
		}
	}
}

TEST_CASE("encode_ack__round_trip_ack_and_nak", "[wire]")
{
	for (bool nak : {false, true}) {
		TxHeader h = header();
		h.dscp = QN_DSCP_CONTROL;
		h.syndrome = nak ? QN_AETH_NAK_SEQ : QN_AETH_ACK;
		h.msn = 0x123456;
		h.qack_flags = QN_QACK_ECE;
		h.ce_pkts = 513;
		h.sack = 0x8000000000000001ULL;
		uint8_t buf[256];
		size_t len = encode_ack(h, true, buf, sizeof(buf));
		REQUIRE(len == kAckFrameBytes + 4);
		Packet p;
		REQUIRE(parse({buf, len}, true, p) == ParseError::None);
		CHECK(p.kind == (nak ? Kind::Nak : Kind::Ack));
		CHECK(p.opcode == QN_OP_RC_ACK);
		CHECK(p.msn == 0x123456);
		CHECK(p.qack_flags == QN_QACK_ECE);
		CHECK(p.ce_pkts == 513);
		CHECK(p.sack == 0x8000000000000001ULL);
		CHECK(p.dscp == QN_DSCP_CONTROL);
	}
}

TEST_CASE("icrc__matches_the_cnp_test_vector", "[wire]")
{
	// common.md §1.3: a Mellanox CNP, IP header .. ICRC.
	const std::vector<uint8_t> ip = {
		0x45, 0x89, 0x00, 0x3C, 0x98, 0xC6, 0x40, 0x00, 0x20, 0x11, 0x69, 0x27, 0x16, 0x16, 0x16, 0x08,
		0x16, 0x16, 0x16, 0x07, 0xDB, 0xAE, 0x12, 0xB7, 0x00, 0x28, 0x00, 0x00, 0x81, 0x00, 0xFF, 0xFF,
		0x40, 0x00, 0x00, 0xD2, 0x00, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0xDA, 0xFC, 0x1B, 0xEF};
	REQUIRE(ip.size() == 60);
	// Expect: CRC-32 of the masked copy, least-significant byte first on the wire.
	CHECK(icrc(ip.data(), 56) == 0xEF1BFCDAu);
	// The same frame parses as a CNP with the ICRC checked.
	std::vector<uint8_t> f(14, 0);
	f[12] = 0x08;
	f.insert(f.end(), ip.begin(), ip.end());
	Packet p;
	REQUIRE(parse(f, true, p) == ParseError::None);
	CHECK(p.kind == Kind::Cnp);
	CHECK(p.dest_qp == 0xD2);
	CHECK(p.becn);
	CHECK(p.ecn == 1);
	// Switches may rewrite ECN and TTL without touching the ICRC (masked fields) ...
	std::vector<uint8_t> g = f;
	g[15] = 0x8B;            // CE
	g[22] = 0x1F;            // TTL - 1
	// (fix the IP checksum the way a switch does)
	g[24] = g[25] = 0;
	uint16_t c = ipv4_checksum(g.data() + 14, 20);
	g[24] = uint8_t(c >> 8);
	g[25] = uint8_t(c);
	CHECK(parse(g, true, p) == ParseError::None);
	// ... but not the addresses or the payload.
	g[14 + 19] ^= 1;
	g[24] = g[25] = 0;
	c = ipv4_checksum(g.data() + 14, 20);
	g[24] = uint8_t(c >> 8);
	g[25] = uint8_t(c);
	CHECK(parse(g, true, p) == ParseError::BadIcrc);
}

TEST_CASE("encode_cnp__matches_common_md_layout", "[wire]")
{
	TxHeader h = header();
	h.dscp = QN_DSCP_CONTROL;
	uint8_t buf[128];
	size_t len = encode_cnp(h, true, buf, sizeof(buf));
	// Expect: IP total length 60, frame 74 + FCS added by the NIC = 78 (common.md §1.3).
	REQUIRE(len == 74);
	CHECK((buf[16] << 8 | buf[17]) == 60);
	CHECK(buf[42] == QN_OP_CNP);
	CHECK(buf[46] == 0x40);
	Packet p;
	REQUIRE(parse({buf, len}, true, p) == ParseError::None);
	CHECK(p.kind == Kind::Cnp);
	CHECK(p.payload.size() == 16);
}

TEST_CASE("parse__pfc_and_pause_frames", "[wire]")
{
	std::array<uint16_t, 8> q{};
	q[3] = 1000;
	Bytes f = build_pfc_frame({2, 0, 0, 0, 0, 1}, 1 << 3, q);
	Packet p;
	REQUIRE(parse(f, false, p) == ParseError::None);
	CHECK(p.kind == Kind::Pfc);
	CHECK(p.pfc_enable == 0x08);
	CHECK(p.pfc_quanta[3] == 1000);
	f[15] = 0x02; // unknown MAC-control opcode
	CHECK(parse(f, false, p) == ParseError::BadPfc);
}

TEST_CASE("parse__rejects_every_truncation_and_corruption", "[wire]")
{
	TxHeader h = header();
	h.opcode = QN_OP_RC_SEND_ONLY;
	auto f = data_frame(h, 101, true);
	Packet p;
	// Expect: every strict prefix is rejected (never read past the end).
	for (size_t n = 0; n < f.size(); n++) {
		std::vector<uint8_t> g(f.begin(), f.begin() + long(n));
		INFO("prefix " << n);
		CHECK(parse(g, true, p) != ParseError::None);
	}
	// Expect: with the ICRC on, a flipped bit anywhere after the Ethernet header is caught,
	// except in the fields the ICRC masks and nothing else checks (UDP checksum, BTH byte 4).
	for (size_t i = 14; i < f.size(); i++) {
		for (int bit = 0; bit < 8; bit += 3) {
			std::vector<uint8_t> g = f;
			g[i] ^= uint8_t(1 << bit);
			bool masked = i == 40 || i == 41 || i == 46;
			INFO("byte " << i << " bit " << bit);
			if (!masked)
				CHECK(parse(g, true, p) != ParseError::None);
		}
	}
	// Specific errors are named.
	auto g = f;
	g[23] = 6; // TCP
	CHECK(parse(g, false, p) != ParseError::None);
	g = f;
	g[36] = 0x13; // UDP dport != 4791
	CHECK(parse(g, false, p) == ParseError::NotRoce);
	g = f;
	g[42] = 0x33; // unknown opcode
	CHECK(parse(g, false, p) == ParseError::BadBth);
	g = f;
	g[20] = 0x20; // fragment offset
	CHECK(parse(g, false, p) != ParseError::None);
	// Random garbage never crashes and is almost never accepted.
	std::mt19937_64 rng(7);
	int accepted = 0;
	for (int k = 0; k < 20000; k++) {
		std::vector<uint8_t> r(rng() % 200);
		for (auto &b : r)
			b = uint8_t(rng());
		if (r.size() > 13) {
			r[12] = 0x08;
			r[13] = 0x00;
		}
		if (parse(r, true, p) == ParseError::None)
			accepted++;
	}
	CHECK(accepted == 0);
}
