// DCQCN (transport/cc/dcqcn.h) on a fake clock against the equations of
// ../shared/specs/dcqcn.md: the first CNP's cut, alpha decay without CNPs, the F fast-recovery
// steps, additive and hyper increase, byte counter vs timer, the NP's CNP spacing, the
// Mellanox variant, DCQCN+W, and the scheme registry.
#include <catch2/catch.hpp>

#include <cmath>

#include "transport/cc/cc.h"
#include "transport/cc/dcqcn.h"

using namespace qn::tp::cc;
using Catch::Detail::Approx;

namespace {
const double kLine = 10e9;

DcqcnParams paper()
{
	auto p = dcqcn_params("paper");
	REQUIRE(p.ok());
	return *p;
}

CnpEvent cnp(uint64_t t) { return CnpEvent{t, 0, {}}; }
// One data packet of `bytes` on the wire at t (the byte counter's event).
void send(Algorithm &a, uint64_t t, uint64_t bytes)
{
	TxMarks m;
	a.on_tx(TxPacket{t, 0, uint32_t(bytes), uint32_t(bytes), false, 0, 0, 0}, m);
}
// A data packet at the notification point. Return: true when it answers with a CNP.
bool arrive(NotificationPoint &np, uint64_t t, bool ce, uint32_t psn = 0)
{
	return np.on_data(NpPacket{t, psn, 2062, ce}).has_value();
}
} // namespace

TEST_CASE("dcqcn__first_cnp_cuts_by_half_and_keeps_the_target", "[dcqcn]")
{
	DcqcnPaper rp(paper(), uint64_t(kLine));
	rp.start(0, uint64_t(kLine));
	// Expect: line rate before any CNP, inactive (RP0).
	CHECK(rp.rc() == kLine);
	CHECK_FALSE(rp.active());
	rp.on_cnp(cnp(1000));
	// Expect (RP1, Eq.1 order): Rt = Rc_old, Rc = Rc(1 - alpha/2) with alpha = 1, then
	// alpha = (1-g) alpha + g = 1.
	CHECK(rp.rt() == kLine);
	CHECK(rp.rc() == Approx(kLine / 2));
	CHECK(rp.alpha() == Approx(1.0));
	CHECK(rp.active());
	// A second CNP at once cuts again from the new rate (clamp: Rt = Rc).
	rp.on_cnp(cnp(1000));
	CHECK(rp.rt() == Approx(kLine / 2));
	CHECK(rp.rc() == Approx(kLine / 4));
}

TEST_CASE("dcqcn__alpha_decays_every_tau_without_cnps", "[dcqcn]")
{
	auto p = paper();
	DcqcnPaper rp(p, uint64_t(kLine));
	rp.start(0, uint64_t(kLine));
	rp.on_cnp(cnp(0));
	const double a0 = rp.alpha();
	// Expect (RP2, Eq.2): after k periods of tau' with no CNP, alpha = (1-g)^k alpha.
	for (int k = 1; k <= 50; k++) {
		rp.on_timer(uint64_t(k) * p.tau_alpha_ns);
		REQUIRE(rp.alpha() == Approx(a0 * std::pow(1 - p.g, k)));
	}
	// A CNP restarts the decay and adds g: alpha = (1-g) alpha + g.
	double before = rp.alpha();
	rp.on_cnp(cnp(50 * p.tau_alpha_ns + 10));
	CHECK(rp.alpha() == Approx((1 - p.g) * before + p.g));
	rp.on_timer(50 * p.tau_alpha_ns + 10 + p.tau_alpha_ns - 1);
	CHECK(rp.alpha() == Approx((1 - p.g) * before + p.g)); // not yet
}

TEST_CASE("dcqcn__f_fast_recovery_steps_then_additive_increase", "[dcqcn]")
{
	auto p = paper();
	DcqcnPaper rp(p, uint64_t(kLine));
	rp.start(0, uint64_t(kLine));
	rp.on_cnp(cnp(0));
	rp.on_cnp(cnp(0)); // Rt = 5G, Rc = 2.5G (alpha stays 1)
	const double rt = rp.rt(), rc0 = rp.rc();
	REQUIRE(rt == Approx(kLine / 2));
	// Expect (Eq.3): F = 5 timer events each halve the distance to Rt, Rt unchanged.
	uint64_t t = 0;
	for (uint32_t k = 1; k <= p.f; k++) {
		t += p.t_ns;
		rp.on_timer(t);
		REQUIRE(rp.t_stage() == k);
		REQUIRE(rp.rt() == Approx(rt));
		REQUIRE(rp.rc() == Approx(rt - (rt - rc0) / std::pow(2.0, k)));
	}
	// Expect (Eq.4): the next events add R_AI to Rt, then average.
	double rc = rp.rc(), target = rt;
	for (int k = 0; k < 3; k++) {
		t += p.t_ns;
		rp.on_timer(t);
		target += double(p.rai_bps);
		rc = (target + rc) / 2;
		REQUIRE(rp.rt() == Approx(target));
		REQUIRE(rp.rc() == Approx(rc));
	}
	// The byte counter never fired (B = 10 MB, nothing sent).
	CHECK(rp.bc_stage() == 0);
}

TEST_CASE("dcqcn__hyper_increase_when_both_counters_pass_f", "[dcqcn]")
{
	auto p = paper();
	p.b_bytes = 10'000;
	DcqcnPaper rp(p, uint64_t(kLine));
	rp.start(0, uint64_t(kLine));
	rp.on_cnp(cnp(0));
	rp.on_cnp(cnp(0));
	// Six byte-counter events: five fast recovery, the sixth additive (t_stage = 0).
	for (int k = 0; k < 6; k++)
		send(rp, 1, p.b_bytes);
	REQUIRE(rp.bc_stage() == 6);
	REQUIRE(rp.rt() == Approx(kLine / 2 + double(p.rai_bps)));
	// Timer events 1..5: additive (max > F, min <= F); event 6: hyper, Rt += (min - F) R_HAI.
	double target = rp.rt(), rc = rp.rc();
	for (uint32_t k = 1; k <= 6; k++) {
		rp.on_timer(uint64_t(k) * p.t_ns);
		if (k <= p.f)
			target += double(p.rai_bps);
		else
			target += double(std::min<uint32_t>(6, k) - p.f) * double(p.rhai_bps);
		rc = (target + rc) / 2;
		REQUIRE(rp.rt() == Approx(target));
		REQUIRE(rp.rc() == Approx(rc));
	}
	// In hyper phase the byte counter reloads with B/2: the B loaded before hyper makes one
	// more event, after which B/2 bytes make each next one.
	uint32_t bc = rp.bc_stage();
	send(rp, 7 * p.t_ns, p.b_bytes);
	CHECK(rp.bc_stage() == bc + 1);
	send(rp, 7 * p.t_ns, p.b_bytes / 2);
	CHECK(rp.bc_stage() == bc + 2);
}

TEST_CASE("dcqcn__timer_not_byte_counter_drives_increase_with_fig14_parameters", "[dcqcn]")
{
	// Expect (§3.3 note, §5.2): with B = 10 MB and T = 55 us, sending at the current rate for
	// 20 periods gives 20 timer events and no byte-counter event; with B = 10 KB the byte
	// counter runs ahead of the timer.
	for (uint64_t b : {uint64_t(10'000'000), uint64_t(10'000)}) {
		auto p = paper();
		p.b_bytes = b;
		DcqcnPaper rp(p, uint64_t(kLine));
		rp.start(0, uint64_t(kLine));
		rp.on_cnp(cnp(0));
		for (uint64_t t = 1000; t <= 20 * p.t_ns; t += 1000) {
			send(rp, t, uint64_t(rp.rc() * 1e-6 / 8)); // 1 us worth of bytes at Rc
			rp.on_timer(t);
		}
		INFO("B = " << b);
		if (b == 10'000'000) {
			CHECK(rp.t_stage() == 20);
			CHECK(rp.bc_stage() == 0);
		} else {
			// (in hyper phase the timer period halves, so t_stage exceeds 20 too)
			CHECK(rp.bc_stage() > rp.t_stage());
		}
	}
}

TEST_CASE("dcqcn__missed_timer_periods_fire_one_by_one", "[dcqcn]")
{
	auto p = paper();
	DcqcnPaper rp(p, uint64_t(kLine));
	rp.start(0, uint64_t(kLine));
	rp.on_cnp(cnp(0));
	// A loop stalled for 10 periods catches up event by event (§6-10).
	rp.on_timer(10 * p.t_ns);
	CHECK(rp.t_stage() == 10);
	CHECK(rp.alpha() == Approx(std::pow(1 - p.g, 10)));
	CHECK(rp.next_timer() > 10 * p.t_ns);
}

TEST_CASE("dcqcn__rates_stay_between_rmin_and_line_rate", "[dcqcn]")
{
	auto p = paper();
	DcqcnPaper rp(p, uint64_t(kLine));
	rp.start(0, uint64_t(kLine));
	for (int k = 0; k < 100; k++)
		rp.on_cnp(cnp(uint64_t(k)));
	CHECK(rp.rc() == Approx(double(p.rmin_bps)));
	for (uint64_t t = 1; t < 2000; t++)
		rp.on_timer(100 + t * p.t_ns);
	CHECK(rp.rc() <= kLine);
	CHECK(rp.rt() <= kLine);
	CHECK(rp.rc() > kLine * 0.99);
}

TEST_CASE("dcqcn_np__at_most_one_cnp_per_interval", "[dcqcn]")
{
	DcqcnNp np(50'000);
	std::vector<uint64_t> sent;
	// CE-marked packets every 1 us for 1 ms: a CNP at once, then one per 50 us.
	for (uint64_t t = 0; t < 1'000'000; t += 1000) {
		if (np.next_timer() <= t && np.on_timer(t).has_value())
			sent.push_back(t);
		if (arrive(np, t, true))
			sent.push_back(t);
	}
	REQUIRE(sent.size() >= 2);
	CHECK(sent[0] == 0);
	for (size_t i = 1; i < sent.size(); i++)
		REQUIRE(sent[i] - sent[i - 1] >= 50'000);
	CHECK(sent.size() == 20);
	// Unmarked packets never make a CNP; after a quiet interval a marked one does at once.
	DcqcnNp q(50'000);
	CHECK_FALSE(arrive(q, 0, false));
	CHECK(arrive(q, 10, true));
	CHECK_FALSE(arrive(q, 20, true));    // inside the interval: pending
	CHECK(q.next_timer() == 50'010);
	CHECK(q.on_timer(50'010).has_value());           // the pending one at the interval's end
	CHECK_FALSE(q.on_timer(100'010).has_value());    // nothing pending
	CHECK(arrive(q, 200'000, true));
}

TEST_CASE("dcqcn_mellanox__cut_at_the_decrease_check_then_timer_increase", "[dcqcn]")
{
	auto p = dcqcn_params("mellanox");
	REQUIRE(p.ok());
	DcqcnMellanox rp(*p, uint64_t(kLine));
	rp.start(0, uint64_t(kLine));
	rp.on_cnp(cnp(0));
	// Expect (§3.4): the first CNP only arms the timers; the cut comes at the 4 us check with
	// alpha as updated by the 1 us alpha ticks (alpha = 1, then (1-g) + g = 1 at the first tick).
	CHECK(rp.rc() == kLine);
	rp.on_timer(p->decrease_period_ns);
	const double a = rp.alpha();
	CHECK(rp.rc() == Approx(kLine * (1 - a / 2)));
	CHECK(rp.rt() == kLine);
	// Increase ticks every T: t_stage 0 (< F = 1) fast recovery, 1 (== F) additive, then hyper.
	double rt = rp.rt(), rc = rp.rc();
	uint64_t t0 = p->decrease_period_ns;
	rp.on_timer(t0 + p->t_ns);
	rc = (rt + rc) / 2;
	CHECK(rp.rc() == Approx(rc));
	// (Rt is already the line rate: the caps keep it there; check the phase counter instead.)
	CHECK(rp.t_stage() == 1);
	rp.on_timer(t0 + 2 * p->t_ns);
	CHECK(rp.t_stage() == 2);
	CHECK(rp.rt() == kLine);
}

TEST_CASE("dcqcn_w__window_static_and_proportional", "[dcqcn]")
{
	Setup s;
	s.scheme = "dcqcn+w";
	s.line_rate_bps = uint64_t(kLine);
	s.bdp_bytes = 100'000;
	auto parts = make(s);
	REQUIRE(parts.ok());
	CHECK(parts->controller->output().window_bytes == 100'000);
	s.overrides["var_window"] = "on";
	parts = make(s);
	REQUIRE(parts.ok());
	parts->controller->start(0);
	parts->controller->on_cnp(cnp(0));
	// Expect: W x Rc / line rate after the cut to half.
	CHECK(parts->controller->output().window_bytes == 50'000);
}

TEST_CASE("cc_make__schemes_and_errors", "[dcqcn]")
{
	CHECK(schemes() == std::vector<std::string>{"none", "pfc", "dcqcn", "dcqcn+w", "ldcp", "pbfs"});
	Setup s;
	s.line_rate_bps = uint64_t(kLine);
	s.scheme = "dcqcm";
	auto r = make(s);
	REQUIRE_FALSE(r.ok());
	CHECK(r.error().message == "scheme 'dcqcm': no base algorithm 'dcqcm' (base algorithms: none, dcqcn, dcqcn+w, ldcp, pcn)");
	s.scheme = "dcqcn";
	s.overrides["gain"] = "1";
	r = make(s);
	REQUIRE_FALSE(r.ok());
	CHECK(r.error().message.find("scheme dcqcn: unknown dcqcn parameter 'gain' (variant, g,") == 0);
	s.overrides = {{"t", "fast"}};
	CHECK_FALSE(make(s).ok());
	s.overrides = {{"g", "2"}};
	CHECK_FALSE(make(s).ok());
	s.overrides = {};
	s.params = "vendor";
	CHECK_FALSE(make(s).ok());
	// The NP switch: no notification point when off (negative control).
	s.params = "paper";
	s.np = false;
	r = make(s);
	REQUIRE(r.ok());
	CHECK(r->np == nullptr);
	s.np = true;
	r = make(s);
	REQUIRE(r.ok());
	CHECK(r->np != nullptr);
	// "none" stays at line rate whatever happens.
	s.scheme = "none";
	r = make(s);
	REQUIRE(r.ok());
	r->controller->start(0);
	r->controller->on_cnp(cnp(5));
	CHECK(r->controller->output().rate_bps == uint64_t(kLine));
	CHECK(r->np == nullptr);
}

TEST_CASE("controller__routes_each_event_to_its_part", "[dcqcn]")
{
	// Recording parts: the controller passes ACK, CNP, tx, PFC and timers to the base algorithm;
	// message starts, tx, ACK, CNP and postcards to the start policy after it; BTS and tx to
	// flow control. Marks compose in that order; a start policy's set_rate reaches the output.
	using Log = std::vector<std::string>;
	struct Rec final : Algorithm {
		Log *log;
		uint64_t rate = 123;
		explicit Rec(Log *l) : log(l) {}
		std::string name() const override { return "rec"; }
		void start(uint64_t, uint64_t r) override { log->push_back("start " + std::to_string(r)); }
		void set_rate(uint64_t, uint64_t r) override { rate = r; }
		void on_message(const MessageStart &m) override { log->push_back("msg " + std::to_string(m.size_bytes)); }
		void on_ack(const AckSample &e) override { log->push_back("ack " + std::to_string(e.acked_bytes)); }
		void on_cnp(const CnpEvent &e) override { log->push_back("cnp " + std::to_string(e.psn)); }
		void on_tx(const TxPacket &p, TxMarks &m) override
		{
			log->push_back("tx " + std::to_string(p.wire_bytes));
			m.ecn = 0; // e.g. LDCP's Not-ECT fast start
		}
		void on_pfc(const PfcEvent &e) override { log->push_back("pfc " + std::to_string(e.prio)); }
		void on_timer(uint64_t t) override { log->push_back("timer " + std::to_string(t)); }
		uint64_t next_timer() const override { return 7; }
		uint64_t rate_bps() const override { return rate; }
		uint64_t window_bytes() const override { return 456; }
	};
	struct Start final : StartPolicy {
		Log *log;
		explicit Start(Log *l) : log(l) {}
		std::string name() const override { return "rec-start"; }
		uint64_t initial_rate(uint64_t line) const override { return line / 2; }
		void on_message(const MessageStart &m, Algorithm &) override { log->push_back("start-msg " + std::to_string(m.msn)); }
		void on_tx(const TxPacket &, TxMarks &m, Algorithm &) override
		{
			log->push_back("start-tx ecn " + std::to_string(m.ecn));
			m.tos_bits |= 0x04; // e.g. PB-FS's PBT bit
		}
		void on_ack(const AckSample &, bool, Algorithm &) override { log->push_back("start-ack"); }
		void on_cnp(const CnpEvent &, bool, Algorithm &) override { log->push_back("start-cnp"); }
		void on_postcard(const PostcardEvent &e, Algorithm &a) override
		{
			log->push_back("start-postcard " + std::to_string(e.psn));
			a.set_rate(e.now_ns, 777);
		}
	};
	struct Fc final : FlowControl {
		Log *log;
		uint64_t until = 0;
		explicit Fc(Log *l) : log(l) {}
		std::string name() const override { return "rec-fc"; }
		void on_tx(const TxPacket &, TxMarks &m) override { log->push_back("fc-tx bits " + std::to_string(m.tos_bits)); }
		void on_bts(const BtsEvent &e) override { until = e.now_ns + e.pause_us * 1000ULL; }
		uint64_t pause_until_ns() const override { return until; }
	};
	Log log;
	Controller c(std::make_unique<Rec>(&log), std::make_unique<Start>(&log), std::make_unique<Fc>(&log), 1000);
	c.start(0);
	c.on_message(MessageStart{1, 5, 64000});
	TxMarks m = c.on_tx(TxPacket{2, 9, 2062, 2000, false, 5, 0, 64000});
	c.on_ack(AckSample{3, 2000, 0, false, std::nullopt, false});
	c.on_cnp(CnpEvent{4, 9, {}});
	c.on_pfc(PfcEvent{5, 3, 99});
	c.on_postcard(PostcardEvent{6, 1, 9});
	c.on_bts(BtsEvent{6, 10});
	c.on_timer(6); // nothing due yet
	c.on_timer(7);
	CHECK(log == Log{"start 500", "msg 64000", "start-msg 5", "tx 2062", "start-tx ecn 0", "fc-tx bits 4", "ack 2000",
			 "start-ack", "cnp 9", "start-cnp", "pfc 3", "start-postcard 9", "timer 7"});
	CHECK(m.ecn == 0);
	CHECK(m.tos_bits == 0x04);
	CHECK(c.output().rate_bps == 777);
	CHECK(c.output().window_bytes == 456);
	CHECK(c.output().pause_until_ns == 6 + 10'000);
	CHECK(c.next_timer() == 7);
	CHECK(c.name() == "rec/rec-start/rec-fc");
}

TEST_CASE("dcqcn_np__cnp_names_the_marked_psn", "[dcqcn]")
{
	// Expect: the CNP sent on a marked arrival names that packet's PSN; the one at the end of
	// the interval names the latest marked PSN in it; the payload is zero (common.md §1.3).
	DcqcnNp np(50'000);
	auto c = np.on_data(NpPacket{0, 100, 2062, true});
	REQUIRE(c);
	CHECK(c->psn == 100);
	CHECK(c->payload == std::array<uint8_t, kCnpPayloadBytes>{});
	CHECK_FALSE(np.on_data(NpPacket{10, 101, 2062, true}));
	CHECK_FALSE(np.on_data(NpPacket{20, 102, 2062, true}));
	CHECK_FALSE(np.on_data(NpPacket{30, 103, 2062, false}));
	auto t = np.on_timer(50'000);
	REQUIRE(t);
	CHECK(t->psn == 102);
}
