// dcqcn.cc - DCQCN reaction and notification points (dcqcn.h, ../shared/specs/dcqcn.md).
#include "transport/cc/dcqcn.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/units.h"

namespace qn::tp::cc {

// ---------------------------------------------------------------------------------------------
// Parameter sets

Result<DcqcnParams> dcqcn_params(const std::string &set)
{
	DcqcnParams p;
	if (set == "paper" || set.empty()) {
		// Fig. 14 (T, B, Kmin/Kmax/Pmax on the switch, g), tau' = T (§4 table), F = 5, R_AI
		// 40 Mbit/s; R_HAI 200 Mbit/s and R_min 100 Mbit/s from DCQCN-ns3 (the paper gives none).
		return p;
	}
	if (set == "mellanox") {
		// ConnectX firmware defaults (dcqcn.md §4), Mellanox variant (§3.4). g stays 1/256:
		// dce_tcp_g = 1019 has undocumented semantics (§6-4).
		p.variant = DcqcnParams::Variant::Mellanox;
		p.tau_alpha_ns = 1'000;        // dce_tcp_rtt 1 (us)
		p.t_ns = 300'000;              // rpg_time_reset 300 us
		p.b_bytes = 0;                 // timer only
		p.f = 1;                       // rpg_threshold 1
		p.rai_bps = 5'000'000;         // rpg_ai_rate 5 Mbit/s
		p.rhai_bps = 50'000'000;       // rpg_hai_rate 50 Mbit/s
		p.rmin_bps = 1'000'000;        // rpg_min_rate 1 Mbit/s
		p.alpha0 = 1023.0 / 1024;      // initial_alpha_value 1023
		p.cnp_interval_ns = 4'000;     // min_time_between_cnps (4 us; a firmware dump shows 2)
		p.clamp_target = false;        // clamp_tgt_rate 0, clamp_tgt_rate_after_time_inc 1
		p.decrease_period_ns = 4'000;  // rate_reduce_monitor_period 4 us
		p.rate_on_first_cnp = 1.0;     // §6-12
		return p;
	}
	return make_error("unknown DCQCN parameter set '" + set + "' (paper, mellanox)");
}

const ParamTable<DcqcnParams> &dcqcn_table()
{
	using P = DcqcnParams;
	using K = ParamKind;
	constexpr double kS = 1e9, kMaxRate = 1e13, kMaxSize = 1e10;
	static const ParamTable<P> t(
		"dcqcn",
		{
			{"variant", K::Choice, &P::variant, 0, 0, {"paper", "mellanox"},
			 "reaction point form: the paper's (§3.3) or the ConnectX/HPCC-simulator one (§3.4)"},
			{"g", K::Number, &P::g, 1e-6, 1, {}, "alpha gain"},
			{"alpha0", K::Number, &P::alpha0, 0, 1, {}, "initial alpha"},
			{"f", K::Count, &P::f, 0, 1000, {}, "fast-recovery steps F"},
			{"tau_alpha", K::Time, &P::tau_alpha_ns, 1, kS, {}, "alpha decay period tau'"},
			{"t", K::Time, &P::t_ns, 1, kS, {}, "rate-increase timer T"},
			{"n", K::Time, &P::cnp_interval_ns, 1, kS, {}, "NP: at most one CNP per N"},
			{"decrease_period", K::Time, &P::decrease_period_ns, 1, kS, {},
			 "Mellanox: rate_reduce_monitor_period"},
			{"b", K::Size, &P::b_bytes, 0, kMaxSize, {}, "byte counter B (0 = off)"},
			{"rai", K::Rate, &P::rai_bps, 1, kMaxRate, {}, "additive increase step R_AI"},
			{"rhai", K::Rate, &P::rhai_bps, 1, kMaxRate, {}, "hyper increase step R_HAI"},
			{"rmin", K::Rate, &P::rmin_bps, 1, kMaxRate, {}, "rate floor R_min"},
			{"clamp", K::Flag, &P::clamp_target, 0, 0, {}, "Rt = Rc on every cut (off: only after an increase)"},
			{"quirk", K::Flag, &P::qcn_quirk, 0, 0, {}, "RP5: DCQCN-ns3's Rt > 10 Rc rule"},
			{"w", K::Size, &P::window_bytes, 0, kMaxSize, {}, "DCQCN+W: window (0 = the BDP)"},
			{"var_window", K::Flag, &P::var_window, 0, 0, {}, "DCQCN+W: W x Rc / line rate"},
		});
	return t;
}

Status dcqcn_override(DcqcnParams &p, const std::string &k, const std::string &v)
{
	return dcqcn_table().apply(p, k, v);
}

std::string dcqcn_describe(const DcqcnParams &p)
{
	// DCQCN+W's keys only where a window exists; the rest in table order.
	std::string s;
	for (const auto &r : dcqcn_table().rows()) {
		const std::string n = r.name;
		if (!p.window && (n == "w" || n == "var_window"))
			continue;
		s += (s.empty() ? "" : " ") + n + "=" + dcqcn_table().value(p, r);
	}
	return s;
}

// DCQCN+W's window for the current rate (§3.5): none, W, or W x Rc / line rate.
uint64_t dcqcn_window(const DcqcnParams &p, double rc, double line)
{
	if (!p.window)
		return 0;
	if (!p.var_window)
		return p.window_bytes;
	return std::max<uint64_t>(1, uint64_t(double(p.window_bytes) * rc / line));
}

// ---------------------------------------------------------------------------------------------
// Paper reaction point

void DcqcnPaper::start(uint64_t, uint64_t rate_bps)
{
	rc_ = rt_ = std::min(double(rate_bps), line_); // RP0: no slow start
	alpha_ = p_.alpha0;
	active_ = false;
}

void DcqcnPaper::on_cnp(const CnpEvent &e)
{
	// RP1, Eq.1 order: the cut uses alpha before its update (§6-1).
	if (p_.clamp_target || increased_ || !active_)
		rt_ = rc_;
	rc_ = std::max(double(p_.rmin_bps), rc_ * (1 - alpha_ / 2));
	alpha_ = (1 - p_.g) * alpha_ + p_.g;
	bc_ = t_ = 0;
	bytes_left_ = int64_t(p_.b_bytes);
	hyper_ = false;
	increased_ = false;
	rate_timer_ = e.now_ns + p_.t_ns;
	alpha_timer_ = e.now_ns + p_.tau_alpha_ns;
	active_ = true;
}

void DcqcnPaper::increase()
{
	const uint32_t hi = std::max(bc_, t_), lo = std::min(bc_, t_);
	const bool quirk = p_.qcn_quirk && (bc_ == 1 || t_ == 1) && rt_ > 10 * rc_;
	if (hi <= p_.f) {
		rc_ = (rt_ + rc_) / 2; // fast recovery (Eq.3)
	} else if (lo > p_.f) {
		rt_ = quirk ? rt_ / 8 : rt_ + double(lo - p_.f) * double(p_.rhai_bps); // hyper increase
		rc_ = (rt_ + rc_) / 2;
	} else {
		rt_ = quirk ? rt_ / 8 : rt_ + double(p_.rai_bps); // additive increase (Eq.4)
		rc_ = (rt_ + rc_) / 2;
	}
	rt_ = std::min(rt_, line_);
	rc_ = std::min(rc_, line_);
	hyper_ = lo > p_.f;
	increased_ = true;
}

void DcqcnPaper::set_rate(uint64_t now, uint64_t rate_bps)
{
	// A start policy's correction: the current and the target rate both move there (a later
	// increase recovers toward it, not toward the old target). Below the line rate, recovery
	// starts from it as after a cut (RP3's byte counter and RP4's timer, in fast recovery):
	// otherwise a flow cut by a postcard and never marked would keep that rate for good.
	// Alpha is untouched (pbfs.md §3.4 names only Rc and Rt): its timer waits for a CNP.
	rc_ = rt_ = std::clamp(double(rate_bps), double(p_.rmin_bps), line_);
	if (rc_ < line_) {
		bc_ = t_ = 0;
		bytes_left_ = int64_t(p_.b_bytes);
		hyper_ = false;
		increased_ = false;
		rate_timer_ = now + p_.t_ns;
	}
}

void DcqcnPaper::on_tx(const TxPacket &p, TxMarks &)
{
	// RP3: the byte counter (counts what goes on the wire), once recovery runs (after a cut
	// or a start policy's correction: the rate timer is armed).
	if (rate_timer_ == UINT64_MAX || p_.b_bytes == 0)
		return;
	bytes_left_ -= int64_t(p.wire_bytes);
	while (bytes_left_ <= 0) {
		bc_++;
		bytes_left_ += int64_t(hyper_ ? p_.b_bytes / 2 : p_.b_bytes);
		increase();
	}
}

void DcqcnPaper::on_timer(uint64_t now)
{
	// Missed periods fire one by one, in time order (§6-10); alpha first on a tie.
	for (;;) {
		uint64_t t = std::min(rate_timer_, alpha_timer_);
		if (t == UINT64_MAX || t > now)
			return;
		if (alpha_timer_ == t) {
			alpha_ = (1 - p_.g) * alpha_; // RP2 (Eq.2): no CNP for tau'
			alpha_timer_ += p_.tau_alpha_ns;
		} else {
			// RP4: the period restarts with the phase before this increase.
			t_++;
			rate_timer_ += hyper_ ? p_.t_ns / 2 : p_.t_ns;
			increase();
		}
	}
}

uint64_t DcqcnPaper::next_timer() const { return std::min(rate_timer_, alpha_timer_); }


// ---------------------------------------------------------------------------------------------
// Mellanox reaction point

void DcqcnMellanox::start(uint64_t, uint64_t rate_bps)
{
	rc_ = rt_ = std::min(double(rate_bps), line_);
	alpha_ = p_.alpha0;
	active_ = false;
}

void DcqcnMellanox::set_rate(uint64_t now, uint64_t rate_bps)
{
	// As DcqcnPaper::set_rate: below the line rate the rate increase events start from it.
	rc_ = rt_ = std::clamp(double(rate_bps), double(p_.rmin_bps), line_);
	if (rc_ < line_) {
		t_ = 0;
		increased_ = false;
		rate_timer_ = now + p_.t_ns;
	}
}

void DcqcnMellanox::on_cnp(const CnpEvent &e)
{
	if (!active_) {
		// First CNP: alpha = 1, Rt = Rc = rate_on_first_cnp x Rc, periodic timers start; the
		// cut happens at the next decrease check.
		active_ = true;
		alpha_ = 1.0;
		rt_ = rc_ = rc_ * p_.rate_on_first_cnp;
		alpha_timer_ = e.now_ns + p_.tau_alpha_ns;
		decrease_timer_ = e.now_ns + p_.decrease_period_ns;
		rate_timer_ = e.now_ns + p_.t_ns;
		increased_ = true; // the first cut sets Rt = Rc
	}
	cnp_alpha_ = true;
	cnp_decrease_ = true;
}

void DcqcnMellanox::on_timer(uint64_t now)
{
	for (;;) {
		uint64_t t = std::min({alpha_timer_, decrease_timer_, rate_timer_});
		if (t == UINT64_MAX || t > now)
			return;
		if (alpha_timer_ == t) {
			alpha_ = cnp_alpha_ ? (1 - p_.g) * alpha_ + p_.g : (1 - p_.g) * alpha_;
			cnp_alpha_ = false;
			alpha_timer_ += p_.tau_alpha_ns;
		} else if (decrease_timer_ == t) {
			if (cnp_decrease_) {
				if (p_.clamp_target || increased_)
					rt_ = rc_;
				rc_ = std::max(double(p_.rmin_bps), rc_ * (1 - alpha_ / 2));
				t_ = 0;
				increased_ = false;
				rate_timer_ = t + p_.t_ns;
				cnp_decrease_ = false;
			}
			decrease_timer_ += p_.decrease_period_ns;
		} else {
			if (t_ == p_.f)
				rt_ += double(p_.rai_bps);
			else if (t_ > p_.f)
				rt_ += double(p_.rhai_bps);
			rt_ = std::min(rt_, line_);
			rc_ = std::min((rt_ + rc_) / 2, line_);
			t_++;
			increased_ = true;
			rate_timer_ += p_.t_ns;
		}
	}
}

uint64_t DcqcnMellanox::next_timer() const { return std::min({alpha_timer_, decrease_timer_, rate_timer_}); }


// ---------------------------------------------------------------------------------------------
// Notification point

std::optional<CnpOut> DcqcnNp::on_data(const NpPacket &p)
{
	if (!p.ce)
		return std::nullopt;
	if (!sent_ || p.now_ns - last_ >= n_) {
		sent_ = true;
		last_ = p.now_ns;
		pending_ = false;
		return CnpOut{p.psn, {}};
	}
	pending_ = true;
	pending_psn_ = p.psn;
	return std::nullopt;
}

std::optional<CnpOut> DcqcnNp::on_timer(uint64_t now)
{
	if (!pending_ || now < last_ + n_)
		return std::nullopt;
	last_ = now;
	pending_ = false;
	return CnpOut{pending_psn_, {}};
}

} // namespace qn::tp::cc

namespace qn::tp::cc {

Derived dcqcn_derive(const Fabric &f, bool scale, bool window)
{
	constexpr double kPaperRate = 40e9;        // ConnectX-3 Pro / Trident II testbed [§6]
	constexpr double kPaperLoopNs = 50'000;    // the feedback delay tau* the parameters assume [§5]
	const double mtu2 = 2.0 * f.mtu;
	Derived d;
	double kmin = 5'000, kmax = 200'000;
	if (scale) {
		const double s_c = double(f.line_rate_bps) / kPaperRate;
		const double n_ns = std::max(kPaperLoopNs, double(f.base_rtt_ns));
		const double s_t = n_ns / kPaperLoopNs;
		const DcqcnParams paper;
		kmin = std::max(mtu2, 5'000 * s_c * s_t);
		kmax = std::max(mtu2, 200'000 * s_c * s_t);
		auto ns = [](double v) { return std::to_string(uint64_t(std::llround(v))) + "ns"; };
		auto bps = [](double v) { return std::to_string(uint64_t(std::llround(v))) + "bps"; };
		d.overrides["n"] = ns(n_ns);
		d.overrides["t"] = ns(1.1 * n_ns);
		d.overrides["tau_alpha"] = ns(1.1 * n_ns);
		d.overrides["b"] = std::to_string(uint64_t(std::llround(double(paper.b_bytes) * s_c * s_t)));
		d.overrides["rai"] = bps(double(paper.rai_bps) * s_c);
		d.overrides["rhai"] = bps(double(paper.rhai_bps) * s_c);
		d.overrides["rmin"] = bps(double(paper.rmin_bps) * s_c);
		char b[400];
		std::snprintf(b, sizeof(b),
			      "dcqcn: s_C = %.4g (%.4g Gbit/s / 40), N = max(50 us, base RTT %.4g us) = %.4g us, s_T = %.4g "
			      "(common.md §7)",
			      s_c, double(f.line_rate_bps) / 1e9, double(f.base_rtt_ns) / 1e3, n_ns / 1e3, s_t);
		d.notes.push_back(b);
		std::snprintf(b, sizeof(b),
			      "dcqcn: T = tau' = 1.1 N = %.4g us; B = 10 MB x s_C x s_T = %s B; R_AI %s, R_HAI %s, R_min %s "
			      "(x s_C); g 1/256, F 5 kept",
			      1.1 * n_ns / 1e3, d.overrides["b"].c_str(), d.overrides["rai"].c_str(),
			      d.overrides["rhai"].c_str(), d.overrides["rmin"].c_str());
		d.notes.push_back(b);
	} else {
		d.notes.push_back("dcqcn: the paper's parameters unchanged (Fig. 14; the fabric is the paper's)");
	}
	const auto ki = uint64_t(std::llround(kmin)), ka = uint64_t(std::llround(kmax));
	// Marking at dequeue: common.md §3's recommendation (the signal leaves with the packet that
	// saw the queue). At enqueue the mark also waits out the queue in front of it, which on
	// the 10 Gbit/s star costs DCQCN 8 points of goodput (docs/cc.md "Reference model").
	// (PFC follows the scheme's loss mode: the registry sets it, cc.cc derive())
	d.switch_settings = {{"ecn", "on"},
			     {"ecn_at", "dequeue"},
			     {"kmin", std::to_string(ki)},
			     {"kmax", std::to_string(ka)},
			     {"pmax", "0.01"}};
	d.notes.push_back("dcqcn: switch RED/ECN Kmin " + std::to_string(ki) + " B, Kmax " + std::to_string(ka) +
			  " B, Pmax 1%" + (scale ? " (5 KB / 200 KB x s_C x s_T, at least 2 MTU)" : "") +
			  ", decided at dequeue (common.md §3)");
	if (window)
		d.notes.push_back("dcqcn+w: W = BDP = line rate x base RTT (dcqcn.md §3.5)");
	return d;
}

} // namespace qn::tp::cc
