// metrics.cc - percentiles, size bins and series statistics (metrics.h).
#include "transport/metrics.h"

#include <algorithm>
#include <cmath>

namespace qn::tp {

namespace {
template <typename T> T pick(const std::vector<T> &v, double p)
{
	if (v.empty())
		return T{};
	const double x = std::floor(double(v.size()) * std::clamp(p, 0.0, 1.0));
	return v[std::min(v.size() - 1, size_t(x))];
}
} // namespace

double percentile(const std::vector<double> &sorted, double p) { return pick(sorted, p); }
uint64_t percentile(const std::vector<uint64_t> &sorted, double p) { return pick(sorted, p); }

namespace {
// Bin boundaries over sizes sorted ascending: rank floor(i n / k) for i = 1..k-1, each moved up
// past the flows of the same size as the one before it (a size never spans two bins); bins
// left empty by the moves are dropped. Return: the first rank of every bin, then n.
template <class Size>
std::vector<size_t> bin_starts(size_t n, size_t nbins, Size size_at)
{
	std::vector<size_t> st{0};
	const size_t k = std::min(nbins, n);
	for (size_t i = 1; i < k; i++) {
		size_t b = std::max(i * n / k, st.back());
		while (b > 0 && b < n && size_at(b) == size_at(b - 1))
			b++;
		if (b > st.back() && b < n)
			st.push_back(b);
	}
	st.push_back(n);
	return st;
}
} // namespace

std::vector<SizeBin> size_bins(std::vector<std::pair<uint64_t, double>> flows, size_t nbins)
{
	std::vector<SizeBin> out;
	const size_t n = flows.size();
	if (n == 0 || nbins == 0)
		return out;
	std::stable_sort(flows.begin(), flows.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
	const auto st = bin_starts(n, nbins, [&](size_t r) { return flows[r].first; });
	for (size_t i = 0; i + 1 < st.size(); i++) {
		const size_t lo = st[i], hi = st[i + 1];
		SizeBin b;
		b.min_size = flows[lo].first;
		b.max_size = flows[hi - 1].first;
		b.count = hi - lo;
		std::vector<double> sd;
		for (size_t j = lo; j < hi; j++)
			sd.push_back(flows[j].second);
		std::sort(sd.begin(), sd.end());
		b.p50 = percentile(sd, 0.5);
		b.p95 = percentile(sd, 0.95);
		b.p99 = percentile(sd, 0.99);
		out.push_back(b);
	}
	return out;
}

std::vector<size_t> size_bin_index(const std::vector<uint64_t> &sizes, size_t nbins)
{
	const size_t n = sizes.size();
	std::vector<size_t> out(n, 0);
	if (n == 0 || nbins == 0)
		return out;
	std::vector<size_t> order(n);
	for (size_t i = 0; i < n; i++)
		order[i] = i;
	std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sizes[a] < sizes[b]; });
	const auto st = bin_starts(n, nbins, [&](size_t r) { return sizes[order[r]]; });
	for (size_t b = 0; b + 1 < st.size(); b++)
		for (size_t r = st[b]; r < st[b + 1]; r++)
			out[order[r]] = b;
	return out;
}

SeriesStats series_stats(const std::vector<uint64_t> &values)
{
	SeriesStats s;
	s.samples = values.size();
	if (values.empty())
		return s;
	std::vector<uint64_t> v = values;
	std::sort(v.begin(), v.end());
	double sum = 0;
	for (auto x : v)
		sum += double(x);
	s.mean = sum / double(v.size());
	s.p50 = percentile(v, 0.5);
	s.p99 = percentile(v, 0.99);
	s.max = v.back();
	return s;
}

double jain_index(const std::vector<double> &x)
{
	double s = 0, s2 = 0;
	for (double v : x) {
		s += v;
		s2 += v * v;
	}
	return s2 > 0 ? s * s / (double(x.size()) * s2) : 0;
}

namespace {
uint64_t acked_at(const TraceSeries &t, uint64_t x)
{
	uint64_t v = 0;
	for (const auto &p : t.samples) {
		if (p.t_ns > x)
			break;
		v = p.acked_bytes;
	}
	return v;
}
} // namespace

std::vector<GoodputWindow> goodput_windows(const std::vector<TraceSeries> &series, uint64_t from, uint64_t to,
					   uint64_t win)
{
	std::vector<GoodputWindow> out;
	if (win == 0)
		return out;
	for (uint64_t t = from; t + win <= to; t += win) {
		GoodputWindow w;
		w.t_ns = t;
		for (const auto &s : series) {
			const uint64_t a = acked_at(s, t), b = acked_at(s, t + win);
			const double g = double(b >= a ? b - a : 0) * 8 / double(win); // bytes*8/ns = Gbit/s
			w.gbps.push_back(g);
			w.total_gbps += g;
		}
		w.jain = jain_index(w.gbps);
		out.push_back(std::move(w));
	}
	return out;
}

std::optional<uint64_t> jain_convergence(const std::vector<GoodputWindow> &w, double threshold, size_t run)
{
	if (run == 0)
		return std::nullopt;
	for (size_t i = 0; i + run <= w.size(); i++) {
		bool all = true;
		for (size_t k = i; k < i + run && all; k++)
			all = w[k].jain >= threshold;
		if (all)
			return w[i].t_ns;
	}
	return std::nullopt;
}

std::optional<uint64_t> rate_sum_within(const std::vector<TraceSeries> &series, double cap_bps)
{
	struct Ev {
		uint64_t t;
		size_t s, i;
	};
	std::vector<Ev> ev;
	for (size_t s = 0; s < series.size(); s++)
		for (size_t i = 0; i < series[s].samples.size(); i++)
			ev.push_back(Ev{series[s].samples[i].t_ns, s, i});
	std::stable_sort(ev.begin(), ev.end(), [](const Ev &a, const Ev &b) { return a.t < b.t; });
	std::vector<double> latest(series.size(), -1);
	size_t seen = 0;
	for (const auto &e : ev) {
		if (latest[e.s] < 0)
			seen++;
		latest[e.s] = double(series[e.s].samples[e.i].rate_bps);
		if (seen < series.size())
			continue;
		double sum = 0;
		for (double r : latest)
			sum += r;
		if (sum <= cap_bps)
			return e.t;
	}
	return std::nullopt;
}

std::optional<TraceSample> first_cut(const TraceSeries &s)
{
	for (const auto &x : s.samples)
		if (x.rate_bps < s.samples.front().rate_bps)
			return x;
	return std::nullopt;
}

double rate_sum_at(const std::vector<TraceSeries> &series, uint64_t t_ns, double absent_bps)
{
	double sum = 0;
	for (const auto &s : series) {
		// samples are in time order (parse_rate_trace keeps the file's order)
		auto it = std::upper_bound(s.samples.begin(), s.samples.end(), t_ns,
					   [](uint64_t t, const TraceSample &x) { return t < x.t_ns; });
		sum += it == s.samples.begin() ? absent_bps : double(std::prev(it)->rate_bps);
	}
	return sum;
}

} // namespace qn::tp
