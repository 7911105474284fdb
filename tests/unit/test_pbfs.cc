// PB-FS (transport/cc/pbfs.h, bpf/include/pbfs.h's shared history code in qn_abi.h) against
// ../shared/specs/pbfs.md: Definition 1 on a scripted slot history (two CPUs summed, stale cells
// from an idle gap longer than N slots ignored, the congestion boundary), Algorithm 1 on
// hand-computed postcards (several switches, the minimum, the ignore rule, c <= 1), the marking
// rule (Δ-th packets, stops at the first ACK, never on retransmissions or small messages), the
// PBT interval's end (a CNP that changed the rate, the 2 DC_RTT safety) and the §4 parameters
// (the paper's fabric; N < 2 refused with the reason).
#include <catch2/catch.hpp>

#include <cstring>

#include "common/abi.h"
#include "transport/cc/cc.h"
#include "transport/cc/pbfs.h"

using namespace qn::tp::cc;
using Catch::Detail::Approx;

namespace {

// One CPU's history with the slots {epoch: bytes, first_ns, q_first} and sub-slots
// {epoch: bytes, marked}.
struct Cell {
	uint64_t epoch, bytes, first_ns, q;
};
struct Fine {
	uint64_t epoch, bytes, marked;
};
qn_pbfs_hist hist(std::initializer_list<Cell> cells, std::initializer_list<Fine> fines = {})
{
	qn_pbfs_hist h;
	std::memset(&h, 0, sizeof(h));
	for (const auto &c : cells) {
		auto &x = h.slot[c.epoch & (QN_PBFS_RING - 1)];
		x.epoch1 = c.epoch + 1;
		x.bytes = uint32_t(c.bytes);
		x.first_ns = c.first_ns;
		x.q_first = uint32_t(c.q);
	}
	for (const auto &f : fines) {
		auto &x = h.fine[f.epoch & (QN_PBFS_FINE - 1)];
		x.epoch1 = f.epoch + 1;
		x.bytes = uint32_t(f.bytes);
		x.marked = uint32_t(f.marked);
	}
	return h;
}

qn_pbfs_sum sum(std::initializer_list<const qn_pbfs_hist *> cpus, uint64_t e, uint32_t n, uint64_t fe, uint32_t nfine)
{
	qn_pbfs_sum s{};
	s.q1_ns = ~0ull;
	for (const auto *h : cpus)
		qn_pbfs_add(h, e, n, fe, nfine, &s);
	return s;
}

constexpr uint64_t k25G = 25'000'000'000, kDcRtt = 25'000;

PostcardEvent card(uint64_t sid, uint32_t ip, uint32_t q1, uint32_t recent, uint32_t marked, uint64_t now = 1000)
{
	return PostcardEvent{now, sid, 0, ip, q1, 100'000, recent, marked, 0};
}

// A PB-FS policy with the paper's parameters (Δ 6, τ = DC_RTT / 2, I_min 0.2 BDP at 25G) on a
// DCQCN-like algorithm that records set_rate.
struct Rec final : Algorithm {
	std::string name() const override { return "rec"; }
	void start(uint64_t, uint64_t r) override { rate = r; }
	void set_rate(uint64_t, uint64_t r) override
	{
		rate = r;
		sets++;
	}
	uint64_t rate_bps() const override { return rate; }
	uint64_t rate = 0;
	int sets = 0;
};
PbfsParams paper()
{
	PbfsParams p;
	p.dc_rtt_ns = kDcRtt;
	p.delta = 6;
	p.tau_ns = kDcRtt / 2;
	p.i_min_bytes = 15'625; // 0.2 x 25 Gbit/s x 25 us / 8
	p.safety_ns = 2 * kDcRtt;
	return p;
}

} // namespace

TEST_CASE("pbfs history: N completed slots of two CPUs, the newest, Q1 from the earliest packet", "[pbfs]")
{
	// current slot e = 20, N = 4: slots 16..19 count, 15 and 20 do not
	const auto a = hist({{15, 9999, 50, 1}, {16, 1000, 160, 300}, {18, 2000, 181, 7}, {19, 500, 190, 8}, {20, 777, 200, 9}});
	const auto b = hist({{16, 100, 165, 400}, {17, 3000, 170, 5}, {19, 250, 191, 6}});
	const auto s = sum({&a, &b}, 20, 4, 0, 1);
	CHECK(s.i_before == 1000 + 2000 + 500 + 100 + 3000 + 250);
	CHECK(s.i_last == 500 + 250);
	CHECK(s.q1_ns == 160);
	CHECK(s.q1 == 300); // CPU a's first packet of slot 16 came before CPU b's
	CHECK(qn_pbfs_ip(&s, 4) == s.i_before + 4 * 750);
	// one CPU alone sees less: the sum is what makes it correct on two CPUs
	CHECK(sum({&a}, 20, 4, 0, 1).i_before == 3500);
}

TEST_CASE("pbfs history: an idle gap longer than N slots leaves nothing", "[pbfs]")
{
	// the cells were written in slots 16..19; the port then idled: at slot 30 with N = 4 the
	// window is 26..29 and every cell is stale (same ring positions, older epochs)
	const auto a = hist({{16, 1000, 160, 300}, {17, 1000, 170, 1}, {18, 2000, 181, 7}, {19, 500, 190, 8}},
			    {{64, 100, 100}});
	const auto s = sum({&a}, 30, 4, 120, 8);
	CHECK(s.i_before == 0);
	CHECK(s.i_last == 0);
	CHECK(s.q1_ns == ~0ull);
	CHECK(s.recent == 0);
	// ring aliasing: slot 16 + QN_PBFS_RING sits in 16's cell but is another epoch
	const auto b = hist({{16 + QN_PBFS_RING, 10, 1, 1}});
	CHECK(sum({&b}, 20, 4, 0, 1).i_before == 0);
}

TEST_CASE("pbfs history: the T_Δ window of sub-slots, the current one included", "[pbfs]")
{
	const auto a = hist({}, {{97, 4000, 0}, {98, 1000, 1000}, {99, 2000, 0}, {100, 1000, 1000}});
	const auto b = hist({}, {{100, 500, 0}, {96, 9999, 9999}});
	// fe = 100, 3 sub-slots: 98, 99, 100
	const auto s = sum({&a, &b}, 25, 4, 100, 3);
	CHECK(s.recent == 1000 + 2000 + 1000 + 500);
	CHECK(s.recent_marked == 2000);
}

TEST_CASE("pbfs Definition 1: congested exactly when I_p + Q1 exceeds rate x DC_RTT / 8", "[pbfs]")
{
	// 100 Gbit/s x 25 us / 8 = 312,500 B
	qn_pbfs_sum s{};
	s.i_before = 200'000;
	s.i_last = 20'000; // N = 4: I_p = 200,000 + 80,000 = 280,000
	s.q1 = 32'500;
	CHECK_FALSE(qn_pbfs_congested(&s, 4, 100'000'000'000ull, 25'000)); // 312,500: not above
	s.q1 = 32'501;
	CHECK(qn_pbfs_congested(&s, 4, 100'000'000'000ull, 25'000));
}

TEST_CASE("pbfs Algorithm 1 H1: c from a postcard, by hand", "[pbfs]")
{
	// T = 100 Gbit/s, DC_RTT 25 us: BDP 312,500 B. I_p 600,000, Q1 12,500, recent 12,000 of
	// which 2,000 marked: I_PBT = min(600,000, 6 x 2,000 / 12,000 x 600,000) = 600,000,
	// I_nonPBT = 0, I = 312,500 - 12,500 = 300,000, c = 600,000 / (0.95 x 300,000) = 2.1053
	CHECK(pbfs_c(card(1, 600'000, 12'500, 12'000, 2'000), 6, kDcRtt, 15'625, 0.95) == Approx(600'000.0 / 285'000.0));
	// half of the window marked-equivalent: I_PBT = 6 x 1,000 / 12,000 x 600,000 = 300,000,
	// I_nonPBT = 300,000, I = max(312,500 - 12,500 - 300,000, I_min) = I_min 15,625
	CHECK(pbfs_c(card(1, 600'000, 12'500, 12'000, 1'000), 6, kDcRtt, 15'625, 0.95) ==
	      Approx(300'000.0 / (0.95 * 15'625.0)));
	// no recentBytes: all of I_p counted as PB-FS traffic
	CHECK(pbfs_c(card(1, 400'000, 0, 0, 0), 6, kDcRtt, 15'625, 0.95) == Approx(400'000.0 / (0.95 * 312'500.0)));
}

TEST_CASE("pbfs Algorithm 1 H2: several switches, the most restrictive wins, the same switch may revise", "[pbfs]")
{
	Rec r;
	Pbfs p(paper(), k25G);
	r.start(0, k25G);
	p.on_message(MessageStart{0, 0, 1'000'000}, r);
	const double c1 = pbfs_c(card(1, 600'000, 12'500, 12'000, 2'000), 6, kDcRtt, 15'625, 0.95); // 2.105
	p.on_postcard(card(1, 600'000, 12'500, 12'000, 2'000), r);
	CHECK(r.rate == uint64_t(double(k25G) / c1));
	CHECK(r.sets == 1);
	// switch 2 less congested (c 1.40): ignored for the rate, recorded
	p.on_postcard(card(2, 400'000, 12'500, 12'000, 2'000), r);
	CHECK(r.sets == 1);
	// switch 2 more congested than switch 1 (c 4.2): it takes over
	const double c2 = pbfs_c(card(2, 1'200'000, 12'500, 12'000, 2'000), 6, kDcRtt, 15'625, 0.95);
	p.on_postcard(card(2, 1'200'000, 12'500, 12'000, 2'000), r);
	CHECK(r.rate == uint64_t(double(k25G) / c2));
	// switch 1 again with its old figure: below switch 2's, no change
	p.on_postcard(card(1, 600'000, 12'500, 12'000, 2'000), r);
	CHECK(r.rate == uint64_t(double(k25G) / c2));
	// switch 2 revises its own figure down to c 1.40: the rate rises to MaxRate / 1.40
	const double c3 = pbfs_c(card(2, 400'000, 12'500, 12'000, 2'000), 6, kDcRtt, 15'625, 0.95);
	p.on_postcard(card(2, 400'000, 12'500, 12'000, 2'000), r);
	CHECK(r.rate == uint64_t(double(k25G) / c3));
	// c <= 1 from the rate's switch never restores the rate (corner case 4)
	p.on_postcard(card(2, 100'000, 0, 12'000, 2'000), r);
	CHECK(r.rate == uint64_t(double(k25G) / c3));
	CHECK(p.stats().postcards == 6);
	CHECK(p.stats().rate_updates == 3);
	CHECK(p.stats().ignored == 0);
}

TEST_CASE("pbfs H3: the interval ends at the CNP that changed the rate; later postcards are ignored", "[pbfs]")
{
	Rec r;
	Pbfs p(paper(), k25G);
	r.start(0, k25G);
	p.on_message(MessageStart{0, 0, 1'000'000}, r);
	// an ACK that changed nothing stops marking but keeps the interval open
	p.on_ack(AckSample{100}, false, r);
	CHECK_FALSE(p.marking());
	CHECK_FALSE(p.ignoring());
	p.on_postcard(card(1, 600'000, 12'500, 12'000, 2'000), r); // in flight: honoured
	CHECK(r.sets == 1);
	const uint64_t after = r.rate;
	p.on_cnp(CnpEvent{200}, true, r);
	CHECK(p.ignoring());
	p.on_postcard(card(1, 1'200'000, 12'500, 12'000, 2'000), r);
	CHECK(r.rate == after);
	CHECK(p.stats().ignored == 1);
	CHECK(p.stats().rate_updates == 1);
}

TEST_CASE("pbfs safety: the interval ends 2 DC_RTT after the message started", "[pbfs]")
{
	Rec r;
	Pbfs p(paper(), k25G);
	p.on_message(MessageStart{1000, 0, 1'000'000}, r);
	CHECK(p.next_timer() == 1000 + 2 * kDcRtt);
	p.on_timer(1000 + 2 * kDcRtt, r);
	CHECK(p.ignoring());
	CHECK_FALSE(p.marking());
	CHECK(p.next_timer() == UINT64_MAX);
	p.on_postcard(card(1, 600'000, 12'500, 12'000, 2'000), r);
	CHECK(r.sets == 0);
	CHECK(p.stats().safety_ends == 1);
}

TEST_CASE("pbfs marking: every Δ-th fresh packet of a large message until the first ACK", "[pbfs]")
{
	Rec r;
	Pbfs p(paper(), k25G);
	// τ = 12.5 us at 25 Gbit/s: 39,062 B is the smallest PB-FS message
	p.on_message(MessageStart{0, 0, 39'062}, r);
	std::vector<int> marked;
	for (uint32_t i = 1; i <= 20; i++) {
		TxMarks m;
		p.on_tx(TxPacket{0, i, 1100, 1024, false, 0, 0, 39'062}, m, r);
		if (m.tos_bits & QN_TOS_PBT)
			marked.push_back(int(i));
		if (i == 9) { // a retransmission in between: never marked, not counted
			TxMarks rm;
			p.on_tx(TxPacket{0, 3, 1100, 1024, true, 0, 0, 39'062}, rm, r);
			CHECK((rm.tos_bits & QN_TOS_PBT) == 0);
		}
		if (i == 14)
			p.on_ack(AckSample{0}, false, r);
	}
	CHECK(marked == std::vector<int>{6, 12});
	CHECK(p.stats().marked == 2);
	// one byte less: not a PB-FS flow, nothing marked, its postcards ignored
	p.on_message(MessageStart{0, 1, 39'061}, r);
	for (uint32_t i = 1; i <= 12; i++) {
		TxMarks m;
		p.on_tx(TxPacket{0, i, 1100, 1024, false, 1, 0, 39'061}, m, r);
		CHECK((m.tos_bits & QN_TOS_PBT) == 0);
	}
	p.on_postcard(card(1, 600'000, 12'500, 12'000, 2'000), r);
	CHECK(r.sets == 0);
	CHECK(p.stats().eligible == 1);
	CHECK(p.stats().flows == 2);
}

TEST_CASE("pbfs parameters (§4): the paper's fabric, and N < 2 refused with the reason", "[pbfs]")
{
	// 25 Gbit/s hosts, 1 KB frames (MTU 1024), DC_RTT 25 us: a packet time is (1024 + 14 + 24) x
	// 8 / 25 = 339.8 ns, N = floor(25,000 / 3,058) = 8, slot 1,562 ns, Δ = ceil(4.6) = 5
	Fabric f{k25G, kDcRtt, 1024, kDcRtt, kDcRtt};
	auto r = pbfs_rules(f);
	REQUIRE(r);
	CHECK(r->n == 8);
	CHECK(r->slot_ns == 1562);
	CHECK(r->delta == 5);
	CHECK(r->pkt_ns == Approx(339.84));
	CHECK(r->t_delta_ns == 1699); // docs/pbfs.md's table
	CHECK(r->tau_ns == 12'500);
	CHECK(r->min_bytes == 39'062);
	CHECK(r->i_min_bytes == 15'625);
	auto d = pbfs_derive(f);
	REQUIRE(d);
	CHECK(std::find(d->switch_settings.begin(), d->switch_settings.end(),
			std::pair<std::string, std::string>{"pbfs_n", "8"}) != d->switch_settings.end());
	// the 10G star with 1 us links: DC_RTT 7.3 us, a packet 1.66 us: N = 0
	Fabric star{10'000'000'000, 7'338, 2048, 7'338, 7'338};
	auto bad = pbfs_rules(star);
	REQUIRE_FALSE(bad);
	CHECK(bad.error().to_string().find("< 2") != std::string::npos);
	// derive() refuses the fabric with the reason (not an error: `quench run` skips the scheme)
	auto der = derive("dcqcn/pbfs", star, false);
	REQUIRE(der);
	CHECK(der->refused.find("slot") != std::string::npos);
	CHECK(der->refused.find("scheme dcqcn/pbfs") == 0);
	CHECK(derive_stages("dcqcn/pbfs", star)->refused == der->refused);
	// and a scheme without pbfs switches the stage off
	auto off = derive("dcqcn", star, false);
	REQUIRE(off);
	CHECK(std::find(off->switch_settings.begin(), off->switch_settings.end(),
			std::pair<std::string, std::string>{"pbfs", "off"}) != off->switch_settings.end());
}

TEST_CASE("pbfs composes with dcqcn and takes its own parameters", "[pbfs]")
{
	Setup s;
	s.scheme = "dcqcn/pbfs";
	s.line_rate_bps = k25G;
	s.fabric = Fabric{k25G, kDcRtt, 1024, kDcRtt, kDcRtt};
	s.overrides["delta"] = "7";
	s.overrides["rai"] = "10Mbps"; // the base algorithm's
	auto p = make(s);
	REQUIRE(p);
	CHECK(p->controller->name() == "dcqcn/pbfs/no-pause");
	// the parameters in force, rules resolved (Δ overridden), in the run's description
	CHECK(p->describe.find("pbfs: dc_rtt=25us delta=7 tau=12.5us") != std::string::npos);
	CHECK(check_param("dcqcn/pbfs", "mu", "0.9").ok());
	CHECK_FALSE(check_param("dcqcn/pbfs", "mu", "2").ok());
	CHECK_FALSE(check_param("dcqcn", "mu", "0.9").ok()); // not a DCQCN parameter
	// a 1 MB message marks its 7th packet
	p->controller->start(0);
	p->controller->on_message(MessageStart{0, 0, 1'000'000});
	int first = 0;
	for (uint32_t i = 1; i <= 7 && !first; i++)
		if (p->controller->on_tx(TxPacket{0, i, 1100, 1024, false, 0, 0, 1'000'000}).tos_bits & QN_TOS_PBT)
			first = int(i);
	CHECK(first == 7);
	auto c = p->controller->counters();
	CHECK(std::find(c.begin(), c.end(), std::pair<std::string, uint64_t>{"pbfs.marked", 1}) != c.end());
}

TEST_CASE("pbfs hand-off: DCQCN recovers from the postcard's rate without a CNP", "[pbfs]")
{
	// A postcard cuts a lone flow; no packet is ever marked. The recovery (fast recovery for
	// F periods, then additive increase) must start from the new rate, in both reaction
	// points; without it the flow would keep MaxRate / c for good.
	for (const char *variant : {"paper", "mellanox"}) {
		Setup s;
		s.scheme = "dcqcn/pbfs";
		s.line_rate_bps = k25G;
		s.fabric = Fabric{k25G, kDcRtt, 1024, kDcRtt, kDcRtt};
		s.overrides["variant"] = variant;
		auto p = make(s);
		REQUIRE(p);
		Controller &c = *p->controller;
		c.start(0);
		c.on_message(MessageStart{0, 0, 10'000'000});
		c.on_postcard(card(1, 600'000, 12'500, 12'000, 2'000));
		const uint64_t cut = c.output().rate_bps;
		INFO(variant << ": cut to " << cut);
		REQUIRE(cut < k25G / 2);
		// F = 5 periods of T = 55 us in fast recovery (Rc = Rt: no change), then R_AI steps
		uint64_t t = 1000;
		for (int i = 0; i < 40; i++) {
			t += 55'000;
			c.on_timer(t);
		}
		CHECK(c.output().rate_bps > cut);
		CHECK(c.output().rate_bps <= k25G);
	}
}
