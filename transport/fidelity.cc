// fidelity.cc - affected periods and flow tagging (fidelity.h).
#include "fidelity.h"

#include <algorithm>

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

FidelityReport tag_flows(const std::vector<FlowSpan> &flows, const Affected &a, uint64_t from, uint64_t to)
{
	FidelityReport r;
	r.tagged.assign(flows.size(), false);
	r.affected_frac.assign(flows.size(), 0.0);
	const IntervalSet none;
	auto of = [&](const std::string &h) -> const IntervalSet & {
		auto it = a.host.find(h);
		return it == a.host.end() ? none : it->second;
	};
	uint64_t bytes = 0, tagged_bytes = 0;
	for (size_t i = 0; i < flows.size(); i++) {
		const FlowSpan &f = flows[i];
		const bool t = a.all.overlaps(f.from_ns, f.to_ns) || of(f.src).overlaps(f.from_ns, f.to_ns) ||
			       of(f.dst).overlaps(f.from_ns, f.to_ns);
		r.tagged[i] = t;
		if (t && f.to_ns > f.from_ns) {
			IntervalSet u = a.all;
			for (const auto &[x, y] : of(f.src).intervals())
				u.add(x, y);
			for (const auto &[x, y] : of(f.dst).intervals())
				u.add(x, y);
			r.affected_frac[i] = double(u.covered(f.from_ns, f.to_ns)) / double(f.to_ns - f.from_ns);
		}
		r.flows_tagged += t;
		bytes += f.bytes;
		tagged_bytes += t ? f.bytes : 0;
	}
	r.bytes_tagged_frac = bytes ? double(tagged_bytes) / double(bytes) : 0;
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

} // namespace qn::tp
