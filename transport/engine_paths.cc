// engine_paths.cc - paths between the engine's hosts: base RTT, bottleneck, path MTU (common.md §4).
#include "transport/shard.h"

#include <algorithm>
#include <deque>

namespace qn::tp {

std::vector<Shard::PathInfo> Shard::paths_from(int src_node) const
{
	// common.md §4: base RTT = 2 x the propagation delays of the path + one full data frame's
	// serialization per hop; the bottleneck is the slowest link. Paths are shortest in hops (as
	// the switches route); among equal ones the smallest RTT.
	const size_t n = desc_.nodes.size();
	std::vector<int> hops(n, -1);
	std::vector<uint64_t> cost(n, 0), bottleneck(n, UINT64_MAX);
	std::vector<uint32_t> mtu(n, UINT32_MAX);
	std::deque<int> bfs{src_node};
	hops[size_t(src_node)] = 0;
	while (!bfs.empty()) {
		int u = bfs.front();
		bfs.pop_front();
		if (u != src_node && desc_.nodes[size_t(u)].host)
			continue; // hosts do not forward
		for (int li : adj_[size_t(u)]) {
			const FabricLink &l = desc_.links[size_t(li)];
			int v = l.a == u ? l.b : l.a;
			uint64_t c = cost[size_t(u)] + 2 * l.delay_ns +
				     serialization_ns(wire_bytes(l.mtu + QN_ETH_HLEN), l.rate_bps);
			uint64_t bn = std::min(bottleneck[size_t(u)], l.rate_bps);
			uint32_t m = std::min(mtu[size_t(u)], l.mtu);
			if (hops[size_t(v)] < 0) {
				hops[size_t(v)] = hops[size_t(u)] + 1;
				cost[size_t(v)] = c;
				bottleneck[size_t(v)] = bn;
				mtu[size_t(v)] = m;
				bfs.push_back(v);
			} else if (hops[size_t(v)] == hops[size_t(u)] + 1 && c < cost[size_t(v)]) {
				cost[size_t(v)] = c;
				bottleneck[size_t(v)] = bn;
				mtu[size_t(v)] = m;
			}
		}
	}
	std::vector<PathInfo> out(n);
	for (size_t v = 0; v < n; v++)
		if (hops[v] > 0)
			out[v] = PathInfo{true, cost[v], bottleneck[v], mtu[v]};
	return out;
}

Shard::PathInfo Shard::path_from(int src_node, int dst_node) const { return paths_from(src_node)[size_t(dst_node)]; }

Shard::PathInfo Shard::path(const std::string &a, const std::string &b) const
{
	auto ia = node_of_.find(a), ib = node_of_.find(b);
	if (ia == node_of_.end() || ib == node_of_.end())
		return PathInfo{};
	return path_from(ia->second, ib->second);
}

std::pair<uint64_t, uint64_t> Shard::rtt_range() const
{
	// The smallest base RTT over served host pairs is the base the thresholds scale with; the
	// largest is what a scheme's window or timer must cover (both go to the schemes' Fabric).
	// One search per source (a 320-host fabric: 320 searches, not 320 x 319).
	uint64_t lo = UINT64_MAX, hi = 0;
	for (const auto &[src, sn] : node_of_) { // every host of the engine, not only this shard's
		const std::vector<PathInfo> ps = paths_from(sn);
		for (const auto &[dst, dn] : node_of_)
			if (dst != src && ps[size_t(dn)].ok) {
				lo = std::min(lo, ps[size_t(dn)].base_rtt_ns);
				hi = std::max(hi, ps[size_t(dn)].base_rtt_ns);
			}
	}
	if (lo == UINT64_MAX)
		return {10'000, 10'000};
	return {std::max<uint64_t>(lo, 1000), std::max<uint64_t>(hi, 1000)};
}

} // namespace qn::tp
