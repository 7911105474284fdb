// model.h - a reference packet-level model of one bottleneck, for judging the emulator and a
// scheme's parameters against an ideal network (docs/cc.md "Reference model").
//
// N senders on their own links of the line rate share one switch egress port of the same rate
// toward one receiver. Everything the emulator adds is absent: no CPU, no timer lateness, no
// batching, no PFC (the buffer is unbounded; the peak is reported). The one loss is a stage's
// drop (model_stage.h; LDCP's rule, ldcp=on: a Not-ECT packet finding K bytes queued); the receiver then NAKs the
// hole once and the sender goes back N (no timeouts: a loss is always followed by an ECT packet
// that reveals it, the last fast-start packet). The congestion control is
// the project's own library (cc::make(): the same controllers and notification points the engine
// runs), driven by exact event times. The switch marks like the tc switch (RED on the queue
// bytes, ECT packets only) either at enqueue (the queue before the packet, as quench's switch
// does, DESIGN.md §1) or at dequeue (the queue behind the packet as it leaves, as the HPCC
// simulator does; common.md §3).
//
// Units: fabric ns, bit/s, bytes. Deterministic for a seed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "transport/cc/cc.h"

namespace qn::tp::cc {

struct ModelConfig {
	int senders = 8;
	uint64_t line_rate_bps = 10'000'000'000;
	uint64_t hop_delay_ns = 1'000;       // propagation per link (host -> switch, switch -> host)
	uint32_t frame_bytes = 2062;         // a full data frame (Ethernet header on; the MTU + 14)
	uint32_t payload_bytes = 2000;       // application bytes in it
	uint32_t wire_overhead = 24;         // preamble, SFD, FCS, gap: host links serialize frame + this
	uint32_t cnp_frame_bytes = 78;       // a CNP frame (60 B IP packet + headers)
	uint64_t flow_bytes = 0;             // per sender; 0 = send for the whole duration
	uint64_t stagger_ns = 0;             // sender i starts at i x stagger
	uint64_t jitter_ns = 0;              // ... plus a uniform random offset in [0, jitter) (seeded)
	uint64_t duration_ns = 20'000'000;
	// The switch's marking (switch settings of the scheme, quench switch set).
	bool ecn = true;
	uint64_t kmin_bytes = 5'000;
	uint64_t kmax_bytes = 200'000;
	double pmax = 0.01;
	bool mark_at_dequeue = false;
	// The scheme stages' settings (model_stage.h: LDCP's drop, SFC's congestion point, PB-FS's
	// history and postcards, ...), key and value in the order given; model_switch_set checks
	// them, run_model applies them to fresh stages.
	std::vector<std::pair<std::string, std::string>> stage_settings;
	// The scheme, as for the engine.
	Setup setup;
	uint64_t seed = 1;
	// Output sampling.
	uint64_t window_ns = 500'000;        // goodput windows
	uint64_t queue_interval_ns = 5'000;  // queue samples
	int trace_senders = 0;               // rate traces for the first this many senders
};

struct ModelWindow {
	uint64_t start_ns = 0;
	double goodput_bps = 0;              // payload bytes received x 8 / window
};

struct ModelRatePoint {
	int sender = 0;
	uint64_t t_ns = 0;
	uint64_t rate_bps = 0;
};

struct ModelResult {
	std::vector<ModelWindow> windows;
	std::vector<uint64_t> queue_samples;  // bytes, every queue_interval_ns
	std::vector<ModelRatePoint> trace;
	uint64_t peak_queue_bytes = 0;
	uint64_t marked = 0, data_packets = 0, cnps = 0;
	uint64_t stage_drops = 0, not_ect = 0, retransmitted = 0, naks = 0; // dropped by a stage; go-back-N
	uint64_t paused_ns = 0;               // sum over senders of the time they were paused
	uint64_t bts_rx = 0, postcards_rx = 0; // signals the senders received
	std::map<std::string, uint64_t> stage_counters; // every stage's, by the switch's names
	std::vector<std::string> stage_reports;          // one line per stage ("sfc: off")
	uint64_t payload_rx_bytes = 0;
	uint64_t first_ce_rx_ns = 0;          // the first CE-marked packet at the receiver (0 = none)
	std::vector<uint64_t> done_ns;        // per sender: when its last payload byte arrived (0 = not done)
	std::vector<uint64_t> fct_ns;         // per sender: start to the ACK of its last byte (0 = not done)
	std::string describe;                 // the scheme's parameters in effect
};

// Apply one switch setting by its `quench switch keys` name, for the keys the model implements:
// ecn (on/off), ecn_at, kmin, kmax, pmax and every stage's keys (model_switch_keys). Return: false
// for a key the model does not have (the caller decides whether that matters); an error for a
// bad value.
Result<bool> model_switch_set(ModelConfig &c, const std::string &key, const std::string &value);

// Every key model_switch_set takes, comma-separated, for help and errors.
std::string model_switch_keys();

// Run the model. Errors: a bad setup (unknown scheme, bad parameter) or impossible sizes.
Result<ModelResult> run_model(const ModelConfig &c);

// The base RTT of a full frame in `c`: two hops each way, serialization on both links, the
// ACK back (what the scheme's parameters are derived for).
uint64_t model_base_rtt_ns(const ModelConfig &c);

// Mean goodput (bit/s) over the windows that start at or after `from_ns` and end by `to_ns`
// (0 = the last window); lowest such window into *lowest. 0 when no window qualifies.
double model_mean_goodput(const ModelResult &r, uint64_t window_ns, uint64_t from_ns, uint64_t to_ns,
			  double *lowest = nullptr);

} // namespace qn::tp::cc
