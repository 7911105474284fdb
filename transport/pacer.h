// pacer.h - the NIC's transmit timing: a per-host link pacer that never sends above the link
// rate and never catches up by bursting, and a timing wheel that holds rate-limited QPs until
// their next packet is due (eRPC's timing wheel idea, DESIGN.md §4). Pure logic: the engine
// passes fabric time in.
//
// Units: fabric ns, bit/s, bytes on the wire (wire_bytes(): frame + 24 B overhead, min 84).
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

namespace qn::tp {

// Return: ns to serialize `bytes` at `rate_bps` (rounded up), 0 for rate 0 (unlimited).
constexpr uint64_t serialization_ns(uint64_t bytes, uint64_t rate_bps)
{
	return rate_bps ? (bytes * 8ULL * 1'000'000'000ULL + rate_bps - 1) / rate_bps : 0;
}

// One link's transmitter. A frame may start when the link is free; sending it occupies the
// link for its serialization time. The link keeps a schedule: while backlogged, frame k+1 is
// due when frame k's serialization ends.
//
// A backlogged link served late (the event loop was busy, e.g. inside another host's kick) by
// up to `credit_ns` loses no link time: the frame starts now (never in the past) and the
// schedule goes on from where it was, so the next frames follow without a gap until the
// schedule is met again (a token bucket `credit_ns` deep at the link rate: over any interval
// the bytes started never exceed rate x (interval + horizon) + rate x credit). Lateness beyond
// the credit is lost for good (the link idled): the next frame waits a full serialization
// time from credit before now. An idle link has no schedule to keep.
//
// `horizon_ns` lets the caller hand frames over up to that long before their start (the
// engine batches frames into one kernel kick this way).
class LinkPacer {
public:
	explicit LinkPacer(uint64_t rate_bps = 0, uint64_t horizon_ns = 0, uint64_t credit_ns = 0)
		: rate_bps_(rate_bps), horizon_ns_(horizon_ns), credit_ns_(credit_ns) {}
	bool ready(uint64_t now_ns) const { return now_ns + horizon_ns_ >= next_free_; }
	uint64_t next_free() const { return next_free_; }
	// Return: the earliest time ready() holds.
	uint64_t ready_at() const { return next_free_ > horizon_ns_ ? next_free_ - horizon_ns_ : 0; }
	// Account a frame of `wire_bytes` handed over now. Return: how late it was handed over (ns
	// after its due time; 0 when the link had been idle, see `backlogged`). `start` gets the
	// frame's start on the link (now, or up to horizon_ns later); `lost` the link time lost
	// for good (the lateness beyond the credit).
	uint64_t send(uint64_t now_ns, uint64_t wire_bytes, bool backlogged, uint64_t *start = nullptr,
		      uint64_t *lost = nullptr)
	{
		const uint64_t late = backlogged && now_ns > next_free_ ? now_ns - next_free_ : 0;
		uint64_t sched = next_free_, gone = 0;
		if (now_ns > next_free_) {
			if (!backlogged)
				sched = now_ns;
			else if (late > credit_ns_) {
				gone = late - credit_ns_;
				sched = now_ns - credit_ns_;
			}
		}
		next_free_ = sched + serialization_ns(wire_bytes, rate_bps_);
		bytes_ += wire_bytes;
		if (start)
			*start = now_ns > sched ? now_ns : sched;
		if (lost)
			*lost = gone;
		return late;
	}
	uint64_t rate_bps() const { return rate_bps_; }
	void set_rate(uint64_t bps) { rate_bps_ = bps; }
	uint64_t bytes() const { return bytes_; }

private:
	uint64_t rate_bps_;
	uint64_t horizon_ns_;
	uint64_t credit_ns_;
	uint64_t next_free_ = 0;
	uint64_t bytes_ = 0;
};

// A hashed timing wheel of items keyed by a due time: an item never fires before its due time
// (pop_due compares exact times; slot_ns only sets how items are bucketed). Items due beyond
// one turn wait in their slot for extra turns. Order within a slot is insertion order.
template <typename T> class TimingWheel {
public:
	TimingWheel(uint64_t slot_ns, size_t slots) : slot_ns_(slot_ns), slots_(slots) {}

	void insert(uint64_t due_ns, T item)
	{
		uint64_t tick = due_ns / slot_ns_;
		if (tick < cur_tick_)
			tick = cur_tick_;
		slots_[size_t(tick % slots_.size())].push_back(Entry{due_ns, item});
		count_++;
	}
	// Move every item due at or before now into `out` (in slot order).
	template <typename Out> void pop_due(uint64_t now_ns, Out &&out)
	{
		const uint64_t now_tick = now_ns / slot_ns_;
		if (count_ != 0) {
			// Visit each slot at most once per call (a late call covers a full turn).
			uint64_t last = now_tick;
			if (last - cur_tick_ >= slots_.size())
				last = cur_tick_ + slots_.size() - 1;
			for (uint64_t t = cur_tick_; t <= last && count_ != 0; t++) {
				auto &s = slots_[size_t(t % slots_.size())];
				size_t keep = 0;
				for (size_t i = 0; i < s.size(); i++) {
					if (s[i].due <= now_ns) {
						out(s[i].item);
						count_--;
					} else {
						s[keep++] = s[i];
					}
				}
				s.resize(keep);
			}
		}
		if (now_tick > cur_tick_)
			cur_tick_ = now_tick;
	}
	// Return: the earliest due time (UINT64_MAX when empty). Costs a scan of the wheel.
	uint64_t next_due() const
	{
		if (count_ == 0)
			return UINT64_MAX;
		uint64_t best = UINT64_MAX;
		for (const auto &s : slots_)
			for (const auto &e : s)
				best = e.due < best ? e.due : best;
		return best;
	}
	size_t size() const { return count_; }
	uint64_t slot_ns() const { return slot_ns_; }

private:
	struct Entry {
		uint64_t due;
		T item;
	};
	uint64_t slot_ns_;
	std::vector<std::vector<Entry>> slots_;
	uint64_t cur_tick_ = 0;
	size_t count_ = 0;
};

// Which sender of a host goes next: a round-robin of ready senders, and a timing wheel holding
// rate-limited senders until their next packet is due (a sender limited to R waits one
// serialization time at R after each packet; see next_ok for the credit of short waits).
template <typename T> class TxScheduler {
public:
	explicit TxScheduler(uint64_t slot_ns = 1000, size_t slots = 1024) : wheel_(slot_ns, slots) {}

	// Make `t` eligible from `at_ns` on.
	void add(T t, uint64_t at_ns, uint64_t now_ns)
	{
		if (at_ns > now_ns)
			wheel_.insert(at_ns, t);
		else
			ready_.push_back(t);
	}
	// Move senders that became due to the ready list.
	void advance(uint64_t now_ns)
	{
		wheel_.pop_due(now_ns, [&](T t) { ready_.push_back(t); });
	}
	bool has_ready() const { return !ready_.empty(); }
	// The next ready sender, left in place (precondition: has_ready()).
	const T &peek() const { return ready_.front(); }
	// Take the next ready sender (precondition: has_ready()).
	T pop()
	{
		T t = ready_.front();
		ready_.pop_front();
		return t;
	}
	// Return: when a sender may send again after starting `wire_bytes` at now, under its limit
	// `rate_bps` (0, or at least the link rate: no limit of its own, i.e. now). `eligible_ns`
	// is when this packet had become eligible: a wait of up to `burst_bytes` at the rate
	// (behind other senders, or for the link) is credited back, so a limited sender reaches its
	// rate; any longer wait is lost. Over any interval a sender starts at most
	// rate x interval + burst_bytes (a token bucket burst_bytes deep; the engine uses one full
	// frame).
	static uint64_t next_ok(uint64_t eligible_ns, uint64_t now_ns, uint64_t wire_bytes, uint64_t rate_bps,
				uint64_t link_bps, uint64_t burst_bytes)
	{
		if (rate_bps == 0 || rate_bps >= link_bps)
			return now_ns;
		const uint64_t credit = serialization_ns(burst_bytes, rate_bps);
		const uint64_t from = now_ns - eligible_ns <= credit ? eligible_ns : now_ns - credit;
		return from + serialization_ns(wire_bytes, rate_bps);
	}
	size_t waiting() const { return wheel_.size(); }
	// Return: when the next waiting sender becomes due (UINT64_MAX: none waits).
	uint64_t next_due() const { return wheel_.next_due(); }

private:
	TimingWheel<T> wheel_;
	std::deque<T> ready_;
};

} // namespace qn::tp
