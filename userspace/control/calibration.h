// calibration.h - how slowly a run must go (DESIGN.md §5): the time-dilation rule as a pure
// function, the measurements that feed it (timer jitter, the engine's capacity at D = 1), and
// the rule for raising D after a CPU-bound attempt. docs/experiments.md "Dilation".
//
// Units: wall ns for jitter and capacities (measured on this machine), fabric ns for RTTs,
// bit/s.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/units.h" // kMaxDilation

namespace qn {


// What the D rule reads.
struct DRuleInput {
	double offered_bps = 0;            // fabric bit/s the workload's senders can offer at once
	double capacity_wall_bps = 0;      // payload bit/s those senders moved at once at D = 1 (wall)
	double capacity_pair_wall_bps = 0; // one host pair alone at D = 1 (reported; 0 = not measured)
	uint64_t jitter_wall_ns = 0;       // p99 of this machine's timer gaps
	uint64_t base_rtt_min_ns = 0;      // the fabric's smallest base RTT
};

struct DChoice {
	double d_cpu = 0;    // offered / capacity: below it the engine cannot keep the fabric's pace
	double d_timer = 0;  // jitter / (5% of the base RTT): below it timers are coarser than 5% of an RTT
	double d = 0;        // 2 x max(d_cpu, d_timer, 1), rounded up to a multiple of 10, at most kMaxDilation
	double d_pair = 0;   // the same rule with the one-pair capacity (reported beside it; 0 = none)
	bool clamped = false; // the rule asked for more than kMaxDilation
};

// The D rule (DESIGN.md §5): D >= offered / capacity and the timer jitter at most 5% of the
// dilated base RTT, with a factor 2 of margin, rounded up to 10. Pure: no measurement, no clock.
// Inputs with a zero capacity or base RTT give clamped = true and d = kMaxDilation.
DChoice dilation_rule(const DRuleInput &in);

// The paced check of a candidate D (docs/experiments.md "Dilation and calibration"): the
// workload's senders, every one at line rate to its own receiver, run at `d`. At D = 1 the
// engine batches several frames into each kick and amortises its passes; at the run's D every
// frame is a kick of its own, so the capacity at D = 1 overstates what a paced run can carry
// (on this machine about 4x: 1.26 Gbit/s at D = 1 against about 56 us of wall time per data
// frame and its ACK when paced). Two figures of the run say whether `d` is enough:
struct PacedTrial {
	double d = 0;
	double busy_frac = 0;          // the engine's busy wall time (passes that moved frames) / the run's wall time
	uint64_t pass_p90_wall_ns = 0; // passes that sent: p90 of their wall time
	uint64_t frame_wall_ns = 0;    // one full frame's serialization at the host link rate, wall ns at d
	double need = 0;               // paced_dilation's answer
};

// The D a paced trial asks for: d x max(busy_frac, pass_p90 / frame_wall) / 0.5, rounded up to a
// multiple of 10, at most kMaxDilation; `d` itself when both are at most 0.5. The factor 2 is the
// D rule's margin; the pass term is the one that binds first: a frame due during a pass waits for
// it, and a wait beyond one frame time is link time lost at the switch's arrival monitor, so a
// typical pass must take at most half a frame time.
double paced_dilation(const PacedTrial &t);

// The search over paced checks, from the D rule's `d0`: while a check fails D grows to what it
// asks for, at most 4x per check (three checks at most; a check far below the need overstates
// it: a loop that falls behind never idles); after a failure and a pass, two checks bisect
// between them (geometric means, rounded up to 10), each kept if it passes. `check(d)` runs one
// and returns it, or false to stop (an error or an interrupt the caller keeps). Return: the
// smallest D a check passed; when none passed, the last one's answer (unchecked); 0 when `check`
// stopped the search.
double paced_search(double d0, const std::function<bool(double d, PacedTrial &out)> &check);

// The D of the next attempt after a CPU-bound INVALID one at `d`: 1.5 x d rounded up to a
// multiple of 10, at most kMaxDilation.
double next_dilation(double d);

// Timer jitter of this machine: spin for `ms` milliseconds reading the clock; in every 100 us
// window keep the largest gap between two reads (preemption, interrupts). Return: the p99 of
// those per-window maxima, wall ns.
uint64_t measure_jitter_ns(int ms);

// `quench jitter`: spin `threads` loops (one per CPU: every CPU busy, as during a run) for
// `seconds`, counting stops longer than `gap_ns`.
struct GapReport {
	uint64_t gaps = 0, longest_ns = 0, total_ns = 0;
	double elapsed_s = 0;
	double steal_frac = 0; // of all CPUs over the run (/proc/stat)
	size_t threads = 1;
	std::string to_text(double gap_us) const;
};
GapReport measure_gaps(double seconds, uint64_t gap_ns, size_t threads);

// What calibrating an experiment measured and chose (printed in metadata.txt and summary.json).
struct Calibration {
	uint64_t jitter_wall_ns = 0;
	double capacity_wall_bps = 0;      // what the workload's senders moved at once at D=1 (payload, wall)
	double capacity_pair_wall_bps = 0; // what one host pair alone moved at D=1 (reported)
	size_t capacity_senders = 0;       // how many senders ran at once for capacity_wall_bps
	double offered_bps = 0;            // fabric bit/s the senders can offer at once
	DChoice rule;                      // the D rule's terms (auto D only)
	std::vector<PacedTrial> paced;     // the paced checks, in order (auto D only); the last one's d is D
	double d = 0;                      // the D the schemes start at
	bool d_auto = false;
	bool adapt = false;                // retry CPU-bound INVALID attempts at a larger D (auto D, --adapt-from)
	// Base RTTs (common.md §4): the smallest over the workload's host pairs (what parameters scale
	// with); the smallest and largest over every host pair of the fabric (network-wide: SFC's
	// BDP, PB-FS's datacenter RTT).
	uint64_t base_rtt_min_ns = 0, network_rtt_min_ns = 0, base_rtt_max_ns = 0;
	uint64_t rtt_measured_ns = 0;      // ping-pong FCT of a 64 B message (median of 21)
	uint64_t rtt_expected_ns = 0;      // its standalone FCT
	double link_rate_ratio = 0;        // one line-rate flow's goodput / its payload line rate
	std::string pair;                  // the host pair calibrated
	uint64_t host_rate_bps = 0;
	uint32_t mtu = 0;
};

} // namespace qn
