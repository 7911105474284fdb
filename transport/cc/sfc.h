// sfc.h - SFC's reaction point (Le et al., "SFC: near-source congestion signaling and flow
// control"; rules: ../shared/specs/sfc.md §3.5, §6): a BTS pauses the QP it names until
// now + its pause time; a newer BTS replaces the end, earlier or later (latest queue information
// wins); a pause time of 0 means "near the threshold", no pause. Rate and window are left to
// the base algorithm: SFC is flow control composed with any base (`dcqcn+w/sfc`). While a QP is
// paused the engine holds its retransmission deadline (spec §6.6, docs/sfc.md).
//
// The switch side is bpf/include/sfc.h; sfc_derive() gives its settings for a fabric.
#pragma once

#include "transport/cc/cc.h"

namespace qn::tp::cc {

class SfcPause final : public FlowControl {
public:
	std::string name() const override { return "sfc"; }
	void on_bts(const BtsEvent &e) override;
	uint64_t pause_until_ns() const override { return until_ns_; }
	uint64_t bts_seen() const { return bts_; }

private:
	uint64_t until_ns_ = 0;
	uint64_t bts_ = 0;
};

// The switch settings SFC needs on a fabric (sfc.md §4): BDP = line rate x base RTT / 8,
// Q_Th = 2 BDP, Q_Tg = 1 BDP, T_BF = base RTT / 2, with one note per value.
Derived sfc_derive(const Fabric &f);

} // namespace qn::tp::cc
