// dcqcn.h - DCQCN (Zhu et al., SIGCOMM 2015): the reaction point (sender rate control) in the
// paper's form and in the Mellanox/HPCC-simulator form, the notification point (CNP pacing),
// and DCQCN+W (a window on top). Rules: ../shared/specs/dcqcn.md (section numbers below refer
// to it); docs/cc.md lists every parameter and where it comes from.
//
// Units: fabric ns, bit/s, bytes. Rates are kept as doubles (the equations halve and average).
#pragma once

#include <map>
#include <string>

#include "common/params.h"
#include "transport/cc/cc.h"

namespace qn::tp::cc {

struct DcqcnParams {
	enum Variant : int { Paper = 0, Mellanox = 1 }; // the order of the table's choices
	int variant = Paper;
	double g = 1.0 / 256;               // alpha gain
	uint64_t tau_alpha_ns = 55'000;     // alpha decay period (paper: decay after no CNP for tau')
	uint64_t t_ns = 55'000;             // rate-increase timer T
	uint64_t b_bytes = 10'000'000;      // byte counter B (0 = off; Mellanox: off)
	uint32_t f = 5;                     // fast-recovery steps F
	uint64_t rai_bps = 40'000'000;      // additive increase step R_AI
	uint64_t rhai_bps = 200'000'000;    // hyper increase step R_HAI
	uint64_t rmin_bps = 100'000'000;    // rate floor R_min
	double alpha0 = 1.0;                // initial alpha
	uint64_t cnp_interval_ns = 50'000;  // NP: at most one CNP per this interval (N)
	bool clamp_target = true;           // Rt = Rc on every cut (paper); Mellanox: only after an increase
	uint64_t decrease_period_ns = 4'000; // Mellanox: rate_reduce_monitor_period
	double rate_on_first_cnp = 1.0;     // Mellanox: Rc = Rt = this x Rc on the first CNP (§6-12)
	bool qcn_quirk = false;             // RP5 (DCQCN-ns3's Rt > 10 Rc rule)
	// DCQCN+W
	bool window = false;
	bool var_window = false;            // W = BDP x Rc / line rate (else W = BDP)
	uint64_t window_bytes = 0;          // BDP_max; 0 = the setup's bdp_bytes
};

// Named parameter sets: "paper" (Fig. 14 + DCQCN-ns3 for what the paper leaves open) and
// "mellanox" (ConnectX firmware defaults as listed in dcqcn.md §4, Mellanox variant).
Result<DcqcnParams> dcqcn_params(const std::string &set);
// The parameter table (params.h): every key `--cc-set`, an experiment's `cc` line and a
// preset may set, with its kind, range and meaning; parsing, validation, describe and usage.
const ParamTable<DcqcnParams> &dcqcn_table();
// Apply one override ("g=0.0039", "t=55us", "b=10MB", "f=5", "rai=40Mbps", ...) via the table.
Status dcqcn_override(DcqcnParams &p, const std::string &key, const std::string &value);
// Return: every parameter in effect, "name=value" as the table accepts it (window only for
// DCQCN+W).
std::string dcqcn_describe(const DcqcnParams &p);
// DCQCN's parameters for a fabric (dcqcn.md §4 "Scaling for emulator", common.md §7), relative to
// the paper's fabric: 40 Gbit/s and a 50 us feedback delay. s_C = C / 40 Gbit/s; N = max(50 us,
// base RTT) and s_T = N / 50 us; Kmin, Kmax x s_C x s_T (>= 2 MTU); T = tau' = 1.1 N;
// B = 10 MB x s_C x s_T; R_AI, R_HAI, R_min x s_C; g, F, Pmax kept. Without `scale`, the
// paper's values (switch: Kmin 5 KB, Kmax 200 KB, Pmax 1%). DCQCN+W: W = BDP (the engine's).
Derived dcqcn_derive(const Fabric &f, bool scale, bool window);
// Return: DCQCN+W's window at rate rc (0 when the window is off).
uint64_t dcqcn_window(const DcqcnParams &p, double rc, double line);

// The reaction point, paper form (§3.3 RP0-RP4, F steps per §6-11, alpha order per §6-1).
class DcqcnPaper final : public Algorithm {
public:
	DcqcnPaper(const DcqcnParams &p, uint64_t line_rate_bps) : p_(p), line_(double(line_rate_bps)) {}
	std::string name() const override { return p_.window ? "dcqcn+w" : "dcqcn"; }
	void start(uint64_t now_ns, uint64_t rate_bps) override;
	void set_rate(uint64_t now_ns, uint64_t rate_bps) override;
	void on_cnp(const CnpEvent &e) override;
	void on_tx(const TxPacket &p, TxMarks &m) override;
	void on_timer(uint64_t now_ns) override;
	uint64_t next_timer() const override;
	uint64_t rate_bps() const override { return uint64_t(rc_); }
	uint64_t window_bytes() const override { return dcqcn_window(p_, rc_, line_); }

	// State, for tests and traces.
	double rc() const { return rc_; }
	double rt() const { return rt_; }
	double alpha() const { return alpha_; }
	uint32_t bc_stage() const { return bc_; }
	uint32_t t_stage() const { return t_; }
	bool active() const { return active_; }

private:
	void increase();

	DcqcnParams p_;
	double line_;
	double rc_ = 0, rt_ = 0, alpha_ = 1;
	uint32_t bc_ = 0, t_ = 0;
	int64_t bytes_left_ = 0;
	bool active_ = false, hyper_ = false;
	bool increased_ = false;            // an increase happened since the last cut
	uint64_t rate_timer_ = UINT64_MAX, alpha_timer_ = UINT64_MAX;
};

// The reaction point, Mellanox/HPCC-simulator form (§3.4): periodic alpha update and
// decrease check, timer-only increase.
class DcqcnMellanox final : public Algorithm {
public:
	DcqcnMellanox(const DcqcnParams &p, uint64_t line_rate_bps) : p_(p), line_(double(line_rate_bps)) {}
	std::string name() const override { return p_.window ? "dcqcn+w" : "dcqcn"; }
	void start(uint64_t now_ns, uint64_t rate_bps) override;
	void set_rate(uint64_t now_ns, uint64_t rate_bps) override;
	void on_cnp(const CnpEvent &e) override;
	void on_timer(uint64_t now_ns) override;
	uint64_t next_timer() const override;
	uint64_t rate_bps() const override { return uint64_t(rc_); }
	uint64_t window_bytes() const override { return dcqcn_window(p_, rc_, line_); }
	double rc() const { return rc_; }
	double rt() const { return rt_; }
	double alpha() const { return alpha_; }
	uint32_t t_stage() const { return t_; }

private:
	DcqcnParams p_;
	double line_;
	double rc_ = 0, rt_ = 0, alpha_ = 1;
	uint32_t t_ = 0;
	bool active_ = false, cnp_alpha_ = false, cnp_decrease_ = false, increased_ = false;
	uint64_t alpha_timer_ = UINT64_MAX, decrease_timer_ = UINT64_MAX, rate_timer_ = UINT64_MAX;
};

// The notification point (§3.2): a CNP on a CE-marked arrival when none was sent in the last
// N; otherwise at most one more at the end of the interval if a marked packet arrived in it.
// A CNP names the PSN of the CE-marked packet behind it (the latest one, for the interval's
// end); its payload is zero (common.md §1.3).
class DcqcnNp final : public NotificationPoint {
public:
	explicit DcqcnNp(uint64_t interval_ns) : n_(interval_ns) {}
	std::optional<CnpOut> on_data(const NpPacket &p) override;
	std::optional<CnpOut> on_timer(uint64_t now_ns) override;
	uint64_t next_timer() const override { return pending_ ? last_ + n_ : UINT64_MAX; }

private:
	uint64_t n_;
	uint64_t last_ = 0;
	uint32_t pending_psn_ = 0;          // the latest CE-marked PSN not yet answered
	bool sent_ = false, pending_ = false;
};

} // namespace qn::tp::cc
