// RC queue pairs (transport/qp.h) over a fake link that drops, reorders and duplicates frames,
// on a fake clock. Every frame goes through the real codec. Delivered payload is checked by
// content (FNV-1a of every message) and by the receiver's pattern check.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>

#include "transport/clock.h"
#include "transport/qp.h"
#include "transport/wire.h"

using namespace qn::tp;

namespace {

struct Impair {
	double loss = 0, dup = 0, reorder = 0;
};

struct Result {
	bool finished = false;
	uint64_t retx = 0, timeouts = 0, delivered_msgs = 0, sent_msgs = 0;
	bool content_ok = true;
	bool order_ok = true;
	uint64_t corrupt = 0;
	uint64_t steps = 0;
};

// A point-to-point link: 10 Gbit/s, 2 us one way, impairments applied to both directions.
// Messages: `nmsg` of random size in [0, max_size], half user data, half pattern.
Result run(Reliability mode, Impair imp, uint64_t seed, int nmsg, uint64_t max_size,
	   uint32_t init_psn = 0, uint32_t ack_every = 1, uint64_t window = 64 * 2048)
{
	FakeClock clk;
	std::mt19937_64 rng(seed);
	std::uniform_real_distribution<double> u(0, 1);
	QpConfig cs;
	cs.qpn = 0x11;
	cs.peer_qpn = 0x22;
	cs.mode = mode;
	cs.init_psn = init_psn;
	cs.ack_every = ack_every;
	cs.window_bytes = window;
	cs.rto_low_ns = 30'000;
	cs.rto_high_ns = 60'000;
	QpConfig cr = cs;
	cr.qpn = 0x22;
	cr.peer_qpn = 0x11;
	QpSender snd(cs);
	QpReceiver rcv(cr, true, true);

	std::vector<std::vector<uint8_t>> sent;
	std::vector<bool> is_pattern;
	for (int i = 0; i < nmsg; i++) {
		uint64_t size = rng() % (max_size + 1);
		Message m;
		m.id = uint64_t(i);
		m.size = size;
		std::vector<uint8_t> bytes(size);
		if (i % 2 == 0) {
			for (auto &b : bytes)
				b = uint8_t(rng());
			m.data = std::make_shared<std::vector<uint8_t>>(bytes);
		} else {
			pattern_fill(cs.qpn, uint64_t(i), 0, bytes.data(), bytes.size());
		}
		sent.push_back(bytes);
		(void)snd.post(std::move(m), 0);
	}

	// In-flight frames: arrival time -> (to_receiver, bytes). multimap keeps FIFO per time.
	std::multimap<uint64_t, std::pair<bool, std::vector<uint8_t>>> wire;
	const uint64_t prop = 2000, ser = 1700; // ns
	uint64_t link_free = 0;
	auto transmit = [&](bool to_rcv, std::vector<uint8_t> f, uint64_t now) {
		if (u(rng) < imp.loss)
			return;
		uint64_t at = now + prop;
		if (u(rng) < imp.reorder)
			at += ser * (1 + rng() % 8); // overtaken by up to 8 later packets
		int copies = u(rng) < imp.dup ? 2 : 1;
		for (int c = 0; c < copies; c++)
			wire.emplace(at + uint64_t(c) * 10, std::make_pair(to_rcv, f));
	};
	TxHeader hs, hr;
	hs.dest_qp = cs.peer_qpn;
	hs.sport = qpn_to_sport(cs.qpn);
	hr.dest_qp = cr.peer_qpn;
	hr.sport = qpn_to_sport(cr.qpn);
	hr.dscp = QN_DSCP_CONTROL;

	Result r;
	std::vector<Delivery> got;
	const uint64_t limit_ns = 20'000'000'000ULL;
	while (clk.now_ns() < limit_ns && r.steps < 20'000'000) {
		r.steps++;
		uint64_t now = clk.now_ns();
		snd.on_timer(now);
		if (now >= link_free) {
			if (auto seg = snd.next(now)) {
				std::vector<uint8_t> f(4096);
				hs.opcode = seg->opcode;
				hs.psn = seg->psn;
				hs.ack_req = seg->ack_req;
				size_t len = encode_data(hs, seg->len, true, f.data(), f.size(),
							 [&](uint8_t *d) { snd.fill(*seg, d); });
				REQUIRE(len > 0);
				f.resize(len);
				transmit(true, std::move(f), now);
				link_free = now + ser;
			}
		}
		while (!wire.empty() && wire.begin()->first <= now) {
			auto [to_rcv, f] = std::move(wire.begin()->second);
			wire.erase(wire.begin());
			Packet p;
			REQUIRE(parse(f, true, p) == ParseError::None);
			if (to_rcv) {
				REQUIRE(p.kind == Kind::Data);
				if (auto a = rcv.on_data(p, now)) {
					hr.syndrome = a->nak ? QN_AETH_NAK_SEQ : QN_AETH_ACK;
					hr.psn = a->psn;
					hr.msn = a->msn;
					hr.sack = a->sack;
					hr.ce_pkts = a->ce_pkts;
					std::vector<uint8_t> af(256);
					af.resize(encode_ack(hr, true, af.data(), af.size()));
					transmit(false, std::move(af), now);
				}
				for (auto &d : rcv.take_deliveries())
					got.push_back(std::move(d));
			} else {
				REQUIRE((p.kind == Kind::Ack || p.kind == Kind::Nak));
				snd.on_ack(p, now);
			}
		}
		if (snd.idle() && wire.empty())
			break;
		// Advance to the next event.
		uint64_t nxt = snd.deadline();
		if (!wire.empty())
			nxt = std::min(nxt, wire.begin()->first);
		if (snd.can_send())
			nxt = std::min(nxt, std::max(link_free, now + 1));
		if (nxt == UINT64_MAX)
			break;
		clk.set(std::max(nxt, now + 1));
	}
	auto comps = snd.take_completions();
	r.finished = snd.idle();
	r.retx = snd.stats().retx_pkts;
	r.timeouts = snd.stats().timeouts;
	r.sent_msgs = comps.size();
	r.delivered_msgs = got.size();
	r.corrupt = rcv.stats().corrupt_msgs;
	for (size_t i = 0; i < got.size(); i++) {
		if (got[i].msn != i)
			r.order_ok = false;
		if (i < sent.size()) {
			uint64_t h = fnv1a(kFnvInit, sent[i].data(), sent[i].size());
			if (got[i].hash != h || got[i].data != sent[i] || got[i].size != sent[i].size())
				r.content_ok = false;
			// Pattern messages pass the receiver's own check; user data does not match
			// the pattern (except when empty).
			if (i % 2 == 1 && !got[i].pattern_ok)
				r.content_ok = false;
		}
	}
	for (size_t i = 0; i < comps.size(); i++)
		if (comps[i].id != i || comps[i].done_ns < comps[i].post_ns)
			r.order_ok = false;
	return r;
}

} // namespace

TEST_CASE("qp__exactly_once_in_order_under_loss_reorder_dup", "[qp]")
{
	for (Reliability mode : {Reliability::GoBackN, Reliability::SelectiveRepeat}) {
		for (double loss : {0.001, 0.01, 0.1}) {
			Impair imp{loss, 0.01, 0.02};
			INFO(to_string(mode) << " loss " << loss);
			// Expect: every message delivered once, in order, with the bytes sent.
			Result r = run(mode, imp, 42, 120, 30000);
			CHECK(r.finished);
			CHECK(r.delivered_msgs == 120);
			CHECK(r.sent_msgs == 120);
			CHECK(r.order_ok);
			CHECK(r.content_ok);
			if (loss >= 0.01)
				CHECK(r.retx > 0);
		}
	}
}

TEST_CASE("qp__heavy_reordering_and_duplication_without_loss", "[qp]")
{
	for (Reliability mode : {Reliability::GoBackN, Reliability::SelectiveRepeat}) {
		INFO(to_string(mode));
		Result r = run(mode, Impair{0, 0.2, 0.3}, 9, 60, 20000);
		CHECK(r.finished);
		CHECK(r.delivered_msgs == 60);
		CHECK(r.order_ok);
		CHECK(r.content_ok);
	}
}

TEST_CASE("qp__psn_wraps_at_2_pow_24", "[qp]")
{
	for (Reliability mode : {Reliability::GoBackN, Reliability::SelectiveRepeat}) {
		INFO(to_string(mode));
		// Expect: starting 16 PSNs before the wrap changes nothing.
		Result r = run(mode, Impair{0.01, 0.01, 0.01}, 5, 40, 20000, 0xFFFFF0);
		CHECK(r.finished);
		CHECK(r.delivered_msgs == 40);
		CHECK(r.order_ok);
		CHECK(r.content_ok);
	}
}

TEST_CASE("qp__ack_coalescing_still_completes", "[qp]")
{
	for (Reliability mode : {Reliability::GoBackN, Reliability::SelectiveRepeat}) {
		INFO(to_string(mode));
		Result r = run(mode, Impair{0.01, 0, 0}, 3, 50, 50000, 0, 8, 16 * 2048);
		CHECK(r.finished);
		CHECK(r.delivered_msgs == 50);
		CHECK(r.content_ok);
	}
}

TEST_CASE("qp__selective_repeat_retransmits_less_than_go_back_n", "[qp]")
{
	// Expect: under the same loss pattern seed, SR resends only the holes.
	for (double loss : {0.01, 0.1}) {
		uint64_t gbn = 0, sr = 0;
		for (uint64_t seed = 1; seed <= 3; seed++) {
			gbn += run(Reliability::GoBackN, Impair{loss, 0, 0}, seed, 60, 60000).retx;
			sr += run(Reliability::SelectiveRepeat, Impair{loss, 0, 0}, seed, 60, 60000).retx;
		}
		INFO("loss " << loss << " gbn retx " << gbn << " sr retx " << sr);
		CHECK(sr > 0);
		CHECK(sr < gbn);
	}
}

TEST_CASE("qp_receiver__rejects_opcode_sequence_violation", "[qp]")
{
	QpConfig c;
	c.qpn = 2;
	c.peer_qpn = 1;
	QpReceiver r(c, true, false);
	Packet p;
	p.kind = Kind::Data;
	p.psn = 0;
	uint8_t payload[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	p.payload = {payload, 8};
	// Expect: a MIDDLE with no FIRST is counted and not delivered or acknowledged.
	p.opcode = QN_OP_RC_SEND_MIDDLE;
	CHECK_FALSE(r.on_data(p, 0).has_value());
	CHECK(r.stats().proto_errors == 1);
	// Expect: the correct packet at the same PSN is then accepted.
	p.opcode = QN_OP_RC_SEND_ONLY;
	auto a = r.on_data(p, 1);
	REQUIRE(a.has_value());
	CHECK_FALSE(a->nak);
	CHECK(a->psn == 0);
	auto d = r.take_deliveries();
	REQUIRE(d.size() == 1);
	CHECK(d[0].data == std::vector<uint8_t>(payload, payload + 8));
}

TEST_CASE("qp_sender__ignores_acks_outside_the_window", "[qp]")
{
	QpConfig c;
	c.qpn = 1;
	c.peer_qpn = 2;
	QpSender s(c);
	(void)s.post(Message{1, 100, nullptr}, 0);
	auto seg = s.next(0);
	REQUIRE(seg.has_value());
	Packet a;
	a.kind = Kind::Ack;
	a.psn = 5; // acknowledges a PSN never sent
	CHECK(s.on_ack(a, 10).stale);
	CHECK_FALSE(s.idle());
	a.psn = 0;
	auto ev = s.on_ack(a, 20);
	CHECK_FALSE(ev.stale);
	CHECK(ev.acked_bytes == 100);
	REQUIRE(ev.rtt_ns.has_value());
	CHECK(*ev.rtt_ns == 20);
	CHECK(s.idle());
	auto comp = s.take_completions();
	REQUIRE(comp.size() == 1);
	CHECK(comp[0].done_ns == 20);
}

TEST_CASE("qp_sender__window_caps_bytes_in_flight", "[qp]")
{
	QpConfig c;
	c.qpn = 1;
	c.peer_qpn = 2;
	c.payload_mtu = 1000;
	c.window_bytes = 4000;
	QpSender s(c);
	(void)s.post(Message{1, 100000, nullptr}, 0);
	int n = 0;
	while (s.next(0))
		n++;
	// Expect: exactly 4 packets in flight.
	CHECK(n == 4);
	CHECK(s.inflight_bytes() == 4000);
}

TEST_CASE("qp_sender__data_defines_the_message_size", "[qp]")
{
	QpConfig c;
	c.qpn = 1;
	c.peer_qpn = 2;
	QpSender s(c);
	auto data = std::make_shared<std::vector<uint8_t>>(10, uint8_t(7));
	// Expect: a size that disagrees with the bytes given is not trusted (no read past them).
	(void)s.post(Message{1, 100000, data}, 0);
	auto seg = s.next(0);
	REQUIRE(seg.has_value());
	CHECK(seg->len == 10);
	CHECK(seg->opcode == QN_OP_RC_SEND_ONLY);
	CHECK_FALSE(s.next(0).has_value());
}
