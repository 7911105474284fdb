// The engine's RoCEv2 codec (transport/wire.h): round trips, the ICRC test vector of
// ../shared/specs/common.md §1.3, and malformed input.
#include <catch2/catch.hpp>

#include <random>

#include "control/packet.h"
#include "control/pfc.h"
#include "transport/wire.h"

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
	h.psn = 0x00ABCD; // the CE-marked packet behind it
	std::array<uint8_t, QN_CNP_PAYLOAD_LEN> pl{};
	for (size_t i = 0; i < pl.size(); i++)
		pl[i] = uint8_t(0xA0 + i);
	uint8_t buf[128];
	size_t len = encode_cnp(h, pl, true, buf, sizeof(buf));
	// Expect: IP total length 60, frame 74 + FCS added by the NIC = 78 (common.md §1.3).
	REQUIRE(len == 74);
	CHECK((buf[16] << 8 | buf[17]) == 60);
	CHECK(buf[42] == QN_OP_CNP);
	CHECK(buf[46] == 0x40);
	// Expect: BTH PSN = the causing PSN (docs/wire.md: the spec's PSN 0 carries no information),
	// then the notification point's 16 bytes.
	CHECK((buf[51] << 16 | buf[52] << 8 | buf[53]) == 0x00ABCD);
	CHECK(std::equal(pl.begin(), pl.end(), buf + 54));
	Packet p;
	REQUIRE(parse({buf, len}, true, p) == ParseError::None);
	CHECK(p.kind == Kind::Cnp);
	CHECK(p.psn == 0x00ABCD);
	REQUIRE(p.payload.size() == 16);
	CHECK(std::equal(pl.begin(), pl.end(), p.payload.begin()));
}

TEST_CASE("encode_data__per_packet_ecn_and_marker_bits", "[wire]")
{
	// Expect: the TOS byte is DSCP << 2 | marker bits | ECN; marker bits never touch ECN and
	// the ICRC does not cover TOS (common.md §1.4), so the frame still parses with it on.
	for (uint8_t ecn : {uint8_t(0), uint8_t(1), uint8_t(2)}) {
		TxHeader h = header();
		h.ecn = ecn;
		h.tos_bits = QN_TOS_PBT | 0x03; // the ECN bits of tos_bits are ignored
		auto f = data_frame(h, 64, true);
		CHECK(f[15] == uint8_t(QN_DSCP_DATA << 2 | QN_TOS_PBT | ecn));
		Packet p;
		REQUIRE(parse(f, true, p) == ParseError::None);
		CHECK(p.ecn == ecn);
		CHECK(p.dscp == (QN_DSCP_DATA | QN_TOS_PBT >> 2));
	}
}

namespace {

// An IPv4 header as the signal encoders must write it (DF, TTL 64, UDP), checksum filled in.
std::vector<uint8_t> ip_udp(uint8_t tos, uint16_t ip_len, uint16_t id, uint32_t src, uint32_t dst, uint16_t sport,
			    uint16_t dport)
{
	std::vector<uint8_t> v = {0x45, tos, uint8_t(ip_len >> 8), uint8_t(ip_len), uint8_t(id >> 8), uint8_t(id),
				  0x40, 0x00, 64, 17, 0, 0,
				  uint8_t(src >> 24), uint8_t(src >> 16), uint8_t(src >> 8), uint8_t(src),
				  uint8_t(dst >> 24), uint8_t(dst >> 16), uint8_t(dst >> 8), uint8_t(dst)};
	uint16_t c = ipv4_checksum(v.data(), 20);
	v[10] = uint8_t(c >> 8);
	v[11] = uint8_t(c);
	const uint16_t ul = uint16_t(ip_len - 20);
	for (uint8_t b : {uint8_t(sport >> 8), uint8_t(sport), uint8_t(dport >> 8), uint8_t(dport), uint8_t(ul >> 8),
			  uint8_t(ul), uint8_t(0), uint8_t(0)})
		v.push_back(b);
	return v;
}

} // namespace

TEST_CASE("encode_bts__golden_and_parse", "[wire]")
{
	// The data packet that triggered it: h -> receiver, PSN 0xFFFFFE.
	TxHeader d = header();
	auto data = data_frame(d, 100, true);
	std::span<const uint8_t, kTrimmedBytes> trimmed(data.data() + 14, kTrimmedBytes);
	// The BTS: from the congested receiver back to the sender, the data's sport kept.
	TxHeader o;
	o.src = d.dst;
	o.dst = d.src;
	o.sport = d.sport;
	o.ip_id = 9;
	o.ecn = 2;      // forced to Not-ECT
	o.tos_bits = 4; // forced off
	BtsInfo b;
	b.version = QN_BTS_VERSION;
	b.origin = QN_BTS_ORIGIN_CACHE;
	b.cacheable = true;
	b.pause_us = 500;
	b.reporter = 0x00000305;
	uint8_t buf[256];
	const size_t len = encode_bts(o, b, trimmed, buf, sizeof(buf));
	// Expect (sfc.md §5): IP 76 bytes, DSCP 48 Not-ECT, UDP to 4793 from the data's sport,
	// version 1 | origin 1, cacheable, 500 us, reporter, then the 40 trimmed bytes verbatim.
	std::vector<uint8_t> want(d.src.mac.begin(), d.src.mac.end());
	want.insert(want.end(), d.dst.mac.begin(), d.dst.mac.end());
	want.insert(want.end(), {0x08, 0x00});
	auto iu = ip_udp(0xC0, 76, 9, d.dst.ip, d.src.ip, 0xC123, 4793);
	want.insert(want.end(), iu.begin(), iu.end());
	want.insert(want.end(), {0x11, 0x01, 0x01, 0xF4, 0x00, 0x00, 0x03, 0x05});
	want.insert(want.end(), trimmed.begin(), trimmed.end());
	REQUIRE(len == kBtsFrameBytes);
	REQUIRE(len == 90); // 94 with the FCS
	CHECK(std::vector<uint8_t>(buf, buf + len) == want);
	Packet p;
	REQUIRE(parse({buf, len}, true, p) == ParseError::None); // no ICRC even with ICRC on
	CHECK(p.kind == Kind::Bts);
	CHECK(p.sport == 0xC123);
	CHECK(p.bts.version == 1);
	CHECK(p.bts.origin == QN_BTS_ORIGIN_CACHE);
	CHECK(p.bts.cacheable);
	CHECK(p.bts.pause_us == 500);
	CHECK(p.bts.reporter == 0x305);
	CHECK(p.bts.orig_src_ip == d.src.ip);
	CHECK(p.bts.orig_dst_ip == d.dst.ip);
	CHECK(p.bts.orig_sport == 0xC123);
	CHECK(p.bts.orig_dscp == QN_DSCP_DATA);
	CHECK(p.bts.orig_dest_qp == 0xABCDEF);
	CHECK(p.bts.orig_psn == 0xFFFFFE);
	// Expect: every truncation and an unknown version are rejected, never read past the end.
	for (size_t n = 0; n < len; n++)
		CHECK(parse({buf, n}, false, p) != ParseError::None);
	buf[42] = 0x21; // version 2
	CHECK(parse({buf, len}, false, p) == ParseError::BadSignal);
}

TEST_CASE("encode_postcard__golden_and_parse", "[wire]")
{
	TxHeader o;
	o.src = {{0x02, 0x51, 0, 0, 0, 9}, 0x0B00FF01}; // the switch
	o.dst = {{0x02, 0x51, 0, 0, 0, 1}, 0x0B000101}; // the flow's sender
	o.sport = 0xC123;
	o.ip_id = 0x1234;
	PostcardInfo c;
	c.version = QN_POSTCARD_VERSION;
	c.psn = 0x010203;
	c.switch_id = 0x0000025100000009ULL;
	c.flow_saddr = 0x0B000101;
	c.flow_daddr = 0x0B000201;
	c.flow_sport = 0xC123;
	c.flow_dport = 4791;
	c.dest_qp = 0xABCDEF;
	c.i_p = 1000;
	c.q1 = 2000;
	c.rate_mbps = 100000;
	c.recent_bytes = 3000;
	c.recent_marked_bytes = 4000;
	c.t0_ns = 0x0102030405060708ULL;
	uint8_t buf[256];
	const size_t len = encode_postcard(o, c, buf, sizeof(buf));
	// Expect (pbfs.md §5): IP 84 bytes, DSCP 48, UDP to 4792, 56 payload bytes big-endian.
	std::vector<uint8_t> want(o.dst.mac.begin(), o.dst.mac.end());
	want.insert(want.end(), o.src.mac.begin(), o.src.mac.end());
	want.insert(want.end(), {0x08, 0x00});
	auto iu = ip_udp(0xC2, 84, 0x1234, o.src.ip, o.dst.ip, 0xC123, 4792); // ECN as given (ECT(0) default)
	want.insert(want.end(), iu.begin(), iu.end());
	want.insert(want.end(), {0x01, 0x01, 0x02, 0x03,				   // version, PSN
				 0x00, 0x00, 0x02, 0x51, 0x00, 0x00, 0x00, 0x09,	   // sID
				 0x0B, 0x00, 0x01, 0x01, 0x0B, 0x00, 0x02, 0x01,	   // flow addresses
				 0xC1, 0x23, 0x12, 0xB7,				   // flow ports
				 0x00, 0xAB, 0xCD, 0xEF,				   // DestQP
				 0x00, 0x00, 0x03, 0xE8, 0x00, 0x00, 0x07, 0xD0,	   // I_p, Q1
				 0x00, 0x01, 0x86, 0xA0,				   // T, Mbit/s
				 0x00, 0x00, 0x0B, 0xB8, 0x00, 0x00, 0x0F, 0xA0,	   // recent, marked
				 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08});	   // t0
	REQUIRE(len == kPostcardFrameBytes);
	CHECK(std::vector<uint8_t>(buf, buf + len) == want);
	Packet p;
	REQUIRE(parse({buf, len}, true, p) == ParseError::None);
	CHECK(p.kind == Kind::Postcard);
	CHECK(p.postcard.psn == 0x010203);
	CHECK(p.postcard.switch_id == c.switch_id);
	CHECK(p.postcard.flow_saddr == c.flow_saddr);
	CHECK(p.postcard.flow_daddr == c.flow_daddr);
	CHECK(p.postcard.flow_sport == 0xC123);
	CHECK(p.postcard.flow_dport == 4791);
	CHECK(p.postcard.dest_qp == 0xABCDEF);
	CHECK(p.postcard.i_p == 1000);
	CHECK(p.postcard.q1 == 2000);
	CHECK(p.postcard.rate_mbps == 100000);
	CHECK(p.postcard.recent_bytes == 3000);
	CHECK(p.postcard.recent_marked_bytes == 4000);
	CHECK(p.postcard.t0_ns == c.t0_ns);
	for (size_t n = 0; n < len; n++)
		CHECK(parse({buf, n}, false, p) != ParseError::None);
	buf[42] = 2; // version
	CHECK(parse({buf, len}, false, p) == ParseError::BadSignal);
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
