// PCN's hosts (transport/cc/pcn.h) on a fake clock against ../shared/specs/pcn.md §3.2-§3.3: the
// receiver-driven decrease and its floor, the self-weighted increase (its equations step by step,
// the gap to max_rate shrinking by (1 - w), the ~10-13 CNPs from w_min to w_max), stale and
// invalid CNPs, RP3; the receiver's classification on scripted arrivals (all marked, theta
// exactly, just under theta, sparse marks, no traffic), its rate over the true interval, the
// flush of a stopped flow and the restart after an idle gap; the CNP layout (§5); the derived
// values; the registry's composition end to end.
#include <catch2/catch.hpp>

#include <cmath>

#include "transport/cc/cc.h"
#include "transport/cc/pcn.h"

using namespace qn::tp::cc;
using Catch::Detail::Approx;

namespace {
constexpr uint64_t kLine = 10'000'000'000;
constexpr uint32_t kFrame = 2062; // a full frame of the 2048-byte MTU (Ethernet header to ICRC)
constexpr uint64_t kWire = kFrame + 24;

CnpEvent cnp(uint64_t t, bool congested, uint64_t rec_bps, uint32_t seq, std::array<uint8_t, 16> &buf,
	     bool valid = true)
{
	PcnCnp c;
	c.rec_rate_bps = rec_bps;
	c.congested = congested;
	c.rate_valid = valid;
	c.interval_ns = 50'000;
	c.seq = seq;
	buf = pcn_encode(c);
	return CnpEvent{t, 0, std::span<const uint8_t>(buf)};
}

Pcn started(PcnParams p = {})
{
	Pcn r(p, kLine);
	r.start(0, kLine);
	return r;
}
} // namespace

TEST_CASE("pcn__congested_cnp_cuts_to_just_below_the_receiving_rate", "[pcn][cc]")
{
	Pcn r = started();
	std::array<uint8_t, 16> b;
	REQUIRE(r.w() == Approx(0.5)); // RP0: w = w_max
	r.on_cnp(cnp(1000, true, 4'000'000'000, 1, b));
	CHECK(r.rate() == Approx((1 - 1.0 / 128) * 4e9).epsilon(1e-9));
	CHECK(r.w() == Approx(1.0 / 128)); // reset to w_min [R]
	// min(rate, ...): a higher receiving rate does not raise it
	const double before = r.rate();
	r.on_cnp(cnp(2000, true, 8'000'000'000, 2, b));
	CHECK(r.rate() == Approx(before));
	// a lower one cuts again, in one step (one control loop)
	r.on_cnp(cnp(3000, true, 1'000'000'000, 3, b));
	CHECK(r.rate() == Approx((1 - 1.0 / 128) * 1e9).epsilon(1e-9));
	CHECK(r.stats().cnp_congested == 3);

	SECTION("w_reset off keeps w")
	{
		PcnParams p;
		p.w_reset = false;
		Pcn k = started(p);
		k.on_cnp(cnp(1000, true, 4'000'000'000, 1, b));
		CHECK(k.w() == Approx(0.5));
	}
	SECTION("R_min floors the cut")
	{
		r.on_cnp(cnp(4000, true, 0, 4, b));
		CHECK(r.rate_bps() == PcnParams{}.rmin_bps);
	}
}

TEST_CASE("pcn__self_weighted_increase_follows_the_equations", "[pcn][cc]")
{
	Pcn r = started();
	std::array<uint8_t, 16> b;
	r.on_cnp(cnp(1000, true, 2'000'000'000, 1, b));
	double rate = (1 - 1.0 / 128) * 2e9, w = 1.0 / 128;
	REQUIRE(r.rate() == Approx(rate));
	int to_half = 0, to_most = 0;
	for (uint32_t i = 0; i < 20; i++) {
		const double gap = 1e10 - r.rate();
		r.on_cnp(cnp(2000 + i, false, 1'000'000'000, 2 + i, b));
		// rate = rate (1 - w) + max_rate w, with w before this CNP; then w = w (1 - w) + w_max w
		rate = rate * (1 - w) + 1e10 * w;
		w = std::min(0.5, w * (1 - w) + 0.5 * w);
		CHECK(r.rate() == Approx(rate).epsilon(1e-9));
		CHECK(r.w() == Approx(w).epsilon(1e-12));
		CHECK(1e10 - r.rate() <= gap); // the gap to max_rate only shrinks
		if (!to_half && r.w() >= 0.25)
			to_half = int(i) + 1;
		if (!to_most && r.w() >= 0.4)
			to_most = int(i) + 1;
	}
	// pcn.md §4: ~log(w_max/w_min)/log(1 + w_max) = 10.3, "about 10-13 CNPs" from w_min to w_max
	INFO("w >= w_max/2 after " << to_half << " CNPs, >= 0.8 w_max after " << to_most);
	CHECK(to_half >= 10);
	CHECK(to_most <= 13);
	CHECK(r.w() <= 0.5);           // bounded by w_max
	CHECK(r.rate() <= 1e10);       // and never above the line rate
	CHECK(r.stats().cnp_uncongested == 20);
}

TEST_CASE("pcn__stale_and_invalid_cnps_are_dropped", "[pcn][cc]")
{
	Pcn r = started();
	std::array<uint8_t, 16> b;
	r.on_cnp(cnp(1000, true, 3'000'000'000, 5, b));
	const double cut = r.rate();
	r.on_cnp(cnp(2000, true, 1'000'000'000, 5, b)); // same seq
	r.on_cnp(cnp(3000, true, 1'000'000'000, 4, b)); // older
	CHECK(r.rate() == Approx(cut));
	CHECK(r.stats().cnp_stale == 2);
	r.on_cnp(cnp(4000, true, 1'000'000'000, 6, b, false)); // no valid rate
	CHECK(r.rate() == Approx(cut));
	CHECK(r.stats().cnp_bad == 1);
	// a payload of zeros (an unmodified DCQCN NP's CNP) carries no valid rate either
	const std::array<uint8_t, 16> zeros{};
	r.on_cnp(CnpEvent{5000, 0, std::span<const uint8_t>(zeros)});
	CHECK(r.rate() == Approx(cut));
	CHECK(r.stats().cnp_bad == 2);
	// sequence numbers wrap
	Pcn w = started();
	w.on_cnp(cnp(1000, true, 3'000'000'000, 0xffffffffu, b));
	w.on_cnp(cnp(2000, true, 1'000'000'000, 0, b));
	CHECK(w.stats().cnp_stale == 0);
	CHECK(w.rate() == Approx((1 - 1.0 / 128) * 1e9));
}

TEST_CASE("pcn__rp3_steps_up_only_when_enabled", "[pcn][cc]")
{
	std::array<uint8_t, 16> b;
	Pcn off = started();
	off.on_cnp(cnp(0, true, 1'000'000'000, 1, b));
	CHECK(off.next_timer() == UINT64_MAX);

	PcnParams p;
	p.rp3 = true;
	Pcn on = started(p);
	on.on_cnp(cnp(0, true, 1'000'000'000, 1, b));
	REQUIRE(on.next_timer() == 4 * p.t_ns);
	const double cut = on.rate();
	on.on_timer(8 * p.t_ns); // two periods missed: two steps, one by one
	CHECK(on.stats().rp3_steps == 2);
	const double r1 = cut * (1 - 1.0 / 128) + 1e10 / 128;
	const double w1 = (1.0 / 128) * (1 + 0.5 - 1.0 / 128);
	CHECK(on.rate() == Approx(r1 * (1 - w1) + 1e10 * w1).epsilon(1e-9));
}

TEST_CASE("pcn__cnp_payload_layout", "[pcn][cc][wire]")
{
	PcnCnp c;
	c.rec_rate_bps = 9'876'543'000;
	c.congested = true;
	c.rate_valid = true;
	c.interval_ns = 51'234;
	c.seq = 0x01020304;
	const auto b = pcn_encode(c);
	// rec_rate_kbps big-endian at 0, flags at 4, reserved 5..7, interval at 8, seq at 12 (§5)
	CHECK(b[0] == 0x00);
	CHECK(((b[0] << 24) | (b[1] << 16) | (b[2] << 8) | b[3]) == 9'876'543);
	CHECK(b[4] == (kPcnCong | kPcnRateValid));
	CHECK((b[5] | b[6] | b[7]) == 0);
	CHECK(((b[8] << 24) | (b[9] << 16) | (b[10] << 8) | b[11]) == 51'234);
	CHECK(b[12] == 1);
	CHECK(b[15] == 4);
	const auto d = pcn_decode(b);
	REQUIRE(d);
	CHECK(d->rec_rate_bps == 9'876'543'000);
	CHECK(d->congested);
	CHECK(d->interval_ns == 51'234);
	CHECK(d->seq == 0x01020304);
}

namespace {
// Feed `n` packets, one every `gap` ns from `t`, the i-th CE when ce(i). Return: the CNPs.
template <typename F> std::vector<PcnCnp> feed(PcnNp &np, uint64_t &t, int n, uint64_t gap, F ce)
{
	std::vector<PcnCnp> out;
	for (int i = 0; i < n; i++) {
		if (np.next_timer() <= t)
			if (auto c = np.on_timer(t))
				out.push_back(*pcn_decode(c->payload));
		if (auto c = np.on_data(NpPacket{t, uint32_t(i), kFrame, ce(i)}))
			out.push_back(*pcn_decode(c->payload));
		t += gap;
	}
	return out;
}
} // namespace

TEST_CASE("pcn__receiver_classifies_each_interval", "[pcn][cc]")
{
	PcnParams p; // T = 50 us, theta = 0.95
	// 20 packets per interval: one every 2.5 us; the 21st (t = 50 us) closes the interval.
	const uint64_t gap = 2'500;
	PcnNp np(p);
	uint64_t t = 1'000'000;

	SECTION("all marked: congested, the rate over the true interval")
	{
		auto c = feed(np, t, 21, gap, [](int) { return true; });
		REQUIRE(c.size() == 1);
		CHECK(c[0].congested);
		CHECK(c[0].rate_valid);
		CHECK(c[0].interval_ns == 50'000);
		// 20 frames after the opener (it arrived at t0) on the wire in 50 us
		CHECK(double(c[0].rec_rate_bps) == Approx(20.0 * kWire * 8e9 / 50'000).epsilon(1e-3));
		CHECK(c[0].seq == 1);
	}
	SECTION("theta exactly: 19 of 20 is congested, 18 of 20 is not")
	{
		// T = 49.4 us, a packet every 2.6 us: the 20th (t0 + 49.4 us) closes each interval
		PcnParams q = p;
		q.t_ns = 49'400;
		PcnNp e(q);
		uint64_t t2 = 0;
		auto c = feed(e, t2, 20, 2'600, [](int i) { return i != 0; });
		REQUIRE(c.size() == 1);
		CHECK(c[0].congested); // 19 / 20 = 0.95 >= theta
		t2 -= 2'600;           // the next interval starts at the report
		auto d = feed(e, t2, 21, 2'600, [](int i) { return i > 2; });
		REQUIRE(d.size() == 1);
		CHECK_FALSE(d[0].congested); // partially marked: a victim's pattern
		CHECK(d[0].seq == 2);
	}
	SECTION("sparse marks: not congested, the CNP still goes (cnp_all)")
	{
		auto c = feed(np, t, 21, gap, [](int i) { return i % 10 == 0; });
		REQUIRE(c.size() == 1);
		CHECK_FALSE(c[0].congested);
		PcnParams q = p;
		q.cnp_all = false;
		PcnNp only(q);
		uint64_t t2 = 0;
		CHECK(feed(only, t2, 21, gap, [](int i) { return i % 10 == 0; }).empty());
		CHECK(only.reports() == 1);
	}
	SECTION("no traffic: no CNP, no timer")
	{
		CHECK(np.next_timer() == UINT64_MAX);
		CHECK_FALSE(np.on_timer(10'000'000));
	}
	SECTION("a flow that stops mid-interval is reported at t0 + 2T")
	{
		feed(np, t, 5, gap, [](int) { return true; });
		REQUIRE(np.next_timer() == 1'000'000 + 100'000);
		auto c = np.on_timer(1'100'000);
		REQUIRE(c);
		const auto d = *pcn_decode(c->payload);
		CHECK(d.congested);
		CHECK(d.interval_ns == 100'000);
		CHECK(double(d.rec_rate_bps) == Approx(4.0 * kWire * 8e9 / 100'000).epsilon(1e-3));
		CHECK(np.next_timer() == UINT64_MAX);
	}
	SECTION("an interval of its opening packet alone reports nothing, even CE-marked")
	{
		// The opener arrives at t0 and is not counted in the interval's bytes: at t0 + 2T the
		// flush has no rate to report. Reporting 0 bit/s, congested, cut the sender to R_min.
		auto c = feed(np, t, 1, gap, [](int) { return true; });
		CHECK(c.empty());
		REQUIRE(np.next_timer() == 1'000'000 + 100'000);
		CHECK_FALSE(np.on_timer(1'100'000));
		CHECK(np.reports() == 0);
		CHECK(np.unmeasured() == 1);
		CHECK(np.next_timer() == UINT64_MAX);
		// the next packet opens a new interval, measured as usual
		uint64_t t2 = 2'000'000;
		auto d = feed(np, t2, 21, gap, [](int) { return true; });
		REQUIRE(d.size() == 1);
		CHECK(d[0].congested);
		CHECK(d[0].interval_ns == 50'000);
		CHECK(double(d[0].rec_rate_bps) == Approx(20.0 * kWire * 8e9 / 50'000).epsilon(1e-3));
	}
	SECTION("after an idle gap over 2T the interval starts at the next packet")
	{
		feed(np, t, 21, gap, [](int) { return false; }); // one report at 1.05 ms
		t += 1'000'000;                                    // idle 1 ms
		auto c = feed(np, t, 21, gap, [](int) { return false; });
		REQUIRE(c.size() == 1);
		CHECK(c[0].interval_ns == 50'000); // not 1.05 ms: the rate is not diluted by the idle time
		CHECK(double(c[0].rec_rate_bps) == Approx(20.0 * kWire * 8e9 / 50'000).epsilon(1e-3));
	}
}

TEST_CASE("pcn__registry_composition_and_derivation", "[pcn][cc]")
{
	auto s = scheme("pcn");
	REQUIRE(s);
	CHECK(s->canonical() == "pcn/line-rate/no-pause:lossless");
	CHECK(s->ecn);
	CHECK_FALSE(scheme("pcn:lossy")); // PCN keeps PFC
	CHECK_FALSE(check_param("pcn", "theta", "1.5").ok());
	CHECK(check_param("pcn", "w_min", "0.03125").ok());

	Fabric f{kLine, 8'000, 2048, 8'000, 8'000};
	auto d = derive("pcn", f, true);
	REQUIRE(d);
	CHECK(d->overrides.at("t") == "50000ns");          // max(50 us, 8 us, 10 packets = 16.7 us)
	CHECK(d->overrides.at("rmin") == "100000000bps");  // 10G: s_C = 1
	auto has = [&](const std::string &k, const std::string &v) {
		for (const auto &[a, b] : d->switch_settings)
			if (a == k)
				return b == v;
		return false;
	};
	CHECK(has("pcn", "on"));
	CHECK(has("kmin", "4096")); // max(2 MTU, BDP/5 = 2 KB)
	CHECK(has("kmax", "4096"));
	CHECK(has("pfc", "on"));
	CHECK(has("ecn_at", "dequeue"));
	// every other scheme turns NP-ECN off
	auto dd = derive("dcqcn", f, true);
	REQUIRE(dd);
	bool off = false;
	for (const auto &[a, b] : dd->switch_settings)
		off |= a == "pcn" && b == "off";
	CHECK(off);

	// End to end through the registry: the NP's CNP drives the sender.
	Setup su;
	su.scheme = "pcn";
	su.line_rate_bps = kLine;
	su.fabric = f;
	auto tx = make(su), rx = make(su);
	REQUIRE(tx);
	REQUIRE(rx);
	REQUIRE(rx->np);
	tx->controller->start(0);
	std::optional<CnpOut> out;
	for (int i = 0; i < 30 && !out; i++) // 2.5 Gbit/s of all-marked packets
		out = rx->np->on_data(NpPacket{uint64_t(i) * 6'675, uint32_t(i), kFrame, true});
	REQUIRE(out);
	tx->controller->on_cnp(CnpEvent{200'000, out->psn, std::span<const uint8_t>(out->payload)});
	const uint64_t r = tx->controller->output().rate_bps;
	CHECK(double(r) == Approx((1 - 1.0 / 128) * 2.5e9).epsilon(0.01));
}
