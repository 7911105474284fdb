// frames.h - the raw AF_XDP baselines' one transmit step, shared by `bench transport` and
// `bench fabric`: copy a frame into a free TX chunk and queue it (no kick).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "transport/port.h"

namespace qn::bench {

// Return: false when no TX chunk is free or the TX ring is full (the frame is not queued).
inline bool push_frame(tp::FramePort &p, const uint8_t *data, uint32_t len)
{
	const uint64_t a = p.tx_alloc();
	if (a == UINT64_MAX)
		return false;
	std::memcpy(p.frame(a), data, len);
	if (!p.tx_push(a, len)) {
		p.tx_free(a);
		return false;
	}
	return true;
}

inline bool push_frame(tp::FramePort &p, const std::vector<uint8_t> &f)
{
	return push_frame(p, f.data(), uint32_t(f.size()));
}

} // namespace qn::bench
