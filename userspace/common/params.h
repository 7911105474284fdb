// params.h - parameter tables: one row per parameter ({name, kind, member, range, doc}) from
// which parsing, validation, `describe` and usage text are generated (docs/cc.md "Parameter
// tables"). A CC part, a topology's link attributes, an experiment's workload declare their table
// once; nothing else lists their keys. Base library: depends on result.h, units.h and addr.h.
//
// Kinds and their value syntax (userspace/common/units.h): number (a decimal in [lo, hi]), count
// (an integer in [lo, hi]), time ("55us"), rate ("40Mbps"), size ("10MB", "0" = off where the
// doc says so), flag (on/off, 1/0, yes/no), choice (one of the listed words; stored as its index
// or as the word), text (any non-empty string, checked by its owner), ipv4 ("10.0.0.1"), mac
// ("02:00:00:00:00:01"). A numeric row may name a word that stands for 0 (`zero`, e.g. "auto").
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <string>
#include <variant>
#include <vector>

#include "common/addr.h"
#include "common/result.h"
#include "common/units.h"

namespace qn {

enum class ParamKind { Number, Count, Time, Rate, Size, Flag, Choice, Text, Ipv4, MacAddr };

// A field of a C wire struct that a member pointer cannot name (a member of a nested struct): an
// unsigned integer of `size` bytes at `off`. Number rows store round(value x scale) (1e6 for
// millionths), Count/Time/Rate/Size rows the integer, Flag rows 0/1, Choice rows the index.
struct WireField {
	size_t off;
	size_t size;
	double scale = 1;
};
// QN_WIRE(T, a.b) / QN_WIRE(T, a.b, 1e6): the WireField of member a.b of T.
#define QN_WIRE(T, member, ...) \
	::qn::WireField { offsetof(T, member), sizeof(static_cast<T *>(nullptr)->member) __VA_OPT__(, ) __VA_ARGS__ }

template <typename T> struct Param {
	const char *name;
	ParamKind kind;
	// The member it sets: double for Number, uint32_t, uint64_t or int for Count, uint64_t for
	// Time, Rate, Size, bool for Flag, int (the index into `choices`) or std::string (the word)
	// for Choice, std::string for Text, uint32_t (host order) for Ipv4, Mac for MacAddr.
	// Or a WireField of a C struct (integers only).
	std::variant<double T::*, uint32_t T::*, uint64_t T::*, bool T::*, int T::*, std::string T::*, Mac T::*,
		     WireField>
		member;
	double lo = 0, hi = 0;                 // Number, Count, Time (ns), Rate (bit/s), Size (bytes)
	std::vector<const char *> choices = {}; // Choice
	const char *doc = "";
	const char *zero = nullptr;            // Number..Size: a word that sets 0 (e.g. "auto")
	const char *def = nullptr;             // the default as the table accepts it (defaults())
};

template <typename T> class ParamTable {
public:
	ParamTable(const char *owner, std::vector<Param<T>> rows) : owner_(owner), rows_(std::move(rows)) {}

	// Set `key` to `value` in `x`. Errors name the owner, the parameter and the accepted values.
	Status apply(T &x, const std::string &key, const std::string &value) const
	{
		const Param<T> *p = find(key);
		if (!p)
			return make_error("unknown " + std::string(owner_) + " parameter '" + key + "' (" + names() + ")");
		auto bad = [&](const std::string &why) {
			return make_error(std::string(owner_) + " parameter '" + key + "': '" + value + "' " + why);
		};
		auto in_range = [&](double d) { return d >= p->lo && d <= p->hi; };
		if (p->zero && value == p->zero) {
			switch (p->kind) {
			case ParamKind::Number: set_num(x, *p, 0); return ok_status();
			case ParamKind::Count:
			case ParamKind::Time:
			case ParamKind::Rate:
			case ParamKind::Size: set_int(x, *p, 0); return ok_status();
			default: break;
			}
		}
		switch (p->kind) {
		case ParamKind::Number:
		case ParamKind::Count: {
			char *end = nullptr;
			const double d = std::strtod(value.c_str(), &end);
			if (value.empty() || *end || !std::isfinite(d) || !in_range(d) ||
			    (p->kind == ParamKind::Count && d != std::floor(d)))
				return bad(std::string("is not ") + (p->kind == ParamKind::Count ? "an integer" : "a number") +
					   " in [" + num(p->lo) + ", " + num(p->hi) + "]" +
					   (p->zero ? std::string(" or ") + p->zero : ""));
			if (p->kind == ParamKind::Number)
				set_num(x, *p, d);
			else
				set_int(x, *p, uint64_t(d));
			return ok_status();
		}
		case ParamKind::Time:
		case ParamKind::Rate:
		case ParamKind::Size: {
			auto v = p->kind == ParamKind::Time   ? parse_time_ns(value)
				 : p->kind == ParamKind::Rate ? parse_rate_bps(value)
							      : parse_size_bytes(value);
			if (!v)
				return make_error(std::string(owner_) + " parameter '" + key + "': " + v.error().message +
						  (p->zero ? std::string(" (or ") + p->zero + ")" : ""));
			if (!in_range(double(*v)))
				return bad("is outside [" + show(p->kind, p->lo) + ", " + show(p->kind, p->hi) + "]");
			set_int(x, *p, *v);
			return ok_status();
		}
		case ParamKind::Flag: {
			bool on;
			if (value == "1" || value == "on" || value == "yes")
				on = true;
			else if (value == "0" || value == "off" || value == "no")
				on = false;
			else
				return bad("is not on or off");
			if (std::holds_alternative<WireField>(p->member))
				set_int(x, *p, on ? 1 : 0);
			else
				x.*std::get<bool T::*>(p->member) = on;
			return ok_status();
		}
		case ParamKind::Choice:
			for (size_t i = 0; i < p->choices.size(); i++)
				if (value == p->choices[i]) {
					if (std::holds_alternative<std::string T::*>(p->member))
						x.*std::get<std::string T::*>(p->member) = value;
					else if (std::holds_alternative<WireField>(p->member))
						set_int(x, *p, i);
					else
						x.*std::get<int T::*>(p->member) = int(i);
					return ok_status();
				}
			return bad("is not " + list(p->choices, ", ", " or "));
		case ParamKind::Text:
			if (value.empty())
				return bad("is empty");
			x.*std::get<std::string T::*>(p->member) = value;
			return ok_status();
		case ParamKind::Ipv4: {
			auto ip = parse_ip(value);
			if (!ip)
				return make_error(std::string(owner_) + " parameter '" + key + "': " + ip.error().message);
			x.*std::get<uint32_t T::*>(p->member) = *ip;
			return ok_status();
		}
		case ParamKind::MacAddr: {
			auto m = parse_mac(value);
			if (!m)
				return make_error(std::string(owner_) + " parameter '" + key + "': " + m.error().message);
			x.*std::get<Mac T::*>(p->member) = *m;
			return ok_status();
		}
		}
		return make_error("unreachable");
	}

	// Return: "name=value ..." of every parameter of `x`, in table order.
	std::string describe(const T &x) const
	{
		std::string s;
		for (const auto &p : rows_)
			s += (s.empty() ? "" : " ") + std::string(p.name) + "=" + value(x, p);
		return s;
	}

	// Return: one line per parameter, after `indent`: name, kind and range, doc.
	std::string usage(const char *indent = "  ") const
	{
		std::string s;
		for (const auto &p : rows_) {
			char line[512];
			std::snprintf(line, sizeof(line), "%s%-16s %-26s %s\n", indent, p.name, range(p).c_str(), p.doc);
			s += line;
		}
		return s;
	}

	// Return: the accepted values of one parameter ("size 0B..1TB", "on|off", "auto|real").
	std::string usage_range(const Param<T> &p) const { return range(p); }

	// Return: the parameter names, comma-separated.
	std::string names() const
	{
		std::string s;
		for (const auto &p : rows_)
			s += (s.empty() ? "" : ", ") + std::string(p.name);
		return s;
	}

	const std::vector<Param<T>> &rows() const { return rows_; }
	// Return: true when the table has a parameter `key`.
	bool has(const std::string &key) const { return find(key) != nullptr; }

	// Return: the value of one parameter of `x` as the table would accept it.
	std::string value(const T &x, const Param<T> &p) const
	{
		if (p.zero && is_zero(x, p))
			return p.zero;
		switch (p.kind) {
		case ParamKind::Number: return num(get_num(x, p));
		case ParamKind::Count: return std::to_string(get_int(x, p));
		case ParamKind::Time:
		case ParamKind::Rate:
		case ParamKind::Size: return show(p.kind, double(get_int(x, p)));
		case ParamKind::Flag:
			if (std::holds_alternative<WireField>(p.member))
				return get_int(x, p) ? "on" : "off";
			return x.*std::get<bool T::*>(p.member) ? "on" : "off";
		case ParamKind::Choice: {
			if (std::holds_alternative<std::string T::*>(p.member))
				return x.*std::get<std::string T::*>(p.member);
			const int i = std::holds_alternative<WireField>(p.member) ? int(get_int(x, p))
										  : x.*std::get<int T::*>(p.member);
			return i >= 0 && size_t(i) < p.choices.size() ? p.choices[size_t(i)] : "?";
		}
		case ParamKind::Text: return x.*std::get<std::string T::*>(p.member);
		case ParamKind::Ipv4: return ip_to_string(x.*std::get<uint32_t T::*>(p.member));
		case ParamKind::MacAddr: return mac_to_string(x.*std::get<Mac T::*>(p.member));
		}
		return "?";
	}

	// Return: the value of one parameter as exact text: like value(), but sizes, times and rates
	// as plain integers (bytes, ns, bit/s) and numbers with full precision, so a reader (or
	// apply()) gets the setting back without rounding.
	std::string exact(const T &x, const Param<T> &p) const
	{
		switch (p.kind) {
		case ParamKind::Number: {
			char b[64];
			// 15 digits: every setting stored as an integer over a decimal scale (millionths)
			// prints exactly ("0.2", not 0.20000000000000001) and reads back to the same value.
			std::snprintf(b, sizeof(b), "%.15g", get_num(x, p));
			return b;
		}
		case ParamKind::Time:
		case ParamKind::Size:
		case ParamKind::Rate:
			// 0 reads back through the row's word for it (a rate of 0 does not parse)
			if (p.zero && get_int(x, p) == 0)
				return p.zero;
			return std::to_string(get_int(x, p));
		default: return value(x, p);
		}
	}

	// Set every parameter that has a default (Param::def) to it.
	Status defaults(T &x) const
	{
		for (const auto &p : rows_)
			if (p.def)
				QN_TRY(apply(x, p.name, p.def));
		return ok_status();
	}

private:
	static unsigned char *field(T &x, const WireField &w) { return reinterpret_cast<unsigned char *>(&x) + w.off; }
	static const unsigned char *field(const T &x, const WireField &w)
	{
		return reinterpret_cast<const unsigned char *>(&x) + w.off;
	}
	static void set_wire(T &x, const WireField &w, uint64_t v)
	{
		if (w.size == 8) {
			std::memcpy(field(x, w), &v, 8);
		} else if (w.size == 4) {
			const auto u = uint32_t(v);
			std::memcpy(field(x, w), &u, 4);
		} else if (w.size == 2) {
			const auto u = uint16_t(v);
			std::memcpy(field(x, w), &u, 2);
		} else {
			*field(x, w) = uint8_t(v);
		}
	}
	static uint64_t get_wire(const T &x, const WireField &w)
	{
		if (w.size == 8) {
			uint64_t v;
			std::memcpy(&v, field(x, w), 8);
			return v;
		}
		if (w.size == 4) {
			uint32_t v;
			std::memcpy(&v, field(x, w), 4);
			return v;
		}
		if (w.size == 2) {
			uint16_t v;
			std::memcpy(&v, field(x, w), 2);
			return v;
		}
		return *field(x, w);
	}
	static void set_num(T &x, const Param<T> &p, double d)
	{
		if (const auto *w = std::get_if<WireField>(&p.member))
			set_wire(x, *w, uint64_t(std::llround(d * w->scale)));
		else
			x.*std::get<double T::*>(p.member) = d;
	}
	static double get_num(const T &x, const Param<T> &p)
	{
		if (const auto *w = std::get_if<WireField>(&p.member))
			return double(get_wire(x, *w)) / w->scale;
		return x.*std::get<double T::*>(p.member);
	}
	static void set_int(T &x, const Param<T> &p, uint64_t v)
	{
		if (const auto *w = std::get_if<WireField>(&p.member))
			set_wire(x, *w, v);
		else if (std::holds_alternative<uint64_t T::*>(p.member))
			x.*std::get<uint64_t T::*>(p.member) = v;
		else if (std::holds_alternative<uint32_t T::*>(p.member))
			x.*std::get<uint32_t T::*>(p.member) = uint32_t(v);
		else
			x.*std::get<int T::*>(p.member) = int(v);
	}
	static uint64_t get_int(const T &x, const Param<T> &p)
	{
		if (const auto *w = std::get_if<WireField>(&p.member))
			return get_wire(x, *w);
		if (std::holds_alternative<uint64_t T::*>(p.member))
			return x.*std::get<uint64_t T::*>(p.member);
		if (std::holds_alternative<uint32_t T::*>(p.member))
			return x.*std::get<uint32_t T::*>(p.member);
		return uint64_t(x.*std::get<int T::*>(p.member));
	}
	static bool is_zero(const T &x, const Param<T> &p)
	{
		switch (p.kind) {
		case ParamKind::Number: return get_num(x, p) == 0;
		case ParamKind::Count:
		case ParamKind::Time:
		case ParamKind::Rate:
		case ParamKind::Size: return get_int(x, p) == 0;
		default: return false;
		}
	}
	const Param<T> *find(const std::string &key) const
	{
		for (const auto &p : rows_)
			if (key == p.name)
				return &p;
		return nullptr;
	}
	static std::string num(double d)
	{
		char b[64];
		std::snprintf(b, sizeof(b), "%.6g", d);
		return b;
	}
	static std::string show(ParamKind k, double v)
	{
		const auto u = uint64_t(v);
		return k == ParamKind::Time ? format_time(u) : k == ParamKind::Rate ? format_rate(u) : format_size(u);
	}
	static std::string list(const std::vector<const char *> &v, const char *sep, const char *last_sep)
	{
		std::string s;
		for (size_t i = 0; i < v.size(); i++)
			s += std::string(i == 0 ? "" : i + 1 == v.size() ? last_sep : sep) + v[i];
		return s;
	}
	static std::string alt(const Param<T> &p) { return p.zero ? std::string("|") + p.zero : ""; }
	static std::string range(const Param<T> &p)
	{
		switch (p.kind) {
		case ParamKind::Number: return "number " + num(p.lo) + ".." + num(p.hi) + alt(p);
		case ParamKind::Count: return "integer " + num(p.lo) + ".." + num(p.hi) + alt(p);
		case ParamKind::Time: return "time " + show(p.kind, p.lo) + ".." + show(p.kind, p.hi) + alt(p);
		case ParamKind::Rate: return "rate " + show(p.kind, p.lo) + ".." + show(p.kind, p.hi) + alt(p);
		case ParamKind::Size: return "size " + show(p.kind, p.lo) + ".." + show(p.kind, p.hi) + alt(p);
		case ParamKind::Flag: return "on|off";
		case ParamKind::Choice: return list(p.choices, "|", "|");
		case ParamKind::Text: return "text";
		case ParamKind::Ipv4: return "IPv4 address";
		case ParamKind::MacAddr: return "MAC address";
		}
		return "";
	}

	const char *owner_;
	std::vector<Param<T>> rows_;
};

} // namespace qn
