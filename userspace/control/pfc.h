// pfc.h - IEEE 802.1Qbb priority flow control frames (common.md §2).
//
// 64-byte frame: DA 01:80:c2:00:00:01, SA, EtherType 0x8808, opcode 0x0101, priority-enable
// vector (byte 17 bit i = Time[i] valid), Time[0..7] in quanta (512 bit times each), zero pad
// to 60 bytes (the NIC adds the FCS). Time 0 = XON.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "control/packet.h"
#include "control/topology.h"

namespace qn {

constexpr size_t kPfcFrameLen = 60;

// Return: a PFC frame from `src` pausing each priority whose bit is set in `prio_mask` for
// quanta[prio] (0 resumes it).
Bytes build_pfc_frame(const Mac &src, uint8_t prio_mask, const std::array<uint16_t, 8> &quanta);
// The frame the switch's control thread sends for one qn_pfc_event: `quanta` for priority `prio`
// alone (0 = XON).
Bytes pfc_frame_for(const Mac &src, uint32_t prio, uint16_t quanta);
// A PFC frame naming no priority: changes nothing where it arrives. switchd sends it through a
// port's qdisc (control class) to make the qdisc run once its pause gate opens.
Bytes pfc_frame_kick(const Mac &src);

struct PfcFrame {
	uint8_t prio_mask = 0;
	std::array<uint16_t, 8> quanta{};
};
// Parse a PFC frame (untagged). Return: nothing when `f` is not a valid 802.1Qbb frame.
std::optional<PfcFrame> parse_pfc_frame(const Bytes &f);

// Wall-clock ns of `quanta` pause quanta on a link of `wall_rate_bps` (512 bit times each).
uint64_t pfc_quanta_ns(uint32_t quanta, uint64_t wall_rate_bps);

} // namespace qn
