// qn_traffic.cc - raw traffic for the netns integration tests and `make run`.
//
//   qn_traffic send --netns NS --dev IF --dst-mac MAC --src-ip A --dst-ip B [--size BYTES]
//                   [--rate BPS] [--seconds S] [--count N] [--flows K] [--opcode OP] [--dport P]
//                   [--tos T] [--ring] [--stamp] [--seq-base N]
//       AF_PACKET sender (QDISC_BYPASS: the host NIC does not queue). --ring uses a
//       PACKET_TX_RING, whose skbs are non-linear. --rate paces in wire bits (frame + 24 B).
//       --stamp puts {magic, send time, sequence, flow} into the payload and fills the rest
//       with a pattern derived from the sequence, so the receiver can verify every byte.
//       Senders feeding one receiver need disjoint --seq-base ranges.
//       --honor-pfc PRIO [--link-rate BPS]: obey 802.1Qbb PAUSE for PRIO like a NIC (quanta at
//       the link's wall rate), and report the XOFF/XON frames seen; --linger S keeps reading
//       them S seconds after the last frame (the XON of a draining switch comes after the
//       sender stops). --sndbuf BYTES sets SO_SNDBUF.
//   qn_traffic recv --netns NS --dev IF --seconds S [--expect N [--grace G]]
//       Receives stamped frames, verifies content, reports per class (data/control) count and
//       one-way delay percentiles (sender and receiver share CLOCK_MONOTONIC), duplicates,
//       corrupt frames. With --expect, exits 1 unless exactly N valid frames arrived; once N
//       have, it listens G seconds more (default 1) for duplicates and extra frames, then ends
//       (S bounds the whole wait).
//   qn_traffic rate --netns NS --dev IF [--warmup S] [--seconds S]
//       Measures an interface's transmit rate from its counters (bytes and wire bits).
//   qn_traffic signal --netns NS --dev IF --dst-mac MAC --src-ip A --dst-ip SENDER --kind bts|postcard
//                     --sport P --dest-qp Q [--psn N] [--pause-us U] [--peer-ip RECEIVER] [--count N]
//       Sends N back-to-sender signals to a host as a switch would (transport/wire.h encoders):
//       a BTS (UDP 4793; trimmed original headers of a data packet SENDER -> RECEIVER with
//       DestQP Q and PSN N; RECEIVER defaults to A, the congested receiver) or a CC-postcard
//       (UDP 4792; flow SENDER -> RECEIVER, DestQP Q, PSN N), outer UDP source port P.
//   qn_traffic spin --seconds S [--cpu N] [--fifo PRIO]
//       Busy-loops S seconds (at most 10) pinned to CPU N, at SCHED_FIFO PRIO when given.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ifaddrs.h>
#include <linux/if_link.h>
#include <linux/if_packet.h>
#include <sched.h>
#include <set>
#include <sstream>
#include <sys/wait.h>
#include <unistd.h>
#include <string>
#include <thread>
#include <vector>

#include "common/abi.h"
#include "control/exec.h"
#include "control/netns.h"
#include "control/packet.h"
#include "control/pfc.h"
#include "control/rawsock.h"
#include "control/topology.h"
#include "transport/wire.h"

using namespace qn;

namespace {

constexpr uint64_t kMagic = 0x514e545241464943ULL; // "QNTRAFIC"
constexpr size_t kStampLen = 8 + 8 + 8 + 4;

struct Opts {
	std::string cmd, netns, dev;
	Mac dst_mac{};
	uint32_t src_ip = 0, dst_ip = 0;
	size_t size = 1024;
	double rate = 0;
	double seconds = 1;
	double warmup = 0;
	double grace = 1; // recv --expect: seconds listened after the N-th valid frame
	uint64_t count = 0;
	uint64_t expect = UINT64_MAX;
	uint64_t seq_base = 0;
	int flows = 1;
	int opcode = QN_OP_RC_SEND_ONLY;
	int dport = QN_ROCE_UDP_PORT;
	int tos = (QN_DSCP_DATA << 2) | 0x2;
	bool ring = false, stamp = false;
	int honor_pfc = -1;      // priority whose PAUSE frames the sender obeys (-1: ignore)
	double link_rate = 10e9; // wall bit/s of the sender's link, for quanta -> time
	double linger = 0;       // seconds to keep reading PFC frames after sending
	int sndbuf = 0;          // SO_SNDBUF override (bytes), 0 = the tool's default
	int prio = 3;            // pause: priority
	int cpu = -1;            // spin: the CPU to pin to
	int fifo = 0;            // spin: SCHED_FIFO priority (0: SCHED_OTHER)
	int quanta = 65535;      // pause: quanta of the XOFF frame
	double xon_after_ms = -1; // pause: send XON this long after the XOFF (-1: never)
	std::string kind;        // signal: bts or postcard
	int sport = 0;           // signal: outer UDP source port (the sender QPN's port)
	uint32_t dest_qp = 0;    // signal: the data's DestQP (the receiver's QPN)
	uint32_t psn = 0;        // signal: the PSN it names
	int pause_us = 0;        // signal: BTS pause time
	uint32_t peer_ip = 0;    // signal: the data's receiver (0: --src-ip)
};

[[noreturn]] void die(const std::string &m)
{
	std::fprintf(stderr, "qn_traffic: %s\n", m.c_str());
	std::exit(2);
}

void put64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = uint8_t(v);
}
uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

// An integer option that also takes 0x.. (opcodes, TOS, ports, QPNs, PSNs) into `out`.
template <typename T> CLI::Option *integer(CLI::App &app, const std::string &name, T &out, const std::string &doc)
{
	return app.add_option_function<std::string>(
		name,
		[&out, name](const std::string &v) {
			size_t used = 0;
			long long x = 0;
			try {
				x = std::stoll(v, &used, 0);
			} catch (const std::exception &) {
				used = 0;
			}
			if (v.empty() || used != v.size())
				throw CLI::ValidationError(name, "'" + v + "' is not an integer");
			out = static_cast<T>(x);
		},
		doc);
}

Opts parse(int argc, char **argv)
{
	Opts o;
	CLI::App app{"raw AF_PACKET traffic for the integration tests", "qn_traffic"};
	app.require_subcommand(1);
	std::vector<CLI::App *> cmds;
	for (const char *c : {"send", "recv", "rate", "pause", "kick", "signal", "spin", "spike"})
		cmds.push_back(app.add_subcommand(c, std::string("qn_traffic ") + c));
	for (CLI::App *c : cmds) {
		CLI::App &x = *c;
		x.add_option("--netns", o.netns, "namespace");
		x.add_option("--dev", o.dev, "device");
		x.add_option_function<std::string>(
			"--dst-mac",
			[&o](const std::string &v) {
				auto m = parse_mac(v);
				if (!m)
					throw CLI::ValidationError("--dst-mac", m.error().message);
				o.dst_mac = *m;
			},
			"destination MAC");
		for (auto [name, field] : {std::pair{"--src-ip", &o.src_ip}, std::pair{"--dst-ip", &o.dst_ip},
					   std::pair{"--peer-ip", &o.peer_ip}}) {
			const std::string n = name;
			uint32_t *f = field;
			x.add_option_function<std::string>(
				n,
				[n, f](const std::string &v) {
					auto ip = parse_ip(v);
					if (!ip)
						throw CLI::ValidationError(n, ip.error().message);
					*f = *ip;
				},
				"IPv4 address");
		}
		integer(x, "--size", o.size, "frame bytes");
		x.add_option("--rate", o.rate, "wire bit/s (frame + 24 B of preamble, FCS and gap; 0: as fast as possible)");
		x.add_option("--seconds", o.seconds, "how long");
		x.add_option("--warmup", o.warmup, "seconds before measuring");
		integer(x, "--count", o.count, "frames");
		integer(x, "--seq-base", o.seq_base, "first sequence number");
		integer(x, "--expect", o.expect, "frames the receiver expects");
		x.add_option("--grace", o.grace, "recv --expect: seconds to listen after the last expected frame (duplicates)");
		integer(x, "--flows", o.flows, "UDP source ports");
		integer(x, "--opcode", o.opcode, "BTH opcode");
		integer(x, "--dport", o.dport, "UDP destination port");
		integer(x, "--tos", o.tos, "IP TOS byte");
		integer(x, "--honor-pfc", o.honor_pfc, "priority whose PAUSE frames the sender obeys");
		x.add_option("--link-rate", o.link_rate, "wall bit/s of the sender's link");
		x.add_option("--linger", o.linger, "seconds to keep reading PFC frames after sending");
		integer(x, "--sndbuf", o.sndbuf, "SO_SNDBUF bytes");
		integer(x, "--prio", o.prio, "pause: priority");
		integer(x, "--cpu", o.cpu, "spin: CPU");
		integer(x, "--fifo", o.fifo, "spin: SCHED_FIFO priority");
		integer(x, "--quanta", o.quanta, "pause: quanta");
		x.add_option("--xon-after-ms", o.xon_after_ms, "pause: XON after this");
		x.add_option("--kind", o.kind, "signal: bts or postcard");
		integer(x, "--sport", o.sport, "signal: UDP source port");
		integer(x, "--dest-qp", o.dest_qp, "signal: DestQP");
		integer(x, "--psn", o.psn, "signal: PSN");
		integer(x, "--pause-us", o.pause_us, "signal: BTS pause time");
		x.add_flag("--ring", o.ring, "send through a TX ring (non-linear skbs)");
		x.add_flag("--stamp", o.stamp, "stamp frames with a sequence and time");
	}
	try {
		app.parse(argc, argv);
	} catch (const CLI::CallForHelp &) {
		std::fputs(app.help().c_str(), stdout);
		std::exit(0);
	} catch (const CLI::ParseError &e) {
		die(e.what());
	}
	o.cmd = app.get_subcommands().front()->get_name();
	if (o.dev.empty() && o.cmd != "spin")
		die("--dev is required");
	return o;
}

Bytes make_frame(const Opts &o, uint64_t seq, Mac src_mac)
{
	FrameSpec f;
	f.dst = o.dst_mac;
	f.src = src_mac;
	f.saddr = o.src_ip;
	f.daddr = o.dst_ip;
	f.tos = uint8_t(o.tos);
	f.dport = uint16_t(o.dport);
	f.bth = o.dport == QN_ROCE_UDP_PORT;
	f.opcode = uint8_t(o.opcode);
	f.sport = uint16_t(QN_ROCE_SPORT_BASE + (seq % uint64_t(o.flows)));
	f.psn = uint32_t(seq);
	size_t hdr = 14 + 20 + 8 + (f.bth ? 12 : 0);
	f.payload_len = o.size > hdr + kStampLen ? o.size - hdr : kStampLen;
	Bytes b = build_frame(f);
	if (o.stamp) {
		uint8_t *p = &b[hdr];
		put64(p, kMagic);
		put64(p + 16, seq);
		uint32_t flow = uint32_t(seq % uint64_t(o.flows));
		p[24] = uint8_t(flow >> 24);
		p[25] = uint8_t(flow >> 16);
		p[26] = uint8_t(flow >> 8);
		p[27] = uint8_t(flow);
		for (size_t i = hdr + kStampLen; i < b.size(); i++)
			b[i] = uint8_t(seq * 131 + i);
	}
	return b;
}

int cmd_send(const Opts &o)
{
	auto sock = RawSocket::open(o.netns, o.dev, true);
	if (!sock)
		die(sock.error().to_string());
	Mac src{};
	{
		NetnsScope ns(o.netns);
		ifaddrs *ifa = nullptr;
		if (getifaddrs(&ifa) == 0) {
			for (ifaddrs *i = ifa; i; i = i->ifa_next)
				if (i->ifa_addr && i->ifa_addr->sa_family == AF_PACKET && o.dev == i->ifa_name)
					std::memcpy(src.data(), reinterpret_cast<sockaddr_ll *>(i->ifa_addr)->sll_addr, 6);
			freeifaddrs(ifa);
		}
	}
	if (o.sndbuf > 0)
		setsockopt(sock->fd(), SOL_SOCKET, SO_SNDBUFFORCE, &o.sndbuf, sizeof(o.sndbuf));
	// A host NIC that honors PFC: read PAUSE frames arriving on this port and hold the
	// priority until the pause expires or an XON (quanta 0) arrives.
	uint64_t pause_until = 0, pfc_xoff = 0, pfc_xon = 0, paused_ns = 0, pause_start = 0;
	std::set<uint32_t> xoff_quanta;
	Bytes rx;
	auto poll_pfc = [&](int timeout_ms) {
		for (int i = 0; i < 64; i++) {
			auto r = sock->recv(rx, i == 0 ? timeout_ms : 0);
			if (!r || *r == 0)
				return;
			auto f = parse_pfc_frame(rx);
			if (!f || !((f->prio_mask >> o.honor_pfc) & 1))
				continue;
			uint16_t q = f->quanta[size_t(o.honor_pfc)];
			uint64_t now = mono_ns();
			if (q) {
				pfc_xoff++;
				xoff_quanta.insert(q);
				if (now >= pause_until)
					pause_start = now;
				pause_until = now + pfc_quanta_ns(q, uint64_t(o.link_rate));
			} else {
				pfc_xon++;
				if (now < pause_until)
					paused_ns += now - pause_start;
				pause_until = 0;
			}
		}
	};
	if (o.ring) {
		auto s = sock->enable_tx_ring(256, uint32_t(std::max<size_t>(o.size, 128)));
		if (!s.ok())
			die(s.error().to_string());
	}
	size_t hdr = 14 + 20 + 8 + (o.dport == QN_ROCE_UDP_PORT ? 12 : 0);
	// A sender that honours PAUSE reads them between batches: smaller batches react sooner.
	const size_t batch = o.rate > 0 ? 1 : o.honor_pfc >= 0 ? 8 : 32;
	uint64_t seq = 0, bytes = 0;
	auto start = std::chrono::steady_clock::now();
	auto deadline = start + std::chrono::duration<double>(o.seconds);
	double wire_bits_per_frame = double(std::max<size_t>(o.size, hdr + kStampLen) + 24) * 8;
	std::vector<Bytes> frames, templates;
	std::vector<const Bytes *> ptrs;
	while (true) {
		auto now = std::chrono::steady_clock::now();
		if (o.count ? seq >= o.count : now >= deadline)
			break;
		if (o.honor_pfc >= 0) {
			poll_pfc(0);
			if (mono_ns() < pause_until) {
				poll_pfc(1);
				if (mono_ns() >= pause_until && pause_until)
					paused_ns += pause_until - pause_start, pause_until = 0;
				continue;
			}
		}
		if (o.count && now >= deadline + std::chrono::seconds(30))
			die("sending " + std::to_string(o.count) + " frames took too long");
		if (o.rate > 0) {
			double due = double(seq) * wire_bits_per_frame / o.rate;
			double el = std::chrono::duration<double>(now - start).count();
			if (el < due) {
				// Sleep until ~30 us before the deadline, spin the rest: a spinning
				// prober must not starve the flows it measures on a 2-core machine.
				if (due - el > 50e-6)
					std::this_thread::sleep_for(std::chrono::duration<double>(due - el - 30e-6));
				continue;
			}
		}
		size_t want = batch;
		if (o.count && o.count - seq < want)
			want = size_t(o.count - seq);
		if (o.stamp) {
			frames.clear();
			for (size_t i = 0; i < want; i++) {
				frames.push_back(make_frame(o, o.seq_base + seq + i, src));
				put64(&frames.back()[hdr + 8], mono_ns());
			}
		} else {
			// Unstamped load: one prebuilt frame per flow, copied per send (building 9 KB
			// frames byte by byte per send made this sender CPU-bound at ~2 Gbit/s).
			if (templates.empty())
				for (int f = 0; f < o.flows; f++)
					templates.push_back(make_frame(o, uint64_t(f), src));
			ptrs.resize(want);
			for (size_t i = 0; i < want; i++)
				ptrs[i] = &templates[(seq + i) % templates.size()];
			if (o.ring) {
				frames.clear();
				for (auto *p : ptrs)
					frames.push_back(*p);
			}
		}
		auto r = o.ring ? sock->ring_send(frames) : o.stamp ? sock->send_batch(frames) : sock->send_batch(ptrs);
		if (!r)
			die(r.error().to_string());
		for (size_t i = 0; i < *r; i++)
			bytes += o.stamp || o.ring ? frames[i].size() : ptrs[i]->size();
		seq += *r;
		if (*r < want)
			std::this_thread::sleep_for(std::chrono::microseconds(20));
	}
	// A NIC stays up after its sender stops: keep reading PAUSE/XON frames for --linger.
	if (o.honor_pfc >= 0 && o.linger > 0) {
		const uint64_t until = mono_ns() + uint64_t(std::min(o.linger, 60.0) * 1e9);
		while (mono_ns() < until)
			poll_pfc(10);
	}
	// Let a TX ring drain before the socket closes.
	if (o.ring)
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
	double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	std::printf("sent frames=%" PRIu64 " bytes=%" PRIu64 " seconds=%.3f rate_bps=%.0f\n", seq, bytes, el,
		    double(bytes) * 8 / el);
	if (o.honor_pfc >= 0) {
		std::string qs;
		for (auto q : xoff_quanta)
			qs += (qs.empty() ? "" : ",") + std::to_string(q);
		std::printf("pfc prio=%d xoff=%" PRIu64 " xon=%" PRIu64 " paused_ms=%.3f xoff_quanta=%s\n", o.honor_pfc,
			    pfc_xoff, pfc_xon, double(paused_ns) / 1e6, qs.empty() ? "none" : qs.c_str());
	}
	return 0;
}

double pct(std::vector<double> v, double p)
{
	if (v.empty())
		return 0;
	std::sort(v.begin(), v.end());
	return v[std::min(v.size() - 1, size_t(p / 100.0 * double(v.size())))];
}

int cmd_recv(const Opts &o)
{
	auto sock = RawSocket::open(o.netns, o.dev, false);
	if (!sock)
		die(sock.error().to_string());
	std::vector<double> delay[2];
	uint64_t valid = 0, corrupt = 0, dups = 0, other = 0, echo = 0;
	uint64_t ecn[4] = {}; // IPv4 ECN field of every IPv4 frame seen: not-ECT, ECT(1), ECT(0), CE
	uint64_t ecn_stamped[4] = {};
	std::set<uint64_t> seen;
	using Clock = std::chrono::steady_clock;
	const auto secs = [](double x) {
		return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(x));
	};
	Clock::time_point deadline = Clock::now() + secs(o.seconds);
	Bytes buf;
	while (Clock::now() < deadline) {
		auto r = sock->recv(buf, 20);
		if (!r)
			die(r.error().to_string());
		if (*r == 0)
			continue;
		uint64_t now = mono_ns();
		if (buf.size() < 14 + 20 + 8 || buf[12] != 0x08 || buf[13] != 0x00 || buf[23] != 17) {
			other++;
			continue;
		}
		size_t ihl = size_t(buf[14] & 0xF) * 4;
		size_t udp = 14 + ihl;
		ecn[buf[15] & 3]++;
		uint16_t dport = uint16_t(buf[udp + 2] << 8 | buf[udp + 3]);
		if (dport == QN_ECHO_UDP_PORT)
			echo++;
		size_t hdr = udp + 8 + (dport == QN_ROCE_UDP_PORT ? 12 : 0);
		if (buf.size() < hdr + kStampLen || get64(&buf[hdr]) != kMagic) {
			other++;
			continue;
		}
		uint64_t sent = get64(&buf[hdr + 8]);
		uint64_t seq = get64(&buf[hdr + 16]);
		bool ok = true;
		for (size_t i = hdr + kStampLen; i < buf.size(); i++)
			ok = ok && buf[i] == uint8_t(seq * 131 + i);
		if (!ok) {
			corrupt++;
			continue;
		}
		if (!seen.insert(seq).second) {
			dups++;
			continue;
		}
		valid++;
		if (valid == o.expect) // every frame is here: listen a grace period for duplicates
			deadline = std::min(deadline, Clock::now() + secs(o.grace));
		ecn_stamped[buf[15] & 3]++;
		bool ctrl = dport != QN_ROCE_UDP_PORT ||
			    buf[udp + 8] == QN_OP_CNP || buf[udp + 8] == QN_OP_RC_ACK || buf[udp + 8] == QN_OP_LDCP_ACK;
		delay[ctrl ? 1 : 0].push_back(double(now - sent) / 1000.0);
	}
	std::printf("recv valid=%" PRIu64 " corrupt=%" PRIu64 " dup=%" PRIu64 " other=%" PRIu64 " echo=%" PRIu64 "\n",
		    valid, corrupt, dups, other, echo);
	std::printf("ecn all_notect=%" PRIu64 " all_ect=%" PRIu64 " all_ce=%" PRIu64 " stamped_notect=%" PRIu64
		    " stamped_ect=%" PRIu64 " stamped_ce=%" PRIu64 "\n",
		    ecn[0], ecn[1] + ecn[2], ecn[3], ecn_stamped[0], ecn_stamped[1] + ecn_stamped[2], ecn_stamped[3]);
	for (int c = 0; c < 2; c++)
		std::printf("class=%s n=%zu delay_us_p50=%.1f delay_us_p99=%.1f delay_us_max=%.1f\n",
			    c ? "control" : "data", delay[c].size(), pct(delay[c], 50), pct(delay[c], 99),
			    pct(delay[c], 100));
	if (o.expect != UINT64_MAX && (valid != o.expect || corrupt || dups))
		return 1;
	return corrupt || dups ? 1 : 0;
}

bool counters(const Opts &o, uint64_t &bytes, uint64_t &pkts)
{
	auto c = if_counters(o.netns, o.dev);
	if (!c)
		die(c.error().to_string());
	bytes = c->tx_bytes;
	pkts = c->tx_packets;
	return true;
}

int cmd_rate(const Opts &o)
{
	std::this_thread::sleep_for(std::chrono::duration<double>(o.warmup));
	uint64_t b0, p0, b1, p1;
	if (!counters(o, b0, p0))
		die("no interface " + o.dev + " in " + o.netns);
	auto t0 = std::chrono::steady_clock::now();
	std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
	counters(o, b1, p1);
	double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	double l2 = double(b1 - b0) * 8 / dt;
	double wire = double((b1 - b0) + 24 * (p1 - p0)) * 8 / dt;
	std::printf("rate dev=%s seconds=%.3f pkts=%" PRIu64 " l2_bps=%.0f wire_bps=%.0f\n", o.dev.c_str(), dt,
		    p1 - p0, l2, wire);
	return 0;
}

// The switch-to-switch PAUSE spike (docs/switch.md): while floods keep port `dev` busy,
// "a PAUSE arrives" at T0 and the data class 1:20 of that port is throttled to 100 kbit/s over
// netlink, either through a persistent `tc -batch` process (one netlink socket kept open) or
// a fresh `tc` per command. Measures the time from T0 to the port's last transmitted frame and
// the bytes that left after T0.
int cmd_spike(const Opts &o, int rounds)
{
	int in[2];
	if (pipe(in) < 0)
		die("pipe");
	pid_t tc = fork();
	if (tc == 0) {
		dup2(in[0], 0);
		close(in[1]);
		execlp("tc", "tc", "-n", o.netns.c_str(), "-batch", "-", static_cast<char *>(nullptr));
		_exit(127);
	}
	close(in[0]);
	auto tx = [&]() {
		auto c = if_counters(o.netns, o.dev);
		if (!c)
			die(c.error().to_string());
		return c->tx_bytes;
	};
	// The class's current rate line, to restore it after each round.
	auto cur = run_ok({"tc", "-n", o.netns, "class", "show", "dev", o.dev, "classid", "1:20"});
	if (!cur)
		die(cur.error().to_string());
	std::string rate = "1Gbit";
	{
		auto pos = cur->find(" ceil ");
		if (pos != std::string::npos)
			rate = cur->substr(pos + 6, cur->find(' ', pos + 6) - pos - 6);
	}
	std::string throttle = "class change dev " + o.dev + " parent 1:1 classid 1:20 htb rate 100kbit ceil 100kbit prio 1\n";
	std::string restore = "class change dev " + o.dev + " parent 1:1 classid 1:20 htb rate " + rate + " ceil " +
			      rate + " prio 1\n";
	for (int mode = 0; mode < 2; mode++) {
		std::vector<double> quiet_us, slipped;
		for (int r = 0; r < rounds; r++) {
			std::this_thread::sleep_for(std::chrono::milliseconds(600)); // repay the throttled class's token debt
			uint64_t t0 = mono_ns(), b0 = tx();
			if (mode == 0) {
				if (write(in[1], throttle.data(), throttle.size()) != ssize_t(throttle.size()))
					die("write to tc -batch");
			} else {
				std::vector<std::string> argv{"tc", "-n", o.netns};
				std::istringstream words(throttle);
				std::string w;
				while (words >> w)
					argv.push_back(w);
				if (!run_ok(argv))
					die("tc class change failed");
			}
			uint64_t last_b = b0, last_t = t0;
			while (mono_ns() - last_t < 20'000'000 && mono_ns() - t0 < 2'000'000'000) {
				uint64_t b = tx();
				if (b != last_b) {
					last_b = b;
					last_t = mono_ns();
				}
			}
			quiet_us.push_back(double(last_t - t0) / 1e3);
			slipped.push_back(double(last_b - b0));
			std::vector<std::string> argv{"tc", "-n", o.netns};
			std::istringstream words(restore);
			std::string w;
			while (words >> w)
				argv.push_back(w);
			if (!run_ok(argv))
				die("restore failed");
		}
		std::printf("spike mode=%s rounds=%d quiet_us_p50=%.0f quiet_us_max=%.0f slipped_bytes_p50=%.0f "
			    "slipped_bytes_max=%.0f\n",
			    mode == 0 ? "persistent_netlink" : "tc_per_command", rounds, pct(quiet_us, 50),
			    pct(quiet_us, 100), pct(slipped, 50), pct(slipped, 100));
	}
	close(in[1]);
	waitpid(tc, nullptr, 0);
	return 0;
}

Mac read_mac(const std::string &netns, const std::string &dev)
{
	auto r = run_ok({"ip", "-n", netns, "-o", "link", "show", "dev", dev});
	if (!r)
		die(r.error().to_string());
	auto pos = r->find("link/ether ");
	if (pos == std::string::npos)
		die("no MAC address on " + dev);
	auto m = parse_mac(r->substr(pos + 11, 17));
	if (!m)
		die(m.error().message);
	return *m;
}

// Send an 802.1Qbb XOFF (and optionally an XON) out of switch port `dev` to its neighbour,
// bypassing the qdisc as the switch's control thread does, and watch the frames the port
// receives from that neighbour: `rx_paused` counts what arrived while it should be paused
// (from 5 ms after the XOFF to 5 ms before the pause ends), `rx_resumed` what arrived in the
// 50 ms after the pause ended (by XON or by expiry). Times are wall-clock; `--link-rate` is
// the port's wall rate for quanta -> time.
int cmd_pause(const Opts &o)
{
	auto sock = RawSocket::open(o.netns, o.dev, true);
	if (!sock)
		die(sock.error().to_string());
	auto mac = read_mac(o.netns, o.dev);
	std::array<uint16_t, 8> q{};
	q[size_t(o.prio)] = uint16_t(o.quanta);
	Bytes xoff = build_pfc_frame(mac, uint8_t(1u << o.prio), q);
	q[size_t(o.prio)] = 0;
	Bytes xon = build_pfc_frame(mac, uint8_t(1u << o.prio), q);
	auto rx = [&]() {
		auto c = if_counters(o.netns, o.dev);
		if (!c)
			die(c.error().to_string());
		return c->rx_packets;
	};
	auto wait_until = [](uint64_t t) {
		while (mono_ns() < t)
			std::this_thread::sleep_for(std::chrono::microseconds(200));
	};
	const double pause_ms = double(o.quanta) * 512.0 / o.link_rate * 1e3;
	const double end_ms = o.xon_after_ms >= 0 ? std::min(o.xon_after_ms, pause_ms) : pause_ms;
	if (end_ms < 15)
		die("the pause must last at least 15 ms wall to be observed (raise --quanta or --xon-after-ms)");
	uint64_t before0 = rx();
	std::this_thread::sleep_for(std::chrono::milliseconds(20));
	uint64_t before = rx() - before0;
	uint64_t t0 = mono_ns();
	if (!sock->send_batch(std::vector<Bytes>{xoff}))
		die("send XOFF failed");
	wait_until(t0 + 5'000'000);
	uint64_t a = rx();
	wait_until(t0 + uint64_t((end_ms - 5) * 1e6));
	uint64_t b = rx();
	if (o.xon_after_ms >= 0) {
		wait_until(t0 + uint64_t(o.xon_after_ms * 1e6));
		if (!sock->send_batch(std::vector<Bytes>{xon}))
			die("send XON failed");
	}
	uint64_t t_end = t0 + uint64_t(end_ms * 1e6);
	wait_until(t_end);
	uint64_t c = rx();
	wait_until(t_end + 50'000'000);
	uint64_t d = rx();
	std::printf("pause prio=%d quanta=%d pause_ms=%.3f xon_after_ms=%.3f rx_before_20ms=%llu rx_paused=%llu "
		    "rx_resumed=%llu\n",
		    o.prio, o.quanta, pause_ms, o.xon_after_ms, static_cast<unsigned long long>(before),
		    static_cast<unsigned long long>(b - a), static_cast<unsigned long long>(d - c));
	return 0;
}

// One PFC frame naming no priority through the device's qdisc (not bypassing it): the qdisc runs
// once, as switchd's kick after opening a pause gate (switchd.cc); the receiver changes nothing.
int cmd_kick(const Opts &o)
{
	auto sock = RawSocket::open(o.netns, o.dev, false);
	if (!sock)
		die(sock.error().to_string());
	if (!sock->send_batch(std::vector<Bytes>{pfc_frame_kick(read_mac(o.netns, o.dev))}))
		die("send kick failed");
	return 0;
}

// Back-to-sender signals as a switch sends them (the switch programs build them in BPF; these
// are the reference encoders of transport/wire.h).
// Spin for --seconds on --cpu, at SCHED_FIFO --fifo when given: a stall made to order (the
// hypervisor's pauses, where the tests need one at a known time). Ends itself on the clock, so
// an equal-priority parent need not preempt it.
int cmd_spin(const Opts &o)
{
	if (o.cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(size_t(o.cpu), &set);
		if (sched_setaffinity(0, sizeof(set), &set) != 0)
			die("spin: pin to CPU " + std::to_string(o.cpu) + ": " + std::strerror(errno));
	}
	if (o.fifo > 0) {
		sched_param sp{};
		sp.sched_priority = o.fifo;
		if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0)
			die("spin: SCHED_FIFO " + std::to_string(o.fifo) + ": " + std::strerror(errno));
	}
	if (o.seconds <= 0 || o.seconds > 10)
		die("spin: --seconds must be in (0, 10]");
	const auto t0 = std::chrono::steady_clock::now();
	const auto end = t0 + std::chrono::nanoseconds(int64_t(o.seconds * 1e9));
	auto t = t0;
	while (t < end)
		t = std::chrono::steady_clock::now();
	std::printf("spun %.3f ms on CPU %d (SCHED_%s)\n", std::chrono::duration<double, std::milli>(t - t0).count(),
		    sched_getcpu(), o.fifo > 0 ? "FIFO" : "OTHER");
	return 0;
}

int cmd_signal(const Opts &o)
{
	if (o.kind != "bts" && o.kind != "postcard")
		die("signal: --kind must be bts or postcard");
	if (o.sport < 0 || o.sport > 0xFFFF || o.pause_us < 0 || o.pause_us > 0xFFFF)
		die("signal: --sport and --pause-us must fit 16 bits");
	if (o.src_ip == 0 || o.dst_ip == 0)
		die("signal: --src-ip and --dst-ip are required");
	auto sock = RawSocket::open(o.netns, o.dev, true);
	if (!sock)
		die(sock.error().to_string());
	const uint32_t receiver = o.peer_ip ? o.peer_ip : o.src_ip;
	tp::TxHeader h;
	h.src = tp::Endpoint{read_mac(o.netns, o.dev), o.src_ip};
	h.dst = tp::Endpoint{o.dst_mac, o.dst_ip};
	h.sport = uint16_t(o.sport);
	Bytes f(std::max(tp::kBtsFrameBytes, tp::kPostcardFrameBytes));
	size_t n = 0;
	if (o.kind == "bts") {
		// The data packet it answers: sender -> receiver, DestQP, PSN.
		tp::TxHeader d;
		d.src = tp::Endpoint{o.dst_mac, o.dst_ip};
		d.dst = tp::Endpoint{h.src.mac, receiver};
		d.sport = uint16_t(o.sport);
		d.dest_qp = o.dest_qp;
		d.psn = o.psn;
		Bytes data(tp::kDataHdrBytes);
		tp::encode_data(d, 0, false, data.data(), data.size(), [](uint8_t *) {});
		tp::BtsInfo b;
		b.version = QN_BTS_VERSION;
		b.pause_us = uint16_t(o.pause_us);
		n = tp::encode_bts(h, b, std::span<const uint8_t, tp::kTrimmedBytes>(data.data() + QN_ETH_HLEN, tp::kTrimmedBytes),
				   f.data(), f.size());
	} else {
		tp::PostcardInfo c;
		c.version = QN_POSTCARD_VERSION;
		c.psn = o.psn;
		c.flow_saddr = o.dst_ip;
		c.flow_daddr = receiver;
		c.flow_sport = uint16_t(o.sport);
		c.flow_dport = QN_ROCE_UDP_PORT;
		c.dest_qp = o.dest_qp;
		n = tp::encode_postcard(h, c, f.data(), f.size());
	}
	if (n == 0)
		die("signal: frame does not fit");
	f.resize(n);
	const uint64_t count = o.count ? o.count : 1;
	for (uint64_t i = 0; i < count; i++)
		if (!sock->send_batch(std::vector<Bytes>{f}))
			die("signal: send failed");
	std::printf("signal %s sent %llu\n", o.kind.c_str(), static_cast<unsigned long long>(count));
	return 0;
}

} // namespace

int main(int argc, char **argv)
{
	Opts o = parse(argc, argv);
	if (o.cmd == "send")
		return cmd_send(o);
	if (o.cmd == "recv")
		return cmd_recv(o);
	if (o.cmd == "rate")
		return cmd_rate(o);
	if (o.cmd == "pause")
		return cmd_pause(o);
	if (o.cmd == "kick")
		return cmd_kick(o);
	if (o.cmd == "signal")
		return cmd_signal(o);
	if (o.cmd == "spin")
		return cmd_spin(o);
	if (o.cmd == "spike")
		return cmd_spike(o, o.count ? int(o.count) : 10);
	die("unknown command " + o.cmd);
}
