// k-ary fat-tree files (userspace/control/fattree.h): the shape, the numbering and the ECMP
// fan-out of the parsed topology.
#include <catch2/catch.hpp>

#include <set>

#include "control/fattree.h"
#include "control/topology.h"

using namespace qn;

namespace {

Topology parse_ft(const FatTreeSpec &s)
{
	auto text = fattree_text(s);
	REQUIRE(text);
	auto t = parse_topology(*text, "ft");
	INFO((t ? "" : t.error().to_string()));
	REQUIRE(t);
	return *t;
}

int count(const Topology &t, NodeKind k)
{
	int n = 0;
	for (const auto &x : t.nodes)
		n += x.kind == k;
	return n;
}

// The switches a node links to.
std::set<std::string> neighbours(const Topology &t, const std::string &node)
{
	std::set<std::string> out;
	for (int p : t.ports_of(t.find(node)))
		out.insert(t.nodes[size_t(t.ports[size_t(p)].peer_node)].name);
	return out;
}

} // namespace

TEST_CASE("fattree__k_ary_shape_numbering_and_ecmp", "[fattree]")
{
	for (int k : {4, 8}) {
		FatTreeSpec s;
		s.k = k;
		const Topology t = parse_ft(s);
		const int half = k / 2;
		CHECK(t.name == "ft" + std::to_string(k));
		CHECK(count(t, NodeKind::Host) == k * k * k / 4);
		CHECK(count(t, NodeKind::Switch) == 5 * k * k / 4);
		CHECK(t.links.size() == size_t(3 * k * k * k / 4));
		// Hosts first: h<n> is node id n-1, with the ns-3 address of that id.
		for (int n : {1, 2, k * k * k / 4}) {
			const int id = t.find("h" + std::to_string(n));
			CHECK(id == n - 1);
			CHECK(t.nodes[size_t(id)].ip == ns3_node_ip(n - 1));
		}
		// Every switch has k ports; an edge switch k/2 hosts and its pod's k/2 aggregations;
		// an aggregation switch its pod's edges and k/2 cores; a core one aggregation per pod.
		for (const auto &n : t.nodes)
			if (n.kind == NodeKind::Switch)
				CHECK(t.ports_of(n.id).size() == size_t(k));
		std::set<std::string> e2x1;
		for (int m = 1; m <= half; m++) {
			e2x1.insert("h" + std::to_string(half * half + m)); // pod 2's first hosts
			e2x1.insert("a2x" + std::to_string(m));
		}
		CHECK(neighbours(t, "e2x1") == e2x1);
		std::set<std::string> pods;
		for (const auto &x : neighbours(t, "c1"))
			pods.insert(x.substr(0, x.find('x')));
		CHECK(pods.size() == size_t(k)); // c1 reaches every pod once
		CHECK(neighbours(t, "c1").size() == size_t(k));
		// Links: host links at $RATE and $DELAY, switch links at $FABRIC (default the host
		// rate) and $FABRIC_DELAY.
		for (const auto &l : t.links) {
			CHECK(l.rate_bps == 100'000'000'000ULL);
			CHECK(l.delay_ns == 1000);
		}
		// ECMP: an edge switch toward a host of another pod has k/2 next hops (its
		// aggregations), an aggregation switch k/2 (its cores), a core one (the pod's
		// aggregation), and the destination's edge one (the host).
		const Topology &tt = t;
		const uint32_t far = tt.nodes[size_t(tt.find("h" + std::to_string(k * k * k / 4)))].ip;
		auto fanout = [&](const std::string &sw) -> size_t {
			for (const auto &r : tt.routes_for(tt.find(sw)))
				if (r.dst_ip == far)
					return r.nexthops.size();
			return 0;
		};
		CHECK(fanout("e1x1") == size_t(half));
		CHECK(fanout("a1x1") == size_t(half));
		CHECK(fanout("c1") == 1);
		CHECK(fanout("e" + std::to_string(k) + "x" + std::to_string(half)) == 1);
	}
}

TEST_CASE("fattree__rates_delays_and_name_are_written_as_params", "[fattree]")
{
	FatTreeSpec s;
	s.k = 4;
	s.name = "fab";
	s.rate = "10Gbps";
	s.fabric_rate = "40Gbps";
	s.fabric_delay = "0";
	const Topology t = parse_ft(s);
	CHECK(t.name == "fab");
	for (const auto &l : t.links) {
		const bool host = t.nodes[size_t(l.a)].kind == NodeKind::Host || t.nodes[size_t(l.b)].kind == NodeKind::Host;
		CHECK(l.rate_bps == (host ? 10'000'000'000ULL : 40'000'000'000ULL));
		CHECK(l.delay_ns == (host ? 1000u : 0u));
	}
	// --param overrides the written values at `up`.
	auto text = fattree_text(s);
	REQUIRE(text);
	auto o = parse_topology(*text, "ft", {{"FABRIC", "100Gbps"}});
	REQUIRE(o);
	CHECK(o->links.back().rate_bps == 100'000'000'000ULL);
}

TEST_CASE("fattree__bad_k_and_bad_values_are_named", "[fattree]")
{
	for (int k : {0, 2, 3, 5, 18}) {
		FatTreeSpec s;
		s.k = k;
		auto r = fattree_text(s);
		REQUIRE_FALSE(r);
		CHECK(r.error().to_string().find("k = " + std::to_string(k)) != std::string::npos);
	}
	FatTreeSpec s;
	s.rate = "fast";
	auto text = fattree_text(s);
	REQUIRE(text);
	auto t = parse_topology(*text, "ft");
	REQUIRE_FALSE(t);
	CHECK(t.error().to_string().find("rate") != std::string::npos);
}

TEST_CASE("fattree__the_header_states_the_counts_it_writes", "[fattree]")
{
	FatTreeSpec s;
	s.k = 4;
	auto text = fattree_text(s);
	REQUIRE(text);
	CHECK(text->find("4 core switches, 16 hosts, 48 links") != std::string::npos);
}

TEST_CASE("ns3_fat320__the_simulators_320_host_tree_through_the_importer", "[fattree]")
{
	const std::string text = ns3_fat320_text();
	CHECK(text.rfind("376 56 480\n", 0) == 0); // fat.txt's first line
	auto t = parse_ns3_topology(text, "fat.txt", "fat");
	INFO((t ? "" : t.error().to_string()));
	REQUIRE(t);
	CHECK(count(*t, NodeKind::Host) == 320);
	CHECK(count(*t, NodeKind::Switch) == 56);
	CHECK(t->links.size() == 480);
	int uplinks = 0;
	for (const auto &l : t->links)
		uplinks += l.rate_bps == 400'000'000'000ULL;
	CHECK(uplinks == 160);
	// ToR 320 (sw320): hosts 0..15 and the four aggregation switches of pod 0
	const auto tor = neighbours(*t, "sw320");
	CHECK(tor.size() == 20);
	CHECK(tor.count("h0") == 1);
	CHECK(tor.count("h15") == 1);
	for (const char *a : {"sw340", "sw341", "sw342", "sw343"})
		CHECK(tor.count(a) == 1);
	// aggregation 345 (pod 1, j = 1): ToRs 324..327 and cores 364..367
	const auto agg = neighbours(*t, "sw345");
	CHECK(agg == std::set<std::string>{"sw324", "sw325", "sw326", "sw327", "sw364", "sw365", "sw366", "sw367"});
	// ECMP: a ToR reaches a host of another pod over its 4 uplinks; a core reaches every pod
	// through one aggregation switch
	const uint32_t far = ns3_node_ip(300); // pod 4
	auto fan_out = [&](const char *sw) {
		for (const auto &r : t->routes_for(t->find(sw)))
			if (r.dst_ip == far)
				return r.nexthops.size();
		return size_t(0);
	};
	CHECK(fan_out("sw320") == 4);
	CHECK(fan_out("sw360") == 1);
}
