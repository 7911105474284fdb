// pbfs.h - PB-FS, postcard-based fast start (Aaronson & Cohen, IFIP Networking 2024; rules:
// ../shared/specs/pbfs.md, section numbers below refer to it; docs/pbfs.md): a start policy
// composed with any base algorithm (`dcqcn/pbfs`, `dcqcn+w/pbfs`).
//
// A flow is a message. A message of at least line rate x tau / 8 bytes marks its Δ-th, 2Δ-th, ...
// data packet with the PBT bit (qn_abi.h QN_TOS_PBT) until its first ACK or postcard (M0-M2);
// retransmissions and smaller messages never. A switch whose egress port finds itself congested
// (Definition 1) answers a marked packet with a CC-postcard; the policy turns it into
// c = I_PBT / (mu I) (Algorithm 1, H1) and, when c > 1, sets the base algorithm's rate to
// MaxRate / c (for DCQCN Rc = Rt: Algorithm::set_rate), the most restrictive switch winning (H2).
// The PBT interval ends (later postcards ignored) on the first ACK or CNP on which the base
// algorithm changed its rate or window (H3; DCQCN changes it on a CNP), or 2 DC_RTT after the
// message started (the safety of §3.4).
//
// Units: fabric ns, bit/s, bytes.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/params.h"
#include "transport/cc/cc.h"

namespace qn::tp::cc {

struct PbfsParams {
	uint64_t dc_rtt_ns = 0;             // DC_RTT: the fabric's largest base RTT (derived)
	uint32_t delta = 0;                 // Δ: marking distance (packets)
	uint64_t tau_ns = 0;                // τ: a PB-FS flow's minimum transmit time (0 = DC_RTT / 2)
	uint64_t i_min_bytes = 0;           // I_min: floor of the available bytes (0 = 0.2 x max BDP)
	double mu = 0.95;                   // μ: target utilisation
	uint64_t safety_ns = 0;             // the PBT interval's end after the message start (0 = 2 DC_RTT)
};

const ParamTable<PbfsParams> &pbfs_table();
Status pbfs_override(PbfsParams &p, const std::string &key, const std::string &value);
std::string pbfs_describe(const PbfsParams &p);

// The parameters of §4 for a fabric: DC_RTT = its largest base RTT; a packet time = a full frame
// at the host rate; N = floor(DC_RTT / (9 packet times)) slots per half DC_RTT (a slot about 4.5
// packet times); slot = DC_RTT / 2N; Δ = the smallest with Δ packet times >= slot; T_Δ = Δ packet
// times; τ = DC_RTT / 2; I_min = 0.2 x line rate x DC_RTT / 8.
struct PbfsDerived {
	uint64_t dc_rtt_ns = 0;
	double pkt_ns = 0;                  // one full frame (with its wire overhead) at the host rate
	uint32_t n = 0;
	uint64_t slot_ns = 0;
	uint32_t delta = 0;
	uint64_t t_delta_ns = 0;
	uint64_t tau_ns = 0;
	uint64_t min_bytes = 0;             // the smallest PB-FS message: line rate x tau / 8
	uint64_t i_min_bytes = 0;
};
Result<PbfsDerived> pbfs_rules(const Fabric &f);
// The switch settings and notes of pbfs_rules (the StartPart's derive).
Result<Derived> pbfs_derive(const Fabric &f);

// Algorithm 1's H1 on one postcard: c = I_PBT / (mu I). Exposed for the unit tests.
double pbfs_c(const PostcardEvent &p, uint32_t delta, uint64_t dc_rtt_ns, uint64_t i_min_bytes, double mu);

struct PbfsStats {
	uint64_t flows = 0;                 // messages started
	uint64_t eligible = 0;              // of them, large enough for PB-FS
	uint64_t marked = 0;                // data packets sent with the PBT bit
	uint64_t postcards = 0;             // postcards received
	uint64_t ignored = 0;               // of them, after the PBT interval or for an ineligible flow
	uint64_t rate_updates = 0;          // of them, the ones that set the rate
	uint64_t safety_ends = 0;           // PBT intervals ended by the 2 DC_RTT safety
};

class Pbfs final : public StartPolicy {
public:
	// line_rate_bps: MaxRate; p fully resolved (every 0 replaced by its rule).
	Pbfs(const PbfsParams &p, uint64_t line_rate_bps);
	std::string name() const override { return "pbfs"; }
	uint64_t initial_rate(uint64_t line_rate_bps) const override { return line_rate_bps; }
	void on_message(const MessageStart &m, Algorithm &a) override;
	void on_tx(const TxPacket &p, TxMarks &m, Algorithm &a) override;
	void on_ack(const AckSample &e, bool changed, Algorithm &a) override;
	void on_cnp(const CnpEvent &e, bool changed, Algorithm &a) override;
	void on_postcard(const PostcardEvent &e, Algorithm &a) override;
	void on_timer(uint64_t now_ns, Algorithm &a) override;
	uint64_t next_timer() const override;
	void counters(CounterList &out) const override;
	std::string describe() const override { return pbfs_describe(p_); }

	const PbfsStats &stats() const { return st_; }
	bool marking() const { return marking_; }
	bool ignoring() const { return ignore_; }
	uint64_t cur_rate_bps() const { return cur_rate_; }

private:
	void end_interval() { marking_ = false, ignore_ = true, safety_at_ = UINT64_MAX; }

	PbfsParams p_;
	uint64_t max_rate_;
	uint64_t min_bytes_;                // line rate x tau / 8
	bool pbfs_ = false, marking_ = false, ignore_ = true;
	uint64_t msn_ = UINT64_MAX;         // the current message (flow)
	uint32_t pkt_idx_ = 0;              // its fresh data packets sent
	std::map<uint64_t, double> l_;      // L: the latest c per switch
	std::optional<uint64_t> id_;        // ID: the switch that set the rate
	uint64_t cur_rate_ = 0;             // CurRate
	uint64_t safety_at_ = UINT64_MAX;
	PbfsStats st_;
};

} // namespace qn::tp::cc
