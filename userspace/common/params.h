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
#include <cstdlib>
#include <string>
#include <variant>
#include <vector>

#include "common/addr.h"
#include "common/result.h"
#include "common/units.h"

namespace qn {

enum class ParamKind { Number, Count, Time, Rate, Size, Flag, Choice, Text, Ipv4, MacAddr };

template <typename T> struct Param {
	const char *name;
	ParamKind kind;
	// The member it sets: double for Number, uint32_t, uint64_t or int for Count, uint64_t for
	// Time, Rate, Size, bool for Flag, int (the index into `choices`) or std::string (the word)
	// for Choice, std::string for Text, uint32_t (host order) for Ipv4, Mac for MacAddr.
	std::variant<double T::*, uint32_t T::*, uint64_t T::*, bool T::*, int T::*, std::string T::*, Mac T::*> member;
	double lo = 0, hi = 0;                 // Number, Count, Time (ns), Rate (bit/s), Size (bytes)
	std::vector<const char *> choices = {}; // Choice
	const char *doc = "";
	const char *zero = nullptr;            // Number..Size: a word that sets 0 (e.g. "auto")
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
			case ParamKind::Number: x.*std::get<double T::*>(p->member) = 0; return ok_status();
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
				x.*std::get<double T::*>(p->member) = d;
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
			x.*std::get<uint64_t T::*>(p->member) = *v;
			return ok_status();
		}
		case ParamKind::Flag:
			if (value == "1" || value == "on" || value == "yes")
				x.*std::get<bool T::*>(p->member) = true;
			else if (value == "0" || value == "off" || value == "no")
				x.*std::get<bool T::*>(p->member) = false;
			else
				return bad("is not on or off");
			return ok_status();
		case ParamKind::Choice:
			for (size_t i = 0; i < p->choices.size(); i++)
				if (value == p->choices[i]) {
					if (std::holds_alternative<std::string T::*>(p->member))
						x.*std::get<std::string T::*>(p->member) = value;
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
		case ParamKind::Number: return num(x.*std::get<double T::*>(p.member));
		case ParamKind::Count: return std::to_string(get_int(x, p));
		case ParamKind::Time:
		case ParamKind::Rate:
		case ParamKind::Size: return show(p.kind, double(x.*std::get<uint64_t T::*>(p.member)));
		case ParamKind::Flag: return x.*std::get<bool T::*>(p.member) ? "on" : "off";
		case ParamKind::Choice: {
			if (std::holds_alternative<std::string T::*>(p.member))
				return x.*std::get<std::string T::*>(p.member);
			const int i = x.*std::get<int T::*>(p.member);
			return i >= 0 && size_t(i) < p.choices.size() ? p.choices[size_t(i)] : "?";
		}
		case ParamKind::Text: return x.*std::get<std::string T::*>(p.member);
		case ParamKind::Ipv4: return ip_to_string(x.*std::get<uint32_t T::*>(p.member));
		case ParamKind::MacAddr: return mac_to_string(x.*std::get<Mac T::*>(p.member));
		}
		return "?";
	}

private:
	static void set_int(T &x, const Param<T> &p, uint64_t v)
	{
		if (std::holds_alternative<uint64_t T::*>(p.member))
			x.*std::get<uint64_t T::*>(p.member) = v;
		else if (std::holds_alternative<uint32_t T::*>(p.member))
			x.*std::get<uint32_t T::*>(p.member) = uint32_t(v);
		else
			x.*std::get<int T::*>(p.member) = int(v);
	}
	static uint64_t get_int(const T &x, const Param<T> &p)
	{
		if (std::holds_alternative<uint64_t T::*>(p.member))
			return x.*std::get<uint64_t T::*>(p.member);
		if (std::holds_alternative<uint32_t T::*>(p.member))
			return x.*std::get<uint32_t T::*>(p.member);
		return uint64_t(x.*std::get<int T::*>(p.member));
	}
	static bool is_zero(const T &x, const Param<T> &p)
	{
		switch (p.kind) {
		case ParamKind::Number: return x.*std::get<double T::*>(p.member) == 0;
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
