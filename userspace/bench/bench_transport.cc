// bench_transport.cc - `quench bench transport` (bench_transport.h).
#include "bench/bench_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "bench/frames.h"
#include "bench/testrun.h"
#include "control/bringup.h"
#include "control/engine_desc.h"
#include "control/netns.h"
#include "control/switch_loader.h"
#include "transport/engine.h"
#include "transport/wire.h"
#include "transport/xsk.h"

namespace qn::tp {

namespace {

const char *kTopo = R"(name qnbt
defaults rate=100Gbps mtu=2048 delay=0ns buffer=12MB
switch s1
host h1
host h2
link h1 s1
link h2 s1
)";

double pct(std::vector<double> v, double p)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	size_t i = std::min(v.size() - 1, size_t(p / 100.0 * double(v.size())));
	return v[i];
}

struct Down {
	~Down() { (void)topo_down("qnbt"); }
};

struct Rtt {
	double p50 = 0, p99 = 0;
	size_t lost = 0;
};

Result<Rtt> engine_rtt(const Topology &t, const Dilation &d, bool busy, int n)
{
	EngineOptions eo;
	eo.busy_poll = busy;
	eo.shards = 1; // one loop, as the raw ping-pong it is compared with (a run per ping)
	auto e = Engine::open(engine_desc(t), d, eo);
	if (!e)
		return e.error();
	QpOptions qo;
	auto h = (*e)->connect("h1", "h2", qo);
	if (!h)
		return h.error();
	std::vector<double> us;
	bool done = false;
	uint64_t fct = 0;
	(*e)->on_complete = [&](QpHandle, const Completion &c) {
		done = true;
		fct = c.done_ns - c.post_ns;
	};
	Rtt r;
	for (int i = 0; i < n + 100; i++) {
		done = false;
		(void)(*e)->post(*h, Message{uint64_t(i), 64, nullptr});
		(*e)->run([&] { return done; }, (*e)->now_ns() + 100'000'000);
		if (!done) {
			r.lost++;
			continue;
		}
		if (i >= 100) // warm-up
			us.push_back(double(fct) / 1e3);
	}
	r.p50 = pct(us, 50);
	r.p99 = pct(us, 99);
	return r;
}

struct RawPair {
	XskPort a, b;
	std::vector<uint8_t> ab, ba; // frames a->b and b->a
};

Status open_raw(const Topology &t, RawPair &rp, size_t payload)
{
	const char *names[2] = {"h1", "h2"};
	XskPort *ports[2] = {&rp.a, &rp.b};
	Endpoint ep[2];
	Mac gw[2];
	for (int k = 0; k < 2; k++) {
		int id = t.find(names[k]);
		const Port &p = t.ports[size_t(t.ports_of(id)[0])];
		ep[k] = Endpoint{t.nodes[size_t(id)].mac, t.nodes[size_t(id)].ip};
		gw[k] = t.ports[size_t(p.peer_port)].mac;
		QN_TRY(open_xsk(*ports[k], t.netns(id), p.ifname, node_pin_dir(t.name, names[k]) + "/qn_xsks", 4096));
	}
	for (int k = 0; k < 2; k++) {
		TxHeader h;
		h.src = ep[k];
		h.dst = Endpoint{gw[k], ep[1 - k].ip};
		h.sport = qpn_to_sport(0x10 + uint32_t(k));
		h.dest_qp = 0x10 + uint32_t(1 - k);
		h.opcode = QN_OP_RC_SEND_ONLY;
		std::vector<uint8_t> f(kChunkBytes);
		f.resize(encode_data(h, payload, false, f.data(), f.size(), [&](uint8_t *p) { std::memset(p, 0x5A, payload); }));
		(k == 0 ? rp.ab : rp.ba) = f;
	}
	return ok_status();
}

bool send_one(XskPort &p, const std::vector<uint8_t> &f)
{
	if (!bench::push_frame(p, f))
		return false;
	p.flush();
	return true;
}

bool recv_one(XskPort &p, uint64_t timeout_ns)
{
	uint64_t t0 = mono_wall_ns();
	uint64_t addr;
	uint32_t len;
	while (mono_wall_ns() - t0 < timeout_ns) {
		if (p.rx_peek(1, &addr, &len) == 1) {
			p.rx_recycle(addr);
			p.refill();
			return true;
		}
	}
	return false;
}

Result<Rtt> raw_rtt(const Topology &t, int n)
{
	RawPair rp;
	QN_TRY(open_raw(t, rp, 64)); // the engine's 64 B message frame
	std::vector<double> us;
	Rtt r;
	for (int i = 0; i < n + 100; i++) {
		uint64_t t0 = mono_wall_ns();
		if (!send_one(rp.a, rp.ab) || !recv_one(rp.b, 100'000'000) || !send_one(rp.b, rp.ba) ||
		    !recv_one(rp.a, 100'000'000)) {
			r.lost++;
			continue;
		}
		if (i >= 100)
			us.push_back(double(mono_wall_ns() - t0) / 1e3);
	}
	r.p50 = pct(us, 50);
	r.p99 = pct(us, 99);
	return r;
}

Result<Rtt> udp_rtt(const Topology &t, int n)
{
	const uint32_t ip2 = t.nodes[size_t(t.find("h2"))].ip;
	const uint16_t port = 47999;
	std::atomic<bool> ready{false}, stop{false};
	std::string server_err;
	std::thread server([&] {
		NetnsScope ns(t.netns(t.find("h2")));
		int fd = socket(AF_INET, SOCK_DGRAM, 0);
		sockaddr_in a{};
		a.sin_family = AF_INET;
		a.sin_port = htons(port);
		timeval tv{0, 100'000};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (!ns.ok() || fd < 0 || bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) != 0) {
			server_err = "UDP server socket in h2 failed";
			ready = true;
			if (fd >= 0)
				close(fd);
			return;
		}
		ready = true;
		char buf[256];
		while (!stop) {
			sockaddr_in from{};
			socklen_t fl = sizeof(from);
			ssize_t k = recvfrom(fd, buf, sizeof(buf), 0, reinterpret_cast<sockaddr *>(&from), &fl);
			if (k > 0)
				sendto(fd, buf, size_t(k), 0, reinterpret_cast<sockaddr *>(&from), fl);
		}
		close(fd);
	});
	while (!ready)
		std::this_thread::yield();
	Rtt r;
	std::vector<double> us;
	{
		NetnsScope ns(t.netns(t.find("h1")));
		int fd = socket(AF_INET, SOCK_DGRAM, 0);
		sockaddr_in a{};
		a.sin_family = AF_INET;
		a.sin_port = htons(port);
		a.sin_addr.s_addr = htonl(ip2);
		timeval tv{0, 100'000};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (server_err.empty() && fd >= 0 && connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof(a)) == 0) {
			char buf[256] = {};
			for (int i = 0; i < n + 100; i++) {
				uint64_t t0 = mono_wall_ns();
				if (send(fd, buf, 64, 0) != 64 || recv(fd, buf, sizeof(buf), 0) != 64) { // 64 B messages
					r.lost++;
					continue;
				}
				if (i >= 100)
					us.push_back(double(mono_wall_ns() - t0) / 1e3);
			}
		} else if (server_err.empty()) {
			server_err = "UDP client socket in h1 failed";
		}
		if (fd >= 0)
			close(fd);
	}
	stop = true;
	server.join();
	if (!server_err.empty())
		return make_error(server_err);
	r.p50 = pct(us, 50);
	r.p99 = pct(us, 99);
	return r;
}

// Raw AF_XDP: full-size frames pushed from h1 as fast as one thread can, received at h2 by the
// same thread. Return: payload Gbit/s delivered.
Result<double> raw_tx_gbps(const Topology &t, double seconds)
{
	RawPair rp;
	const size_t payload = payload_mtu(QN_DEFAULT_MTU);
	QN_TRY(open_raw(t, rp, payload));
	uint64_t t0 = mono_wall_ns(), end = t0 + uint64_t(seconds * 1e9);
	uint64_t got = 0;
	uint64_t addr[64];
	uint32_t len[64];
	while (mono_wall_ns() < end) {
		for (int i = 0; i < 32; i++)
			if (!bench::push_frame(rp.a, rp.ab))
				break;
		rp.a.flush();
		uint32_t n;
		while ((n = rp.b.rx_peek(64, addr, len)) > 0) {
			for (uint32_t i = 0; i < n; i++)
				rp.b.rx_recycle(addr[i]);
			got += n;
		}
		rp.b.refill();
	}
	double secs = double(mono_wall_ns() - t0) / 1e9;
	return double(got) * double(payload) * 8 / secs / 1e9;
}

struct Tput {
	double gbps = 0, msgs_per_s = 0;
};

// One QP posting `size`-byte messages with `outstanding` in flight for `seconds`; with two
// shards, the sender on one and the receiver on the other (each thread on its own CPU).
Result<Tput> engine_tput(const Topology &t, const Dilation &d, uint64_t size, int outstanding, double seconds,
			 uint32_t ack_every, uint32_t shards = 1)
{
	EngineOptions eo;
	eo.shards = shards;
	auto e = Engine::open(engine_desc(t), d, eo);
	if (!e)
		return e.error();
	if (shards > 1 && (*e)->shard_of("h1") == (*e)->shard_of("h2"))
		return make_error("bench transport: h1 and h2 on one shard (" + std::to_string((*e)->shard_count()) + " shards)");
	QpOptions qo;
	qo.ack_every = ack_every;
	auto h = (*e)->connect("h1", "h2", qo);
	if (!h)
		return h.error();
	uint64_t done_msgs = 0, done_bytes = 0, next = 0;
	(*e)->on_complete = [&](QpHandle, const Completion &c) {
		done_msgs++;
		done_bytes += c.size;
		(void)(*e)->post(*h, Message{next++, size, nullptr});
	};
	for (int i = 0; i < outstanding; i++)
		(void)(*e)->post(*h, Message{next++, size, nullptr});
	uint64_t t0 = (*e)->now_ns();
	(*e)->run({}, t0 + uint64_t(seconds * 1e9));
	double secs = double((*e)->now_ns() - t0) / 1e9;
	(*e)->on_complete = nullptr;
	return Tput{double(done_bytes) * 8 / secs / 1e9, double(done_msgs) / secs};
}

} // namespace

Result<std::string> bench_transport(const TransportBenchOptions &o)
{
	auto t = parse_topology(kTopo, "bench_transport");
	if (!t)
		return t.error();
	auto d = Dilation::make(1.0);
	UpOptions uo;
	uo.dilation = *d;
	Down down;
	QN_TRY(topo_up(*t, uo));
	std::vector<double> eb50, eb99, es50, es99, r50, r99, u50, u99, raw_tx, eng_gp, eng_gp16, eng_gp2, eng_mps;
	size_t lost = 0;
	for (int r = 0; r < o.rounds; r++) {
		auto eb = engine_rtt(*t, *d, true, o.pings);
		if (!eb)
			return eb.error();
		auto es = engine_rtt(*t, *d, false, o.pings);
		if (!es)
			return es.error();
		auto rr = raw_rtt(*t, o.pings);
		if (!rr)
			return rr.error();
		auto ur = udp_rtt(*t, o.pings);
		if (!ur)
			return ur.error();
		lost += eb->lost + es->lost + rr->lost + ur->lost;
		eb50.push_back(eb->p50), eb99.push_back(eb->p99);
		es50.push_back(es->p50), es99.push_back(es->p99);
		r50.push_back(rr->p50), r99.push_back(rr->p99);
		u50.push_back(ur->p50), u99.push_back(ur->p99);
		auto rt = raw_tx_gbps(*t, o.seconds);
		if (!rt)
			return rt.error();
		raw_tx.push_back(*rt);
		auto gp = engine_tput(*t, *d, 64 * 1024, 8, o.seconds, 1);
		if (!gp)
			return gp.error();
		eng_gp.push_back(gp->gbps);
		auto gp16 = engine_tput(*t, *d, 64 * 1024, 8, o.seconds, 16);
		if (!gp16)
			return gp16.error();
		eng_gp16.push_back(gp16->gbps);
		auto gp2 = engine_tput(*t, *d, 64 * 1024, 8, o.seconds, 1, 2);
		if (!gp2)
			return gp2.error();
		eng_gp2.push_back(gp2->gbps);
		auto mps = engine_tput(*t, *d, 64, 256, o.seconds, 1);
		if (!mps)
			return mps.error();
		eng_mps.push_back(mps->msgs_per_s);
	}
	auto med = [](const std::vector<double> &v) { return pct(v, 50); };
	char buf[2048];
	std::snprintf(buf, sizeof(buf),
		      "transport bench: 2 hosts on one switch, 100 Gbit/s links, no delay, D=1; %d rounds, medians of per-round values\n"
		      "64 B message RTT (us)               p50      p99\n"
		      "  engine QP, busy-poll          %8.2f %8.2f\n"
		      "  engine QP, default (sleeps)   %8.2f %8.2f\n"
		      "  raw AF_XDP ping-pong          %8.2f %8.2f\n"
		      "  kernel UDP ping-pong          %8.2f %8.2f\n"
		      "  ratio UDP / engine (busy)     %8.2f %8.2f   (goal p50 >= 3)\n"
		      "  ratio engine (busy) / raw     %8.2f %8.2f   (goal p50 <= 1.5)\n"
		      "raw AF_XDP TX of 2 KB frames (32 per kick, no ACKs): %.2f Gbit/s payload\n"
		      "one QP, 64 KiB messages, ACK per packet:   %.2f Gbit/s goodput, ratio to raw %.2f (goal >= 0.70)\n"
		      "one QP, 64 KiB messages, ACK per 16:       %.2f Gbit/s goodput, ratio to raw %.2f\n"
		      "one QP across two shards, ACK per packet:  %.2f Gbit/s goodput, ratio to raw %.2f (goal >= 0.80)\n"
		      "64 B messages per second, one QP, one engine thread: %.0f\n"
		      "lost ping-pongs (100 ms timeout): %zu\n",
		      o.rounds, med(eb50), med(eb99), med(es50), med(es99), med(r50), med(r99), med(u50), med(u99),
		      med(u50) / med(eb50), med(u99) / med(eb99), med(eb50) / med(r50), med(eb99) / med(r99), med(raw_tx),
		      med(eng_gp), med(eng_gp) / med(raw_tx), med(eng_gp16), med(eng_gp16) / med(raw_tx), med(eng_gp2),
		      med(eng_gp2) / med(raw_tx), med(eng_mps), lost);
	return std::string(buf) + bpf_stats_warning();
}

} // namespace qn::tp
