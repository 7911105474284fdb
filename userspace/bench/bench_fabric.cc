// bench_fabric.cc - `quench bench fabric` (bench_fabric.h).
#include "bench/bench_fabric.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <thread>

#include "bench/frames.h"
#include "bench/testrun.h"
#include "common/paths.h"
#include "control/bringup.h"
#include "control/capacity.h"
#include "control/engine_desc.h"
#include "control/fattree.h"
#include "control/runner.h"
#include "control/switchd.h"
#include "control/sysmem.h"
#include "control/topology.h"
#include "transport/clock.h"
#include "transport/engine.h"
#include "transport/metrics.h"
#include "transport/resources.h"
#include "transport/wire.h"

namespace qn {

namespace {

using tp::FramePort;

struct ShapeDef {
	const char *name;
	const char *code; // the topology's name while it is up: the prefix and this (namespaces qn-<name>-<node>)
	bool by_default;
};

const ShapeDef kShapes[] = {
	// No star of 64: a switch has at most 32 ports (QN_MAX_PORTS, the signal mark's 5 port bits).
	{"star-8", "s8", true},      {"star-32", "s32", true},   {"leafspine", "ls", true},
	{"fattree-k4", "k4", true}, {"fattree-k8", "k8", false}, {"ns3-fat320", "f320", false},
};

const ShapeDef *find_shape(const std::string &n)
{
	for (const auto &s : kShapes)
		if (n == s.name)
			return &s;
	return nullptr;
}

std::string star_text(const std::string &topo, int n)
{
	const std::string hs = "h[1.." + std::to_string(n) + "]";
	return "name " + topo + "\ndefaults rate=100Gbps mtu=2048 delay=1us buffer=32MB\nswitch s1\nhost " + hs +
	       "\nlink " + hs + " s1\n";
}

// netns/leafspine.topo's shape at 100 Gbit/s: 2 spines, 4 leaves of 4 hosts, cables of 1 us.
std::string leafspine_text(const std::string &topo)
{
	return "name " + topo +
	       "\ndefaults rate=100Gbps mtu=2048 delay=1us buffer=32MB\nswitch spine1\nswitch spine2\nswitch leaf[1..4]\n"
	       "host h[1..16]\nlink h[1..4] leaf1\nlink h[5..8] leaf2\nlink h[9..12] leaf3\nlink h[13..16] leaf4\n"
	       "link leaf[1..4] spine1\nlink leaf[1..4] spine2\n";
}

// The project's percentile convention (transport/metrics.h).
double median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	return tp::percentile(v, 0.5);
}

// Namespaces of topology `topo` still present (/run/netns/qn-<topo>-*).
size_t namespaces_left(const std::string &topo)
{
	size_t n = 0;
	const std::string prefix = "qn-" + topo + "-";
	if (DIR *d = opendir("/run/netns")) {
		while (dirent *e = readdir(d))
			n += std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0;
		closedir(d);
	}
	return n;
}

// Switches on the shortest path from node a to node b of the engine's graph (BFS).
int switch_hops(const tp::EngineDesc &d, int a, int b)
{
	std::vector<std::vector<int>> adj(d.nodes.size());
	for (const auto &l : d.links) {
		adj[size_t(l.a)].push_back(l.b);
		adj[size_t(l.b)].push_back(l.a);
	}
	std::vector<int> dist(d.nodes.size(), -1);
	std::deque<int> q{a};
	dist[size_t(a)] = 0;
	while (!q.empty()) {
		const int u = q.front();
		q.pop_front();
		if (u == b)
			return dist[size_t(u)] - 1; // links minus one: the nodes between are switches
		for (int v : adj[size_t(u)])
			if (dist[size_t(v)] < 0 && (!d.nodes[size_t(v)].host || v == b)) {
				dist[size_t(v)] = dist[size_t(u)] + 1;
				q.push_back(v);
			}
	}
	return -1;
}

// ---------------------------------------------------------------------------------------------
// The raw baselines: every host sends full frames to the next host of the ring with at most
// kWindow unanswered, every data frame is answered by an ACK frame (the engine's encoding), and
// every cable forwards what it receives at once (no delay line: at D = 1 a delay is not work).

// Frames a raw sender keeps unanswered, and pushes per pass: a pass over a k=8 fat-tree's 640
// sockets takes tens of milliseconds on one thread, and a cable end's RX ring (half its chunks)
// must hold what every sender whose path crosses it pushed meanwhile.
constexpr uint32_t kWindow = 32;
constexpr int kBatch = 16;
// A window with no ACK for this long is reset (a frame lost would block it for good); frames
// are counted end to end after a drain, so a reset of a slow window loses nothing it reports.
constexpr uint64_t kStallNs = 1'000'000'000;

struct RawHost {
	std::unique_ptr<FramePort> port;
	std::vector<uint8_t> data, ack; // to the next host; to the previous one
	size_t payload = 0;
	uint32_t inflight = 0, acks_due = 0;
	uint64_t last_progress = 0;
	// counters of the current measurement
	uint64_t rcvd_payload = 0, stalls = 0;
	// since the port opened: data and ACK frames pushed and received, frames of neither kind
	uint64_t d_sent = 0, d_rcvd = 0, a_sent = 0, a_rcvd = 0, other = 0;
};

struct RawCable {
	std::unique_ptr<FramePort> end[2];
};

struct RawFabric {
	std::vector<RawHost> hosts;
	std::vector<RawCable> cables;
};

Status open_raw(const tp::EngineDesc &d, uint32_t frames, RawFabric &rf)
{
	const size_t n = d.hosts.size();
	rf.hosts.resize(n);
	for (size_t i = 0; i < n; i++) {
		auto p = d.hosts[i].open(frames);
		if (!p)
			return p.error();
		rf.hosts[i].port = std::move(*p);
	}
	rf.cables.resize(d.cables.size());
	for (size_t c = 0; c < d.cables.size(); c++)
		for (int k = 0; k < 2; k++) {
			auto p = d.cables[c].open[k](frames);
			if (!p)
				return p.error();
			rf.cables[c].end[k] = std::move(*p);
		}
	const size_t payload = tp::payload_mtu(d.hosts[0].mtu);
	for (size_t i = 0; i < n; i++) {
		const auto &me = d.hosts[i], &next = d.hosts[(i + 1) % n], &prev = d.hosts[(i + n - 1) % n];
		tp::TxHeader h;
		h.src = me.ep;
		h.dst = tp::Endpoint{me.gw, next.ep.ip};
		h.sport = tp::qpn_to_sport(0x100 + uint32_t(i));
		h.dest_qp = 0x100 + uint32_t((i + 1) % n);
		h.opcode = QN_OP_RC_SEND_ONLY;
		RawHost &r = rf.hosts[i];
		r.payload = payload;
		r.data.resize(tp::kChunkBytes);
		r.data.resize(tp::encode_data(h, payload, false, r.data.data(), r.data.size(),
					      [&](uint8_t *p) { std::memset(p, 0x5A, payload); }));
		tp::TxHeader a;
		a.src = me.ep;
		a.dst = tp::Endpoint{me.gw, prev.ep.ip};
		a.sport = tp::qpn_to_sport(0x100 + uint32_t(i));
		a.dest_qp = 0x100 + uint32_t((i + n - 1) % n);
		r.ack.resize(tp::kChunkBytes);
		r.ack.resize(tp::encode_ack(a, false, r.ack.data(), r.ack.size()));
		if (r.data.empty() || r.ack.empty())
			return make_error("bench fabric: could not encode the raw frames");
	}
	return ok_status();
}

// One thread's share: hosts and cables by index. Counts payload received from `count_from` on.
void raw_loop(RawFabric &rf, const std::vector<size_t> &hosts, const std::vector<size_t> &cables, uint64_t count_from,
	      uint64_t data_until, uint64_t end)
{
	uint64_t addr[64];
	uint32_t len[64];
	for (size_t i : hosts)
		rf.hosts[i].last_progress = tp::mono_wall_ns();
	for (uint64_t now = tp::mono_wall_ns(); now < end; now = tp::mono_wall_ns()) {
		const bool counting = now >= count_from;
		for (size_t i : hosts) {
			RawHost &h = rf.hosts[i];
			FramePort &p = *h.port;
			const uint32_t got = p.rx_peek(64, addr, len);
			for (uint32_t k = 0; k < got; k++) {
				if (len[k] == h.data.size()) { // a data frame from the previous host
					h.acks_due++;
					h.d_rcvd++;
					if (counting)
						h.rcvd_payload += h.payload;
				} else if (len[k] == h.ack.size()) { // an ACK from the next host
					h.a_rcvd++;
					h.inflight -= h.inflight > 0;
					h.last_progress = now;
				} else {
					h.other++;
				}
				p.rx_recycle(addr[k]);
			}
			if (got)
				p.refill();
			for (; h.acks_due > 0 && bench::push_frame(p, h.ack); h.a_sent++)
				h.acks_due--;
			for (int k = 0; k < kBatch && now < data_until && h.inflight < kWindow && bench::push_frame(p, h.data); k++)
				h.inflight++, h.d_sent++;
			if (h.inflight >= kWindow && now - h.last_progress > kStallNs) {
				h.inflight = 0; // start over rather than wait forever on a lost frame
				h.last_progress = now;
				h.stalls++;
			}
			p.flush();
		}
		for (size_t c : cables)
			for (int k = 0; k < 2; k++) {
				FramePort &in = *rf.cables[c].end[k], &out = *rf.cables[c].end[1 - k];
				const uint32_t got = in.rx_peek(64, addr, len);
				for (uint32_t j = 0; j < got; j++) {
					// a frame the other end cannot take is lost: raw_lost counts it
					(void)bench::push_frame(out, in.frame(addr[j]), len[j]);
					in.rx_recycle(addr[j]);
				}
				if (got)
					in.refill();
				if (got || out.tx_needs_service()) // frames a kick left in the TX ring
					out.flush();
			}
	}
}

// Payload Gbit/s the raw fabric moved in `seconds` on `threads` threads (hosts and cables dealt
// round-robin; both ends of a cable on one thread). Adds the windows that stalled to `stalls`.
double raw_gbps(RawFabric &rf, size_t threads, double seconds, uint64_t &stalls)
{
	for (auto &h : rf.hosts) // the drain before left nothing in flight, or lost it
		h.rcvd_payload = 0, h.stalls = 0, h.inflight = 0;
	std::vector<std::vector<size_t>> hs(threads), cs(threads);
	for (size_t i = 0; i < rf.hosts.size(); i++)
		hs[i % threads].push_back(i);
	for (size_t c = 0; c < rf.cables.size(); c++)
		cs[c % threads].push_back(c);
	const uint64_t t0 = tp::mono_wall_ns();
	const uint64_t warm = uint64_t(seconds * 0.2e9), from = t0 + warm, end = from + uint64_t(seconds * 1e9);
	std::vector<std::thread> ts;
	for (size_t t = 1; t < threads; t++)
		ts.emplace_back(raw_loop, std::ref(rf), std::cref(hs[t]), std::cref(cs[t]), from, end, end);
	raw_loop(rf, hs[0], cs[0], from, end, end);
	for (auto &t : ts)
		t.join();
	// drain: what is in flight arrives and is answered before the next measurement starts
	std::vector<size_t> all_h(rf.hosts.size()), all_c(rf.cables.size());
	for (size_t i = 0; i < all_h.size(); i++)
		all_h[i] = i;
	for (size_t i = 0; i < all_c.size(); i++)
		all_c[i] = i;
	// in slices of 20 ms until every frame pushed has arrived, at most 2 s (a lost frame never does)
	auto settled = [&] {
		uint64_t sent = 0, rcvd = 0;
		for (const auto &h : rf.hosts)
			sent += h.d_sent + h.a_sent, rcvd += h.d_rcvd + h.a_rcvd;
		return sent == rcvd;
	};
	for (int i = 0; i < 100 && !settled(); i++)
		raw_loop(rf, all_h, all_c, UINT64_MAX, 0, tp::mono_wall_ns() + 20'000'000);
	uint64_t bytes = 0;
	for (const auto &h : rf.hosts)
		bytes += h.rcvd_payload, stalls += h.stalls;
	return double(bytes) * 8 / seconds / 1e9;
}

// ---------------------------------------------------------------------------------------------

struct Down {
	std::string name;
	bool up = false;
	~Down()
	{
		if (up)
			(void)topo_down(name);
	}
};

Result<FabricShapeResult> bench_shape(const ShapeDef &s, const FabricBenchOptions &o)
{
	const std::string topo = o.prefix + s.code;
	auto text = fabric_shape_text(s.name, topo);
	if (!text)
		return text.error();
	auto t = std::string(s.name) == "ns3-fat320" ? parse_ns3_topology(*text, "fat.txt", topo)
						      : parse_topology(*text, std::string("bench fabric ") + s.name);
	if (!t)
		return t.error();
	FabricShapeResult r;
	r.name = s.name;
	for (const auto &n : t->nodes)
		(n.kind == NodeKind::Host ? r.hosts : r.switches)++;
	r.links = t->links.size();
	for (const auto &l : t->links)
		r.cables += is_cable_link(*t, l);
	r.sockets = r.hosts + 2 * r.cables;
	r.veth_pairs = r.links + r.cables;
	if (auto st = tp::check_engine_needs(s.name, tp::fit_engine_needs(r.hosts, r.cables, tp::kDefaultFramesPerPort,
									  tp::machine_limits()).need,
					     tp::machine_limits());
	    !st)
		return st.error();

	auto d = Dilation::make(1.0);
	UpOptions uo;
	uo.dilation = *d;
	uo.owned = true;
	const double kmem0 = settled_kernel_mib();
	Down down{topo};
	auto t0 = std::chrono::steady_clock::now();
	down.up = true; // a failed up leaves parts behind: take them down too
	QN_TRY(topo_up(*t, uo));
	r.up_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	const std::string sd = switchd_pid(topo);
	r.mem_topo_mib = kernel_mib() - kmem0 + (sd.empty() ? 0 : rss_mib(sd));
	r.switchd_fds = sd.empty() ? 0 : count_fds(sd);
	if (auto st = set_running_switches(topo, {{"pfc", "on"}}); !st)
		return st.error();

	std::vector<std::string> hosts;
	for (const auto &n : t->nodes)
		if (n.kind == NodeKind::Host)
			hosts.push_back(n.name);
	const auto flows = ring_flows(hosts, hosts);
	const size_t fds0 = count_fds("self");
	const size_t cpus = size_t(std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN)));
	for (int round = 0; round < o.rounds; round++) {
		if (o.stop && o.stop())
			return make_error("interrupted by a signal");
		{ // the engine: the calibration's measure
			const double k1 = kernel_mib(), rss1 = rss_mib("self");
			const auto o0 = std::chrono::steady_clock::now();
			auto e = tp::Engine::open(engine_desc(*t), *d, o.engine);
			if (!e)
				return e.error();
			if (round == 0) {
				r.engine_open_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - o0).count();
				r.mem_engine_mib = kernel_mib() - k1 + rss_mib("self") - rss1;
				r.engine_fds = count_fds("self") - fds0;
				r.frames_per_port = (*e)->frames_per_port();
				r.shards = (*e)->shard_count();
				const tp::EngineDesc &ed = (*e)->desc();
				double hops = 0;
				for (const auto &f : flows) {
					int a = -1, b = -1;
					for (size_t i = 0; i < ed.nodes.size(); i++) {
						if (ed.nodes[i].name == f.src)
							a = int(i);
						if (ed.nodes[i].name == f.dst)
							b = int(i);
					}
					hops += a >= 0 && b >= 0 ? switch_hops(ed, a, b) : 0;
				}
				r.mean_hops = flows.empty() ? 0 : hops / double(flows.size());
			}
			auto c = capacity_of(**e, flows, capacity_run_options(flows, o.stop));
			if (!c)
				return c.error();
			r.capacity_rounds.push_back(*c / 1e9);
		}
		{ // the raw baselines on the same sockets, no engine
			const tp::EngineDesc ed = engine_desc(*t);
			RawFabric rf;
			QN_TRY(open_raw(ed, r.frames_per_port ? r.frames_per_port : tp::kMinFramesPerPort, rf));
			// One thread's pass over a k=8 fat-tree's 640 sockets takes about 100 ms (every frame
			// pushed runs its path to the next socket inside the kick): each measurement lasts
			// `seconds` per 64 sockets, so it spans many passes.
			const double secs = o.seconds * std::max(1.0, double(r.sockets) / 64.0);
			r.raw_1core_rounds.push_back(raw_gbps(rf, 1, secs, r.raw_stalls));
			r.limit_rounds.push_back(raw_gbps(rf, cpus, secs, r.raw_stalls));
			for (auto &h : rf.hosts)
				if (auto st = h.port->stats())
					r.raw_socket_drops += st->drops();
			for (auto &c : rf.cables)
				for (auto &e : c.end)
					if (auto st = e->stats())
						r.raw_socket_drops += st->drops();
			// after the drains every frame pushed has arrived, or it was lost on the way
			for (size_t i = 0; i < rf.hosts.size(); i++) {
				const RawHost &h = rf.hosts[i], &next = rf.hosts[(i + 1) % rf.hosts.size()];
				r.raw_lost += (h.d_sent - std::min(h.d_sent, next.d_rcvd)) + (next.a_sent - std::min(next.a_sent, h.a_rcvd));
				r.raw_other += h.other;
			}
		}
	}
	r.capacity_gbps = median(r.capacity_rounds);
	r.raw_1core_gbps = median(r.raw_1core_rounds);
	r.limit_gbps = median(r.limit_rounds);

	t0 = std::chrono::steady_clock::now();
	down.up = false;
	QN_TRY(topo_down(topo));
	r.down_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	r.left_behind = namespaces_left(topo);
	return r;
}

std::string fmt(const char *f, double v)
{
	char b[64];
	std::snprintf(b, sizeof(b), f, v);
	return b;
}

std::string rounds_json(const std::vector<double> &v)
{
	std::string s = "[";
	for (size_t i = 0; i < v.size(); i++)
		s += (i ? "," : "") + fmt("%.4f", v[i]);
	return s + "]";
}

std::string spread(const std::vector<double> &v)
{
	if (v.empty())
		return "-";
	auto [lo, hi] = std::minmax_element(v.begin(), v.end());
	return fmt("%.3f", *lo) + "-" + fmt("%.3f", *hi);
}

} // namespace

std::vector<std::string> fabric_shape_names()
{
	std::vector<std::string> v;
	for (const auto &s : kShapes)
		v.push_back(s.name);
	return v;
}

std::vector<std::string> fabric_default_shapes()
{
	std::vector<std::string> v;
	for (const auto &s : kShapes)
		if (s.by_default)
			v.push_back(s.name);
	return v;
}

Result<std::string> fabric_shape_text(const std::string &shape, const std::string &topo)
{
	if (shape == "star-8" || shape == "star-32")
		return star_text(topo, std::stoi(shape.substr(5)));
	if (shape == "leafspine")
		return leafspine_text(topo);
	if (shape == "fattree-k4" || shape == "fattree-k8") {
		FatTreeSpec fs;
		fs.k = shape == "fattree-k4" ? 4 : 8;
		fs.name = topo;
		return fattree_text(fs);
	}
	if (shape == "ns3-fat320")
		return ns3_fat320_text();
	std::string all;
	for (const auto &n : fabric_shape_names())
		all += (all.empty() ? "" : ", ") + n;
	return make_error("bench fabric: unknown shape '" + shape + "' (shapes: " + all + ")");
}

Result<std::string> bench_fabric(const FabricBenchOptions &o)
{
	const std::vector<std::string> names = o.shapes.empty() ? fabric_default_shapes() : o.shapes;
	std::vector<const ShapeDef *> defs;
	for (const auto &n : names) {
		const ShapeDef *s = find_shape(n);
		if (!s)
			return fabric_shape_text(n, "x").error();
		defs.push_back(s);
	}
	std::vector<FabricShapeResult> res;
	for (const ShapeDef *s : defs) {
		auto r = bench_shape(*s, o);
		if (!r)
			return make_error(std::string(s->name) + ": " + r.error().message);
		res.push_back(*r);
		std::fprintf(stderr, "bench fabric: %s done (up %.1f s, capacity %.3f Gbit/s)\n", s->name, r->up_s,
			     r->capacity_gbps);
	}
	std::string out;
	if (o.json) {
		out = "{\"rounds\":" + std::to_string(o.rounds) + ",\"seconds\":" + fmt("%g", o.seconds) +
		      ",\"cpus\":" + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + ",\"shapes\":[";
		for (size_t i = 0; i < res.size(); i++) {
			const auto &r = res[i];
			out += std::string(i ? "," : "") + "{\"name\":\"" + r.name + "\",\"hosts\":" + std::to_string(r.hosts) +
			       ",\"switches\":" + std::to_string(r.switches) + ",\"links\":" + std::to_string(r.links) +
			       ",\"cables\":" + std::to_string(r.cables) + ",\"sockets\":" + std::to_string(r.sockets) +
			       ",\"veth_pairs\":" + std::to_string(r.veth_pairs) +
			       ",\"frames_per_port\":" + std::to_string(r.frames_per_port) + ",\"shards\":" + std::to_string(r.shards) + ",\"up_s\":" + fmt("%.3f", r.up_s) +
			       ",\"down_s\":" + fmt("%.3f", r.down_s) + ",\"mem_topo_mib\":" + fmt("%.1f", r.mem_topo_mib) +
			       ",\"mem_engine_mib\":" + fmt("%.1f", r.mem_engine_mib) +
			       ",\"engine_fds\":" + std::to_string(r.engine_fds) +
			       ",\"switchd_fds\":" + std::to_string(r.switchd_fds) + ",\"mean_hops\":" + fmt("%.3f", r.mean_hops) +
			       ",\"capacity_gbps\":" + fmt("%.4f", r.capacity_gbps) +
			       ",\"raw_1core_gbps\":" + fmt("%.4f", r.raw_1core_gbps) +
			       ",\"limit_gbps\":" + fmt("%.4f", r.limit_gbps) + ",\"ratio_to_raw\":" + fmt("%.4f", r.ratio_to_raw()) +
			       ",\"ratio_to_limit\":" + fmt("%.4f", r.ratio_to_limit()) +
			       ",\"per_pair_gbps\":" + fmt("%.5f", r.hosts ? r.capacity_gbps / double(r.hosts) : 0) +
			       ",\"hop_gbps\":" + fmt("%.4f", r.capacity_gbps * r.mean_hops) +
			       ",\"capacity_rounds\":" + rounds_json(r.capacity_rounds) +
			       ",\"raw_1core_rounds\":" + rounds_json(r.raw_1core_rounds) +
			       ",\"limit_rounds\":" + rounds_json(r.limit_rounds) + ",\"raw_stalls\":" + std::to_string(r.raw_stalls) + ",\"raw_lost\":" + std::to_string(r.raw_lost) +
			       ",\"raw_other\":" + std::to_string(r.raw_other) +
			       ",\"raw_socket_drops\":" + std::to_string(r.raw_socket_drops) +
			       ",\"engine_open_s\":" + fmt("%.3f", r.engine_open_s) +
			       ",\"left_behind\":" + std::to_string(r.left_behind) + "}";
		}
		return out + "]}\n";
	}
	out = "fabric bench: every host sends to the next (a ring), D=1, PFC on, no CC; " + std::to_string(o.rounds) +
	      " interleaved rounds, medians (Gbit/s of payload per wall second)\n"
	      "shape        hosts sw  cables sockets  up s  down s  open s  topo MiB  engine MiB  fds  hops shards  capacity  raw_1core   limit  "
	      "/raw  /limit  per pair  per hop\n";
	for (const auto &r : res) {
		char b[512];
		std::snprintf(b, sizeof(b),
			      "%-12s %5zu %3zu %7zu %7zu %5.1f %7.1f %7.1f %9.0f %11.0f %4zu %5.2f %6zu %9.3f %10.3f %7.3f %5.2f %7.2f %9.4f %8.3f\n",
			      r.name.c_str(), r.hosts, r.switches, r.cables, r.sockets, r.up_s, r.down_s, r.engine_open_s, r.mem_topo_mib,
			      r.mem_engine_mib, r.engine_fds + r.switchd_fds, r.mean_hops, r.shards, r.capacity_gbps, r.raw_1core_gbps,
			      r.limit_gbps, r.ratio_to_raw(), r.ratio_to_limit(), r.hosts ? r.capacity_gbps / double(r.hosts) : 0,
			      r.capacity_gbps * r.mean_hops);
		out += b;
	}
	out += "spread over the rounds (min-max): ";
	for (const auto &r : res)
		out += r.name + " capacity " + spread(r.capacity_rounds) + ", raw_1core " + spread(r.raw_1core_rounds) +
		       ", limit " + spread(r.limit_rounds) + "; ";
	out += "\nper hop: capacity x switches on the path (payload switched per second); fds: the engine's and switchd's\n";
	for (const auto &r : res) {
		if (r.raw_stalls)
			out += r.name + ": " + std::to_string(r.raw_stalls) + " raw windows waited 1 s for an ACK and were reset\n";
		if (r.raw_lost || r.raw_other)
			out += r.name + ": " + std::to_string(r.raw_lost) + " raw frames lost (" + std::to_string(r.raw_socket_drops) +
			       " dropped at sockets), " + std::to_string(r.raw_other) +
			       " frames of neither kind received (the raw figures undercount)\n";
		if (r.left_behind)
			out += r.name + ": " + std::to_string(r.left_behind) + " namespaces left behind after teardown\n";
	}
	return out + bpf_stats_warning();
}

} // namespace qn
