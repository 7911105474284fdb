// engine.h - the host engine: the RDMA NIC of every emulated host and the cables between
// switches, for one running topology, in one process, with one event loop per shard (a thread
// per CPU; DESIGN.md §1, §4; docs/transport.md "Shards").
//
// Per host: one AF_XDP socket on the host veth (made inside the host's namespace), a link
// pacer at the host's link rate, strict priority of control frames (ACK/NAK/CNP, priority 6)
// over data (priority 3), per-QP rate limiters in a timing wheel, PFC honoured per priority,
// TX and RX propagation-delay lines and optional fabric-time NIC processing delays.
// Per cable: two AF_XDP sockets and a delay line each way (order preserving).
// Health: pacer lateness, loop stalls, XSK ring drops, softnet drops/time_squeeze and veth
// drops; a run over the thresholds is invalid, with its reasons (docs/transport.md).
// Signals back to a sender (CNP, BTS, CC-postcard) reach the QP they name; a QP whose flow
// control paused it sends nothing and holds its retransmission deadline until the pause ends;
// every signal's loop delay (send of the PSN it names to the reaction) is recorded.
//
// What it serves comes from an engine description (engine_desc.h) the control plane builds: the
// engine opens no pin, enters no namespace and reads no topology.
//
// Files by activity (transport/README.md): engine.cc (set-up, control plane, event loop),
// engine_rx.cc (receive, one handler per frame kind), engine_tx.cc (transmit), engine_cable.cc,
// engine_health.cc (health, queue samples), engine_paths.cc (paths, base RTTs).
//
// Units: fabric ns and fabric bit/s everywhere in this API; wall-clock values only in Health.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <random>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/counters.h"
#include "common/units.h"
#include "transport/cc/cc.h"
#include "transport/clock.h"
#include "transport/engine_desc.h"
#include "transport/fidelity.h"
#include "transport/pacer.h"
#include "transport/port.h"
#include "transport/qp.h"
#include "transport/resources.h"

struct qn_fid_port; // bpf/include/qn_abi.h

namespace qn::tp {

struct EngineOptions {
	bool icrc = false;                  // compute and check the ICRC on every RoCE frame
	uint64_t nic_tx_delay_ns = 0;       // fabric-time NIC processing before the wire
	uint64_t nic_rx_delay_ns = 0;       // fabric-time NIC processing after the wire
	uint64_t switch_delay_ns = 0;       // fabric-time switch pipeline latency per switch crossed
					    // (applied where a frame leaves a switch: host RX, cable RX)
	uint64_t base_rtt_ns = 0;           // for the validity thresholds; 0 = derived
	double late_p99_frac = 0.05;        // pacer lateness p99 must be <= this x base RTT ("a few percent", DESIGN.md §5)
	double min_link_efficiency = 0.97;  // backlogged hosts must reach this x link rate (the
					    // pacer's own figure; judged only where no switch monitors)
	// Measured at the switches (docs/experiments.md "Validity"): over all backlogged frames of
	// a direction, the links must keep this fraction of their time (1% lost at most: the
	// per-flow tagging bound, fidelity.h), and at most this fraction of 8-frame windows may
	// be faster than line rate plus one frame.
	double min_switch_efficiency = 0.99;
	double max_fast_windows = 0.01;
	uint64_t spin_wall_ns = 200'000;    // spin (not sleep) when the next deadline is this close
	uint64_t max_sleep_wall_ns = 100'000; // longest single sleep (longer ones wake very late)
	uint32_t frames_per_port = kDefaultFramesPerPort; // UMEM chunks per socket (resources.h)
	bool busy_poll = false;             // never sleep: lowest latency, one core fully used
	uint64_t trace_interval_ns = 10'000; // traced QPs also get a point at least this often while
					    // ACKs arrive (fabric), and one when the last posted byte is
					    // acked, so goodput can be read from the trace
	uint64_t tx_horizon_wall_ns = 1000; // frames may be handed to the kernel this early (wall),
					    // so one kick carries several; fabric horizon = this / D
	double link_credit_frames = 0.5;    // a backlogged host link served late by up to this many
					    // full frames loses no link time (LinkPacer's credit; 0:
					    // every late start is lost, as on 48ec9aa). Below the
					    // switches' one-frame monitor credit by half a frame: a
					    // catch-up of exactly one frame sat on the fast-window
					    // threshold, and kick jitter flagged about half of them
					    // (docs/experiments.md "Fast windows at the arrivals")
	std::vector<std::string> only_hosts; // serve these hosts only (empty = every host)
	// Shards: threads of the engine, each with its own hosts and cables (plan_shards), loop,
	// sockets, timers and health, and so each with the kernel path of the frames it kicks on
	// its own CPU. 0 (automatic): one per CPU this process may run on (at most one per host or
	// cable) when the fabric has more than one switch, else one; 1: one thread, as before shards
	// existed (docs/transport.md "Shards").
	uint32_t shards = 0;
	// Pin shard k's thread to the k-th CPU this process may run on, for the duration of run().
	bool pin_shards = true;
	// Store and forward on host links and cables (common.md §4's base RTT: a full frame's
	// serialization per hop): the far end sees a frame when its last bit arrives, one
	// serialization at the link rate after the pacer or the switch's HTB started it. Off: at its
	// first bit (the fake-clock tests that time the engine's own logic).
	bool store_and_forward = true;
};

struct QpOptions {
	Reliability mode = Reliability::GoBackN;
	uint32_t ack_every = 1;
	// Retransmission timeouts (fabric). 0 = the scheme's default (default_rto_ns()).
	uint64_t rto_low_ns = 0;
	uint64_t rto_high_ns = 0;
	uint64_t window_bytes = 0;          // 0 = none
	uint64_t rate_bps = 0;              // per-QP rate limit; 0 = the host's link rate
	bool keep_data = false;             // receiver keeps delivered bytes (tests)
	bool verify_pattern = true;         // receiver checks pattern payloads by content
	bool hash_payload = false;          // receiver computes Delivery::hash (FNV-1a; slow)
	// Congestion control (transport/cc, docs/cc.md): scheme, parameter set, overrides, NP on/off.
	// line_rate_bps, bdp_bytes and fabric are filled by the engine (host link rate; link rate x
	// base RTT; the served paths' base RTTs).
	cc::Setup cc;
	// Builds the QP's controller and notification point from `cc` (empty: cc::make, the
	// registered schemes). Lets a library user or a test run parts of its own.
	std::function<Result<cc::Parts>(const cc::Setup &)> cc_make;
	bool trace = false;                 // record this QP's rate/window trace (both directions)
	// A flow-control pause holds the retransmission deadline (sfc.md §6.6). Off only to show
	// what the hold prevents (spurious timeouts during long pauses): a test switch.
	bool hold_rto_in_pause = true;
};

// The default retransmission timeouts of a QP of `scheme`: {rto_low, rto_high} (fabric ns).
// Lossy schemes: IRN's 100 / 320 us (common.md §6). Lossless schemes (the switch runs PFC): a
// RoCE NIC's QP timeout, 4.096 us x 2^14 = 67.1 ms (IB's local ACK timeout with the attribute
// 14 that rdma-core's tools set; the ns-3 simulators disable timeouts when PFC is on,
// common.md §6). With PFC nothing is dropped, so a timeout only ever fired spuriously, behind
// a queue or a pause longer than IRN's RTO, and made go-back-N resend what was on its way.
std::pair<uint64_t, uint64_t> default_rto_ns(const std::string &scheme);

using QpHandle = uint32_t;

// The AF_XDP ports an engine gave back (Engine::release_ports) for the next engine on the same
// running fabric (Engine::open's `pool`). Opening them (UMEMs zeroed and pinned) is most of an
// engine's open on a large fabric: 28 s for k=8's 640 sockets (docs/PERFORMANCE.md "Cut 3"),
// paid by every calibration step and attempt of a run. Keyed "host/NAME" and "cable/NAME/K";
// taken only with the same chunk count. The owner clears it when the fabric is made again (its
// sockets are then dead).
struct PortPool {
	std::map<std::string, std::unique_ptr<FramePort>> ports;
	uint32_t frames_per_port = 0;
	uint32_t next_qpn = 0; // where the last engine's QP numbers stopped (0: none): the next one
			       // goes on from there, so a stale frame of the last run names no new QP
	size_t reused = 0;     // ports taken from the pool so far (tests, reports)
	void clear()
	{
		ports.clear();
		next_qpn = 0;
	}
};

// Signals that come back to a sender and name the PSN that caused them.
enum class Signal : uint8_t { Cnp, Bts, Postcard, Count };
std::string to_string(Signal s);

// The path between two hosts: base RTT (common.md §4) and bottleneck rate (fabric).
struct PathInfo {
	bool ok = false;
	uint64_t base_rtt_ns = 0;
	uint64_t bottleneck_bps = 0;
	uint32_t mtu = 0; // the smallest IP MTU along the path (segments must fit every link)
};

// Return: true when the engine serves host `name` (EngineOptions::only_hosts).
bool engine_serves(const EngineOptions &o, const std::string &name);

// What one shard serves (Engine, plan_shards): per EngineDesc::hosts and ::cables entry, 1 when
// it is this shard's (empty: every one). The owner (shard 0) reads what is the machine's or
// the fabric's: the switch monitors' rings and links, softnet counters, queue samples.
struct ShardRole {
	size_t index = 0, count = 1;
	std::vector<char> hosts, cables;
	bool owner = true;
};

// The split of an engine's hosts and cables between `n` shards: hosts in the description's order
// (a rack's and a pod's hosts are contiguous there) in blocks whose sizes differ by at most one;
// a cable (both its ends, one unit) with the shard whose hosts are nearest to it, so a pod's
// cables go with the pod's hosts, and a cable equally near to several (a core link) to the
// shard with the fewest cables. Hosts the engine does not serve (`served` false) go to no shard
// (-1). `n` is capped at the number of served hosts plus cables, and lowered until every shard
// serves something. Return: per host and per cable, its shard; `shards` the count used.
struct ShardPlan {
	size_t shards = 1;
	std::vector<int> host, cable;
};
ShardPlan plan_shards(const EngineDesc &d, const std::vector<bool> &served, size_t n);

// Which shards of `plan` a flow between two hosts meets (a bit per shard): its endpoints' and
// those of every cable on any of its shortest paths (switches route over shortest paths, and ECMP
// may take any of them). A shard's stalls touch the flows it names (Affected::shard). Unknown
// hosts: every shard.
std::function<uint64_t(const std::string &, const std::string &)> flow_shards(const EngineDesc &d,
										const ShardPlan &plan);


// Queue depth samples of one switch egress port (bytes in its queue: charged at enqueue,
// released at dequeue by the switch programs), taken at a fixed fabric-time interval.
struct QueueSeries {
	std::string label;                  // "switch/ifname"
	std::vector<std::pair<uint64_t, uint64_t>> samples; // (engine fabric ns, bytes)
};

// One point of a QP's rate trace: the controller's output when it changed, plus the bytes
// acknowledged so far (goodput over any interval is a difference of two points).
struct RatePoint {
	uint64_t t_ns = 0;
	uint64_t rate_bps = 0;
	uint64_t window_bytes = 0;
	uint64_t acked_bytes = 0;
};

struct HostCounters {
	uint64_t tx_frames = 0, tx_bytes = 0, rx_frames = 0, rx_bytes = 0;
	uint64_t rx_data_bytes = 0;         // bytes of data frames received for a connected QP
	uint64_t ce_rx = 0;                 // data frames received CE-marked (for a connected QP)
	uint64_t tx_data = 0, tx_ctrl = 0, tx_ring_full = 0, tx_no_frame = 0;
	uint64_t pfc_rx = 0, pfc_xoff = 0, pfc_xon = 0;
	uint64_t pfc_pauses = 0;            // pauses begun: an XOFF that found its priority running
	uint64_t pfc_last_pause_at_ns = 0;  // fabric ns (the engine's clock) the last one began (an
					    // instant: CounterKind::Instant)
	uint64_t paused_ns[8] = {};         // fabric time each priority was paused
	uint64_t cnp_rx = 0, cnp_tx = 0, unknown_qp = 0;
	uint64_t bts_rx = 0, postcard_rx = 0; // signals delivered to a QP of this host
	uint64_t qp_paused_ns = 0;          // fabric time its QPs' flow control paused them (summed over
					    // QPs; a pause in progress counts to its planned end)
	uint64_t signal_unknown_qp = 0;     // BTS/postcards naming no QP of this host (dropped)
	uint64_t link_errors = 0;           // frames lost to the host link's error rate (both directions)
	std::array<uint64_t, size_t(ParseError::Count)> bad{};
};

// A host's counters by name, exact: every field above ("paused_ns.prioN" per priority,
// "malformed.<reason>" per parse error, "malformed" their sum). A counter added to HostCounters
// is added here once and reaches every report (the experiment's summary, JSON) by name.
NamedCounters host_counters_by_name(const HostCounters &c);

// A fixed-memory latency histogram (ns): exact below 1 us, then 16 steps per power of two.
class Histogram {
public:
	void add(uint64_t v);
	void merge(const Histogram &o);
	uint64_t count() const { return n_; }
	uint64_t max() const { return max_; }
	// Return: an upper bound of the p-quantile (0..1).
	uint64_t quantile(double p) const;

private:
	static size_t bucket(uint64_t v);
	static uint64_t upper(size_t b);
	std::array<uint64_t, 1024 + 16 * 40> b_{};
	uint64_t n_ = 0, max_ = 0;
};

// One direction of a switch port's link as the switch's fidelity monitor saw it (fabric ns):
// arrivals from the host it faces, or departures from its queue (bpf/include/fidmon.h).
struct SwitchLink {
	std::string port;                   // "<switch>/<ifname>"
	bool departures = false;
	uint64_t backlogged_ns = 0;         // serialization time of backlogged frames
	uint64_t lost_ns = 0;               // lateness beyond one frame
	uint64_t lost_stalled_ns = 0;       // of it, inside stops of the engine (Health::pass_stops,
					    // loop stalls): flows are tagged by those; not link time the
					    // engine's pace lost, so left out of the kept figures
	uint64_t frames = 0, late_frames = 0;
	uint64_t windows = 0, fast_windows = 0; // windows of 8 backlogged frames; of them faster
					    // than line rate plus one frame
	uint64_t events_lost = 0;           // lost periods the ring could not take
	uint64_t frame_ns = 0;              // one maximum frame's serialization at the link's rate
	// Judged for its kept time only with kKeptMinFrames maximum frames' time of backlog: below
	// that, one frame served a pass late (the lateness the credit does not cover, up to about a
	// frame) moves the figure by more than the 1% it is judged to. Measured (2026-11-28, PB-FS's
	// 8 x 1 MB incast on the long-10g star at D=340): each sender's link was backlogged for 19
	// frames (the start burst before the first cut) and lost 2 late frames' worth, 7-9%; the
	// receiver's ACK link 187 ACKs, 14 us in all, 11%; every attempt INVALID at 0.75% of its bytes
	// affected. Those lost periods still tag the flows they overlap (fidelity.h), so the
	// affected-bytes rule judges them.
	static constexpr uint64_t kKeptMinFrames = 100;
	bool kept_judged() const { return frame_ns && backlogged_ns >= kKeptMinFrames * frame_ns; }
	double efficiency() const
	{
		const uint64_t lost = lost_ns - std::min(lost_ns, lost_stalled_ns);
		return backlogged_ns ? double(backlogged_ns) / double(backlogged_ns + lost) : 1.0;
	}
	double fast_frac() const { return windows ? double(fast_windows) / double(windows) : 0.0; }
};

struct Health {
	bool valid = true;
	size_t hosts = 0;                   // hosts served
	std::vector<std::string> reasons;   // why invalid
	bool cpu_bound = false;             // a reason a larger D removes: the engine's CPU did not keep
					    // the pace (lateness, lost link time, TX frames held or
					    // exhausted, softnet squeezes), not a stall or a drop
	uint32_t d_milli = 1000;
	uint64_t base_rtt_ns = 0;
	uint64_t late_p99_ns = 0, late_max_ns = 0, late_count = 0; // fabric ns
	double link_efficiency = 1.0;       // min over backlogged hosts
	std::string link_efficiency_host;   // the host with that minimum
	uint64_t stalls = 0, stall_max_wall_ns = 0;
	uint64_t rearm_deferred = 0;        // socket polls the kernel would not re-arm at once
					    // (kept and re-armed at a later wait)
	// Passes longer than one frame time at the switches' monitors (their credit, wall): one or
	// two in a row are a stop of the engine's CPU inside a pass (preemption, which the stall
	// check between passes cannot see) and become stall periods like loop stalls; runs of three
	// or more are the engine not keeping the pace, and their lost link time stays counted.
	uint64_t pass_stops = 0, overload_passes = 0, moved_passes = 0;
	uint64_t long_pass_wall_ns = 0;
	uint64_t stall_threshold_wall_ns = 0;
	uint64_t xsk_drops = 0, softnet_drops = 0, time_squeeze = 0, veth_drops = 0;
	uint64_t tx_held = 0;               // kicks after which the kernel held back TX frames
	uint64_t tx_no_frame = 0;           // sends deferred because every TX frame was downstream
	uint32_t tx_frames_peak = 0;        // the most TX frames one socket had in the kernel at once
	uint32_t tx_frames_per_port = 0;    // each socket's TX frames (half its UMEM chunks)
	uint64_t loop_iters = 0, sleeps = 0;
	// Wall time of the transmit kicks (a copy-mode kick runs every frame's switch path inside
	// the send call) and of the loop's passes that transmitted, wall ns.
	uint64_t kick_p50_wall_ns = 0, kick_p99_wall_ns = 0, kick_max_wall_ns = 0, kicks = 0;
	uint64_t pass_p50_wall_ns = 0, pass_p90_wall_ns = 0, pass_p99_wall_ns = 0, pass_max_wall_ns = 0, passes = 0;
	// Every send call on every port (hosts and cables): the kicks above, the ones a full batch
	// of 32 frames made, and re-kicks of frames the kernel left in a TX ring. A kick with
	// nothing to send is a syscall wasted on the loop's CPU.
	uint64_t syscall_kicks = 0;
	// Wall time of the loop's passes that sent or received frames: the engine's work, without
	// its sleeps and idle spins. Over the run's wall time, how busy its CPU was
	// (docs/experiments.md "Dilation and calibration": the paced check).
	uint64_t busy_wall_ns = 0;
	// Measured at the switches (bpf/include/fidmon.h): every link direction with backlogged
	// frames, and the worst of them.
	std::vector<SwitchLink> switch_links;
	bool switch_monitored = false;      // every served host's link has a switch monitor
	double sw_arrival_eff = 1.0, sw_departure_eff = 1.0; // over all links of the direction
	double sw_fast_frac = 0.0;          // fast windows / windows, both directions
	std::string sw_arrival_worst, sw_departure_worst, sw_fast_worst; // worst link (>= 100 frames)
	uint64_t sw_links_unjudged = 0; // links that lost time with too little backlog to judge
					// their kept time (SwitchLink::kept_judged): their lost periods
					// tag flows like any other
	uint64_t sw_events_lost = 0;
	// Per shard (Engine with several): its own loop's figures, in shard order.
	struct PerShard {
		size_t hosts = 0, cables = 0;
		uint64_t stalls = 0, pass_stops = 0, overload_passes = 0, sleeps = 0, busy_wall_ns = 0;
	};
	std::vector<PerShard> shards;
	std::string to_text() const;
};

// The verdict on an engine's health (merged over its shards): the switches' links summed and
// their worst named, then every validity rule (docs/experiments.md "Validity"). Sets valid,
// reasons and cpu_bound.
void judge_health(Health &r, const EngineOptions &opt);

class Shard;

// The host engine: its shards (EngineOptions::shards), one thread each during run(), behind
// one API. A QP's two halves live on the shards of their hosts; its handle here names both.
// A post for a QP of another shard than the caller's goes into that shard's inbox (woken by an
// eventfd); the completion and delivery callbacks, `tick` and `done` run under one lock, so a
// caller's callbacks never run at the same time. With one shard all of it is one thread, as
// before shards existed.
class Engine {
public:
	// Open the ports of every host (and cable) `desc` names and its switch monitors, with
	// dilation D; the loop waits in io_uring and reads the wall clock.
	// With `pool`: a host's port or cable end the pool holds is taken (its receive ring drained)
	// instead of opened.
	static Result<std::unique_ptr<Engine>> open(const EngineDesc &desc, const Dilation &d,
						    const EngineOptions &o, PortPool *pool = nullptr);
	// Give every port to `pool` (frames held in the delay lines go back to their ports first).
	// The engine serves nothing after this; destroy it.
	void release_ports(PortPool &pool);
	// An engine with fabric time read from `clock` (not owned; it must outlive the engine):
	// drive it with step(); nothing sleeps, no io_uring, no monitors, no liveness checks.
	// Tests run the receive and transmit paths this way on FakePorts (tests/unit/test_engine.cc);
	// with several shards, step() runs each shard's pass in turn on the caller's thread.
	static Result<std::unique_ptr<Engine>> open_on(const EngineDesc &desc, const Dilation &d,
						       const EngineOptions &o, const Clock &clock,
						       PortPool *pool = nullptr);
	~Engine();
	Engine(const Engine &) = delete;
	Engine &operator=(const Engine &) = delete;

	// Control plane: a reliable connection between hosts a and b. Messages posted on the
	// returned handle go a -> b; `peer(h)` posts b -> a.
	Result<QpHandle> connect(const std::string &a, const std::string &b, const QpOptions &o);
	QpHandle peer(QpHandle h) const;
	// Queue a message: from a callback or `tick` (on any shard's thread: the engine's lock
	// orders them), or from the caller outside a run. Return: its msn on that QP.
	uint64_t post(QpHandle h, Message m);
	// A static rate limit (0 = none) under the controller's rate, and a window (0 = none) of a
	// QP; from the same places as post(), and applied on the QP's shard in the same order.
	void set_rate(QpHandle h, uint64_t bps);
	void set_window(QpHandle h, uint64_t bytes);

	// Run the loop until `done()` (checked every iteration) or fabric time `until_ns`.
	// `tick(now)` runs every iteration before transmission and returns the fabric time it
	// wants to run next (UINT64_MAX: whenever). With several shards, shard 0 runs on the
	// caller's thread with `done` and `tick`, every other shard on a thread of its own.
	void run(const std::function<bool()> &done, uint64_t until_ns,
		 const std::function<uint64_t(uint64_t)> &tick = {});
	// One pass of the event loop at fabric time `now`: receive, `tick`, due timers, transmit,
	// queue samples (every shard's, in turn). Return: the fabric time the engine next needs a
	// pass (a frame's arrival can need one sooner).
	uint64_t step(uint64_t now, const std::function<uint64_t(uint64_t)> &tick = {});
	uint64_t now_ns() const;
	// Return: true when run() stopped because the fabric was taken down (EngineDesc::alive).
	bool topology_gone() const;
	const DilatedClock &clock() const;

	// Called on the thread of the shard that serves the QP's host, under the engine's lock.
	std::function<void(QpHandle, const Completion &)> on_complete;
	std::function<void(QpHandle, const Delivery &)> on_deliver;

	// Start counting health from now (call before the measured part of a run).
	Status health_begin();
	// Every shard's figures merged (counts summed, worst and maximum kept, quantiles as the
	// largest shard's: an upper bound) and judged once (judge_health).
	Health health();
	const HostCounters &host_counters(const std::string &host);
	std::vector<std::string> host_names() const;
	const SenderStats &sender_stats(QpHandle h) const;
	// Return: the counters of a QP's controller parts (cc::Controller::counters()).
	cc::CounterList cc_counters(QpHandle h) const;
	const ReceiverStats &receiver_stats(QpHandle h) const;
	uint32_t qpn(QpHandle h) const;
	using PathInfo = tp::PathInfo;
	PathInfo path(const std::string &a, const std::string &b) const;
	// The smallest and largest base RTT over every pair of served hosts (network-wide: what SFC's
	// BDP and PB-FS's datacenter RTT are derived from), fabric ns, at least 1 us.
	uint64_t min_base_rtt_ns() const;
	uint64_t max_base_rtt_ns() const;
	bool icrc() const { return opt_.icrc; }
	// Sample the egress queue of `port` (an ifname) on switch `sw` every `interval_ns` of fabric
	// time while the loop runs (its probe in the description). Errors name the switch or port.
	Status sample_queue(const std::string &sw, const std::string &port, uint64_t interval_ns);
	// Every queue the description has a probe for.
	Status sample_all_queues(uint64_t interval_ns);
	const std::vector<QueueSeries> &queue_series() const;
	// Bytes of data frames received by all hosts so far, sampled with the queues (engine ns,
	// bytes): the fabric's delivered throughput over time.
	const std::vector<std::pair<uint64_t, uint64_t>> &rx_series() const;
	void clear_queue_series();
	// Signal loop delays (fabric ns): from the (latest) send of the PSN a signal names to the
	// engine's reaction to it, over every QP.
	const Histogram &loop_delay(Signal s) const;
	// The BTS loop split by the BTS's origin field (qn_abi.h enum qn_bts_origin: 0 the congested
	// queue's switch, 1 a pause cache, 2 an estimator; 3 = any other value).
	static constexpr size_t kBtsOrigins = 4;
	const Histogram &bts_loop_by_origin(size_t origin) const;
	// The fabric time a QP's flow control last held it until (0 or a past time: not paused).
	uint64_t paused_until(QpHandle h) const;
	// The fabric time its flow control paused it (a pause in progress counts to its planned end).
	uint64_t paused_ns(QpHandle h) const;
	// The QP's retransmission deadline (fabric ns; UINT64_MAX: none armed).
	uint64_t rto_deadline(QpHandle h) const;
	// The periods since health_begin() when the emulator was not the fabric it models
	// (fidelity.h): loop stalls (with several shards, a shard's touch the flows flow_shards
	// names: its hosts' and those crossing its cables), and per host the link time its pacer or
	// its switch port lost and the sends later than the lateness bound (late_p99_frac x base
	// RTT). Engine fabric time.
	Affected affected() const;
	// The controller's current output for a QP.
	const cc::Output &cc_output(QpHandle h) const;
	// The rate trace of a QP connected with QpOptions::trace (empty otherwise).
	const std::vector<RatePoint> &trace(QpHandle h) const;
	// The controller's parameters in effect for a QP, one line.
	std::string cc_describe(QpHandle h) const;
	Endpoint endpoint(const std::string &host) const;
	size_t cable_count() const;
	// UMEM chunks per socket as opened (fitted to the machine: resources.h frames_to_fit).
	uint32_t frames_per_port() const { return opt_.frames_per_port; }
	const EngineDesc &desc() const { return desc_; }
	// Shards and which one serves a host (-1: none).
	size_t shard_count() const { return shards_.size(); }
	int shard_of(const std::string &host) const;

private:
	struct QpRef {
		uint32_t shard = 0;
		QpHandle local = 0;
		QpHandle peer = 0;   // the engine handle of its peer
		uint64_t posted = 0; // messages posted (the next msn)
	};
	struct Inbox;
	Engine(const EngineDesc &desc, const EngineOptions &o);
	// The chunk count every shard opens with, fitted to the machine (resources.h) for the whole
	// engine's sockets; a pool of another count is cleared.
	Status fit_ports(PortPool *pool);
	Status open_shards(const Dilation &d, PortPool *pool, const Clock *fake);
	void wire_callbacks();
	uint64_t drain_inbox(size_t k);
	// Run `f` on the shard that serves QP h: at once when the caller is that shard's thread (or
	// no run is on) and its inbox is empty, else through its inbox (in order, then woken).
	void on_shard_of(QpHandle h, std::function<void(Shard &)> f);
	Shard &owner() const { return *shards_[0]; }
	Shard &of(QpHandle h) const { return *shards_[qps_[h].shard]; }

	EngineDesc desc_;
	EngineOptions opt_;
	std::vector<std::unique_ptr<Shard>> shards_;
	std::vector<std::unique_ptr<Inbox>> inbox_;
	std::map<std::string, int> shard_of_host_;
	std::vector<QpRef> qps_;
	std::vector<std::vector<QpHandle>> global_; // per shard: local handle -> engine handle
	uint32_t next_qpn_ = 0x100;
	uint32_t qpns_made_ = 0;            // QP numbers this engine gave out (at most 0x3F00)
	std::mutex cb_mu_;                  // callbacks, tick and done (several shards only)
	std::atomic<bool> stop_{false};     // a shard's run ended: every shard stops
	bool running_ = false;              // inside run() with several shards
	std::function<uint64_t(const std::string &, const std::string &)> shards_of_; // flow_shards (several shards)
	mutable std::array<Histogram, size_t(Signal::Count)> loop_delay_;
	mutable std::array<Histogram, kBtsOrigins> bts_loop_origin_;
};

// Softnet totals over CPUs from /proc/net/softnet_stat: dropped and time_squeeze.
Result<std::pair<uint64_t, uint64_t>> read_softnet();

} // namespace qn::tp

