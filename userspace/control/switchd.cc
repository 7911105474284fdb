// switchd.cc - PFC control threads (one per switch) and their process.
#include "control/switchd.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <memory>
#include <mutex>
#include <pthread.h>
#include <sched.h>
#include <net/if.h>
#include <spawn.h>
#include <sstream>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <time.h>
#include <unistd.h>
#include <vector>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/abi.h"
#include "control/bringup.h"
#include "control/gauges.h"
#include "control/pfc.h"
#include "control/rawsock.h"
#include "control/switch_loader.h"
#include "control/tcgate.h"

extern char **environ;

namespace qn {
namespace {

std::atomic<bool> g_stop{false};
std::mutex g_log_mu;

void logf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void logf(const char *fmt, ...)
{
	std::lock_guard<std::mutex> lk(g_log_mu);
	va_list ap;
	va_start(ap, fmt);
	std::vfprintf(stdout, fmt, ap);
	va_end(ap);
	std::fflush(stdout);
}

std::string pid_path(const std::string &t) { return switchd_pid_path(t); }
std::string log_path(const std::string &t) { return switchd_log_path(t); }

} // namespace

std::string switchd_pid(const std::string &topology)
{
	std::string pid;
	std::ifstream(pid_path(topology)) >> pid;
	return pid;
}

namespace {

struct PortTx {
	std::unique_ptr<RawSocket> sock;
	Mac mac{};
	uint64_t wall_rate_bps = 0;
	std::string ifname;
	// The pause gate of a switch-facing port's data class (tcgate.h): closed by a PAUSE from
	// the neighbour, opened by its XON or when its quanta run out.
	bool gated = false;           // has a gate
	int ifindex = 0;
	GateConfig gate;
	bool closed = false;
	uint64_t expiry_ns = 0;       // CLOCK_MONOTONIC (the BPF clock)
	std::unique_ptr<RawSocket> kick; // through the qdisc: runs it once the gate is open
};

struct Pause {
	bool on = false;
	uint16_t quanta = 0;
	uint64_t next_refresh_ns = 0;
};

// The accounting sweep's period: a queue that drained while the dequeue hook missed its last
// departures has its bytes released within this (acct.h): 2 ms of wall time, or 20 us of fabric
// time (two base RTTs of a one-switch fabric) when that is longer. A sweep is a BPF_PROG_TEST_RUN
// per switch: at a fixed 2 ms the 20 switches of a k=4 fat-tree cost 12% of a CPU idle, and
// large fabrics run at large D, where 2 ms of wall time is nanoseconds of fabric time.
constexpr uint64_t kSweepPeriodNs = 2'000'000;
constexpr uint64_t kSweepFabricNs = 20'000;

struct SwitchCtl {
	std::string name;
	std::vector<PortTx> ports; // by port_no
	Pause paused[QN_MAX_PORTS][QN_NUM_PRIOS];
	uint64_t frames = 0, refreshes = 0, once = 0;
	int sweep_fd = -1; // qn_tc_sweep (bpf/include/acct.h)
	uint64_t sweep_period_ns = kSweepPeriodNs; // wall
	uint64_t next_sweep_ns = 0, sweeps = 0, sweep_errors = 0;
	SwitchGauges gauges; // occupancy scans of the switch's tables (gauges.h)
	std::unique_ptr<TcGate> tc;   // netlink in the switch's namespace (switch-facing ports)
	uint64_t gate_closes = 0, gate_opens_xon = 0, gate_opens_expiry = 0, gate_errors = 0;
	uint64_t gate_op_max_ns = 0, gate_op_sum_ns = 0;
	// From a PAUSE's arrival (the BPF post) to its gate closed: the control thread's share of
	// the pause latency (the rest is the qdisc finishing what it had dequeued).
	std::vector<uint64_t> close_lat_ns;
	~SwitchCtl()
	{
		if (sweep_fd >= 0)
			close(sweep_fd);
	}
};

// The gauge scans' period (qn_abi.h QN_SW_GAUGES): a table entry that lives shorter than this
// may be missed by the peak. One scan of the 32K-word pause cache: docs/PERFORMANCE.md.
constexpr uint64_t kGaugePeriodNs = 1'000'000;

void sweep(SwitchCtl &s)
{
	unsigned char frame[64] = {}; // a tc program needs a frame to run on; the sweep ignores it
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = sizeof(frame), .repeat = 1);
	if (bpf_prog_test_run_opts(s.sweep_fd, &opts) == 0)
		s.sweeps++;
	else
		s.sweep_errors++;
}

void send_pfc(SwitchCtl &s, uint32_t port_no, uint32_t prio, uint16_t quanta)
{
	if (port_no >= s.ports.size() || !s.ports[port_no].sock || prio >= QN_NUM_PRIOS)
		return;
	Bytes f = pfc_frame_for(s.ports[port_no].mac, prio, quanta);
	auto r = s.ports[port_no].sock->send_batch(std::vector<Bytes>{f});
	if (r && *r == 1)
		s.frames++;
}

// Close or open port `port_no`'s gate; an opened gate is kicked (one empty PFC frame through the
// control class) so the qdisc runs now: nothing else would run it while its senders wait.
void set_gate(SwitchCtl &s, uint32_t port_no, bool closed, uint64_t posted_ns = 0)
{
	PortTx &p = s.ports[port_no];
	uint64_t t0 = mono_ns();
	Status st = s.tc->set(p.ifindex, p.gate, closed);
	uint64_t dt = mono_ns() - t0;
	s.gate_op_max_ns = std::max(s.gate_op_max_ns, dt);
	s.gate_op_sum_ns += dt;
	if (!st.ok()) {
		s.gate_errors++;
		logf("%s %s: %s\n", s.name.c_str(), p.ifname.c_str(), st.error().message.c_str());
		return;
	}
	p.closed = closed;
	if (closed) {
		s.gate_closes++;
		if (posted_ns && s.close_lat_ns.size() < 1'000'000)
			s.close_lat_ns.push_back(mono_ns() - posted_ns);
		return;
	}
	if (p.kick)
		(void)p.kick->send_batch(std::vector<Bytes>{pfc_frame_kick(p.mac)});
}

// A pause from the neighbour on `port_no` (quanta > 0) or its XON.
void on_pause_rx(SwitchCtl &s, uint32_t port_no, uint32_t quanta, uint64_t posted_ns)
{
	PortTx &p = s.ports[port_no];
	if (!p.gated)
		return;
	if (quanta) {
		p.expiry_ns = mono_ns() + pfc_quanta_ns(quanta, p.wall_rate_bps);
		if (!p.closed)
			set_gate(s, port_no, true, posted_ns);
	} else if (p.closed) {
		s.gate_opens_xon++;
		set_gate(s, port_no, false);
	}
}

int on_event(void *ctx, void *data, size_t len)
{
	auto &s = *static_cast<SwitchCtl *>(ctx);
	if (len < sizeof(qn_pfc_event))
		return 0;
	qn_pfc_event ev;
	std::memcpy(&ev, data, sizeof(ev));
	if (ev.port_no >= QN_MAX_PORTS || ev.prio >= QN_NUM_PRIOS || ev.port_no >= s.ports.size())
		return 0;
	if (ev.flags & QN_PFC_EV_RX) {
		on_pause_rx(s, ev.port_no, ev.quanta, ev.t_ns);
		return 0;
	}
	Pause &p = s.paused[ev.port_no][ev.prio];
	send_pfc(s, ev.port_no, ev.prio, uint16_t(ev.quanta));
	if (ev.flags & QN_PFC_EV_ONCE) {
		// SFC-P (sfc.h): one PAUSE that ends by its quanta; the port's own XOFF state is
		// untouched (no refresh, no XON).
		s.once++;
		logf("%s %s prio %u SFC-P PAUSE quanta %u\n", s.name.c_str(), s.ports[ev.port_no].ifname.c_str(),
		     unsigned(ev.prio), ev.quanta);
		return 0;
	}
	if (ev.quanta) {
		p.on = true;
		p.quanta = uint16_t(ev.quanta);
		p.next_refresh_ns = mono_ns() + pfc_quanta_ns(ev.quanta, s.ports[ev.port_no].wall_rate_bps) / 2;
	} else {
		p.on = false;
	}
	return 0; // counted by the switch (xoff, xon); a log line per event would slow this thread
}

// The gauge scans of every switch, at normal priority: a scan of a 32K-word cache takes
// ~30-150 us, which the PFC threads must not wait behind. A pass over every switch repeats every
// kGaugePeriodNs, or after 1 + kGaugeIdleShare times its own length when that is longer: the
// scans take at most 1/(1 + kGaugeIdleShare) = 5% of a CPU however many switches there are (measured: at a
// fixed 1 ms the 56 switches of the ns-3 simulator's 320-host tree kept this thread busy, a whole
// core of the two the engine and the switches share; docs/PERFORMANCE.md "`quench bench fabric`").
constexpr uint64_t kGaugeIdleShare = 19;

void run_gauges(std::vector<SwitchCtl *> ctls)
{
	while (!g_stop.load()) {
		const uint64_t start = mono_ns();
		for (SwitchCtl *s : ctls)
			s->gauges.scan(mono_ns());
		const uint64_t took = mono_ns() - start;
		const uint64_t next = start + std::max(kGaugePeriodNs, took * (1 + kGaugeIdleShare));
		for (uint64_t now = mono_ns(); now < next && !g_stop.load(); now = mono_ns())
			usleep(useconds_t(std::min<uint64_t>(next - now, 100'000'000) / 1000 + 1));
	}
}

void run_one(SwitchCtl *s, ring_buffer *rb)
{
	// A switch's control plane is hardware in a real fabric: the PAUSE it obeys must not wait
	// behind the senders it serves. Real-time priority; it sleeps in epoll between events.
	sched_param sp{};
	sp.sched_priority = 20;
	if (int e = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp); e)
		logf("%s: SCHED_FIFO refused (%s): pause latency is the scheduler's\n", s->name.c_str(), std::strerror(e));
	while (!g_stop.load()) {
		// Sleep in epoll until the next deadline (sweep, a gate's expiry, a pause's refresh),
		// whole milliseconds, at least 1: events wake it at once.
		uint64_t next = s->next_sweep_ns;
		for (uint32_t port = 0; port < s->ports.size() && port < QN_MAX_PORTS; port++) {
			if (s->ports[port].closed)
				next = std::min(next, s->ports[port].expiry_ns);
			for (uint32_t prio = 0; prio < QN_NUM_PRIOS; prio++)
				if (s->paused[port][prio].on)
					next = std::min(next, s->paused[port][prio].next_refresh_ns);
		}
		const uint64_t before = mono_ns();
		const int wait_ms = next > before ? int(std::min<uint64_t>((next - before + 999'999) / 1'000'000, 100)) : 0;
		ring_buffer__poll(rb, std::max(wait_ms, 1));
		uint64_t now = mono_ns();
		if (now >= s->next_sweep_ns) {
			sweep(*s);
			s->next_sweep_ns = now + s->sweep_period_ns;
		}
		for (uint32_t port = 0; port < s->ports.size() && port < QN_MAX_PORTS; port++) {
			PortTx &tx = s->ports[port];
			if (tx.closed && now >= tx.expiry_ns) { // the quanta ran out without an XON
				s->gate_opens_expiry++;
				set_gate(*s, port, false);
			}
			for (uint32_t prio = 0; prio < QN_NUM_PRIOS; prio++) {
				Pause &p = s->paused[port][prio];
				if (!p.on || now < p.next_refresh_ns)
					continue;
				// Still above XON: refresh before the peer's pause expires.
				send_pfc(*s, port, prio, p.quanta);
				s->refreshes++;
				p.next_refresh_ns = now + pfc_quanta_ns(p.quanta, s->ports[port].wall_rate_bps) / 2;
			}
		}
	}
	for (uint32_t port = 0; port < s->ports.size(); port++)
		if (s->ports[port].closed)
			set_gate(*s, port, false); // never leave a port paused
	if (s->gate_closes) {
		auto &v = s->close_lat_ns;
		std::sort(v.begin(), v.end());
		auto pct = [&](double q) { return v.empty() ? 0.0 : double(v[size_t(q * double(v.size() - 1))]) / 1e3; };
		logf("%s: pause gates closed %llu times, opened by XON %llu, by expiry %llu, %llu netlink errors; "
		     "netlink change %.1f us mean, %.1f us max; PAUSE arrival to gate closed p50 %.1f us, p99 %.1f us, "
		     "max %.1f us\n",
		     s->name.c_str(), static_cast<unsigned long long>(s->gate_closes),
		     static_cast<unsigned long long>(s->gate_opens_xon), static_cast<unsigned long long>(s->gate_opens_expiry),
		     static_cast<unsigned long long>(s->gate_errors),
		     double(s->gate_op_sum_ns) / 1e3 / double(s->gate_closes + s->gate_opens_xon + s->gate_opens_expiry),
		     double(s->gate_op_max_ns) / 1e3, pct(0.5), pct(0.99), pct(1.0));
	}
}

// The summary of one switch, once every thread stopped.
void log_summary(SwitchCtl *s)
{
	logf("%s: %llu PFC frames sent (%llu refreshes, %llu SFC-P); %llu accounting sweeps, %llu failed, %llu gauge scans (%.1f us each)\n",
	     s->name.c_str(), static_cast<unsigned long long>(s->frames), static_cast<unsigned long long>(s->refreshes),
	     static_cast<unsigned long long>(s->once),
	     static_cast<unsigned long long>(s->sweeps), static_cast<unsigned long long>(s->sweep_errors),
	     static_cast<unsigned long long>(s->gauges.scans()),
	     s->gauges.scans() ? double(s->gauges.scan_ns()) / 1e3 / double(s->gauges.scans()) : 0.0);
}

// A zombie is not alive: switchd runs in its own session and its parent (`topo up`) has exited,
// so it is reaped by whatever runs as PID 1, which on machines of this kind takes 1-1.5 s
// (measured: a stopped switchd stayed in state Z for 1.3 s), and `topo down` waited for it.
bool alive(pid_t pid)
{
	if (pid <= 0 || kill(pid, 0) != 0)
		return false;
	std::ifstream st("/proc/" + std::to_string(pid) + "/stat");
	std::string line;
	if (!std::getline(st, line))
		return false;
	const size_t paren = line.rfind(')'); // the command name may hold spaces and parentheses
	return paren == std::string::npos || paren + 2 >= line.size() || line[paren + 2] != 'Z';
}

std::vector<pid_t> find_by_cmdline(const std::string &topology)
{
	std::vector<pid_t> out;
	DIR *d = opendir("/proc");
	if (!d)
		return out;
	while (dirent *e = readdir(d)) {
		pid_t pid = pid_t(std::atoi(e->d_name));
		if (pid <= 0 || pid == getpid())
			continue;
		std::ifstream f("/proc/" + std::string(e->d_name) + "/cmdline");
		std::string cmd((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
		std::vector<std::string> argv;
		std::string cur;
		for (char c : cmd) {
			if (c == '\0') {
				argv.push_back(cur);
				cur.clear();
			} else {
				cur += c;
			}
		}
		if (argv.size() == 3 && argv[1] == "switchd" && argv[2] == topology)
			out.push_back(pid);
	}
	closedir(d);
	return out;
}

} // namespace

Status run_switchd(const std::string &topology)
{
	auto t = load_running(topology);
	if (!t)
		return t.error();
	auto dil = running_dilation(topology);
	if (!dil)
		return dil.error();
	std::signal(SIGTERM, [](int) { g_stop = true; });
	std::signal(SIGINT, [](int) { g_stop = true; });
	prctl(PR_SET_TIMERSLACK, 1);

	std::vector<std::unique_ptr<SwitchCtl>> ctls;
	std::vector<ring_buffer *> rbs;
	for (const auto &n : t->nodes) {
		if (n.kind != NodeKind::Switch)
			continue;
		auto ctl = std::make_unique<SwitchCtl>();
		ctl->name = n.name;
		ctl->sweep_period_ns = std::max(kSweepPeriodNs, dil->to_wall_ns(kSweepFabricNs));
		auto pids = t->ports_of(n.id);
		ctl->ports.resize(pids.size());
		for (int pi : pids) {
			const Port &p = t->ports[size_t(pi)];
			auto s = RawSocket::open(t->netns(n.id), p.ifname, true, false); // sends only
			if (!s)
				return s.error();
			PortTx &tx = ctl->ports[size_t(p.port_no)];
			tx.sock = std::make_unique<RawSocket>(std::move(*s));
			tx.mac = p.mac;
			tx.ifname = p.ifname;
			tx.wall_rate_bps = dil->to_wall_rate_bps(t->links[size_t(p.link)].rate_bps);
			if (t->nodes[size_t(p.peer_node)].kind == NodeKind::Switch) {
				const Link &l = t->links[size_t(p.link)];
				HtbPlan h = plan_htb(l.rate_bps, l.mtu, n.buffer_bytes, *dil);
				tx.gated = true;
				tx.ifindex = int(p.ifindex);
				tx.gate = gate_config(h.rate_bps, l.mtu, h.fifo_limit_bytes);
				auto k = RawSocket::open(t->netns(n.id), p.ifname, false, false);
				if (!k)
					return k.error();
				tx.kick = std::make_unique<RawSocket>(std::move(*k));
				if (!ctl->tc) {
					auto g = TcGate::open(t->netns(n.id));
					if (!g)
						return g.error();
					ctl->tc = std::make_unique<TcGate>(std::move(*g));
				}
			}
		}
		std::string path = switch_pin_dir(*t, n.id) + "/qn_pfc_events";
		int fd = bpf_obj_get(path.c_str());
		if (fd < 0)
			return sys_error(errno, "open " + path);
		ring_buffer *rb = ring_buffer__new(fd, on_event, ctl.get(), nullptr);
		close(fd);
		if (!rb)
			return sys_error(errno, "ring buffer on " + path);
		std::string sp = switch_pin_dir(*t, n.id) + "/prog_sweep";
		ctl->sweep_fd = bpf_obj_get(sp.c_str());
		if (ctl->sweep_fd < 0) {
			int e = errno;
			ring_buffer__free(rb);
			return sys_error(e, "open " + sp);
		}
		auto g = SwitchGauges::open(switch_pin_dir(*t, n.id), *dil);
		if (!g) {
			ring_buffer__free(rb);
			return g.error();
		}
		ctl->gauges = std::move(*g);
		rbs.push_back(rb);
		ctls.push_back(std::move(ctl));
	}
	logf("switchd %s: %zu switches\n", topology.c_str(), ctls.size());
	std::vector<std::thread> threads;
	for (size_t i = 0; i < ctls.size(); i++)
		threads.emplace_back(run_one, ctls[i].get(), rbs[i]);
	std::vector<SwitchCtl *> all;
	for (auto &c : ctls)
		all.push_back(c.get());
	threads.emplace_back(run_gauges, all);
	for (auto &th : threads)
		th.join();
	for (auto &c : ctls)
		log_summary(c.get());
	for (auto *rb : rbs)
		ring_buffer__free(rb);
	return ok_status();
}

Status spawn_switchd(const std::string &self, const std::string &topology, size_t switches)
{
	stop_switchd(topology);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, log_path(topology).c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	posix_spawnattr_t at;
	posix_spawnattr_init(&at);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID);
	std::vector<std::string> args{self, "switchd", topology};
	std::vector<char *> argv;
	for (auto &a : args)
		argv.push_back(a.data());
	argv.push_back(nullptr);
	pid_t pid;
	int rc = posix_spawn(&pid, self.c_str(), &fa, &at, argv.data(), environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc)
		return sys_error(rc, "start " + self + " switchd " + topology);
	std::ofstream(pid_path(topology)) << pid << "\n";
	// It must come up (open its sockets and ring buffers) or say why. 10 s: under QEMU's TCG
	// (the kernel CI) exec and start-up of the 28 MB binary took over 2 s once; plus 0.25 s per
	// switch (its raw sockets, pins and gauges: a k=4 fat-tree's 20 switches were seen ready a
	// few seconds after a fixed 10 s, issue 45).
	const int polls = 500 + int(switches) * 12;
	for (int i = 0; i < polls; i++) {
		std::ifstream lf(log_path(topology));
		std::string log((std::istreambuf_iterator<char>(lf)), std::istreambuf_iterator<char>());
		if (log.find("switchd " + topology + ":") != std::string::npos)
			return ok_status();
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid)
			return make_error("switchd " + topology + " exited: " + log);
		usleep(20000);
	}
	return make_error("switchd " + topology + " did not start within " + std::to_string(polls / 50) + " s (log " +
			  log_path(topology) + ")");
}

void stop_switchd(const std::string &topology)
{
	std::vector<pid_t> pids = find_by_cmdline(topology);
	{
		std::ifstream f(pid_path(topology));
		pid_t pid = 0;
		if (f >> pid && alive(pid))
			pids.push_back(pid);
	}
	for (pid_t p : pids)
		kill(p, SIGTERM);
	for (int i = 0; i < 100; i++) {
		bool any = false;
		for (pid_t p : pids)
			any = any || alive(p);
		if (!any)
			break;
		usleep(20000);
	}
	for (pid_t p : pids)
		if (alive(p))
			kill(p, SIGKILL);
	unlink(pid_path(topology).c_str());
}

} // namespace qn
