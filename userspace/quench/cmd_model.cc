// cmd_model.cc - `quench model`: the reference bottleneck model (transport/cc/model.h) from the
// command line. No root, no namespaces: an ideal network to hold the emulator's numbers against
// (docs/cc.md "Reference model").
#include "cmd_model.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "cc.h"
#include "metrics.h"
#include "model.h"
#include "pacer.h"
#include "units.h"
#include "wire.h"

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
	for (int i = first; i < argc; i++) {
		const std::string s = argv[i];
		if (s == "--derived" || s == "--dequeue" || s == "--enqueue" || s == "--no-np") {
			if (s == "--derived")
				derived = true;
			else if (s == "--no-np")
				c.setup.np = false;
			else {
				c.mark_at_dequeue = s == "--dequeue";
				mark_set = true;
			}
			continue;
		}
		if (i + 1 >= argc)
			return die(s + " needs a value");
		const std::string v = argv[++i];
		auto num = [&](double lo, double hi, double &out) -> bool {
			char *end = nullptr;
			out = std::strtod(v.c_str(), &end);
			return !v.empty() && !*end && out >= lo && out <= hi;
		};
		double x = 0;
		std::string err;
		auto size = [&](uint64_t &out) {
			auto r = parse_size_bytes(v);
			if (!r)
				err = s + ": " + r.error().to_string();
			else
				out = *r;
		};
		auto time = [&](uint64_t &out) {
			auto r = parse_time_ns(v);
			if (!r)
				err = s + ": " + r.error().to_string();
			else
				out = *r;
		};
		if (s == "--senders") {
			if (!num(1, 1024, x))
				return die("--senders needs a count 1..1024, got '" + v + "'");
			c.senders = int(x);
		} else if (s == "--rate") {
			auto r = parse_rate_bps(v);
			if (!r)
				return die("--rate: " + r.error().to_string());
			c.line_rate_bps = *r;
		} else if (s == "--delay") {
			time(c.hop_delay_ns);
		} else if (s == "--mtu") {
			if (!num(256, 9000, x))
				return die("--mtu needs 256..9000, got '" + v + "'");
			mtu = uint32_t(x);
		} else if (s == "--size") {
			size(c.flow_bytes);
		} else if (s == "--stagger") {
			time(c.stagger_ns);
		} else if (s == "--jitter") {
			time(c.jitter_ns);
		} else if (s == "--duration") {
			time(c.duration_ns);
		} else if (s == "--from") {
			time(from_ns);
		} else if (s == "--window") {
			time(c.window_ns);
		} else if (s == "--queue-interval") {
			time(c.queue_interval_ns);
		} else if (s == "--kmin") {
			size(c.kmin_bytes);
			kset = true;
		} else if (s == "--kmax") {
			size(c.kmax_bytes);
			kset = true;
		} else if (s == "--pmax") {
			if (!num(0, 1, x))
				return die("--pmax needs a probability 0..1, got '" + v + "'");
			c.pmax = x;
			kset = true;
		} else if (s == "--cc") {
			c.setup.scheme = v;
		} else if (s == "--cc-params") {
			c.setup.params = v;
		} else if (s == "--cc-set") {
			auto eq = v.find('=');
			if (eq == std::string::npos || eq == 0)
				return die("--cc-set needs KEY=VALUE, got '" + v + "'");
			c.setup.overrides[v.substr(0, eq)] = v.substr(eq + 1);
		} else if (s == "--seed") {
			if (!num(0, 1e18, x))
				return die("--seed needs a number, got '" + v + "'");
			c.seed = uint64_t(x);
		} else if (s == "--trace") {
			if (!num(0, 1024, x))
				return die("--trace needs a count, got '" + v + "'");
			c.trace_senders = int(x);
		} else if (s == "--trace-out") {
			trace_out = v;
		} else if (s == "--queue-out") {
			queue_out = v;
		} else if (s == "--windows-out") {
			windows_out = v;
		} else {
			return die("unknown option '" + s + "' (see quench help)");
		}
		if (!err.empty())
			return die(err);
	}
	if (c.duration_ns == 0 || c.window_ns == 0 || c.queue_interval_ns == 0)
		return die("--duration, --window and --queue-interval must be positive");
	// Frames as the engine builds them (wire.h): payload_mtu() bytes of payload in Ethernet, IP,
	// UDP, BTH and ICRC.
	c.payload_bytes = payload_mtu(mtu);
	c.frame_bytes = c.payload_bytes + 14 + 20 + 8 + 12 + 4;
	const uint64_t rtt = cc::model_base_rtt_ns(c);
	if (derived) {
		auto d = cc::derive(c.setup.scheme, cc::Fabric{c.line_rate_bps, rtt, mtu, rtt, rtt}, true);
		if (!d)
			return die(d.error().to_string());
		for (const auto &[k, v] : d->overrides)
			if (!c.setup.overrides.count(k))
				c.setup.overrides[k] = v;
		for (const auto &[k, v] : d->switch_settings) {
			if (k == "ecn_at" && !mark_set)
				c.mark_at_dequeue = v == "dequeue";
			if (kset)
				continue; // thresholds given on the command line
			if (k == "kmin" || k == "kmax") {
				auto b = parse_size_bytes(v);
				if (b)
					(k == "kmin" ? c.kmin_bytes : c.kmax_bytes) = *b;
			} else if (k == "pmax") {
				c.pmax = std::strtod(v.c_str(), nullptr);
			}
		}
		for (const auto &n : d->notes)
			std::printf("derived %s\n", n.c_str());
	}
	{
		// The switch marks only ECT packets: the scheme's descriptor says whether it sends them.
		auto sch = cc::scheme(c.setup.scheme);
		if (!sch)
			return die("model: --cc: " + sch.error().to_string());
		c.ecn = sch->ecn;
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
	std::printf("goodput from %s to %s: mean %.3f Gbit/s (%.1f%% of the line rate, %.1f%% of the payload ceiling "
		    "%.3f Gbit/s), lowest %s window %.3f Gbit/s\n",
		    format_time(from_ns).c_str(), format_time(to ? to : c.duration_ns).c_str(), mean / 1e9,
		    100 * mean / double(c.line_rate_bps), 100 * mean / ceiling, ceiling / 1e9,
		    format_time(c.window_ns).c_str(), lowest / 1e9);
	auto qs = series_stats(r->queue_samples);
	std::printf("queue: mean %.0f B, p50 %lu B, p99 %lu B, peak %lu B (%zu samples every %s)\n", qs.mean,
		    static_cast<unsigned long>(qs.p50), static_cast<unsigned long>(qs.p99),
		    static_cast<unsigned long>(r->peak_queue_bytes), qs.samples, format_time(c.queue_interval_ns).c_str());
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
