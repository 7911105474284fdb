// pcn.h - PCN's end hosts (Cheng et al., NSDI 2020; rules: ../shared/specs/pcn.md, section
// numbers below refer to it; docs/pcn.md). The switch side, NP-ECN, is bpf/include/pcn.h.
//
// Receiver (notification point, §3.2): per flow (QP) an interval of at least T; at its end the
// marked fraction decides the flow's class (congested when at least theta of its packets were CE,
// "continuously marked") and the bytes received over the true elapsed time its receiving rate; a
// CNP carries both (§5 layout) every interval, congested or not. A flow that stops mid-interval is
// reported at t0 + 2T; after an idle gap longer than 2T the next interval starts at the next packet.
//
// Sender (reaction point, §3.3): a congested CNP sets rate = min(rate, (1 - w_min) recRate) and
// w = w_min; a non-congested one rate = rate (1 - w) + max_rate w, then w = w (1 - w) + w_max w
// (bounded by w_max). Rates are floored at R_min. Stale CNPs (cnp_seq not newer) are dropped.
//
// Every value the spec tags [R] is a parameter (pcn_table()); docs/pcn.md says why each default.
// Units: fabric ns, bit/s, bytes; recRate counts wire bytes (frame + 24 B: preamble, gap, FCS),
// the unit of the engine's rate limiter.
#pragma once

#include <array>
#include <optional>
#include <string>

#include "common/params.h"
#include "transport/cc/cc.h"

namespace qn::tp::cc {

struct PcnParams {
	uint64_t t_ns = 50'000;             // T: the NP's report (CNP) interval [R]
	double theta = 0.95;                // congested when >= theta of an interval's packets are CE [R]
	double w_min = 1.0 / 128;           // decrease margin and the reset value of w [R]
	double w_max = 0.5;                 // the self-weighted increase's largest weight [R]
	bool w_reset = true;                // a congested CNP resets w to w_min [R] (off: w kept)
	uint64_t rmin_bps = 100'000'000;    // R_min [D] (x s_C on other fabrics)
	bool cnp_all = true;                // CNPs to uncongested flows too (they drive the increase) [R]
	bool rp3 = false;                   // RP3 [D]: one increase step when no CNP came for 4T
};

const ParamTable<PcnParams> &pcn_table();
Status pcn_override(PcnParams &p, const std::string &key, const std::string &value);
std::string pcn_describe(const PcnParams &p);

// The switch profile and the hosts' values for a fabric (§4): T = max(50 us s_T, base RTT),
// K = max(2 MTU, BDP / 5) step marking at dequeue, NP-ECN on, R_min x s_C.
Derived pcn_derive(const Fabric &f, bool scale);

// The CNP payload (§5): rec_rate_kbps u32 BE, flags (bit0 CONG, bit1 RATE_VALID), 3 reserved,
// interval_ns u32 BE, cnp_seq u32 BE.
inline constexpr uint8_t kPcnCong = 0x1, kPcnRateValid = 0x2;
struct PcnCnp {
	uint64_t rec_rate_bps = 0;          // kbit/s on the wire
	bool congested = false;
	bool rate_valid = false;
	uint32_t interval_ns = 0;
	uint32_t seq = 0;
};
std::array<uint8_t, kCnpPayloadBytes> pcn_encode(const PcnCnp &c);
std::optional<PcnCnp> pcn_decode(std::span<const uint8_t> payload);

// Counters (cc.pcn.*).
struct PcnStats {
	uint64_t cnp_congested = 0;         // congested CNPs taken (decreases)
	uint64_t cnp_uncongested = 0;       // non-congested CNPs taken (increases)
	uint64_t cnp_stale = 0;             // dropped: cnp_seq not newer
	uint64_t cnp_bad = 0;               // dropped: no valid rate in the payload
	uint64_t rp3_steps = 0;             // increases from RP3's timer
};

class Pcn final : public Algorithm {
public:
	Pcn(const PcnParams &p, uint64_t line_rate_bps);
	std::string name() const override { return "pcn"; }
	void start(uint64_t now_ns, uint64_t rate_bps) override;
	void set_rate(uint64_t now_ns, uint64_t rate_bps) override;
	void on_cnp(const CnpEvent &e) override;
	void on_timer(uint64_t now_ns) override;
	uint64_t next_timer() const override;
	uint64_t rate_bps() const override { return uint64_t(rate_); }
	void counters(CounterList &c) const override;

	// State, for tests and traces.
	double rate() const { return rate_; }
	double w() const { return w_; }
	const PcnStats &stats() const { return st_; }

private:
	void increase();
	void clamp();

	PcnParams p_;
	double max_rate_;
	double rate_ = 0;
	double w_ = 0.5;
	bool have_seq_ = false;
	uint32_t last_seq_ = 0;
	uint64_t last_cnp_ns_ = 0;
	PcnStats st_;
};

// The notification point (§3.2), one per receiving QP.
class PcnNp final : public NotificationPoint {
public:
	explicit PcnNp(const PcnParams &p) : p_(p) {}
	std::optional<CnpOut> on_data(const NpPacket &p) override;
	std::optional<CnpOut> on_timer(uint64_t now_ns) override;
	uint64_t next_timer() const override;

	// For tests.
	uint64_t reports() const { return reports_; }
	uint64_t congested_reports() const { return congested_; }
	// Intervals closed without a report: only their opening packet arrived (no rate to measure).
	uint64_t unmeasured() const { return unmeasured_; }

private:
	std::optional<CnpOut> report(uint64_t now_ns);

	PcnParams p_;
	bool open_ = false;                 // an interval is open (t0 valid)
	uint64_t t0_ = 0, bytes_ = 0, last_rx_ = 0;
	uint32_t pkts_ = 0, ce_ = 0, last_psn_ = 0, seq_ = 0;
	uint64_t reports_ = 0, congested_ = 0, unmeasured_ = 0;
};

} // namespace qn::tp::cc
