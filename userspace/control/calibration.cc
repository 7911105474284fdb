// calibration.cc - the D rule and the measurements behind it (calibration.h).
#include "control/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <thread>
#include <unistd.h>
#include <vector>

#include "transport/clock.h"
#include "transport/metrics.h"

namespace qn {

namespace {
double round_up_10(double d) { return std::ceil(d / 10) * 10; }
} // namespace

DChoice dilation_rule(const DRuleInput &in)
{
	DChoice c;
	if (in.capacity_wall_bps <= 0 || in.base_rtt_min_ns == 0) {
		c.clamped = true;
		c.d = kMaxDilation;
		return c;
	}
	c.d_cpu = in.offered_bps / in.capacity_wall_bps;
	c.d_timer = double(in.jitter_wall_ns) / (0.05 * double(in.base_rtt_min_ns));
	c.d = round_up_10(2 * std::max({c.d_cpu, c.d_timer, 1.0}));
	if (in.capacity_pair_wall_bps > 0)
		c.d_pair = round_up_10(2 * std::max({in.offered_bps / in.capacity_pair_wall_bps, c.d_timer, 1.0}));
	c.clamped = c.d > kMaxDilation;
	c.d = std::min(c.d, kMaxDilation);
	return c;
}

double paced_dilation(const PacedTrial &t)
{
	const double pass = t.frame_wall_ns ? double(t.pass_p90_wall_ns) / double(t.frame_wall_ns) : 0.0;
	const double worst = std::max(t.busy_frac, pass);
	if (worst <= 0.5)
		return t.d;
	return std::min(kMaxDilation, round_up_10(t.d * worst / 0.5));
}

double paced_search(double d0, const std::function<bool(double d, PacedTrial &out)> &check)
{
	double failed = 0, passed = 0, d = d0;
	// true when the check at `at` passed; sets `stop` when the caller ended the search
	bool stop = false;
	auto passes = [&](double at, double *need) {
		PacedTrial t;
		if (!check(at, t)) {
			stop = true;
			return false;
		}
		*need = t.need;
		return t.need <= at;
	};
	for (int i = 0; i < 3 && passed == 0; i++) {
		double need = 0;
		const bool ok = passes(d, &need);
		if (stop)
			return 0;
		if (ok)
			passed = d;
		else
			failed = d, d = std::min({need, 4 * d, kMaxDilation});
	}
	for (int i = 0; i < 2 && passed > 0 && failed > 0; i++) {
		const double mid = round_up_10(std::sqrt(failed * passed));
		if (mid <= failed || mid >= passed)
			break;
		double need = 0;
		const bool ok = passes(mid, &need);
		if (stop)
			return 0;
		(ok ? passed : failed) = mid;
	}
	return passed > 0 ? passed : d;
}

double next_dilation(double d) { return std::min(kMaxDilation, round_up_10(d * 1.5)); }

uint64_t measure_jitter_ns(int ms)
{
	std::vector<uint64_t> maxima;
	auto now = [] { return tp::mono_wall_ns(); };
	const uint64_t start = now(), end = start + uint64_t{1'000'000} * static_cast<uint64_t>(ms);
	uint64_t prev = start, win_start = start, win_max = 0;
	while (prev < end) {
		uint64_t t = now();
		win_max = std::max(win_max, t - prev);
		prev = t;
		if (t - win_start >= 100'000) {
			maxima.push_back(win_max);
			win_max = 0;
			win_start = t;
		}
	}
	std::sort(maxima.begin(), maxima.end());
	return tp::percentile(maxima, 0.99);
}

namespace {
unsigned long long steal_ticks()
{
	std::ifstream f("/proc/stat");
	std::string cpu;
	unsigned long long v[8] = {};
	f >> cpu >> v[0] >> v[1] >> v[2] >> v[3] >> v[4] >> v[5] >> v[6] >> v[7];
	return v[7]; // USER_HZ ticks, all CPUs
}
} // namespace

GapReport measure_gaps(double seconds, uint64_t gap_ns, size_t threads)
{
	struct Gaps {
		uint64_t gaps = 0, mx = 0, total = 0;
	};
	auto now = [] { return tp::mono_wall_ns(); };
	const unsigned long long st0 = steal_ticks();
	const uint64_t start = now(), end = start + uint64_t(seconds * 1e9);
	std::vector<Gaps> per(std::max<size_t>(1, threads));
	auto spin = [&](Gaps &g) {
		uint64_t prev = now();
		while (prev < end) {
			uint64_t t = now();
			uint64_t d = t - prev;
			if (d > gap_ns) {
				g.gaps++;
				g.total += d;
			}
			g.mx = std::max(g.mx, d);
			prev = t;
		}
	};
	std::vector<std::thread> ts;
	for (size_t k = 1; k < per.size(); k++)
		ts.emplace_back(spin, std::ref(per[k]));
	spin(per[0]);
	for (auto &t : ts)
		t.join();
	GapReport r;
	r.threads = per.size();
	for (const auto &g : per) {
		r.gaps += g.gaps;
		r.total_ns += g.total;
		r.longest_ns = std::max(r.longest_ns, g.mx);
	}
	r.elapsed_s = double(now() - start) / 1e9;
	r.steal_frac = double(steal_ticks() - st0) / (100.0 * double(sysconf(_SC_NPROCESSORS_ONLN)) * r.elapsed_s);
	return r;
}

std::string GapReport::to_text(double gap_us) const
{
	char b[512];
	std::snprintf(b, sizeof(b),
		      "jitter: %llu gaps over %.0f us in %.1f s (%.1f per second, %.1f ms in all), longest %.0f us; "
		      "steal %.1f%% of the CPUs%s",
		      static_cast<unsigned long long>(gaps), gap_us, elapsed_s, double(gaps) / elapsed_s,
		      double(total_ns) / 1e6, double(longest_ns) / 1e3, 100 * steal_frac,
		      threads > 1 ? (" (" + std::to_string(threads) + " spinning threads, gaps summed)").c_str() : "");
	return b;
}

} // namespace qn
