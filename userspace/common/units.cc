// units.cc - parsing and conversion of rates, times and sizes (docs/units.md).
#include "common/units.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "qn_abi.h"

namespace qn {
namespace {

struct Suffix {
	const char *name;
	double mult;
};

// Split "12.5Gbps" into 12.5 and "Gbps". Return: false when no leading number.
bool split_number(std::string_view s, double &num, std::string &suffix)
{
	std::string str(s);
	if (str.empty())
		return false;
	const char *begin = str.c_str();
	char *end = nullptr;
	errno = 0;
	num = std::strtod(begin, &end);
	if (end == begin || errno == ERANGE || !std::isfinite(num))
		return false;
	suffix.assign(end);
	return true;
}

Result<double> parse_with(std::string_view s, const Suffix *table, size_t n, const char *what,
			  const char *examples)
{
	double num;
	std::string suffix;
	if (!split_number(s, num, suffix))
		return make_error("cannot parse '" + std::string(s) + "' as a " + what + " (examples: " +
				  examples + ")");
	for (size_t i = 0; i < n; i++) {
		if (suffix == table[i].name) {
			if (num < 0)
				return make_error(std::string(what) + " '" + std::string(s) +
						  "' is negative");
			return num * table[i].mult;
		}
	}
	return make_error("unknown unit '" + suffix + "' in " + what + " '" + std::string(s) +
			  "' (examples: " + examples + ")");
}

} // namespace

Result<uint64_t> parse_rate_bps(std::string_view s)
{
	static const Suffix t[] = {
		{"", 1},	 {"bps", 1},	     {"bit", 1},	{"K", 1e3},	   {"Kbps", 1e3},
		{"Kbit", 1e3},	 {"M", 1e6},	     {"Mbps", 1e6},	{"Mbit", 1e6},	   {"G", 1e9},
		{"Gbps", 1e9},	 {"Gbit", 1e9},	     {"T", 1e12},	{"Tbps", 1e12},	   {"Tbit", 1e12},
		{"kbps", 1e3},	 {"kbit", 1e3},	     {"mbps", 1e6},	{"gbps", 1e9},
		// what format_rate() prints reads back
		{"bit/s", 1},	 {"Kbit/s", 1e3},    {"Mbit/s", 1e6},	{"Gbit/s", 1e9},   {"Tbit/s", 1e12},
	};
	auto r = parse_with(s, t, sizeof(t) / sizeof(t[0]), "rate", "10Gbps, 400Mbps, 2.5G");
	if (!r)
		return r.error();
	double v = std::round(*r);
	if (v < 1.0)
		return make_error("rate '" + std::string(s) + "' must be positive");
	if (v > 1e13)
		return make_error("rate '" + std::string(s) + "' is above 10 Tbit/s");
	return static_cast<uint64_t>(v);
}

Result<uint64_t> parse_time_ns(std::string_view s)
{
	static const Suffix t[] = {
		{"", 1}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9},
	};
	auto r = parse_with(s, t, sizeof(t) / sizeof(t[0]), "time", "1us, 0.001ms, 500ns");
	if (!r)
		return r.error();
	double v = std::round(*r);
	if (v > 3.6e12)
		return make_error("time '" + std::string(s) + "' is above one hour");
	return static_cast<uint64_t>(v);
}

Result<uint64_t> parse_size_bytes(std::string_view s)
{
	static const Suffix t[] = {
		{"", 1},	 {"B", 1},	       {"KB", 1e3},	{"MB", 1e6},	{"GB", 1e9},
		{"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
	};
	auto r = parse_with(s, t, sizeof(t) / sizeof(t[0]), "size", "2048, 64KB, 12MB, 4KiB");
	if (!r)
		return r.error();
	double v = std::round(*r);
	if (v > 1e12)
		return make_error("size '" + std::string(s) + "' is above 1 TB");
	return static_cast<uint64_t>(v);
}

static std::string fmt_num(double v)
{
	char buf[64];
	std::snprintf(buf, sizeof(buf), "%.6g", v);
	return buf;
}

std::string format_rate(uint64_t bps)
{
	double v = static_cast<double>(bps);
	if (bps >= 1000000000ULL)
		return fmt_num(v / 1e9) + "Gbit/s";
	if (bps >= 1000000ULL)
		return fmt_num(v / 1e6) + "Mbit/s";
	if (bps >= 1000ULL)
		return fmt_num(v / 1e3) + "Kbit/s";
	return fmt_num(v) + "bit/s";
}

std::string format_time(uint64_t ns)
{
	double v = static_cast<double>(ns);
	if (ns >= 1000000000ULL)
		return fmt_num(v / 1e9) + "s";
	if (ns >= 1000000ULL)
		return fmt_num(v / 1e6) + "ms";
	if (ns >= 1000ULL)
		return fmt_num(v / 1e3) + "us";
	return fmt_num(v) + "ns";
}

std::string format_size(uint64_t bytes)
{
	double v = static_cast<double>(bytes);
	if (bytes >= 1000000000ULL && bytes % 1000000ULL == 0)
		return fmt_num(v / 1e9) + "GB";
	if (bytes >= 1000000ULL && bytes % 1000ULL == 0)
		return fmt_num(v / 1e6) + "MB";
	if (bytes >= 1000ULL && bytes % 1000ULL == 0)
		return fmt_num(v / 1e3) + "KB";
	return fmt_num(v) + "B";
}

Result<Dilation> Dilation::make(double d)
{
	if (!(d >= 1.0) || !(d <= kMaxDilation))
		return make_error("dilation factor " + fmt_num(d) + " is outside [1, " + fmt_num(kMaxDilation) + "]");
	return Dilation(d);
}

uint64_t Dilation::to_wall_rate_bps(uint64_t fabric_bps) const
{
	return static_cast<uint64_t>(std::llround(static_cast<double>(fabric_bps) / d_));
}

uint64_t Dilation::to_wall_ns(uint64_t fabric_ns) const
{
	return static_cast<uint64_t>(std::llround(static_cast<double>(fabric_ns) * d_));
}

uint64_t Dilation::to_fabric_ns(uint64_t wall_ns) const
{
	return static_cast<uint64_t>(std::llround(static_cast<double>(wall_ns) / d_));
}

uint32_t Dilation::milli() const { return static_cast<uint32_t>(std::llround(d_ * 1000.0)); }

uint64_t wire_bytes(uint64_t l2_frame_bytes)
{
	uint64_t w = l2_frame_bytes + QN_WIRE_OVERHEAD;
	return w < QN_WIRE_MPU ? QN_WIRE_MPU : w;
}

} // namespace qn
