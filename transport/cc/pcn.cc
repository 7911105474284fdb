// pcn.cc - PCN's receiver and sender (pcn.h, ../shared/specs/pcn.md).
#include "transport/cc/pcn.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace qn::tp::cc {

const ParamTable<PcnParams> &pcn_table()
{
	using P = PcnParams;
	using K = ParamKind;
	static const ParamTable<P> t(
		"pcn",
		{
			{"t", K::Time, &P::t_ns, 1000, 1e9, {}, "T: the receiver's report (CNP) interval [R]"},
			{"theta", K::Number, &P::theta, 0, 1, {}, "congested when at least theta of an interval's packets are CE [R]"},
			{"w_min", K::Number, &P::w_min, 1e-6, 0.5, {}, "decrease margin: rate = min(rate, (1 - w_min) recRate) [R]"},
			{"w_max", K::Number, &P::w_max, 1e-6, 1, {}, "largest increase weight w [R]"},
			{"w_reset", K::Flag, &P::w_reset, 0, 0, {}, "a congested CNP resets w to w_min [R] (off: w kept)"},
			{"rmin", K::Rate, &P::rmin_bps, 1, 1e13, {}, "R_min, the rate floor"},
			{"cnp_all", K::Flag, &P::cnp_all, 0, 0, {}, "CNPs to uncongested flows too, driving the increase [R] (off: congested only)"},
			{"rp3", K::Flag, &P::rp3, 0, 0, {}, "one increase step when no CNP came for 4T (spec RP3, optional)"},
		});
	return t;
}

Status pcn_override(PcnParams &p, const std::string &k, const std::string &v)
{
	QN_TRY(pcn_table().apply(p, k, v));
	if (p.w_min > p.w_max)
		return make_error("pcn parameter 'w_min' (" + v + ") is above w_max");
	return ok_status();
}

std::string pcn_describe(const PcnParams &p) { return pcn_table().describe(p); }

namespace {

void put32(uint8_t *b, uint32_t v)
{
	b[0] = uint8_t(v >> 24);
	b[1] = uint8_t(v >> 16);
	b[2] = uint8_t(v >> 8);
	b[3] = uint8_t(v);
}
uint32_t get32(const uint8_t *b) { return uint32_t(b[0]) << 24 | uint32_t(b[1]) << 16 | uint32_t(b[2]) << 8 | b[3]; }

// A frame's bytes on the wire: the frame (Ethernet header to ICRC) + FCS, preamble and gap,
// at least a minimum frame's 84 (the engine's rate limiter counts the same, transport/pacer.h).
uint64_t on_wire(uint32_t frame) { return std::max<uint64_t>(84, uint64_t(frame) + 24); }

} // namespace

std::array<uint8_t, kCnpPayloadBytes> pcn_encode(const PcnCnp &c)
{
	std::array<uint8_t, kCnpPayloadBytes> b{};
	const uint64_t kbps = std::min<uint64_t>(c.rec_rate_bps / 1000, UINT32_MAX);
	put32(&b[0], uint32_t(kbps));
	b[4] = uint8_t((c.congested ? kPcnCong : 0) | (c.rate_valid ? kPcnRateValid : 0));
	put32(&b[8], c.interval_ns);
	put32(&b[12], c.seq);
	return b;
}

std::optional<PcnCnp> pcn_decode(std::span<const uint8_t> b)
{
	if (b.size() < kCnpPayloadBytes)
		return std::nullopt;
	PcnCnp c;
	c.rec_rate_bps = uint64_t(get32(&b[0])) * 1000;
	c.congested = b[4] & kPcnCong;
	c.rate_valid = b[4] & kPcnRateValid;
	c.interval_ns = get32(&b[8]);
	c.seq = get32(&b[12]);
	return c;
}

Derived pcn_derive(const Fabric &f, bool scale)
{
	constexpr double kPaperRate = 10e9;     // the testbed's 82599 NICs [slides: Evaluation Setup]
	constexpr double kPaperT = 50'000;      // T [R]: DCQCN's CNP interval
	Derived d;
	const double bdp = double(f.line_rate_bps) * double(f.base_rtt_ns) / 8e9;
	const double wire = double(f.mtu) + 14 + 24;
	const double pkt_ns = wire * 8e9 / double(f.line_rate_bps);
	const double s_c = scale ? double(f.line_rate_bps) / kPaperRate : 1.0;
	const double t_ns = std::max({kPaperT, double(f.base_rtt_ns), 10 * pkt_ns});
	const auto k = uint64_t(std::llround(std::max(2.0 * f.mtu, bdp / 5)));
	const PcnParams paper;
	const auto rmin = uint64_t(std::llround(double(paper.rmin_bps) * s_c));
	d.overrides["t"] = std::to_string(uint64_t(std::llround(t_ns))) + "ns";
	d.overrides["rmin"] = std::to_string(rmin) + "bps";
	// Step marking at K: the RED profile with kmin = kmax = K marks every packet leaving a queue
	// over K (ecn.h); a RED ramp (kmax > kmin, pmax < 1) is the named alternative.
	d.switch_settings = {{"ecn", "on"},
			     {"ecn_at", "dequeue"},
			     {"kmin", std::to_string(k)},
			     {"kmax", std::to_string(k)},
			     {"pmax", "1"}};
	char b[512];
	std::snprintf(b, sizeof(b),
		      "pcn: T = max(50 us, base RTT %.4g us, 10 packet times %.4g us) = %.4g us [R]; theta %.3g, w_min %.6g, "
		      "w_max %.3g, w reset to w_min on a cut [R] (pcn.md §4)",
		      double(f.base_rtt_ns) / 1e3, 10 * pkt_ns / 1e3, t_ns / 1e3, paper.theta, paper.w_min, paper.w_max);
	d.notes.push_back(b);
	std::snprintf(b, sizeof(b), "pcn: R_min = 100 Mbit/s x s_C (%.4g) = %llu bit/s [D]", s_c,
		      static_cast<unsigned long long>(rmin));
	d.notes.push_back(b);
	std::snprintf(b, sizeof(b),
		      "pcn: switch NP-ECN at dequeue, step marking at K = max(2 MTU, BDP/5) = %llu B (BDP %.0f B) [R]: "
		      "kmin = kmax = K, pmax 1; PN loaded at XOFF and raised at enqueue while paused [R]",
		      static_cast<unsigned long long>(k), bdp);
	d.notes.push_back(b);
	return d;
}

// ---------------------------------------------------------------------------------------------
// Sender

Pcn::Pcn(const PcnParams &p, uint64_t line_rate_bps) : p_(p), max_rate_(double(line_rate_bps)) {}

void Pcn::start(uint64_t now_ns, uint64_t rate_bps)
{
	rate_ = double(rate_bps);
	w_ = p_.w_max; // RP0: w = w_max [D]
	last_cnp_ns_ = now_ns;
	clamp();
}

void Pcn::set_rate(uint64_t, uint64_t rate_bps)
{
	rate_ = double(rate_bps);
	clamp();
}

void Pcn::clamp() { rate_ = std::clamp(rate_, std::min(double(p_.rmin_bps), max_rate_), max_rate_); }

void Pcn::increase()
{
	// The two assignments as one system: the rate uses w from before this step (pcn.md §3.3).
	const double w = w_;
	rate_ = rate_ * (1 - w) + max_rate_ * w;
	w_ = std::min(p_.w_max, w * (1 - w) + p_.w_max * w);
	clamp();
}

void Pcn::on_cnp(const CnpEvent &e)
{
	const auto c = pcn_decode(e.payload);
	if (!c || !c->rate_valid) {
		st_.cnp_bad++;
		return;
	}
	if (have_seq_ && int32_t(c->seq - last_seq_) <= 0) {
		st_.cnp_stale++;
		return;
	}
	have_seq_ = true;
	last_seq_ = c->seq;
	last_cnp_ns_ = e.now_ns;
	if (c->congested) {
		st_.cnp_congested++;
		rate_ = std::min(rate_, (1 - p_.w_min) * double(c->rec_rate_bps));
		if (p_.w_reset)
			w_ = p_.w_min;
		clamp();
	} else {
		st_.cnp_uncongested++;
		increase();
	}
}

uint64_t Pcn::next_timer() const
{
	if (!p_.rp3 || rate_ >= max_rate_)
		return UINT64_MAX;
	return last_cnp_ns_ + 4 * p_.t_ns;
}

void Pcn::on_timer(uint64_t now_ns)
{
	// Missed periods one by one (cc.h).
	for (int i = 0; i < 1'000'000 && next_timer() <= now_ns; i++) {
		last_cnp_ns_ += 4 * p_.t_ns;
		st_.rp3_steps++;
		increase();
	}
}

void Pcn::counters(CounterList &c) const
{
	c.emplace_back("pcn.cnp_congested", st_.cnp_congested);
	c.emplace_back("pcn.cnp_uncongested", st_.cnp_uncongested);
	c.emplace_back("pcn.cnp_stale", st_.cnp_stale);
	c.emplace_back("pcn.cnp_bad", st_.cnp_bad);
	c.emplace_back("pcn.rp3_steps", st_.rp3_steps);
}

// ---------------------------------------------------------------------------------------------
// Receiver

std::optional<CnpOut> PcnNp::on_data(const NpPacket &p)
{
	// A new interval starts at the first packet, and at the next packet after an idle gap longer
	// than 2T (an interval from a stale report would underestimate the rate; pcn.md §6.4).
	if (!open_ || (pkts_ == 0 && p.now_ns - last_rx_ > 2 * p_.t_ns)) {
		open_ = true;
		t0_ = p.now_ns;
		bytes_ = pkts_ = ce_ = 0;
	} else {
		// The rate counts what arrived after t0: a packet that opens an interval arrived at t0
		// (its bytes were sent before), one that closes it at the interval's end. Counting the
		// opener too overstated a 2.5 Gbit/s flow by 12% at T = 50 us (9 packets for 8 gaps),
		// and a cut to (1 - w_min) of an overstated rate does not drain a queue.
		bytes_ += on_wire(p.wire_bytes);
	}
	last_rx_ = p.now_ns;
	pkts_++;
	if (p.ce)
		ce_++;
	last_psn_ = p.psn;
	if (p.now_ns - t0_ >= p_.t_ns)
		return report(p.now_ns);
	return std::nullopt;
}

uint64_t PcnNp::next_timer() const { return open_ && pkts_ > 0 ? t0_ + 2 * p_.t_ns : UINT64_MAX; }

std::optional<CnpOut> PcnNp::on_timer(uint64_t now_ns)
{
	// NP2: the flow stopped mid-interval; report what it got.
	if (!open_ || pkts_ == 0 || now_ns < t0_ + 2 * p_.t_ns)
		return std::nullopt;
	if (bytes_ == 0) {
		// Only the packet that opened the interval arrived: it marks the interval's start, so
		// no rate can be measured. A report would carry 0 bit/s, and a congested one (that
		// packet CE) would cut the sender to R_min. Close the interval without a CNP; the next
		// packet opens a new one (docs/pcn.md "An interval of its opener alone").
		open_ = false;
		pkts_ = ce_ = 0;
		unmeasured_++;
		return std::nullopt;
	}
	return report(now_ns);
}

std::optional<CnpOut> PcnNp::report(uint64_t now_ns)
{
	const uint64_t interval = std::max<uint64_t>(1, now_ns - t0_);
	PcnCnp c;
	c.rec_rate_bps = uint64_t(double(bytes_) * 8e9 / double(interval));
	c.congested = double(ce_) >= p_.theta * double(pkts_);
	c.rate_valid = true;
	c.interval_ns = uint32_t(std::min<uint64_t>(interval, UINT32_MAX));
	const uint32_t psn = last_psn_;
	t0_ = now_ns;
	bytes_ = pkts_ = ce_ = 0;
	reports_++;
	if (c.congested)
		congested_++;
	else if (!p_.cnp_all)
		return std::nullopt;
	c.seq = ++seq_;
	return CnpOut{psn, pcn_encode(c)};
}

} // namespace qn::tp::cc
