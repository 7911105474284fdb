// fidelity.cc - affected periods and flow tagging (fidelity.h).
#include "transport/fidelity.h"

#include <algorithm>
#include <cstdio>

namespace qn::tp {

void IntervalSet::add(uint64_t from, uint64_t to)
{
	if (to <= from)
		return;
	// The first interval that ends at or after `from` (may merge), through the last that
	// starts at or before `to`.
	auto lo = std::lower_bound(iv_.begin(), iv_.end(), from,
				   [](const std::pair<uint64_t, uint64_t> &x, uint64_t v) { return x.second < v; });
	auto hi = lo;
	while (hi != iv_.end() && hi->first <= to) {
		from = std::min(from, hi->first);
		to = std::max(to, hi->second);
		++hi;
	}
	lo = iv_.erase(lo, hi);
	iv_.insert(lo, {from, to});
}

bool IntervalSet::overlaps(uint64_t from, uint64_t to) const
{
	auto it = std::lower_bound(iv_.begin(), iv_.end(), from,
				   [](const std::pair<uint64_t, uint64_t> &x, uint64_t v) { return x.second < v; });
	return it != iv_.end() && it->first <= to;
}

uint64_t IntervalSet::covered(uint64_t from, uint64_t to) const
{
	uint64_t s = 0;
	for (const auto &[a, b] : iv_) {
		const uint64_t x = std::max(a, from), y = std::min(b, to);
		if (y > x)
			s += y - x;
	}
	return s;
}

FidelityReport tag_flows(const std::vector<FlowSpan> &flows, const Affected &a, uint64_t from, uint64_t to,
			 double tag_frac)
{
	FidelityReport r;
	r.tagged.assign(flows.size(), false);
	r.touched.assign(flows.size(), false);
	r.affected_frac.assign(flows.size(), 0.0);
	const IntervalSet none;
	auto of = [&](const std::string &h) -> const IntervalSet & {
		auto it = a.host.find(h);
		return it == a.host.end() ? none : it->second;
	};
	uint64_t bytes = 0, tagged_bytes = 0, touched_bytes = 0;
	double affected_bytes = 0;
	for (size_t i = 0; i < flows.size(); i++) {
		const FlowSpan &f = flows[i];
		const bool t = a.all.overlaps(f.from_ns, f.to_ns) || of(f.src).overlaps(f.from_ns, f.to_ns) ||
			       of(f.dst).overlaps(f.from_ns, f.to_ns);
		r.touched[i] = t;
		if (t) {
			IntervalSet u = a.all;
			for (const auto &[x, y] : of(f.src).intervals())
				u.add(x, y);
			for (const auto &[x, y] : of(f.dst).intervals())
				u.add(x, y);
			// A flow of zero length that meets a period lies wholly in it.
			r.affected_frac[i] = f.to_ns > f.from_ns
				? double(u.covered(f.from_ns, f.to_ns)) / double(f.to_ns - f.from_ns) : 1.0;
		}
		r.tagged[i] = t && r.affected_frac[i] >= tag_frac;
		r.flows_touched += t;
		r.flows_tagged += r.tagged[i];
		bytes += f.bytes;
		touched_bytes += t ? f.bytes : 0;
		tagged_bytes += r.tagged[i] ? f.bytes : 0;
		affected_bytes += double(f.bytes) * r.affected_frac[i];
	}
	r.bytes_touched_frac = bytes ? double(touched_bytes) / double(bytes) : 0;
	r.bytes_tagged_frac = bytes ? double(tagged_bytes) / double(bytes) : 0;
	r.bytes_affected_frac = bytes ? affected_bytes / double(bytes) : 0;
	IntervalSet any = a.all;
	for (const auto &[h, s] : a.host)
		for (const auto &[x, y] : s.intervals())
			any.add(x, y);
	r.periods = a.all.size();
	for (const auto &[h, s] : a.host)
		r.periods += s.size();
	r.time_affected_frac = to > from ? double(any.covered(from, to)) / double(to - from) : 0;
	return r;
}

std::string fidelity_verdict(const FidelityReport &r)
{
	if (r.bytes_affected_frac <= kMaxAffectedBytesFrac)
		return "";
	char b[200];
	std::snprintf(b, sizeof(b),
		      "%.1f%% of the bytes affected (each flow's bytes x the share of its lifetime in affected periods; > %.0f%%)",
		      100 * r.bytes_affected_frac, 100 * kMaxAffectedBytesFrac);
	return b;
}

} // namespace qn::tp
