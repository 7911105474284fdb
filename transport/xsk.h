// xsk.h - one AF_XDP socket in copy mode on a veth, with its own UMEM: created in the calling
// thread's network namespace (the socket's namespace is fixed at socket(); notes/datapath.md;
// the control plane enters the host's namespace around open()), then driven from the engine's
// thread in any namespace. The steering program (qn_steer) is attached by `topo up`; the
// socket registers itself in that program's XSKMAP, which the caller opened.
//
// UMEM: `frames` chunks of 4096 bytes; the first half feeds the fill ring (RX), the second
// half is the TX pool. Frames held by delay lines stay out of the rings until released.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "transport/port.h"

struct xsk_umem;
struct xsk_socket;

namespace qn::tp {

inline constexpr int kSndBufBytes = 256 << 20; // AF_XDP socket send buffer (see xsk.cc)

class XskPort final : public FramePort {
public:
	XskPort() = default;
	~XskPort() override;
	XskPort(const XskPort &) = delete;
	XskPort &operator=(const XskPort &) = delete;

	// Create the socket on `ifname` queue 0 in the calling thread's namespace and put it into
	// the XSKMAP `xskmap_fd` (-1 = none: the caller's XDP program redirects on its own).
	Status open(const std::string &ifname, int xskmap_fd, uint32_t frames = 4096, uint32_t ring = 2048);
	void close();

	int fd() const override;

	// --- RX: peek up to n descriptors; addr/len pairs are valid until rx_release + refill.
	uint32_t rx_peek(uint32_t n, uint64_t *addr, uint32_t *len) override;
	// Return: the XDP arrival stamp (CLOCK_MONOTONIC ns) of a received frame, or 0 if none.
	uint64_t rx_stamp(uint64_t addr) const override;
	// Give a received frame back (to the fill ring); clears its stamp.
	void rx_recycle(uint64_t addr) override;
	// Push recycled frames to the fill ring (batched).
	void refill() override;

	// --- TX
	// Return: a free TX frame address, or UINT64_MAX when the pool is exhausted.
	uint64_t tx_alloc() override;
	void tx_free(uint64_t addr) override { tx_pool_.push_back(addr); }
	// Queue a frame for transmission. Return: false when the TX ring is full (frame not taken).
	bool tx_push(uint64_t addr, uint32_t len) override;
	// Kick the kernel (copy mode moves at most 32 frames per kick) and reap completions.
	void flush() override;
	bool tx_needs_service() const override { return tx_in_ring() > 0 || (tx_pool_.empty() && tx_outstanding_ > 0); }
	size_t tx_free_frames() const { return tx_pool_.size(); }

	Result<XskStats> stats() const override;
	uint64_t kicks() const override { return kicks_; }
	uint32_t tx_frames_peak() const override { return std::max(tx_peak_, tx_outstanding_); }
	// Kicks after which frames were still in the TX ring (the kernel refused them).
	uint64_t tx_held() const override { return tx_held_; }

private:
	// Descriptors in the TX ring the kernel has not consumed yet.
	uint32_t tx_in_ring() const;

	struct Rings;
	Rings *r_ = nullptr;
	xsk_umem *umem_ = nullptr;
	xsk_socket *xsk_ = nullptr;
	size_t area_bytes_ = 0;
	std::vector<uint64_t> tx_pool_;
	std::vector<uint64_t> fill_pending_;
	uint32_t tx_outstanding_ = 0;    // pushed to the TX ring, not yet completed
	uint32_t tx_peak_ = 0;           // the most tx_outstanding_ was before a reap
	uint32_t tx_unkicked_ = 0;
	uint64_t kicks_ = 0;
	uint64_t tx_held_ = 0;
	uint32_t ring_size_ = 0;
	std::string ifname_;
};

} // namespace qn::tp
