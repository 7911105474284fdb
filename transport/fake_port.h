// fake_port.h - a FramePort in memory (port.h): frames the engine transmits are captured in
// order, frames a test injects are received. No kernel, no root: the engine's receive and
// transmit paths run in unit tests on it with a fake clock (tests/unit/test_engine.cc).
//
// Units: bytes; stamps are 0 (the engine then takes the frame's arrival as "now").
#pragma once

#include <algorithm>
#include <deque>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "transport/port.h"

namespace qn::tp {

class FakePort final : public FramePort {
public:
	// `frames` chunks: the first half receives, the second half transmits (as XskPort).
	explicit FakePort(uint32_t frames = 256) : mem_(size_t(frames) * kChunkBytes)
	{
		area_ = mem_.data();
		for (uint32_t i = 0; i < frames / 2; i++)
			rx_free_.push_back(uint64_t(i) * kChunkBytes);
		for (uint32_t i = frames / 2; i < frames; i++)
			tx_pool_.push_back(uint64_t(i) * kChunkBytes);
	}

	// --- the test's side
	// Deliver a frame to the engine. Return: false when every RX frame is in use (dropped,
	// counted in stats().rx_ring_full).
	bool inject(std::span<const uint8_t> f)
	{
		if (rx_free_.empty() || f.size() > kChunkBytes) {
			dropped_++;
			return false;
		}
		uint64_t a = rx_free_.front();
		rx_free_.pop_front();
		std::copy(f.begin(), f.end(), area_ + a);
		rx_.push_back({a, uint32_t(f.size())});
		return true;
	}
	// Return: every frame transmitted since the last call, in order (copies).
	std::vector<std::vector<uint8_t>> take_tx() { return std::exchange(sent_, {}); }
	uint64_t tx_frames() const { return tx_count_; }

	// --- FramePort
	int fd() const override { return -1; }
	uint32_t rx_peek(uint32_t n, uint64_t *addr, uint32_t *len) override
	{
		uint32_t k = 0;
		while (k < n && !rx_.empty()) {
			addr[k] = rx_.front().first;
			len[k] = rx_.front().second;
			rx_.pop_front();
			k++;
		}
		return k;
	}
	uint64_t rx_stamp(uint64_t) const override { return 0; }
	void rx_recycle(uint64_t addr) override { rx_free_.push_back(addr); }
	void refill() override {}
	uint64_t tx_alloc() override
	{
		if (tx_pool_.empty())
			return UINT64_MAX;
		uint64_t a = tx_pool_.back();
		tx_pool_.pop_back();
		return a;
	}
	void tx_free(uint64_t addr) override { tx_pool_.push_back(addr); }
	bool tx_push(uint64_t addr, uint32_t len) override
	{
		// The wire takes the frame at once: capture it and give the chunk back.
		sent_.emplace_back(area_ + addr, area_ + addr + len);
		tx_count_++;
		tx_pool_.push_back(addr);
		return true;
	}
	void flush() override {}
	bool tx_needs_service() const override { return false; }
	Result<XskStats> stats() const override
	{
		XskStats s;
		s.rx_ring_full = dropped_;
		return s;
	}

private:
	std::vector<uint8_t> mem_;
	std::deque<uint64_t> rx_free_;
	std::deque<std::pair<uint64_t, uint32_t>> rx_;
	std::vector<uint64_t> tx_pool_;
	std::vector<std::vector<uint8_t>> sent_;
	uint64_t tx_count_ = 0, dropped_ = 0;
};

} // namespace qn::tp
