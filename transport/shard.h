// shard.h - one shard of the host engine (engine.h), its hosts, cables, loop and health. Only
// the engine's own files include it (transport/README.md).
//
// Units: fabric ns and fabric bit/s; wall-clock values only in Health.
#pragma once

#include <atomic>

#include "transport/engine.h"

namespace qn::tp {

// One shard of the engine (engine.h: Engine runs one shard per thread): the hosts and cables
// its role names, their sockets, one io_uring, one event loop, its timers and its health. Every
// hot-path member of a shard is touched by its own thread only; what crosses shards goes through
// the Engine (posts into an inbox, callbacks under one lock) or is read after the threads stop.
class Shard {
public:
	// Open the ports of the hosts and cables `role` names (every one by default), with
	// dilation D and the fabric clock `clock0` (every shard of an engine reads the same one),
	// fitted already (EngineOptions::frames_per_port is the chunk count to open with). The
	// owner opens the switch monitors; another shard takes its hosts' monitor ports from the
	// owner (attach_monitors). With `pool`: a port the pool holds is taken instead of opened.
	static Result<std::unique_ptr<Shard>> open(const EngineDesc &desc, const Dilation &d, const EngineOptions &o,
						   const ShardRole &role, const DilatedClock &clock0, PortPool *pool);
	// A shard with fabric time read from `clock` (not owned): driven by step(); nothing sleeps,
	// no io_uring, no monitors, no liveness checks (tests/unit/test_engine.cc).
	static Result<std::unique_ptr<Shard>> open_on(const EngineDesc &desc, const Dilation &d,
						      const EngineOptions &o, const ShardRole &role,
						      const Clock &clock, PortPool *pool);
	// Give every port to `pool` (frames held in the delay lines go back to their ports first).
	void release_ports(PortPool &pool);
	~Shard();
	Shard(const Shard &) = delete;
	Shard &operator=(const Shard &) = delete;

	// The hosts of this shard's monitored switch ports point at the owner's monitor (mapped
	// once, by the owner). Call before health_begin; the owner outlives this shard.
	void attach_monitors(const Shard &owner);
	// An eventfd whose writes wake the loop from its sleeps (an inbox post). Before start().
	void set_wake_fd(int fd) { wake_fd_ = fd; }
	// Start the loop's io_uring and take the health base (open() does both; after
	// set_wake_fd when the shard has one).
	Status start();
	// The other shards (for the fabric's delivered bytes in the queue samples).
	void set_peers(std::vector<const Shard *> peers) { peers_ = std::move(peers); }

	// The halves of a connection a <-> b this shard serves, with QP numbers qa (a's) and qb
	// (b's): a's QP sends a -> b. Return: the local handles of a's and b's QPs (kNoQp for a
	// host served elsewhere; at least one is served here).
	static constexpr QpHandle kNoQp = UINT32_MAX;
	Result<std::pair<QpHandle, QpHandle>> connect(const std::string &a, const std::string &b, const QpOptions &o,
						      uint32_t qa, uint32_t qb);
	// Queue a message. Return: its msn on that QP.
	uint64_t post(QpHandle h, Message m);
	void set_rate(QpHandle h, uint64_t bps);
	void set_window(QpHandle h, uint64_t bytes);

	// Engine::run and Engine::step, for this shard's hosts and cables.
	void run(const std::function<bool()> &done, uint64_t until_ns,
		 const std::function<uint64_t(uint64_t)> &tick = {});
	uint64_t step(uint64_t now, const std::function<uint64_t(uint64_t)> &tick = {});
	uint64_t now_ns() const { return now_src_->now_ns(); }
	bool topology_gone() const { return topology_gone_; }
	const DilatedClock &clock() const { return clock_; }
	const EngineOptions &options() const { return opt_; }

	// Called on this shard's thread with its local handles.
	std::function<void(QpHandle, const Completion &)> on_complete;
	std::function<void(QpHandle, const Delivery &)> on_deliver;

	Status health_begin();
	// This shard's measurements since health_begin, not judged (judge_health judges the
	// engine's merged figures). Machine-wide counters (softnet) and the switches' links are
	// the owner's only. `other_stalls`: the other shards' stall periods, which also excuse
	// the switch links' lost time (the owner's figure).
	Health health(const IntervalSet &other_stalls = {});
	const IntervalSet &stalls() const { return stalled_; }
	const HostCounters &host_counters(const std::string &host);
	const SenderStats &sender_stats(QpHandle h) const;
	cc::CounterList cc_counters(QpHandle h) const;
	const ReceiverStats &receiver_stats(QpHandle h) const;
	uint32_t qpn(QpHandle h) const;
	using PathInfo = tp::PathInfo;
	PathInfo path(const std::string &a, const std::string &b) const;
	uint64_t min_base_rtt_ns() const { return min_rtt_ns_; }
	uint64_t max_base_rtt_ns() const { return max_rtt_ns_; }
	Status sample_queue(const std::string &sw, const std::string &port, uint64_t interval_ns);
	Status sample_all_queues(uint64_t interval_ns);
	const std::vector<QueueSeries> &queue_series() const { return qseries_; }
	const std::vector<std::pair<uint64_t, uint64_t>> &rx_series() const { return rx_series_; }
	void clear_queue_series()
	{
		for (auto &q : qseries_)
			q.samples.clear();
		rx_series_.clear();
	}
	// Bytes of data frames its hosts received so far (any thread may read it).
	uint64_t rx_data_total() const { return rx_data_total_.load(std::memory_order_relaxed); }
	const Histogram &loop_delay(Signal s) const { return loop_delay_[size_t(s)]; }
	static constexpr size_t kBtsOrigins = 4;
	const Histogram &bts_loop_by_origin(size_t origin) const { return bts_loop_origin_[std::min(origin, kBtsOrigins - 1)]; }
	uint64_t paused_until(QpHandle h) const { return qps_[h]->pause_until; }
	uint64_t paused_ns(QpHandle h) const { return qps_[h]->paused_ns; }
	uint64_t rto_deadline(QpHandle h) const { return qps_[h]->snd.deadline(); }
	// Engine::affected for this shard: its hosts' periods and, the only shard, its stalls (with
	// several, the engine gives them to the flows they touch); the owner adds the lost periods
	// the switches posted (for any host).
	Affected affected() const;
	const cc::Output &cc_output(QpHandle h) const { return qps_[h]->out; }
	const std::vector<RatePoint> &trace(QpHandle h) const { return qps_[h]->trace_points; }
	std::string cc_describe(QpHandle h) const { return qps_[h]->cc_describe; }
	size_t cable_count() const { return cables_.size(); }

private:
	struct Held {
		uint64_t release_ns;
		uint64_t addr;
		uint32_t len;
		bool backlogged = false; // the pacer's: it followed the previous frame back to back
	};
	struct CtrlFrame {
		std::array<uint8_t, 128> b;
		uint16_t len;
	};
	struct Host;
	struct Qp;
	// An entry of a host's TX scheduler; stale when the QP was rescheduled since (gen).
	struct SchedRef {
		Qp *q;
		uint32_t gen;
	};
	// When a sent PSN left (for signal loop delays): a ring by PSN.
	struct SentStamp {
		uint32_t psn = UINT32_MAX;
		uint64_t ns = 0;
	};
	static constexpr size_t kSentRing = 1024;
	struct Qp {
		QpHandle id = 0;
		size_t host = 0;
		QpHandle peer = kNoQp;       // its peer's local handle when this shard serves both
		Endpoint dst;
		QpSender snd;
		QpReceiver rcv;
		uint64_t rate_bps = 0;       // the limiter's rate: min(static limit, controller); 0 = link
		uint64_t limit_bps = 0;      // static limit (QpOptions::rate_bps, set_rate); 0 = none
		uint32_t mtu = QN_DEFAULT_MTU; // the path MTU its segments fit
		uint64_t next_ok_ns = 0;
		uint32_t last_wire = 0;      // the last data packet's wire bytes (its gap is re-paced)
		bool scheduled = false;      // in its host's active list or wheel
		uint32_t sched_gen = 0;      // bumped when its scheduler entry is replaced
		uint64_t pause_until = 0;    // flow control: sends nothing before this (fabric ns)
		bool hold_rto = true;        // QpOptions::hold_rto_in_pause
		uint64_t paused_ns = 0;      // fabric time flow control paused it (a pause in progress
					     // counts to its planned end)
		uint64_t cur_msn = UINT64_MAX; // the message its last packet belonged to
		std::unique_ptr<std::array<SentStamp, kSentRing>> sent; // allocated at the first send
		std::unique_ptr<cc::Controller> ctl;      // this QP's sending side
		std::unique_ptr<cc::NotificationPoint> np; // this QP's receiving side (may be null)
		cc::Output out;              // the controller's last output
		bool trace = false;
		std::vector<RatePoint> trace_points;
		uint64_t acked_bytes = 0;
		std::string cc_describe;
		Qp(const QpConfig &c, bool keep, bool verify, bool hash) : snd(c), rcv(c, keep, verify, hash) {}
	};
	struct Host {
		int node = -1;
		std::string name;
		Endpoint ep;
		Mac gw{};
		uint64_t link_bps = 0, delay_ns = 0;
		double error_rate = 0;
		std::unique_ptr<FramePort> port;
		std::function<Result<uint64_t>()> port_drops; // its interface's drops (HostDesc)
		LinkPacer pacer;
		bool backlogged = false;
		std::deque<CtrlFrame> ctrl;
		TxScheduler<SchedRef> sched;   // ready QPs + rate-limited or paused QPs in the wheel
		std::deque<Held> txline, rxline;
		uint64_t paused_until[8] = {};
		uint64_t pause_start[8] = {};
		uint16_t ip_id = 0;
		HostCounters c;
		uint64_t ser_ns = 0, lost_ns = 0; // while backlogged: link time used and lost (efficiency)
		uint32_t pushed = 0;           // frames handed to the port in this pump (kick timing)
		int kick_backlogged = -1;      // the first pushed frame's backlogged flag (-1: none yet)
		IntervalSet affected;          // periods its link lost time or sent later than the bound
		qn_fid_port *fid = nullptr;    // its switch port's fidelity monitor (mmap), if any
	};
	// A switch's fidelity monitor (bpf/include/fidmon.h), read by the engine: the mmapped
	// qn_fid array and the qn_fid_events ring of lost periods.
	struct SwitchMon {
		std::string name;
		qn_fid_port *ports = nullptr; // QN_MAX_PORTS entries
		size_t map_len = 0;
		void *rb = nullptr;           // struct ring_buffer *
		std::vector<int> peer_host;   // per port_no: index into hosts_ of the host it faces, -1
		std::vector<std::string> peer_name; // per port_no: the host it faces ("" = a switch or none)
		std::vector<std::string> port_name;
		Shard *engine = nullptr;
		std::vector<IntervalSet> lost_at; // per port_no * 2 + direction: the lost periods posted
						  // since health_begin (engine fabric ns)
	};
	struct Cable {
		std::string name;
		uint64_t delay_ns = 0;
		uint64_t rate_bps = 0;
		double error_rate = 0;
		std::unique_ptr<FramePort> end[2];
		std::deque<Held> line[2];       // frames received on end i, to leave on end 1-i
		uint64_t frames = 0, dropped = 0; // dropped: lost to the link's error rate
	};

	Shard(const EngineDesc &desc, const Dilation &d, const EngineOptions &o, const ShardRole &role);
	// Every served host's port and both ends of every cable; with `pool`, taken from it where
	// it holds them (take_port).
	Status open_ports(PortPool *pool);
	Status open_hosts_and_cables();
	// A port for `key` from pool_ (drained), else opened with `open`.
	Result<std::unique_ptr<FramePort>> take_port(const std::string &key, const PortOpen &open);
	Status start_io();
	// The sockets the loop polls (hosts, then both ends of every cable) and the fd of one, by
	// its io_uring tag.
	size_t io_sockets() const;
	int io_fd(size_t tag) const;
	Status finish_open();
	// Return: the fabric arrival time of a received frame (its XDP stamp, else now).
	uint64_t arrival(const FramePort &p, uint64_t addr, uint64_t now) const;
	void rx_host(Host &h, uint64_t now);
	void process(Host &h, const uint8_t *f, uint32_t len, uint64_t now);
	// One handler per frame kind (engine_rx.cc).
	void on_data(Host &h, Qp &q, const Packet &p, uint32_t len, uint64_t now);
	void on_ack(Qp &q, const Packet &p, uint64_t now);
	void on_cnp(Host &h, Qp &q, const Packet &p, uint64_t now);
	void on_pfc(Host &h, const Packet &p, uint64_t now);
	void on_bts(Host &h, const Packet &p, uint64_t now);
	void on_postcard(Host &h, const Packet &p, uint64_t now);
	// The sending QP of host h a signal names: by its UDP source port (the sender's QPN), else
	// by the receiver's QPN and address it carries. Return: null when none.
	Qp *signal_qp(Host &h, uint16_t sport, uint32_t dest_qp, uint32_t dst_ip);
	// signal_qp, then count the signal (or the miss) and record its loop delay.
	// Return: the QP, or null when it names none of this host's.
	Qp *signal_target(Host &h, Signal s, uint16_t sport, uint32_t dest_qp, uint32_t dst_ip, uint32_t psn,
			  uint64_t now);
	// Record a signal's loop delay for the PSN it names.
	void loop_sample(Signal s, const Qp &q, uint32_t psn, uint64_t now);
	// After an event that may have moved a controller's or NP's timer: the next timer pass
	// comes no later than the earliest of them.
	void rearm_timers(const Qp &q);
	void fire_timers(uint64_t now);
	void rx_cable(Cable &c, uint64_t now);
	void pump(Host &h, uint64_t now);
	void emit(Host &h, uint64_t addr, uint32_t len, uint64_t start, bool backlogged);
	void push_frame(Host &h, const Held &f);
	// The switches' fidelity monitors (engine_fidelity.cc).
	Status open_switch_monitors();
	void close_switch_monitors();
	void reset_switch_monitors();
	// Append the monitors' links to r.switch_links: since health_begin() in fabric ns, or
	// (since_begin false) every entry's raw counters, the base.
	void switch_monitor_health(Health &r, const IntervalSet &other_stalls, bool since_begin = true) const;
	void poll_switch_monitors();
	static int on_fid_event(void *ctx, void *data, size_t len);

	void schedule(Qp &q, uint64_t now);
	// Return: true when a QP of h may send now (drops stale entries, parks paused QPs).
	bool data_ready(Host &h, uint64_t now);
	bool paused(const Host &h, int prio, uint64_t now) const;
	void settle_pause(Host &h, int prio, uint64_t now);
	TxHeader control_header(Host &h, const Qp &q);
	void queue_ack(Host &h, Qp &q, const AckOut &a);
	void queue_cnp(Host &h, Qp &q, const cc::CnpOut &c);
	// Read the controller's output into the QP's rate limiter and window (and its trace).
	void apply_cc(Qp &q, uint64_t now);
	uint64_t next_deadline(uint64_t now);
	void sleep_until_wall(uint64_t wall_deadline);
	// Return: the smallest and largest base RTT over served host pairs.
	std::pair<uint64_t, uint64_t> rtt_range() const;
	// The paths from one node to every node (one search; index = node).
	std::vector<PathInfo> paths_from(int src_node) const;
	PathInfo path_from(int src_node, int dst_node) const;

	EngineDesc desc_;
	std::vector<std::vector<int>> adj_; // per node: the links (indices into desc_.links) it has
	Dilation dil_;
	EngineOptions opt_;
	DilatedClock clock_;
	const Clock *now_src_ = &clock_;    // fabric time for the control plane (clock_ or a test's)
	bool io_ = true;                    // real ports: io_uring waits, topology liveness checks
	std::vector<std::unique_ptr<Host>> hosts_;
	std::map<std::string, size_t> host_by_name_;
	std::vector<std::unique_ptr<Cable>> cables_;
	std::vector<std::unique_ptr<Qp>> qps_;
	std::unordered_map<uint32_t, Qp *> by_qpn_;
	std::unordered_map<uint32_t, Qp *> by_peer_qpn_; // by the QPN of its peer (signal fallback)
	std::map<std::string, int> node_of_; // every host the engine serves (any shard): its node
	PortPool *pool_ = nullptr;          // during open_ports only: where ports may come from
	ShardRole role_;
	int wake_fd_ = -1;                  // an inbox's eventfd, polled with the sockets (-1: none)
	static constexpr uint64_t kWakeTag = UINT64_MAX >> 1; // its io_uring tag
	std::vector<const Shard *> peers_;  // the engine's other shards
	std::atomic<uint64_t> rx_data_total_{0}; // sum of its hosts' rx_data_bytes (written by this
					    // shard's thread only, read by the owner's queue samples)
	// The owner: lost periods the switches posted for hosts other shards serve.
	std::map<std::string, IntervalSet> foreign_affected_;
	std::mt19937_64 rng_{0x71756e6368ULL}; // link error draws (fixed seed: runs are repeatable)
	// Return: true when a frame is lost to error rate p.
	bool lose(double p) { return p > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
	uint64_t next_timer_scan_ = 0;
	uint64_t next_alive_check_ = 0;     // wall ns
	bool topology_gone_ = false;
	std::vector<size_t> qprobes_;       // sampled queues: indices into desc_.queues
	std::vector<QueueSeries> qseries_;
	std::vector<std::pair<uint64_t, uint64_t>> rx_series_;
	uint64_t qsample_ns_ = 0, next_qsample_ = 0;
	void sample_queues(uint64_t now);
	std::array<Histogram, size_t(Signal::Count)> loop_delay_;
	std::array<Histogram, kBtsOrigins> bts_loop_origin_;
	// Min and max base RTT over served host pairs (the fabric handed to schemes).
	uint64_t min_rtt_ns_ = 0, max_rtt_ns_ = 0;
	void *ring_ = nullptr;              // io_uring (opaque here)
	bool ring_ok_ = false;
	std::vector<uint64_t> rearm_;       // socket polls to re-arm (ones the kernel refused stay)
	uint64_t rearm_failed_ = 0;         // re-arms deferred to a later wait
	// health
	Histogram late_;
	Histogram kick_wall_, pass_wall_;   // wall ns of kicks that carried frames, of passes that sent
	uint64_t frames_sent_ = 0;          // frames every host handed to its link (passes that sent)
	uint64_t frames_rcvd_ = 0;          // frames taken from every host and cable socket
	uint64_t busy_wall_ns_ = 0;         // wall time of the passes that sent or received (since health_begin)
	IntervalSet stalled_;               // loop stalls, engine fabric time (every host)
	IntervalSet sw_lost_all_;           // lost periods at switch-facing departures (every flow)
	std::vector<std::unique_ptr<SwitchMon>> swmons_;
	std::vector<SwitchLink> sw_base_;     // the monitors' counters at health_begin()
	uint64_t next_fid_poll_ = 0;        // wall ns
	uint64_t late_bound_ns_ = 0;        // a send later than this is an affected period (fabric)
	uint64_t stalls_ = 0, stall_max_ = 0, iters_ = 0, sleeps_ = 0;
	uint64_t long_pass_wall_ns_ = 0;    // Health::long_pass_wall_ns (0: no monitored host)
	uint64_t long_streak_ = 0, streak_from_ = 0, streak_to_ = 0; // the current run of long passes (wall)
	uint64_t pass_stops_ = 0, overload_passes_ = 0, moved_passes_ = 0;
	void end_long_streak();
	uint64_t stall_thr_wall_ = 0;
	uint64_t expect_wall_ = 0;
	// Kernel and socket counters summed over hosts and cables; health() reports the change
	// since health_begin().
	struct Totals {
		uint64_t softnet_drops = 0, squeeze = 0, veth_drops = 0, xsk_drops = 0, tx_held = 0, tx_no_frame = 0;
		uint64_t kicks = 0; // send calls on every port (hosts and cables)
		uint32_t tx_peak = 0; // the most TX frames one port had in the kernel (a peak, not summed)
	} base_;
	Result<Totals> totals();
};

} // namespace qn::tp
