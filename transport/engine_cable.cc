// engine_cable.cc - cables: inter-switch links with propagation delay, one delay line each
// way, order preserving (DESIGN.md §1).
#include "transport/shard.h"

#include <cstring>

namespace qn::tp {

void Shard::rx_cable(Cable &c, uint64_t now)
{
	uint64_t addr[64];
	uint32_t len[64];
	for (int k = 0; k < 2; k++) {
		for (;;) {
			uint32_t n = c.end[k]->rx_peek(64, addr, len);
			frames_rcvd_ += n;
			for (uint32_t i = 0; i < n; i++) {
				if (lose(c.error_rate)) {
					c.dropped++;
					c.end[k]->rx_recycle(addr[i]);
					continue;
				}
				// store and forward: the last bit arrives one serialization after the
				// upstream HTB released the frame, then the propagation delay
				c.line[k].push_back(Held{arrival(*c.end[k], addr[i], now) +
								 (opt_.store_and_forward ? serialization_ns(wire_bytes(len[i]), c.rate_bps) : 0) +
								 c.delay_ns + opt_.switch_delay_ns,
							 addr[i], len[i]});
			}
			if (n < 64)
				break;
		}
	}
	for (int k = 0; k < 2; k++) {
		FramePort &in = *c.end[k], &out = *c.end[1 - k];
		while (!c.line[k].empty() && c.line[k].front().release_ns <= now) {
			Held r = c.line[k].front();
			uint64_t a = out.tx_alloc();
			if (a == UINT64_MAX)
				break; // retry next iteration; order is kept
			std::memcpy(out.frame(a), in.frame(r.addr), r.len);
			if (!out.tx_push(a, r.len)) {
				out.tx_free(a);
				break;
			}
			c.line[k].pop_front();
			in.rx_recycle(r.addr);
			c.frames++;
		}
		in.refill();
		out.flush();
	}
}

} // namespace qn::tp
