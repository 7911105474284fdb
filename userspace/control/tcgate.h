// tcgate.h - the pause gate of a switch port's data class: a tbf qdisc under the HTB data class
// (1:20) of every switch-facing port, changed over a netlink socket kept open in the switch's
// namespace (libmnl). Open: a rate far above the link's, so HTB alone shapes. Closed: 1 byte/s
// with a burst of one frame, so nothing more leaves until it opens (tbf_change resets the
// bucket to its burst: at most the one frame at the head may still go). Why not throttle the
// HTB class itself: an HTB class keeps its token debt across a change, so after a throttle it
// stays silent until the debt is repaid (measured: nothing in 550 ms after restoring the rate;
// docs/switch.md "PFC").
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

struct mnl_socket;

namespace qn {

// What `tc` must create at topology bring-up for a port whose data class can be paused.
struct GateConfig {
	uint64_t open_rate_Bps = 0;  // bytes/s when open
	uint32_t open_burst = 0;     // bytes
	uint32_t closed_burst = 0;   // bytes: one maximum frame
	uint32_t limit = 0;          // the inner bfifo's limit, bytes (as the other leaves')
};

// The gate for a port of `mtu` bytes at `wall_rate_bps`, with a leaf limit of `fifo_limit`.
GateConfig gate_config(uint64_t wall_rate_bps, uint32_t mtu, uint64_t fifo_limit);
// The `tc -batch` line creating the (open) gate on `ifname`.
std::string gate_tc_line(const std::string &ifname, const GateConfig &g);

class TcGate {
public:
	// A netlink route socket opened inside namespace `netns` ("" = current).
	static Result<TcGate> open(const std::string &netns);
	TcGate(TcGate &&o) noexcept;
	TcGate &operator=(TcGate &&o) noexcept;
	TcGate(const TcGate &) = delete;
	~TcGate();
	// Close (closed = true) or open the gate on `ifindex`; waits for the kernel's answer.
	Status set(int ifindex, const GateConfig &g, bool closed);

private:
	TcGate() = default;
	mnl_socket *nl_ = nullptr;
	uint32_t seq_ = 0;
	uint32_t portid_ = 0;
};

} // namespace qn
