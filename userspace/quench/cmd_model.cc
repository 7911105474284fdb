// cmd_model.cc - `quench model`: the reference bottleneck model (transport/cc/model.h) from the
// command line. No root, no namespaces: an ideal network to hold the emulator's numbers against
// (docs/cc.md "Reference model").
#include "quench/cmd_model.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>

#include "common/units.h"
#include "quench/cli.h"
#include "transport/cc/cc.h"
#include "transport/cc/model.h"
#include "transport/metrics.h"
#include "transport/pacer.h"
#include "transport/wire.h"

namespace {

int die(const std::string &m)
{
	std::fprintf(stderr, "quench model: %s\n", m.c_str());
	return 2;
}

} // namespace

int cmd_model(int argc, char **argv, int first)
{
	using namespace qn;
	using namespace qn::tp;
	cc::ModelConfig c;
	c.setup.scheme = "dcqcn";
	uint32_t mtu = 2048;
	uint64_t from_ns = 5'000'000;
	bool derived = false, kset = false, mark_set = false;
	std::string trace_out, queue_out, windows_out;
	CLI::App app{cli::about("model"), "model"};
	cli::number(app, "--senders", c.senders, 1, 1024, "senders into the one receiver");
	cli::rate(app, "--rate", c.line_rate_bps, "line rate of every link");
	cli::time(app, "--delay", c.hop_delay_ns, "propagation per hop");
	cli::number(app, "--mtu", mtu, 256, 9000, "IP MTU");
	cli::size(app, "--size", c.flow_bytes, "bytes per sender (0: send for the whole duration)");
	cli::time(app, "--stagger", c.stagger_ns, "sender i starts i x stagger later");
	cli::time(app, "--jitter", c.jitter_ns, "plus a uniform random start offset in [0, T)");
	cli::time(app, "--duration", c.duration_ns, "model time");
	cli::time(app, "--from", from_ns, "goodput is averaged from this time");
	cli::time(app, "--window", c.window_ns, "goodput window");
	cli::time(app, "--queue-interval", c.queue_interval_ns, "queue sample interval");
	auto *kmin = cli::size(app, "--kmin", c.kmin_bytes, "RED Kmin");
	auto *kmax = cli::size(app, "--kmax", c.kmax_bytes, "RED Kmax");
	auto *pmax = cli::number(app, "--pmax", c.pmax, 0, 1, "RED Pmax");
	app.add_option("--cc", c.setup.scheme, "scheme (quench schemes)");
	app.add_option("--cc-params", c.setup.params, "named parameter set");
	cli::key_values(app, "--cc-set", c.setup.overrides, "one parameter, KEY=VALUE (repeatable)");
	cli::number(app, "--seed", c.seed, 0, 1e18, "random seed");
	cli::number(app, "--trace", c.trace_senders, 0, 1024, "rate traces of the first N senders");
	app.add_option("--trace-out", trace_out, "rate trace CSV");
	app.add_option("--queue-out", queue_out, "queue samples CSV");
	app.add_option("--windows-out", windows_out, "goodput windows CSV");
	app.add_flag("--derived", derived, "the scheme's parameters derived for this fabric");
	bool at_dequeue = false, at_enqueue = false;
	auto *deq = app.add_flag("--dequeue", at_dequeue, "mark at dequeue");
	app.add_flag("--enqueue", at_enqueue, "mark at enqueue")->excludes(deq);
	bool no_np = false;
	app.add_flag("--no-np", no_np, "no notification point (negative control)");
	std::map<std::string, std::string> sw_set;
	cli::key_values(app, "--switch-set", sw_set,
			"one switch setting the model has, KEY=VALUE (" + cc::model_switch_keys() +
				"; a stage's <name>_phase places its epochs or slots, default random from the seed; repeatable)");
	if (int rc = cli::parse(app, argc, argv, first); rc >= 0)
		return rc;
	if (no_np)
		c.setup.np = false;
	kset = kmin->count() || kmax->count() || pmax->count();
	if (at_dequeue || at_enqueue) {
		c.mark_at_dequeue = at_dequeue;
		mark_set = true;
	}
	if (c.duration_ns == 0 || c.window_ns == 0 || c.queue_interval_ns == 0)
		return die("--duration, --window and --queue-interval must be positive");
	// Frames as the engine builds them (wire.h): payload_mtu() bytes of payload in Ethernet, IP,
	// UDP, BTH and ICRC.
	c.payload_bytes = payload_mtu(mtu);
	c.frame_bytes = c.payload_bytes + 14 + 20 + 8 + 12 + 4;
	const uint64_t rtt = cc::model_base_rtt_ns(c);
	// The scheme's switch settings: with --derived all of them (cc::derive: the RED profile
	// unless given on the command line), otherwise its stages' only (cc::derive_stages: a
	// scheme with /sfc runs SFC's congestion point, every other has it off); then --switch-set.
	// Keys the model does not have (pfc: it has no PFC) are left out.
	{
		const cc::Fabric fab{c.line_rate_bps, rtt, mtu, rtt, rtt};
		auto d = derived ? cc::derive(c.setup.scheme, fab, true) : cc::derive_stages(c.setup.scheme, fab);
		if (!d)
			return die(d.error().to_string());
		if (!d->refused.empty())
			return die(d->refused);
		for (const auto &[k, v] : d->overrides)
			if (!c.setup.overrides.count(k))
				c.setup.overrides[k] = v;
		for (const auto &[k, v] : d->switch_settings) {
			if ((k == "ecn_at" && mark_set) || ((k == "kmin" || k == "kmax" || k == "pmax") && kset))
				continue; // given on the command line
			if (auto st = cc::model_switch_set(c, k, v); !st)
				return die("derived " + st.error().to_string());
		}
		for (const auto &n : d->notes)
			std::printf("derived %s\n", n.c_str());
	}
	for (const auto &[k, v] : sw_set) {
		auto st = cc::model_switch_set(c, k, v);
		if (!st)
			return die("--switch-set: " + st.error().to_string());
		if (!*st)
			return die("--switch-set: the model has no switch setting '" + k + "' (it has " + cc::model_switch_keys() + ")");
	}
	{
		// The switch marks only ECT packets: the scheme's descriptor says whether it sends them
		// (and --switch-set ecn=off keeps marking off).
		auto sch = cc::scheme(c.setup.scheme);
		if (!sch)
			return die("model: --cc: " + sch.error().to_string());
		c.ecn = c.ecn && sch->ecn;
	}
	auto r = cc::run_model(c);
	if (!r)
		return die(r.error().to_string());
	std::printf("model: %d senders -> 1 at %s, %s per hop, MTU %u (%u B payload/frame), base RTT %s, %s, "
		    "marking %s (Kmin %s, Kmax %s, Pmax %g)\n",
		    c.senders, format_rate(c.line_rate_bps).c_str(), format_time(c.hop_delay_ns).c_str(), mtu,
		    c.payload_bytes, format_time(rtt).c_str(), format_time(c.duration_ns).c_str(),
		    !c.ecn ? "off" : c.mark_at_dequeue ? "at dequeue" : "at enqueue", format_size(c.kmin_bytes).c_str(),
		    format_size(c.kmax_bytes).c_str(), c.pmax);
	std::printf("cc: %s\n", r->describe.c_str());
	uint64_t to = 0;
	for (uint64_t d : r->done_ns)
		if (d && (to == 0 || d < to))
			to = d;
	double lowest = 0;
	const double mean = cc::model_mean_goodput(*r, c.window_ns, from_ns, to ? to : c.duration_ns, &lowest);
	// The most the bottleneck can deliver in payload: line rate x payload / wire bytes.
	const double ceiling = double(c.line_rate_bps) * c.payload_bytes / double(wire_bytes(c.frame_bytes));
	const uint64_t until = to ? to : c.duration_ns;
	if (until <= from_ns + c.window_ns)
		std::printf("goodput: no window (the first flow ended at %s, before %s + one %s window; set --from)\n",
			    format_time(until).c_str(), format_time(from_ns).c_str(), format_time(c.window_ns).c_str());
	else
		std::printf("goodput from %s to %s: mean %.3f Gbit/s (%.1f%% of the line rate, %.1f%% of the payload "
			    "ceiling %.3f Gbit/s), lowest %s window %.3f Gbit/s\n",
			    format_time(from_ns).c_str(), format_time(until).c_str(), mean / 1e9,
			    100 * mean / double(c.line_rate_bps), 100 * mean / ceiling, ceiling / 1e9,
			    format_time(c.window_ns).c_str(), lowest / 1e9);
	auto qs = series_stats(r->queue_samples);
	std::printf("queue: mean %.0f B, p50 %lu B, p99 %lu B, peak %lu B (%zu samples every %s)\n", qs.mean,
		    static_cast<unsigned long>(qs.p50), static_cast<unsigned long>(qs.p99),
		    static_cast<unsigned long>(r->peak_queue_bytes), qs.samples, format_time(c.queue_interval_ns).c_str());
	{
		// the same from --from on (a steady state without the start)
		const size_t from_sample = size_t(from_ns / c.queue_interval_ns);
		std::vector<uint64_t> tail;
		if (from_sample < r->queue_samples.size())
			tail.assign(r->queue_samples.begin() + long(from_sample), r->queue_samples.end());
		auto ts = series_stats(tail);
		std::printf("queue from %s: mean %.0f B, p50 %lu B, p99 %lu B (%zu samples)\n", format_time(from_ns).c_str(),
			    ts.mean, static_cast<unsigned long>(ts.p50), static_cast<unsigned long>(ts.p99), ts.samples);
	}
	if (c.flow_bytes) {
		// FCT as the engine reports it: start to the ACK of the flow's last byte (common.md §4).
		uint64_t sum = 0, mx = 0;
		size_t n = 0;
		for (uint64_t f : r->fct_ns)
			if (f) {
				sum += f;
				mx = std::max(mx, f);
				n++;
			}
		std::printf("fct: mean %s, max %s (%zu of %d flows done)\n", format_time(n ? sum / n : 0).c_str(),
			    format_time(mx).c_str(), n, c.senders);
		std::printf("fct_mean_ns %llu\n", static_cast<unsigned long long>(n ? sum / n : 0));
	}
	std::printf("signals: %lu of %lu data packets marked, %lu CNPs\n", static_cast<unsigned long>(r->marked),
		    static_cast<unsigned long>(r->data_packets), static_cast<unsigned long>(r->cnps));
	for (const auto &line : r->stage_reports)
		std::printf("%s\n", line.c_str());
	std::printf("signals at the senders: %lu BTS, %lu CC-postcards; senders paused %s in all\n",
		    static_cast<unsigned long>(r->bts_rx), static_cast<unsigned long>(r->postcards_rx),
		    format_time(r->paused_ns).c_str());
	std::printf("losses: %lu Not-ECT packets sent, %lu dropped by a switch stage, %lu NAKs, %lu retransmitted\n",
		    static_cast<unsigned long>(r->not_ect), static_cast<unsigned long>(r->stage_drops),
		    static_cast<unsigned long>(r->naks), static_cast<unsigned long>(r->retransmitted));
	auto write = [&](const std::string &path, auto &&body) -> bool {
		std::ofstream f(path);
		if (!f)
			return false;
		body(f);
		return bool(f);
	};
	if (!trace_out.empty() && !write(trace_out, [&](std::ofstream &f) {
		    f << "sender,t_ns,rate_bps\n";
		    for (const auto &p : r->trace)
			    f << p.sender << ',' << p.t_ns << ',' << p.rate_bps << '\n';
	    }))
		return die("cannot write " + trace_out);
	if (!queue_out.empty() && !write(queue_out, [&](std::ofstream &f) {
		    f << "t_ns,bytes\n";
		    for (size_t k = 0; k < r->queue_samples.size(); k++)
			    f << k * c.queue_interval_ns << ',' << r->queue_samples[k] << '\n';
	    }))
		return die("cannot write " + queue_out);
	if (!windows_out.empty() && !write(windows_out, [&](std::ofstream &f) {
		    f << "t_ns,goodput_bps\n";
		    for (const auto &w : r->windows)
			    f << w.start_ns << ',' << uint64_t(w.goodput_bps) << '\n';
	    }))
		return die("cannot write " + windows_out);
	return 0;
}
