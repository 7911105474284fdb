// port.h - what the engine sends and receives frames through: one host's NIC port or one end
// of a cable. XskPort (xsk.h) is the AF_XDP socket on a veth; FakePort (fake_port.h) keeps
// frames in memory so the engine's receive and transmit paths run in unit tests without root
// (eRPC's FakeTransport idea, ../shared/STYLE.md §9).
//
// Frames live in a UMEM-like area of 4096-byte chunks addressed by offset; frame() is not
// virtual (the engine calls it for every frame). Units: bytes, CLOCK_MONOTONIC ns for stamps.
#pragma once

#include <cstdint>

#include "common/result.h"

namespace qn::tp {

inline constexpr uint32_t kChunkBytes = 4096;

struct XskStats {
	uint64_t rx_dropped = 0;          // kernel: dropped for other reasons (e.g. too large)
	uint64_t rx_ring_full = 0;        // kernel: RX ring full
	uint64_t rx_fill_empty = 0;       // kernel: no fill-ring frame available
	uint64_t tx_invalid = 0;          // kernel: invalid TX descriptors
	uint64_t tx_ring_empty = 0;
	// rx_dropped already counts frames lost to an empty fill ring.
	uint64_t drops() const { return rx_dropped + rx_ring_full + tx_invalid; }
};

class FramePort {
public:
	virtual ~FramePort() = default;

	// Return: a file descriptor that polls readable when frames arrive (-1: none, never sleep on it).
	virtual int fd() const = 0;
	uint8_t *frame(uint64_t addr) const { return area_ + addr; }

	// --- RX: peek up to n descriptors; addr/len pairs are valid until rx_recycle + refill.
	virtual uint32_t rx_peek(uint32_t n, uint64_t *addr, uint32_t *len) = 0;
	// Return: the arrival stamp (CLOCK_MONOTONIC ns) of a received frame, or 0 if none.
	virtual uint64_t rx_stamp(uint64_t addr) const = 0;
	// Give a received frame back; clears its stamp.
	virtual void rx_recycle(uint64_t addr) = 0;
	// Make recycled frames available for reception again (batched).
	virtual void refill() = 0;

	// --- TX
	// Return: a free TX frame address, or UINT64_MAX when the pool is exhausted.
	virtual uint64_t tx_alloc() = 0;
	virtual void tx_free(uint64_t addr) = 0;
	// Queue a frame for transmission. Return: false when the TX ring is full (frame not taken).
	virtual bool tx_push(uint64_t addr, uint32_t len) = 0;
	// Hand queued frames to the wire and reap completed ones.
	virtual void flush() = 0;
	// Return: the port needs the engine again soon even with nothing new to send: frames wait
	// in the TX ring for a kick (the kernel refused them), or no TX frame is free while the
	// kernel still holds some (only their completions free them). Frames the kernel has taken
	// (queued in a switch, paused) need nothing: their completions are reaped by the next flush.
	virtual bool tx_needs_service() const = 0;

	virtual Result<XskStats> stats() const = 0;
	// Kicks after which frames were still in the TX ring (the kernel refused them).
	virtual uint64_t tx_held() const { return 0; }
	// Transmit kicks (send calls) so far.
	virtual uint64_t kicks() const { return 0; }
	// The most TX frames the kernel held at once (pushed, not yet completed: in the TX ring, in
	// a switch's queue, behind a pause) since the port opened: what its TX half of the UMEM
	// had to hold.
	virtual uint32_t tx_frames_peak() const { return 0; }

protected:
	uint8_t *area_ = nullptr;
};

} // namespace qn::tp
