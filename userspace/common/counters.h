// counters.h - a named counter and what kind of quantity it is, so every reader (the
// experiment's per-attempt deltas, sums over ports and hosts, JSON) treats it by its kind and no
// reader keeps a list of names. Producers: counters_by_name (switch ports, control/stats.h) and
// host_counters_by_name (the engine's hosts, transport/engine.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace qn {

enum class CounterKind : uint8_t {
	Count,   // events or amounts: an attempt's value is after - before; several add up
	Level,   // a depth, maximum or mean since the topology came up: no delta; the highest counts
	Instant, // a time (fabric ns on the producer's clock) something last happened: the latest counts
};

struct NamedCounter {
	std::string name;
	uint64_t value = 0;
	CounterKind kind = CounterKind::Count;
};
using NamedCounters = std::vector<NamedCounter>;

// Return: `acc` and `v` (of kind `k`) combined as two ports' or two hosts' values are.
inline uint64_t combine_counter(uint64_t acc, uint64_t v, CounterKind k)
{
	return k == CounterKind::Count ? acc + v : std::max(acc, v);
}

} // namespace qn
