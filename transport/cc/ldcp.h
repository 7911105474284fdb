// ldcp.h - LDCP, the PFC-free Low Delay Control Protocol (draft-dai-tsvwg-pfc-free-congestion-
// control; rules: ../shared/specs/ldcp.md, section numbers below refer to it; docs/ldcp.md).
//
// A per-ACK window (PAWA, §3.3 T4): +alpha/cw per unmarked packet, -beta per marked one, for
// cw >= 1; below one packet +gamma on an unmarked ACK and max(gamma, eta cw) on a marked one,
// the QP's rate limiter sending one packet per RTT/cw (T5; the base RTT until an RTT sample
// exists). A fast start (T0-T3): a flow (a message that finds the QP idle) starts with
// cw = IW = BDP; its packets sent before the first ACK are Not-ECT, which the switch's LDCP stage
// drops first once the queue reaches K (bpf/include/ldcp.h), except the last one (the IW-th, or
// the message's last), which is ECT so loss is seen without a timeout. Fast start ends on loss
// (cw = the packets acknowledged in order, go-back-N by the QP) or when every fast-start packet
// is acknowledged (cw = IW). Retransmissions are ECT. No notification point: the receiver echoes
// CE in every ACK (per-packet ACKs; with coalescing a marked packet is acknowledged at once,
// Scheme::ack_on_ce).
//
// Units: fabric ns, bit/s, bytes; the window in packets (double, may be below 1).
#pragma once

#include <string>
#include <vector>

#include "common/params.h"
#include "transport/cc/cc.h"

namespace qn::tp::cc {

struct LdcpParams {
	double alpha = 1.0;                 // additive step per RTT (packets)
	double beta = 0.5;                  // decrement per marked packet (packets)
	double gamma = 0.125;               // step below one packet, and the minimum window
	double eta = 0.5;                   // cut below one packet
	double cw_min = 0;                  // window floor in packets (0 = gamma; 1 = no sub-packet windows)
	uint64_t iw_bytes = 0;              // fast start's initial window (0 = the BDP)
	uint64_t cwnd_max_bytes = 0;        // window cap (0 = 2 BDP)
	bool fast_start = true;             // off: a flow starts in the stable stage at cw = IW
};

const ParamTable<LdcpParams> &ldcp_table();
Status ldcp_override(LdcpParams &p, const std::string &key, const std::string &value);
std::string ldcp_describe(const LdcpParams &p);

// The switch profile for a fabric (§4): BDP = line rate x base RTT / 8; Kmin = 0.2 BDP,
// Kmax = BDP (each at least 2 MTU, Kmax above Kmin), Pmax = 1, marking at dequeue; K = Kmin
// (Not-ECT drop); IW = BDP, cwnd_max = 2 BDP. Notes print q* (ldcp_qstar) for a range of N.
Derived ldcp_derive(const Fabric &f, bool scale);

// The fluid model's fixed point (§3.3): the queue q* at which p(q*) = alpha / (alpha + beta W*),
// W* = C (d + q*/C) / (N frame) packets per flow, p the RED ramp (kmin, kmax, pmax) on bytes.
// frame_wire_bytes: a full data frame with its wire overhead; d: the base RTT. Solved by
// bisection on [kmin, kmax]; returns kmax when even p = pmax cannot hold N flows (the ramp's top).
double ldcp_qstar(double alpha, double beta, uint64_t line_rate_bps, uint64_t base_rtt_ns, double frame_wire_bytes,
		  int flows, double kmin, double kmax, double pmax);

// Counters a test or trace reads.
struct LdcpStats {
	uint64_t fs_entered = 0;            // flows that started in fast start
	uint64_t fs_exit_loss = 0;          // fast start left on loss (T3a)
	uint64_t fs_exit_acked = 0;         // ... when every fast-start packet was acknowledged (T3b)
	uint64_t fs_not_ect = 0;            // Not-ECT packets sent
	uint64_t loss_events = 0;           // stable-stage losses (one per RTT) and timeouts
	uint64_t below_one = 0;             // ACKs handled with cw < 1
};

class Ldcp final : public Algorithm {
public:
	// payload_bytes: a full packet's payload (the window's unit in the QP's byte accounting);
	// frame_wire_bytes: its frame with wire overhead (the rate below one packet);
	// bdp_bytes: for IW and cwnd_max defaults; base_rtt_ns: the RTT before a sample exists.
	Ldcp(const LdcpParams &p, uint64_t line_rate_bps, uint32_t payload_bytes, uint32_t frame_wire_bytes,
	     uint64_t bdp_bytes, uint64_t base_rtt_ns);
	std::string name() const override { return "ldcp"; }
	void start(uint64_t now_ns, uint64_t rate_bps) override;
	void set_rate(uint64_t now_ns, uint64_t rate_bps) override;
	void on_message(const MessageStart &m) override;
	void on_tx(const TxPacket &p, TxMarks &m) override;
	void on_ack(const AckSample &a) override;
	void on_timeout(uint64_t now_ns) override;
	uint64_t rate_bps() const override;
	uint64_t window_bytes() const override;

	// State, for tests and traces.
	double cw() const { return cw_; }
	bool in_fast_start() const { return fs_; }
	double iw_pkts() const { return iw_; }
	uint64_t rtt_ns() const { return rtt_; }
	const LdcpStats &stats() const { return st_; }

private:
	void clamp();

	LdcpParams p_;
	uint64_t line_;
	uint32_t payload_, frame_wire_;
	double iw_ = 1, cw_max_ = 2, floor_ = 0.125;
	uint64_t rtt_;
	double cw_ = 1;
	bool fs_ = false;                   // the window is in fast start (T3 not yet met)
	bool fs_sending_ = false;           // new packets are fast-start packets (no ACK yet, < IW sent)
	uint64_t fs_sent_ = 0, fs_acked_ = 0;
	uint64_t outstanding_ = 0;          // new packets sent, not yet acknowledged (idle: 0)
	uint64_t last_loss_ns_ = 0;
	bool lost_once_ = false;
	LdcpStats st_;
};

} // namespace qn::tp::cc
