// LDCP (transport/cc/ldcp.h) on a fake clock against ../shared/specs/ldcp.md §3.3: the fast
// start's ECN choice (Not-ECT, the last one ECT, retransmissions ECT), both fast-start exits,
// the per-ACK window (+alpha/cw, -beta, the n-packet form), crossing below one packet and back
// (gamma, eta, the rate limiter at cw/RTT), the floor, timeouts, idle re-entry; the derived
// switch profile and q*; the receiver's immediate ACK of a CE-marked packet.
#include <catch2/catch.hpp>

#include <cmath>

#include "transport/cc/cc.h"
#include "transport/cc/ldcp.h"
#include "transport/qp.h"

using namespace qn::tp::cc;
using Catch::Detail::Approx;

namespace {
constexpr uint64_t kLine = 10'000'000'000;
constexpr uint32_t kPayload = 2004, kWire = 2086; // the 2048-byte MTU's payload and wire frame
constexpr uint64_t kRtt = 10'000;

// An LDCP sender with IW = 8 packets and cwnd_max = 64 packets.
Ldcp make(LdcpParams p = {})
{
	if (!p.iw_bytes)
		p.iw_bytes = 8 * kPayload;
	if (!p.cwnd_max_bytes)
		p.cwnd_max_bytes = 64 * kPayload;
	return Ldcp(p, kLine, kPayload, kWire, 0, kRtt);
}

// Send `n` new packets of a message of `msg_pkts` packets, from packet `first`. Return: their
// ECN codepoints.
std::vector<int> send(Ldcp &l, uint64_t first, uint64_t n, uint64_t msg_pkts, bool retx = false)
{
	std::vector<int> ecn;
	for (uint64_t i = first; i < first + n; i++) {
		TxMarks m;
		l.on_tx(TxPacket{0, uint32_t(i), kWire, kPayload, retx, 0, i * kPayload, msg_pkts * kPayload}, m);
		ecn.push_back(m.ecn);
	}
	return ecn;
}

AckSample ack(uint32_t n, uint16_t ce = 0, bool nak = false, uint64_t t = 0)
{
	AckSample a;
	a.now_ns = t;
	a.acked_pkts = n;
	a.acked_bytes = uint64_t(n) * kPayload;
	a.ce_pkts = ce;
	a.ece = ce > 0;
	a.nak = nak;
	return a;
}

void start_flow(Ldcp &l, uint64_t msg_pkts)
{
	l.on_message(MessageStart{0, 0, msg_pkts * kPayload});
}
} // namespace

TEST_CASE("ldcp__fast_start_packets_are_not_ect_except_the_last", "[ldcp]")
{
	SECTION("a message longer than IW: the IW-th packet is ECT, the rest of the first RTT Not-ECT")
	{
		Ldcp l = make();
		start_flow(l, 20);
		CHECK(l.in_fast_start());
		CHECK(l.cw() == 8);
		CHECK(l.window_bytes() == 8 * kPayload);
		CHECK(l.rate_bps() == kLine);
		CHECK(send(l, 0, 8, 20) == std::vector<int>{0, 0, 0, 0, 0, 0, 0, 2});
		CHECK(l.stats().fs_not_ect == 7);
		// After the first ACK every new packet is ECT (T2), the window still IW (ACK clocking).
		l.on_ack(ack(1));
		CHECK(l.in_fast_start());
		CHECK(send(l, 8, 1, 20) == std::vector<int>{2});
	}
	SECTION("a message shorter than IW: its last packet is ECT")
	{
		Ldcp l = make();
		start_flow(l, 3);
		CHECK(send(l, 0, 3, 3) == std::vector<int>{0, 0, 2});
	}
	SECTION("the first ACK before IW is sent ends the Not-ECT packets")
	{
		Ldcp l = make();
		start_flow(l, 20);
		CHECK(send(l, 0, 3, 20) == std::vector<int>{0, 0, 0});
		l.on_ack(ack(1));
		CHECK(send(l, 3, 2, 20) == std::vector<int>{2, 2});
	}
	SECTION("retransmissions are ECT, also during fast start")
	{
		Ldcp l = make();
		start_flow(l, 20);
		send(l, 0, 4, 20);
		CHECK(send(l, 0, 2, 20, true) == std::vector<int>{2, 2});
		CHECK(l.stats().fs_not_ect == 4);
	}
	SECTION("fast start off: every packet ECT, cw = IW")
	{
		LdcpParams p;
		p.fast_start = false;
		Ldcp l = make(p);
		start_flow(l, 20);
		CHECK_FALSE(l.in_fast_start());
		CHECK(send(l, 0, 8, 20) == std::vector<int>(8, 2));
	}
}

TEST_CASE("ldcp__fast_start_exits", "[ldcp]")
{
	SECTION("(b) every fast-start packet acknowledged: cw = IW; marks during fast start ignored")
	{
		Ldcp l = make();
		start_flow(l, 20);
		send(l, 0, 8, 20);
		for (int i = 0; i < 7; i++) {
			l.on_ack(ack(1, i % 2)); // half of them marked: no effect in fast start
			CHECK(l.in_fast_start());
			CHECK(l.cw() == 8);
		}
		l.on_ack(ack(1));
		CHECK_FALSE(l.in_fast_start());
		CHECK(l.cw() == 8);
		CHECK(l.stats().fs_exit_acked == 1);
		CHECK(l.stats().fs_exit_loss == 0);
	}
	SECTION("(a) loss: cw = the packets acknowledged in order before it")
	{
		Ldcp l = make();
		start_flow(l, 20);
		send(l, 0, 8, 20);
		l.on_ack(ack(2));
		l.on_ack(ack(1, 1)); // marked: ignored in fast start
		CHECK(l.cw() == 8);
		l.on_ack(ack(0, 0, true)); // NAK: the 4th packet is missing
		CHECK_FALSE(l.in_fast_start());
		CHECK(l.cw() == 3);
		CHECK(l.window_bytes() == 3 * kPayload);
		CHECK(l.stats().fs_exit_loss == 1);
	}
	SECTION("(a) with nothing in order: the floor gamma, paced at gamma per RTT")
	{
		Ldcp l = make();
		start_flow(l, 20);
		send(l, 0, 8, 20);
		l.on_ack(ack(0, 0, true));
		CHECK(l.cw() == 0.125);
		CHECK(l.window_bytes() == kPayload);
		// one 2086-byte frame per RTT / cw = 80 us: 2086 x 8 / 80 us = 208.6 Mbit/s
		CHECK(l.rate_bps() == Approx(0.125 * kWire * 8e9 / kRtt).epsilon(1e-6));
	}
	SECTION("a timeout in fast start is its loss exit")
	{
		Ldcp l = make();
		start_flow(l, 20);
		send(l, 0, 8, 20);
		l.on_ack(ack(5));
		l.on_timeout(1000);
		CHECK_FALSE(l.in_fast_start());
		CHECK(l.cw() == 5);
		CHECK(send(l, 5, 3, 20, true) == std::vector<int>{2, 2, 2});
	}
}

TEST_CASE("ldcp__per_ack_window_exact_trajectory", "[ldcp]")
{
	Ldcp l = make();
	start_flow(l, 1000);
	send(l, 0, 8, 1000);
	l.on_ack(ack(8)); // one ACK for all 8: exit (b)
	REQUIRE(l.cw() == 8);
	double cw = 8;
	// Eq. (1): +alpha/cw per unmarked ACK
	l.on_ack(ack(1));
	cw += 1.0 / cw;
	CHECK(l.cw() == Approx(cw).epsilon(1e-12));
	// Eq. (2): -beta per marked ACK
	l.on_ack(ack(1, 1));
	cw -= 0.5;
	CHECK(l.cw() == Approx(cw).epsilon(1e-12));
	// The n-packet ACK: 4 packets, 1 of them CE: +3 alpha/cw - beta
	l.on_ack(ack(4, 1));
	cw += 3.0 / cw - 0.5;
	CHECK(l.cw() == Approx(cw).epsilon(1e-12));
	// ECE without a count covers every packet of the ACK
	AckSample e = ack(2);
	e.ece = true;
	l.on_ack(e);
	cw -= 2 * 0.5;
	CHECK(l.cw() == Approx(cw).epsilon(1e-12));
	CHECK(l.window_bytes() == uint64_t(std::floor(cw)) * kPayload);
	CHECK(l.rate_bps() == kLine);
	// Many marks: never below the floor gamma
	for (int i = 0; i < 40; i++)
		l.on_ack(ack(1, 1));
	CHECK(l.cw() == 0.125);
	// cw_max caps the growth
	for (int i = 0; i < 200000 && l.cw() < 64; i++)
		l.on_ack(ack(1));
	CHECK(l.cw() == 64);
}

TEST_CASE("ldcp__below_one_packet_and_back", "[ldcp]")
{
	Ldcp l = make();
	start_flow(l, 1000);
	send(l, 0, 8, 1000);
	l.on_ack(ack(8));
	// walk cw down to 1.2: marks of -0.5
	while (l.cw() > 1.7)
		l.on_ack(ack(1, 1));
	const double start = l.cw(); // 8 - 13 x 0.5 = 1.5
	REQUIRE(start == Approx(1.5));
	l.on_ack(ack(1, 1));         // cw >= 1 regime: -beta
	CHECK(l.cw() == Approx(1.0));
	l.on_ack(ack(1, 1));         // still the >= 1 regime (cw = 1): -beta
	CHECK(l.cw() == Approx(0.5));
	l.on_ack(ack(1, 1));         // below one: max(gamma, eta cw)
	CHECK(l.cw() == Approx(0.25));
	l.on_ack(ack(1, 1));
	CHECK(l.cw() == Approx(0.125));
	l.on_ack(ack(1, 1));         // eta x 0.125 < gamma: gamma
	CHECK(l.cw() == Approx(0.125));
	CHECK(l.window_bytes() == kPayload);
	// an RTT sample: the rate below one packet is cw frames per sampled RTT
	AckSample s = ack(1);
	s.rtt_ns = 20'000;
	l.on_ack(s);                 // unmarked below one: +gamma
	CHECK(l.cw() == Approx(0.25));
	CHECK(l.rtt_ns() == 20'000);
	CHECK(l.rate_bps() == Approx(0.25 * kWire * 8e9 / 20'000).epsilon(1e-6));
	for (double want : {0.375, 0.5, 0.625, 0.75, 0.875, 1.0}) {
		l.on_ack(ack(1));
		CHECK(l.cw() == Approx(want));
	}
	CHECK(l.rate_bps() == kLine);
	l.on_ack(ack(1));            // back in the >= 1 regime: +alpha/cw
	CHECK(l.cw() == Approx(2.0));
	CHECK(l.stats().below_one == 10);
}

TEST_CASE("ldcp__floor_of_one_packet_forbids_sub_packet_windows", "[ldcp]")
{
	LdcpParams p;
	p.cw_min = 1;
	Ldcp l = make(p);
	start_flow(l, 1000);
	send(l, 0, 8, 1000);
	l.on_ack(ack(8));
	for (int i = 0; i < 40; i++)
		l.on_ack(ack(1, 1));
	CHECK(l.cw() == 1);
	CHECK(l.rate_bps() == kLine);
	CHECK(l.stats().below_one == 0);
}

TEST_CASE("ldcp__losses_timeouts_and_idle_reentry", "[ldcp]")
{
	Ldcp l = make();
	start_flow(l, 30);
	send(l, 0, 8, 30);
	l.on_ack(ack(8, 0, false, 1000));
	REQUIRE(l.cw() == 8);
	send(l, 8, 8, 30);
	// a stable-stage loss: -beta once per RTT (the NAKs of one hole)
	l.on_ack(ack(2, 0, true, 50'000));
	const double after = 8 + 0 - 0.5 + 2.0 / 7.5;
	CHECK(l.cw() == Approx(after));
	l.on_ack(ack(0, 0, true, 55'000)); // within the RTT: the same event
	CHECK(l.cw() == Approx(after));
	CHECK(l.stats().loss_events == 1);
	l.on_ack(ack(0, 0, true, 61'000)); // a new event
	CHECK(l.cw() == Approx(after - 0.5));
	// a timeout halves cw
	const double before = l.cw();
	l.on_timeout(70'000);
	CHECK(l.cw() == Approx(before / 2));
	// a message while packets are outstanding continues the window
	start_flow(l, 5);
	CHECK_FALSE(l.in_fast_start());
	CHECK(l.stats().fs_entered == 1);
	// once every packet is acknowledged the QP is idle: the next message is a new flow
	l.on_ack(ack(6));
	start_flow(l, 5);
	CHECK(l.in_fast_start());
	CHECK(l.cw() == 8);
	CHECK(l.stats().fs_entered == 2);
	CHECK(send(l, 0, 5, 5) == std::vector<int>{0, 0, 0, 0, 2});
}

TEST_CASE("ldcp__scheme_derive_and_fixed_point", "[ldcp]")
{
	auto s = scheme("ldcp");
	REQUIRE(s.ok());
	CHECK(s->canonical() == "ldcp/line-rate/no-pause:lossy");
	CHECK(s->ecn);
	CHECK(s->ack_on_ce);
	CHECK(s->rto_low_ns == 100'000);
	Fabric f{10'000'000'000, 44'000, 2048, 0, 0}; // BDP 55 KB
	auto d = derive("ldcp", f, true);
	REQUIRE(d.ok());
	std::map<std::string, std::string> sw(d->switch_settings.begin(), d->switch_settings.end());
	CHECK(sw["pfc"] == "off");
	CHECK(sw["ldcp"] == "on");
	CHECK(sw["kmin"] == "11000");
	CHECK(sw["kmax"] == "55000");
	CHECK(sw["ldcp_k"] == "11000");
	CHECK(sw["pmax"] == "1");
	CHECK(d->overrides["iw"] == "55000");
	CHECK(d->overrides["cwnd_max"] == "110000");
	// Other schemes switch the stage off; derive_stages turns it on for a hand-set profile.
	auto dd = derive("dcqcn", f, true);
	REQUIRE(dd.ok());
	std::map<std::string, std::string> dsw(dd->switch_settings.begin(), dd->switch_settings.end());
	CHECK(dsw["ldcp"] == "off");
	auto st = derive_stages("ldcp", f);
	REQUIRE(st.ok());
	CHECK(std::count(st->switch_settings.begin(), st->switch_settings.end(),
			 std::pair<std::string, std::string>{"ldcp", "on"}) == 1);
	// q*: the fixed point of p(q) = alpha / (alpha + beta W*), rising with N
	double prev = 0;
	for (int n : {1, 2, 4, 8, 16, 32}) {
		const double q = ldcp_qstar(1, 0.5, f.line_rate_bps, f.base_rtt_ns, 2086, n, 11000, 55000, 1);
		const double w = 10e9 / 8e9 * (44'000 + q / (10e9 / 8e9)) / (n * 2086.0);
		const double p = (q - 11000) / (55000 - 11000);
		CHECK(p == Approx(1 / (1 + 0.5 * w)).epsilon(1e-6));
		CHECK(q > prev);
		prev = q;
	}
	// A scheme built for a fabric: IW = the BDP in packets.
	Setup su;
	su.scheme = "ldcp";
	su.line_rate_bps = f.line_rate_bps;
	su.bdp_bytes = 55'000;
	su.fabric = f;
	auto parts = qn::tp::cc::make(su);
	REQUIRE(parts.ok());
	CHECK(parts->np == nullptr);
	CHECK(parts->describe.find("IW 28 packets") != std::string::npos);
	su.overrides["gamma"] = "2";
	CHECK_FALSE(qn::tp::cc::make(su).ok());
}

TEST_CASE("ldcp__receiver_acks_a_ce_packet_at_once", "[ldcp][qp]")
{
	using namespace qn::tp;
	for (bool on : {false, true}) {
		QpConfig c;
		c.qpn = 2;
		c.peer_qpn = 1;
		c.ack_every = 16;
		c.ack_on_ce = on;
		QpReceiver r(c, false, false, false);
		uint8_t payload[8] = {};
		Packet p;
		p.kind = Kind::Data;
		p.payload = {payload, 8};
		p.opcode = QN_OP_RC_SEND_FIRST;
		p.psn = 0;
		CHECK_FALSE(r.on_data(p, 0).has_value()); // coalesced
		p.opcode = QN_OP_RC_SEND_MIDDLE;
		p.psn = 1;
		p.ecn = 3;
		auto a = r.on_data(p, 1);
		CAPTURE(on);
		REQUIRE(a.has_value() == on);
		if (on) {
			CHECK(a->psn == 1);       // both packets acknowledged
			CHECK(a->ce_pkts == 1);   // one of them marked: n = 2, m = 1
			CHECK(a->ece);
		}
	}
}
