// engine_health.cc - the engine's measurements: latency histograms, the validity verdict (health) and
// the switch queue samples (engine.h).
#include "transport/shard.h"

#include <bpf/bpf.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>


namespace qn::tp {

size_t Histogram::bucket(uint64_t v)
{
	if (v < 1024)
		return size_t(v);
	int lg = 63 - __builtin_clzll(v); // >= 10
	size_t sub = size_t((v >> (lg - 4)) & 15);
	size_t b = 1024 + size_t(lg - 10) * 16 + sub;
	return std::min(b, size_t(1024 + 16 * 40 - 1));
}

uint64_t Histogram::upper(size_t b)
{
	if (b < 1024)
		return b;
	size_t lg = (b - 1024) / 16 + 10;
	uint64_t sub = (b - 1024) % 16;
	return ((16 + sub + 1) << (lg - 4)) - 1;
}

void Histogram::add(uint64_t v)
{
	b_[bucket(v)]++;
	n_++;
	max_ = std::max(max_, v);
}

void Histogram::merge(const Histogram &o)
{
	for (size_t i = 0; i < b_.size(); i++)
		b_[i] += o.b_[i];
	n_ += o.n_;
	max_ = std::max(max_, o.max_);
}

uint64_t Histogram::quantile(double p) const
{
	if (n_ == 0)
		return 0;
	uint64_t want = uint64_t(std::ceil(p * double(n_)));
	want = std::max<uint64_t>(want, 1);
	uint64_t acc = 0;
	for (size_t i = 0; i < b_.size(); i++) {
		acc += b_[i];
		if (acc >= want)
			return std::min(upper(i), max_);
	}
	return max_;
}

std::string Health::to_text() const
{
	std::ostringstream o;
	o << "validity: " << (valid ? "VALID" : "INVALID") << "\n";
	for (const auto &r : reasons)
		o << "  reason: " << r << "\n";
	o << "  dilation " << double(d_milli) / 1000.0 << ", base RTT " << base_rtt_ns << " ns (fabric)\n"
	  << "  pacer lateness p99 " << late_p99_ns << " ns, max " << late_max_ns << " ns (fabric, "
	  << late_count << " sends), link efficiency " << link_efficiency
	  << (link_efficiency_host.empty() ? "" : " (" + link_efficiency_host + ")") << "\n"
	  << "  stalls " << stalls << " (threshold " << stall_threshold_wall_ns << " ns wall, max "
	  << stall_max_wall_ns << " ns); passes longer than a frame time (" << long_pass_wall_ns
	  << " ns wall): " << pass_stops << " stops (1-2 in a row), " << overload_passes
	  << " in longer runs (the engine behind), of " << moved_passes << " passes that moved frames\n"
	  << (rearm_deferred ? "  io_uring: " + std::to_string(rearm_deferred) +
					 " socket polls re-armed late (the submission queue was full)\n"
			     : std::string())
	  << "  xsk drops " << xsk_drops << ", tx held " << tx_held << ", tx frames exhausted " << tx_no_frame
	  << ", softnet drops " << softnet_drops
	  << ", time_squeeze " << time_squeeze << ", veth drops " << veth_drops << "\n"
	  << "  loop iterations " << loop_iters << ", sleeps " << sleeps << ", send calls " << syscall_kicks
	  << ", busy " << busy_wall_ns / 1000 << " us (wall, passes that moved frames)\n"
	  << "  kicks carrying frames " << kicks << ": wall p50 " << kick_p50_wall_ns << " ns, p99 " << kick_p99_wall_ns
	  << " ns, max " << kick_max_wall_ns << " ns; passes that sent " << passes << ": wall p50 " << pass_p50_wall_ns
	  << " ns, p99 " << pass_p99_wall_ns << " ns, max " << pass_max_wall_ns << " ns\n";
	if (shards.size() > 1) {
		o << "  shards:";
		for (size_t k = 0; k < shards.size(); k++) {
			const PerShard &sh = shards[k];
			o << (k ? ";" : "") << " " << k << " (" << sh.hosts << " hosts, " << sh.cables << " cables) stalls "
			  << sh.stalls << ", stops " << sh.pass_stops << ", overload passes " << sh.overload_passes
			  << ", sleeps " << sh.sleeps << ", busy " << sh.busy_wall_ns / 1000 << " us";
		}
		o << "\n";
	}
	if (!switch_links.empty()) {
		char b[512];
		std::snprintf(b, sizeof(b),
			      "  at the switches (all links): arrivals kept %.2f%% of their time (worst %s), departures %.2f%% "
			      "(worst %s); fast 8-frame windows %.3f%% (worst %s); lost periods unposted %llu; "
			      "links with lost time but under %llu frames of backlog, not judged: %llu\n",
			      100 * sw_arrival_eff, sw_arrival_worst.empty() ? "-" : sw_arrival_worst.c_str(),
			      100 * sw_departure_eff, sw_departure_worst.empty() ? "-" : sw_departure_worst.c_str(),
			      100 * sw_fast_frac, sw_fast_worst.empty() ? "-" : sw_fast_worst.c_str(),
			      static_cast<unsigned long long>(sw_events_lost),
			      static_cast<unsigned long long>(SwitchLink::kKeptMinFrames),
			      static_cast<unsigned long long>(sw_links_unjudged));
		o << b;
		for (const SwitchLink &l : switch_links) {
			std::snprintf(b, sizeof(b),
				      "    %-16s %-10s backlogged %llu ns, lost %llu ns (in engine stops %llu; %.2f%% not), frames %llu (late %llu), "
				      "windows %llu (fast %llu)%s\n",
				      l.port.c_str(), l.departures ? "departures" : "arrivals",
				      static_cast<unsigned long long>(l.backlogged_ns), static_cast<unsigned long long>(l.lost_ns),
				      static_cast<unsigned long long>(l.lost_stalled_ns),
				      100 * (1 - l.efficiency()), static_cast<unsigned long long>(l.frames),
				      static_cast<unsigned long long>(l.late_frames), static_cast<unsigned long long>(l.windows),
				      static_cast<unsigned long long>(l.fast_windows),
				      l.kept_judged() ? "" : "; kept time not judged (backlog under 100 frames)");
			o << b;
		}
	}
	return o.str();
}

Result<std::pair<uint64_t, uint64_t>> read_softnet()
{
	std::ifstream f("/proc/net/softnet_stat");
	if (!f)
		return sys_error(errno, "open /proc/net/softnet_stat");
	std::string line;
	uint64_t drops = 0, squeeze = 0;
	while (std::getline(f, line)) {
		std::istringstream ss(line);
		std::string processed, dropped, sq;
		if (!(ss >> processed >> dropped >> sq))
			continue;
		drops += std::stoull(dropped, nullptr, 16);
		squeeze += std::stoull(sq, nullptr, 16);
	}
	return std::make_pair(drops, squeeze);
}

Status Shard::sample_queue(const std::string &sw, const std::string &port, uint64_t interval_ns)
{
	bool sw_known = false;
	size_t qi = desc_.queues.size();
	for (size_t i = 0; i < desc_.queues.size(); i++)
		if (desc_.queues[i].sw == sw) {
			sw_known = true;
			if (desc_.queues[i].port == port)
				qi = i;
		}
	if (!sw_known)
		return make_error("queue sampling: no switch '" + sw + "' with queues in fabric " + desc_.name);
	if (qi == desc_.queues.size())
		return make_error("queue sampling: switch " + sw + " has no port '" + port + "'");
	if (interval_ns == 0)
		return make_error("queue sampling: the interval must be positive");
	if (auto d = desc_.queues[qi].depth(); !d) // the probe works (its pin is there)
		return d.error();
	qprobes_.push_back(qi);
	qseries_.push_back(QueueSeries{sw + "/" + port, {}});
	qsample_ns_ = qsample_ns_ ? std::min(qsample_ns_, interval_ns) : interval_ns;
	return ok_status();
}

Status Shard::sample_all_queues(uint64_t interval_ns)
{
	for (const QueueDesc &q : desc_.queues)
		QN_TRY(sample_queue(q.sw, q.port, interval_ns));
	return ok_status();
}

void Shard::sample_queues(uint64_t now)
{
	for (size_t i = 0; i < qprobes_.size(); i++) {
		auto depth = desc_.queues[qprobes_[i]].depth();
		if (!depth)
			continue;
		qseries_[i].samples.emplace_back(now, *depth);
	}
	uint64_t rx = rx_data_total(); // every shard's hosts: the fabric's delivered bytes
	for (const Shard *p : peers_)
		rx += p->rx_data_total();
	rx_series_.emplace_back(now, rx);
	// A late sample is taken late, never doubled up.
	next_qsample_ = std::max(next_qsample_ + qsample_ns_, now + qsample_ns_ / 2);
}

Result<Shard::Totals> Shard::totals()
{
	Totals t;
	if (role_.owner) { // the machine's: counted once, by the owner
		auto sn = read_softnet();
		if (!sn)
			return sn.error();
		t.softnet_drops = sn->first;
		t.squeeze = sn->second;
	}
	for (const auto &h : hosts_) {
		if (h->port_drops)
			if (auto c = h->port_drops())
				t.veth_drops += *c;
		if (auto x = h->port->stats())
			t.xsk_drops += x->drops();
		t.tx_held += h->port->tx_held();
		t.kicks += h->port->kicks();
		t.tx_peak = std::max(t.tx_peak, h->port->tx_frames_peak());
		t.tx_no_frame += h->c.tx_no_frame;
	}
	for (const auto &c : cables_)
		for (int k = 0; k < 2; k++) {
			if (auto x = c->end[k]->stats())
				t.xsk_drops += x->drops();
			t.tx_held += c->end[k]->tx_held();
			t.kicks += c->end[k]->kicks();
			t.tx_peak = std::max(t.tx_peak, c->end[k]->tx_frames_peak());
		}
	return t;
}

Status Shard::health_begin()
{
	auto t = totals();
	if (!t)
		return t.error();
	base_ = *t;
	late_ = Histogram();
	kick_wall_ = Histogram();
	pass_wall_ = Histogram();
	stalls_ = stall_max_ = iters_ = sleeps_ = busy_wall_ns_ = 0;
	pass_stops_ = overload_passes_ = moved_passes_ = long_streak_ = 0;
	long_pass_wall_ns_ = 0;
	for (const auto &h : hosts_) // the shortest credit of a monitored host link
		if (h->fid && h->fid->credit_wall_ns &&
		    (!long_pass_wall_ns_ || h->fid->credit_wall_ns < long_pass_wall_ns_))
			long_pass_wall_ns_ = h->fid->credit_wall_ns;
	for (auto &h : hosts_) {
		h->ser_ns = h->lost_ns = 0;
		h->affected.clear();
	}
	stalled_.clear();
	reset_switch_monitors();
	return ok_status();
}

Health Shard::health(const IntervalSet &other_stalls)
{
	Health r;
	poll_switch_monitors();
	switch_monitor_health(r, other_stalls);
	r.switch_monitored = true; // every host of this shard (judge_health: and some host at all)
	for (const auto &h : hosts_)
		r.switch_monitored = r.switch_monitored && h->fid;
	r.hosts = hosts_.size();
	r.d_milli = clock_.d_milli();
	r.base_rtt_ns = opt_.base_rtt_ns;
	r.late_p99_ns = late_.quantile(0.99);
	r.late_max_ns = late_.max();
	r.late_count = late_.count();
	for (const auto &h : hosts_) {
		// Only hosts backlogged for at least 100 frames' worth of time are judged.
		if (h->ser_ns > 100 * serialization_ns(2100, h->link_bps)) {
			double eff = double(h->ser_ns) / double(h->ser_ns + h->lost_ns);
			if (eff < r.link_efficiency)
				r.link_efficiency_host = h->name;
			r.link_efficiency = std::min(r.link_efficiency, eff);
		}
	}
	r.stalls = stalls_;
	r.rearm_deferred = rearm_failed_;
	r.pass_stops = pass_stops_;
	r.overload_passes = overload_passes_;
	r.moved_passes = moved_passes_;
	r.long_pass_wall_ns = long_pass_wall_ns_;
	r.stall_max_wall_ns = stall_max_;
	r.stall_threshold_wall_ns = stall_thr_wall_;
	r.loop_iters = iters_;
	r.kick_p50_wall_ns = kick_wall_.quantile(0.5);
	r.kick_p99_wall_ns = kick_wall_.quantile(0.99);
	r.kick_max_wall_ns = kick_wall_.max();
	r.kicks = kick_wall_.count();
	r.pass_p50_wall_ns = pass_wall_.quantile(0.5);
	r.pass_p90_wall_ns = pass_wall_.quantile(0.9);
	r.pass_p99_wall_ns = pass_wall_.quantile(0.99);
	r.pass_max_wall_ns = pass_wall_.max();
	r.passes = pass_wall_.count();
	r.sleeps = sleeps_;
	r.busy_wall_ns = busy_wall_ns_;
	if (auto t = totals()) {
		auto delta = [](uint64_t now, uint64_t base) { return now - std::min(now, base); };
		r.softnet_drops = delta(t->softnet_drops, base_.softnet_drops);
		r.time_squeeze = delta(t->squeeze, base_.squeeze);
		r.veth_drops = delta(t->veth_drops, base_.veth_drops);
		r.xsk_drops = delta(t->xsk_drops, base_.xsk_drops);
		r.tx_held = delta(t->tx_held, base_.tx_held);
		r.tx_no_frame = delta(t->tx_no_frame, base_.tx_no_frame);
		r.syscall_kicks = delta(t->kicks, base_.kicks);
		r.tx_frames_peak = t->tx_peak;
	}
	r.tx_frames_per_port = opt_.frames_per_port / 2;
	r.shards.push_back(Health::PerShard{hosts_.size(), cables_.size(), stalls_, pass_stops_, overload_passes_, sleeps_,
					 busy_wall_ns_});
	return r;
}

void judge_health(Health &r, const EngineOptions &opt)
{
	r.switch_monitored = r.switch_monitored && r.hosts > 0;
	{
		uint64_t bl[2] = {}, lost[2] = {}, win = 0, fast = 0;
		double worst_eff[2] = {1.0, 1.0}, worst_fast = 0;
		for (const SwitchLink &l : r.switch_links) {
			const int d = l.departures ? 1 : 0;
			win += l.windows;
			fast += l.fast_windows;
			r.sw_events_lost += l.events_lost;
			if (l.kept_judged()) {
				bl[d] += l.backlogged_ns;
				lost[d] += l.lost_ns - std::min(l.lost_ns, l.lost_stalled_ns);
				if (l.efficiency() < worst_eff[d]) {
					worst_eff[d] = l.efficiency();
					(d ? r.sw_departure_worst : r.sw_arrival_worst) = l.port;
				}
			} else if (l.lost_ns > l.lost_stalled_ns) {
				r.sw_links_unjudged++;
			}
			if (l.frames < 100) // a worst link named with at least 100 backlogged frames
				continue;
			if (l.fast_frac() > worst_fast) {
				worst_fast = l.fast_frac();
				r.sw_fast_worst = l.port + (d ? " departures" : " arrivals");
			}
		}
		r.sw_arrival_eff = bl[0] ? double(bl[0]) / double(bl[0] + lost[0]) : 1.0;
		r.sw_departure_eff = bl[1] ? double(bl[1]) / double(bl[1] + lost[1]) : 1.0;
		r.sw_fast_frac = win ? double(fast) / double(win) : 0.0;
	}
	auto fail = [&](std::string why) {
		r.valid = false;
		r.reasons.push_back(std::move(why));
	};
	// Where the switches measure every host link, their figures judge the run and the
	// pacer's own lateness and efficiency are reported only; stalls and late periods tag the
	// flows they touched (fidelity.h) instead of failing the run.
	const uint64_t late_thr = uint64_t(opt.late_p99_frac * double(opt.base_rtt_ns));
	const bool late_bad = !r.switch_monitored && r.late_count >= 100 && r.late_p99_ns > late_thr;
	const bool eff_bad = !r.switch_monitored && r.link_efficiency < opt.min_link_efficiency;
	const bool sw_bad = r.sw_arrival_eff < opt.min_switch_efficiency ||
			    r.sw_departure_eff < opt.min_switch_efficiency || r.sw_fast_frac > opt.max_fast_windows;
	if (late_bad)
		fail("pacer lateness p99 " + std::to_string(r.late_p99_ns) + " ns > " + std::to_string(late_thr) +
		     " ns (" + std::to_string(int(opt.late_p99_frac * 100)) + "% of the base RTT)");
	if (eff_bad) {
		char b[160];
		std::snprintf(b, sizeof(b), "backlogged hosts reached %.1f%% of their link rate (< %.0f%%)",
			      100 * r.link_efficiency, 100 * opt.min_link_efficiency);
		fail(b);
	}
	if (r.sw_arrival_eff < opt.min_switch_efficiency || r.sw_departure_eff < opt.min_switch_efficiency) {
		char b[240];
		std::snprintf(b, sizeof(b),
			      "at the switches, backlogged links kept %.2f%% (arrivals, worst %s) and %.2f%% "
			      "(departures, worst %s) of their time (< %.0f%%)",
			      100 * r.sw_arrival_eff, r.sw_arrival_worst.empty() ? "-" : r.sw_arrival_worst.c_str(),
			      100 * r.sw_departure_eff, r.sw_departure_worst.empty() ? "-" : r.sw_departure_worst.c_str(),
			      100 * opt.min_switch_efficiency);
		fail(b);
	}
	if (r.sw_fast_frac > opt.max_fast_windows) {
		char b[200];
		std::snprintf(b, sizeof(b), "%.2f%% of 8-frame windows at the switches were faster than line rate plus one "
			      "frame (> %.0f%%; worst %s)", 100 * r.sw_fast_frac, 100 * opt.max_fast_windows,
			      r.sw_fast_worst.empty() ? "-" : r.sw_fast_worst.c_str());
		fail(b);
	}
	if (r.sw_events_lost)
		fail(std::to_string(r.sw_events_lost) + " lost periods the switches could not post (flows untagged)");
	if (r.xsk_drops)
		fail(std::to_string(r.xsk_drops) + " AF_XDP ring drops");
	if (r.tx_no_frame)
		fail("every AF_XDP TX frame was in flight downstream " + std::to_string(r.tx_no_frame) +
		     " times (a hidden queue in the sender; raise frames_per_port)");
	if (r.tx_held)
		fail("the kernel held back AF_XDP TX frames after " + std::to_string(r.tx_held) +
		     " kicks (a hidden queue in the sender)");
	if (r.softnet_drops)
		fail(std::to_string(r.softnet_drops) + " softnet backlog drops");
	if (r.time_squeeze)
		fail(std::to_string(r.time_squeeze) + " softnet time_squeeze events");
	// Links too briefly backlogged to judge that still lost time outside engine stops: the
	// engine served them late, so an attempt their lost periods made INVALID (its affected
	// bytes) is CPU-bound too, and a retry at a larger D is its remedy.
	r.cpu_bound = late_bad || eff_bad || sw_bad || r.tx_no_frame || r.tx_held || r.time_squeeze ||
		      r.sw_links_unjudged > 0;
	if (r.veth_drops)
		fail(std::to_string(r.veth_drops) + " host veth drops");
}

Affected Shard::affected() const
{
	Affected a;
	// One shard: its stalls held every host. Several: the engine gives each shard's stalls to
	// the flows it touches (Engine::affected, flow_shards).
	if (role_.count == 1)
		a.all = stalled_;
	for (const auto &[from, to] : sw_lost_all_.intervals())
		a.all.add(from, to);
	for (const auto &h : hosts_)
		if (!h->affected.empty())
			a.host[h->name] = h->affected;
	for (const auto &[name, s] : foreign_affected_)
		for (const auto &[from, to] : s.intervals())
			a.host[name].add(from, to);
	return a;
}

} // namespace qn::tp
