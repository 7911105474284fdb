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

IntervalSet IntervalSet::from_sorted(const std::vector<std::pair<uint64_t, uint64_t>> &v)
{
	IntervalSet s;
	for (const auto &[a, b] : v) {
		if (b <= a)
			continue;
		if (!s.iv_.empty() && a <= s.iv_.back().second)
			s.iv_.back().second = std::max(s.iv_.back().second, b);
		else
			s.iv_.emplace_back(a, b);
	}
	return s;
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

namespace {

using Ivs = std::vector<std::pair<uint64_t, uint64_t>>;

// The first interval of `v` that ends after `from`.
Ivs::const_iterator first_ending_after(const Ivs &v, uint64_t from)
{
	return std::upper_bound(v.begin(), v.end(), from,
				[](uint64_t x, const std::pair<uint64_t, uint64_t> &iv) { return x < iv.second; });
}

// The length of the union of sorted, disjoint interval lists, clipped to [from, to): a merge
// over the intervals inside the window only, so a flow costs the periods in its lifetime and a
// binary search per list, not a copy of every period (issue 45: the copy per touched flow kept the
// 3,521-flow WebSearch scenario in tagging for over 40 minutes).
uint64_t union_covered(const std::vector<const Ivs *> &sets, uint64_t from, uint64_t to)
{
	const size_t n = sets.size();
	std::vector<Ivs::const_iterator> it(n), end(n);
	for (size_t k = 0; k < n; k++) {
		it[k] = first_ending_after(*sets[k], from);
		end[k] = sets[k]->end();
	}
	uint64_t total = 0, cur_a = 0, cur_b = 0;
	bool open = false;
	for (;;) {
		// the next interval by start among the lists, inside the window
		size_t best = n;
		for (size_t k = 0; k < n; k++)
			if (it[k] != end[k] && it[k]->first < to && (best == n || it[k]->first < it[best]->first))
				best = k;
		if (best == n)
			break;
		const uint64_t a = std::max(it[best]->first, from), b = std::min(it[best]->second, to);
		++it[best];
		if (b <= a)
			continue;
		if (open && a <= cur_b) {
			cur_b = std::max(cur_b, b);
		} else {
			if (open)
				total += cur_b - cur_a;
			cur_a = a;
			cur_b = b;
			open = true;
		}
	}
	if (open)
		total += cur_b - cur_a;
	return total;
}

} // namespace

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
	std::vector<const Ivs *> sets;
	for (size_t i = 0; i < flows.size(); i++) {
		const FlowSpan &f = flows[i];
		const IntervalSet &s = of(f.src), &d = of(f.dst);
		sets.assign({&a.all.intervals(), &s.intervals(), &d.intervals()});
		bool t = a.all.overlaps(f.from_ns, f.to_ns) || s.overlaps(f.from_ns, f.to_ns) || d.overlaps(f.from_ns, f.to_ns);
		// the stalls of every shard its paths meet (Affected::shard)
		const uint64_t mask = a.shard.empty() || !a.shards_of ? 0 : a.shards_of(f.src, f.dst);
		for (size_t k = 0; k < a.shard.size() && k < 64; k++)
			if (mask >> k & 1) {
				sets.push_back(&a.shard[k].intervals());
				t = t || a.shard[k].overlaps(f.from_ns, f.to_ns);
			}
		r.touched[i] = t;
		if (t) {
			// A flow of zero length that meets a period lies wholly in it.
			r.affected_frac[i] = f.to_ns > f.from_ns
				? double(union_covered(sets, f.from_ns, f.to_ns)) / double(f.to_ns - f.from_ns) : 1.0;
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
	// Fabric time in any period: the fabric's and every host's, merged once.
	Ivs all_iv = a.all.intervals();
	for (const auto &[h, hs] : a.host)
		all_iv.insert(all_iv.end(), hs.intervals().begin(), hs.intervals().end());
	for (const auto &ss : a.shard)
		all_iv.insert(all_iv.end(), ss.intervals().begin(), ss.intervals().end());
	std::sort(all_iv.begin(), all_iv.end());
	const IntervalSet any = IntervalSet::from_sorted(all_iv);
	r.periods = a.all.size();
	for (const auto &[h, hs] : a.host)
		r.periods += hs.size();
	for (const auto &ss : a.shard)
		r.periods += ss.size();
	r.time_affected_frac = to > from ? double(any.covered(from, to)) / double(to - from) : 0;
	for (const auto &[a0, b0] : any.intervals()) {
		const uint64_t a1 = std::max(a0, from), b1 = std::min(b0, to);
		if (a1 >= b1)
			continue;
		if (r.spans.size() == kMaxAffectedSpans)
			break;
		r.spans.emplace_back(a1 - from, b1 - from);
	}
	return r;
}

std::vector<FidelityFigure> fidelity_figures(const FidelityReport &r)
{
	return {{"periods", double(r.periods), true},
		{"time_affected_frac", r.time_affected_frac, false},
		{"flows_touched", double(r.flows_touched), true},
		{"flows_tagged", double(r.flows_tagged), true},
		{"bytes_touched_frac", r.bytes_touched_frac, false},
		{"bytes_tagged_frac", r.bytes_tagged_frac, false},
		{"bytes_affected_frac", r.bytes_affected_frac, false}};
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
