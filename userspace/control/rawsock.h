// rawsock.h - AF_PACKET sockets bound to an interface inside a namespace: the raw senders
// (kernel-socket independent, so not back-pressured by a socket buffer) and receivers used by
// the integration tests and `quench bench switch`.
//
// Two send paths: sendmmsg() (skbs are linear below a page) and a PACKET_TX_RING (TPACKET_V2),
// whose skbs carry the frame in page fragments: non-linear, as GSO paths produce them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "control/packet.h"

namespace qn {

class RawSocket {
public:
	// Open a socket bound to `ifname` inside namespace `netns` ("" = current). With
	// qdisc_bypass, frames skip the sending device's qdisc (PACKET_QDISC_BYPASS). A socket that
	// only sends (receive false) is bound to protocol 0 and never hooked into the device's
	// receive and transmit taps: one that takes every protocol (ETH_P_ALL) gets a clone of
	// every frame the device sends or receives, which on a switch port is every packet of
	// every hop (docs/PERFORMANCE.md "Transmit-only packet sockets").
	static Result<RawSocket> open(const std::string &netns, const std::string &ifname, bool qdisc_bypass,
				      bool receive = true);
	RawSocket(RawSocket &&o) noexcept;
	RawSocket &operator=(RawSocket &&o) noexcept;
	RawSocket(const RawSocket &) = delete;
	~RawSocket();

	// Send frames with one sendmmsg() per 64. Return: frames accepted by the kernel.
	Result<size_t> send_batch(const std::vector<Bytes> &frames);
	// The same without copies: frames by pointer.
	Result<size_t> send_batch(const std::vector<const Bytes *> &frames);
	// Set up a TX ring of `slots` frames of at most `frame_max` bytes.
	Status enable_tx_ring(uint32_t slots, uint32_t frame_max);
	// Queue frames into the TX ring and kick. Return: frames queued (stops when the ring is full).
	Result<size_t> ring_send(const std::vector<Bytes> &frames);
	// Receive one frame, waiting at most timeout_ms. Return: its length (0 on timeout).
	Result<size_t> recv(Bytes &buf, int timeout_ms);
	int fd() const { return fd_; }

private:
	RawSocket() = default;
	int fd_ = -1;
	int ifindex_ = 0;
	uint8_t *ring_ = nullptr;
	size_t ring_len_ = 0;
	uint32_t slots_ = 0, slot_size_ = 0, next_ = 0;
};

// Monotonic clock in ns (CLOCK_MONOTONIC); the raw tools put it into payloads.
uint64_t mono_ns();

} // namespace qn
