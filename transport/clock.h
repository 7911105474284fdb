// clock.h - the engine's clock adapter: fabric time from CLOCK_MONOTONIC and the dilation
// factor D (DESIGN.md §5, docs/units.md). Everything inside the transport (QPs, pacer, delay
// lines, RTOs, CC) runs on fabric nanoseconds from a Clock; only this adapter and the sleep
// logic of the event loop see wall-clock time. Tests inject FakeClock.
//
// Units: fabric ns (t_wall = t_fabric * D; fabric 0 = when the clock was made).
#pragma once

#include <cstdint>
#include <ctime>

namespace qn::tp {

class Clock {
public:
	virtual ~Clock() = default;
	// Return: the current fabric time in ns.
	virtual uint64_t now_ns() const = 0;
};

class FakeClock final : public Clock {
public:
	uint64_t now_ns() const override { return t_; }
	void set(uint64_t t) { t_ = t; }
	void advance(uint64_t dt) { t_ += dt; }

private:
	uint64_t t_ = 0;
};

inline uint64_t mono_wall_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1'000'000'000ULL + uint64_t(ts.tv_nsec);
}

// Fabric time = (wall - wall0) / D, with D as milli-units (D x 1000, qn_cfg.dilation_milli).
class DilatedClock final : public Clock {
public:
	explicit DilatedClock(uint32_t d_milli) : d_milli_(d_milli ? d_milli : 1000), wall0_(mono_wall_ns()) {}
	uint64_t now_ns() const override { return to_fabric(mono_wall_ns()); }
	uint64_t to_fabric(uint64_t wall) const
	{
		return wall <= wall0_ ? 0 : (wall - wall0_) * 1000 / d_milli_;
	}
	// Return: the wall-clock instant of a fabric time.
	uint64_t to_wall(uint64_t fabric) const { return wall0_ + fabric * d_milli_ / 1000; }
	// Return: a fabric duration in wall-clock ns.
	uint64_t wall_duration(uint64_t fabric_ns) const { return fabric_ns * d_milli_ / 1000; }
	uint32_t d_milli() const { return d_milli_; }

private:
	uint32_t d_milli_;
	uint64_t wall0_;
};

} // namespace qn::tp
