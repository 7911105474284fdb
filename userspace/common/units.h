// units.h - quench's units contract (docs/units.md).
//
// Everything user-facing is in fabric units: rates in bit/s, times in nanoseconds of fabric
// time, sizes in bytes. The dilation factor D (>= 1) is applied only at named places: the
// engine's clock adapter, pacers and delay lines, HTB rates (to_wall_rate_bps) and BPF .rodata
// times (to_wall_ns). Nothing else converts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.h"

namespace qn {

// Parse a rate: "10Gbps", "10G", "400Mbps", "2.5Gbit", "1e9" (bit/s). Return: bit/s (> 0).
Result<uint64_t> parse_rate_bps(std::string_view s);
// Parse a time: "1us", "0.001ms", "2000ns", "1s", plain numbers are ns. Return: ns (>= 0).
Result<uint64_t> parse_time_ns(std::string_view s);
// Parse a size: "12MB" (1e6), "4KiB" (1024), "2048", "64KB". Return: bytes.
Result<uint64_t> parse_size_bytes(std::string_view s);

std::string format_rate(uint64_t bps);   // "10Gbit/s", "400Mbit/s"
std::string format_time(uint64_t ns);    // "1us", "12.5us", "3ms"
std::string format_size(uint64_t bytes); // "2048B", "12MB"

// The largest dilation factor. At D = 100,000 a 100 Gbit/s link runs at 1 Mbit/s of wall time
// and a 2 KB frame takes 17 ms: the slowest fabrics of docs/PERFORMANCE.md ("`quench bench
// fabric`") need more than 10,000 with every host sending.
inline constexpr double kMaxDilation = 100000;

// The dilation factor. D = 1 is real time.
class Dilation {
public:
	// Return: an error unless 1 <= d <= kMaxDilation.
	static Result<Dilation> make(double d);
	Dilation() = default;
	double factor() const { return d_; }
	// A fabric rate as the wall-clock rate the shaper must enforce: rate / D.
	uint64_t to_wall_rate_bps(uint64_t fabric_bps) const;
	// A fabric duration as wall-clock ns: t * D (BPF .rodata times, engine timers).
	uint64_t to_wall_ns(uint64_t fabric_ns) const;
	// A wall-clock duration as fabric ns: t / D (reports).
	uint64_t to_fabric_ns(uint64_t wall_ns) const;
	// D x 1000, as stored in struct qn_cfg.dilation_milli.
	uint32_t milli() const;

private:
	explicit Dilation(double d) : d_(d) {}
	double d_ = 1.0;
};

// Wire bytes of one frame as HTB charges it: Ethernet frame (without FCS) + 24 B overhead,
// at least 84 B (QN_WIRE_OVERHEAD, QN_WIRE_MPU).
uint64_t wire_bytes(uint64_t l2_frame_bytes);

} // namespace qn
