// Topology files, derivation, the ns-3 importer and ECMP routes (docs/topology-format.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>

#include "control/bringup.h"
#include "control/topology.h"

using namespace qn;

namespace {
const std::string kNetns = QN_SOURCE_DIR "/netns/";

int count(const Topology &t, NodeKind k)
{
	int n = 0;
	for (const auto &node : t.nodes)
		n += node.kind == k;
	return n;
}
} // namespace

TEST_CASE("load_topology_file__shipped_topologies", "[topology]")
{
	SECTION("dumbbell: 2 senders on s1, 2 receivers on s2, one bottleneck")
	{
		auto t = load_topology_file(kNetns + "dumbbell.topo");
		REQUIRE(t.ok());
		CHECK(t->name == "dumbbell");
		CHECK(count(*t, NodeKind::Host) == 4);
		CHECK(count(*t, NodeKind::Switch) == 2);
		CHECK(t->links.size() == 5);
		int s1 = t->find("s1"), s2 = t->find("s2");
		int between = 0;
		for (const auto &l : t->links)
			between += (l.a == s1 && l.b == s2) || (l.a == s2 && l.b == s1);
		CHECK(between == 1);
	}
	SECTION("star: N settable")
	{
		auto t = load_topology_file(kNetns + "star.topo");
		REQUIRE(t.ok());
		CHECK(count(*t, NodeKind::Host) == 8);
		auto t16 = load_topology_file(kNetns + "star.topo", {{"N", "16"}});
		REQUIRE(t16.ok());
		CHECK(count(*t16, NodeKind::Host) == 16);
		CHECK(t16->ports_of(t16->find("tor")).size() == 16);
	}
	SECTION("leaf-spine: 2 spines, 4 leaves, 4 hosts per leaf")
	{
		auto t = load_topology_file(kNetns + "leafspine.topo");
		REQUIRE(t.ok());
		CHECK(count(*t, NodeKind::Host) == 16);
		CHECK(count(*t, NodeKind::Switch) == 6);
		for (int l = 1; l <= 4; l++)
			CHECK(t->ports_of(t->find("leaf" + std::to_string(l))).size() == 6);
		CHECK(t->ports_of(t->find("spine1")).size() == 4);
	}
	SECTION("unknown --param is refused")
	{
		auto t = load_topology_file(kNetns + "star.topo", {{"M", "3"}});
		REQUIRE_FALSE(t.ok());
		CHECK_THAT(t.error().message, Catch::Contains("declares no param 'M'"));
	}
}

TEST_CASE("derive__addresses_macs_names_ifindexes", "[topology]")
{
	auto t = parse_topology("name t\nswitch s1\nhost a\nhost b ip=10.9.8.7 mac=02:aa:bb:cc:dd:ee\n"
				"link a s1\nlink b s1 rate=25Gbps mtu=1500 delay=3us\n",
				"mem");
	REQUIRE(t.ok());
	const Node &a = t->nodes[size_t(t->find("a"))];
	const Node &b = t->nodes[size_t(t->find("b"))];
	// Expect: derived addresses follow the ns-3 simulator (node id 1 -> 11.0.1.1).
	CHECK(ip_to_string(a.ip) == "11.0.1.1");
	CHECK(mac_to_string(a.mac) == "02:51:00:00:01:01");
	// Expect: given values are kept.
	CHECK(ip_to_string(b.ip) == "10.9.8.7");
	CHECK(mac_to_string(b.mac) == "02:aa:bb:cc:dd:ee");
	// Expect: unique prefixed interface names and distinct ifindexes.
	std::set<uint32_t> idx;
	std::set<std::string> names;
	for (const auto &p : t->ports) {
		idx.insert(p.ifindex);
		names.insert(p.ifname);
		CHECK(p.ifname.size() <= 15);
	}
	CHECK(idx.size() == t->ports.size());
	CHECK(names.size() == t->ports.size());
	CHECK(names.count("s1-p1"));
	CHECK(names.count("b-eth0"));
	// Expect: per-link attributes override defaults.
	CHECK(t->links[1].rate_bps == 25'000'000'000ULL);
	CHECK(t->links[1].mtu == 1500);
	CHECK(t->links[1].delay_ns == 3000);
	CHECK(t->links[0].mtu == 2048); // default path MTU
	CHECK(t->netns(t->find("a")) == "qn-t-a");
}

TEST_CASE("parse_topology__bad_files_name_file_line_field", "[topology]")
{
	struct Case {
		const char *label;
		const char *text;
		const char *expect;
	};
	const Case cases[] = {
		{"bad rate", "name t\nswitch s\nhost a\nlink a s rate=10Gxps\n", "bad.topo:4: field 'rate'"},
		{"bad delay", "name t\nswitch s\nhost a\nlink a s delay=soon\n", "bad.topo:4: field 'delay'"},
		{"mtu out of range", "name t\nswitch s\nhost a\nlink a s mtu=100\n", "bad.topo:4: field 'mtu'"},
		{"unknown link attribute", "name t\nswitch s\nhost a\nlink a s colour=red\n", "bad.topo:4: field 'colour'"},
		{"unknown node", "name t\nswitch s\nhost a\nlink a x\n", "bad.topo:4: field 'endpoint': unknown node 'x'"},
		{"self loop", "name t\nswitch s\nlink s s\n", "bad.topo:3: field 'endpoint'"},
		{"duplicate node", "name t\nswitch s\nhost s\n", "bad.topo:3: field 'name': 's' already declared at line 2"},
		{"bad name", "name T-1\n", "bad.topo:1: field 'name'"},
		{"node name too long", "name t\nhost abcdefghijk\n", "bad.topo:2: field 'name'"},
		{"unknown directive", "name t\nrouter r\n", "bad.topo:2: unknown directive 'router'"},
		{"bad ip", "name t\nhost a ip=300.1.1.1\n", "bad.topo:2: field 'ip'"},
		{"bad mac", "name t\nhost a mac=zz\n", "bad.topo:2: field 'mac'"},
		{"multicast mac", "name t\nhost a mac=01:00:5e:00:00:01\n", "bad.topo:2: field 'mac'"},
		{"host attr on switch", "name t\nswitch s mac=02:00:00:00:00:01\n", "bad.topo:2: field 'mac'"},
		{"switch address taken", "name t\nhost h ip=11.0.9.1\nswitch s ip=11.0.9.1\nlink h s\n",
		 "bad.topo:3: field 'ip': 11.0.9.1 is also the address of 'h'"},
		{"bad range", "name t\nhost h[1..]\n", "bad.topo:2: field 'name'"},
		{"range with unknown param", "name t\nhost h[1..K]\n", "bad.topo:2: field 'name': 'K'"},
		{"range length mismatch", "name t\nparam N=2\nswitch s[1..3]\nhost h[1..N]\nlink h[1..N] s[1..3]\n",
		 "bad.topo:5: field 'endpoint': ranges of different lengths"},
		{"unknown $param", "name t\nswitch s\nhost a\nlink a s rate=$FAST\n", "bad.topo:4: field 'rate'"},
		{"host with two links", "name t\nswitch s\nswitch u\nhost a\nlink a s\nlink a u\nlink s u\n",
		 "bad.topo:6: host 'a' has a second link"},
		{"host without link", "name t\nswitch s\nhost a\nhost b\nlink a s\n", "bad.topo:4: host 'b' has no link"},
		{"duplicate ip", "name t\nswitch s\nhost a ip=1.1.1.1\nhost b ip=1.1.1.1\nlink a s\nlink b s\n",
		 "bad.topo:4: field 'ip': 1.1.1.1 is also the address of 'a'"},
		{"missing name", "switch s\n", "bad.topo: missing 'name' line"},
		{"defaults after nodes", "name t\nswitch s\ndefaults rate=1G\n", "bad.topo:3: 'defaults' must come before"},
		{"disconnected", "name t\nswitch s\nswitch u\nhost a\nhost b\nlink a s\nlink b u\n", "cannot reach"},
		{"not key=value", "name t\nswitch s\nhost a\nlink a s fast\n", "bad.topo:4: expected key=value"},
		{"bad switch buffer", "name t\nswitch s buffer=lots\n", "bad.topo:2: field 'buffer': switch parameter 'buffer':"},
		{"switch buffer out of range", "name t\nswitch s buffer=10B\n",
		 "bad.topo:2: field 'buffer': switch parameter 'buffer': '10B' is outside [1KB, 1000GB]"},
		{"bad default buffer", "name t\ndefaults buffer=0\n", "bad.topo:2: field 'buffer': switch parameter 'buffer': '0' is outside"},
		{"unknown default", "name t\ndefaults colour=red\n", "bad.topo:2: field 'colour': unknown default (rate, mtu, delay, buffer)"},
		{"unknown host attribute", "name t\nhost a buffer=1MB\n", "bad.topo:2: field 'buffer': unknown host attribute (ip, mac, stack)"},
		{"unknown stack", "name t\nhost a stack=tcp\n", "bad.topo:2: field 'stack'"},
		{"rxe host with a delayed link", "name t\nswitch s\nhost a stack=rxe\nlink a s delay=1us\n",
		 "bad.topo:4: field 'delay': host 'a' runs rdma_rxe (stack=rxe): its link has no delay line"},
	};
	for (const auto &c : cases) {
		SECTION(c.label)
		{
			auto t = parse_topology(c.text, "bad.topo");
			REQUIRE_FALSE(t.ok());
			CHECK_THAT(t.error().message, Catch::Contains(c.expect));
		}
	}
}

TEST_CASE("parse_topology__ranges_and_params", "[topology]")
{
	auto t = parse_topology("name t\nparam N=3 R=25Gbps\nswitch s[1..2]\nhost h[1..N]\nhost g[1..N]\n"
				"link h[1..N] s1 rate=$R\nlink g[1..N] s2\nlink s1 s2\n",
				"mem");
	REQUIRE(t.ok());
	CHECK(t->nodes.size() == 8);
	CHECK(t->links.size() == 7);
	CHECK(t->links[0].rate_bps == 25'000'000'000ULL);
	auto o = parse_topology("name t\nparam N=3\nswitch s\nhost h[1..N]\nlink h[1..N] s\n", "mem", {{"N", "5"}});
	REQUIRE(o.ok());
	CHECK(o->nodes.size() == 6);
}

TEST_CASE("parse_topology__host_mtu_above_xdp_limit_warns", "[topology]")
{
	auto t = parse_topology("name t\nswitch s\nhost a\nhost b\nlink a s mtu=9000\nlink b s\n", "mem");
	REQUIRE(t.ok());
	REQUIRE(t->warnings.size() == 1);
	CHECK_THAT(t->warnings[0], Catch::Contains("mem:5: mtu 9000"));
}

TEST_CASE("to_text__round_trips", "[topology]")
{
	auto t = load_topology_file(kNetns + "leafspine.topo");
	REQUIRE(t.ok());
	auto back = parse_topology(t->to_text(), "state");
	REQUIRE(back.ok());
	CHECK(back->describe().substr(back->describe().find('\n')) == t->describe().substr(t->describe().find('\n')));
}

TEST_CASE("rxe_hosts__parse_and_round_trip", "[topology]")
{
	// A Soft-RoCE host (docs/agent.md): stack=rxe survives the state file; engine hosts stay
	// engine hosts.
	auto t = parse_topology("name t\ndefaults delay=0\nswitch s\nhost a stack=rxe\nhost b\nlink a s\nlink b s\n", "x.topo");
	REQUIRE(t.ok());
	CHECK(t->nodes[size_t(t->find("a"))].stack == kStackRxe);
	CHECK(t->nodes[size_t(t->find("b"))].stack == kStackEngine);
	auto back = parse_topology(t->to_text(), "state");
	REQUIRE(back.ok());
	CHECK(back->nodes[size_t(back->find("a"))].stack == kStackRxe);
	CHECK(back->nodes[size_t(back->find("b"))].stack == kStackEngine);
}

TEST_CASE("rxe_hosts__initial_namespace_layout", "[topology]")
{
	// stack=rxe-initns (what `topo up` picks on a kernel whose rxe works only in the initial
	// namespace): no namespace of its own, a veth name unique there and within IFNAMSIZ, and the
	// choice survives the state file (the agent reads it back).
	const char *text = "name t\ndefaults delay=0\nswitch s\nhost a stack=rxe-initns\nhost b stack=rxe\nlink a s\nlink b s\n";
	auto t = parse_topology(text, "x.topo");
	REQUIRE(t.ok());
	const int a = t->find("a"), b = t->find("b");
	CHECK(t->nodes[size_t(a)].stack == kStackRxeInitNs);
	CHECK(is_rxe_stack(t->nodes[size_t(a)].stack));
	CHECK(t->netns(a).empty());
	CHECK(t->netns(b) == "qn-t-b");
	const std::string ifa = t->ports[size_t(t->ports_of(a)[0])].ifname;
	CHECK(ifa == initns_ifname("t", "a"));
	CHECK(ifa.size() < 16);
	CHECK(ifa != initns_ifname("u", "a")); // another topology's host a
	CHECK(t->ports[size_t(t->ports_of(b)[0])].ifname == "b-eth0");
	CHECK(t->describe().find("netns (initial)") != std::string::npos);
	auto back = parse_topology(t->to_text(), "state");
	REQUIRE(back.ok());
	CHECK(back->nodes[size_t(back->find("a"))].stack == kStackRxeInitNs);
	CHECK(back->ports[size_t(back->ports_of(back->find("a"))[0])].ifname == ifa);
}

TEST_CASE("routes_for__ecmp_over_equal_paths", "[topology]")
{
	auto t = load_topology_file(kNetns + "leafspine.topo");
	REQUIRE(t.ok());
	int leaf1 = t->find("leaf1");
	auto routes = t->routes_for(leaf1);
	CHECK(routes.size() == 16); // every host
	int local = 0, remote = 0;
	for (const auto &r : routes) {
		if (r.nexthops.size() == 1) {
			local++;
			CHECK(t->nodes[size_t(t->ports[size_t(r.nexthops[0].port)].peer_node)].kind == NodeKind::Host);
		} else {
			remote++;
			// Expect: both spines are next hops for a host behind another leaf.
			REQUIRE(r.nexthops.size() == 2);
			std::set<std::string> via;
			for (const auto &nh : r.nexthops)
				via.insert(t->nodes[size_t(t->ports[size_t(nh.port)].peer_node)].name);
			CHECK(via == std::set<std::string>{"spine1", "spine2"});
		}
	}
	CHECK(local == 4);
	CHECK(remote == 12);
	// Expect: a spine reaches every host through exactly one leaf.
	for (const auto &r : t->routes_for(t->find("spine1")))
		CHECK(r.nexthops.size() == 1);
}

TEST_CASE("parse_ns3_topology__simulator_files", "[topology][ns3]")
{
	// The ns-3 RDMA simulator's format: nodes switches links / switch ids / src dst rate delay error.
	const char *text = "6 2 5\n4 5\n0 4 100Gbps 0.001ms 0\n1 4 100Gbps 0.001ms 0\n"
			   "2 5 100Gbps 0.001ms 0\n3 5 100Gbps 0.001ms 0.001\n4 5 400Gbps 0.002ms 0\n";
	auto t = parse_ns3_topology(text, "topo.txt", "ns3");
	REQUIRE(t.ok());
	CHECK(count(*t, NodeKind::Host) == 4);
	CHECK(count(*t, NodeKind::Switch) == 2);
	CHECK(t->nodes[4].name == "sw4");
	CHECK(t->nodes[0].name == "h0");
	CHECK(ip_to_string(t->nodes[0].ip) == "11.0.0.1");
	CHECK(ip_to_string(t->nodes[3].ip) == "11.0.3.1");
	CHECK(t->links[4].rate_bps == 400'000'000'000ULL);
	CHECK(t->links[4].delay_ns == 2000);
	CHECK(t->links[3].error_rate == Approx(0.001));
	// Expect: the imported topology round-trips through quench's own format.
	auto back = parse_topology(t->to_text(), "state");
	REQUIRE(back.ok());
	CHECK(back->links[3].error_rate == Approx(0.001));
	CHECK(ip_to_string(back->nodes[3].ip) == "11.0.3.1");
}

TEST_CASE("parse_ns3_topology__bad_files", "[topology][ns3]")
{
	struct Case {
		const char *label, *text, *expect;
	};
	const Case cases[] = {
		{"empty", "", "topo.txt: empty file"},
		{"header fields", "3 1\n", "topo.txt:1: expected 'nodes switches links'"},
		{"switch id range", "3 1 2\n7\n", "topo.txt:2: field 'switch id': 7 is not below"},
		{"switch count", "3 2 2\n1\n", "topo.txt:2: expected 2 switch ids"},
		{"too few links", "3 1 2\n2\n0 2 10Gbps 1us 0\n", "expected 2 links, found 1"},
		{"bad rate", "3 1 2\n2\n0 2 10Gxps 1us 0\n1 2 10Gbps 1us 0\n", "topo.txt:3: field 'rate'"},
		{"bad node", "3 1 2\n2\n0 9 10Gbps 1us 0\n1 2 10Gbps 1us 0\n", "topo.txt:3: field 'dst'"},
		{"bad error rate", "3 1 2\n2\n0 2 10Gbps 1us 2\n1 2 10Gbps 1us 0\n", "topo.txt:3: field 'error_rate'"},
		{"short link line", "3 1 2\n2\n0 2 10Gbps\n", "topo.txt:3: expected 'src dst rate delay error_rate'"},
		{"trailing data", "3 1 2\n2\n0 2 10Gbps 1us 0\n1 2 10Gbps 1us 0\n1 2\n", "topo.txt:5: unexpected data"},
		{"non numeric", "a b c\n", "topo.txt:1: field 'nodes'"},
	};
	for (const auto &c : cases) {
		SECTION(c.label)
		{
			auto t = parse_ns3_topology(c.text, "topo.txt", "ns3");
			REQUIRE_FALSE(t.ok());
			CHECK_THAT(t.error().message, Catch::Contains(c.expect));
		}
	}
}

TEST_CASE("up_flags__one_table_for_the_cli_and_the_meta_file", "[topology]")
{
	// Every flag, field and meta key once.
	std::set<std::string> flags, keys;
	std::vector<bool UpOptions::*> fields;
	for (const UpFlag &f : up_flags()) {
		CHECK(flags.insert(f.flag).second);
		CHECK(keys.insert(f.meta).second);
		CHECK(std::find(fields.begin(), fields.end(), f.field) == fields.end());
		fields.push_back(f.field);
		CHECK(std::string(f.flag).rfind("--", 0) == 0);
	}
	REQUIRE(keys.size() >= 3);
	auto cabled = parse_topology("name d\ndefaults delay=1us\nswitch s[1..2]\nhost h[1..2]\nlink h1 s1\nlink h2 s2\nlink s1 s2\n",
				     "d.topo");
	auto plain = parse_topology("name p\nswitch s1\nhost h[1..2]\nlink h[1..2] s1\n", "p.topo");
	REQUIRE(cabled.ok());
	REQUIRE(plain.ok());
	UpOptions o; // the defaults: steering and cables on, no RPS
	CHECK(up_flags_meta(*cabled, o) == "steering yes\ncables yes\nrps no\n");
	CHECK(up_flags_meta(*plain, o) == "steering yes\ncables no\nrps no\n"); // no delayed switch link
	o.rps = true;
	o.cables = false;
	CHECK(up_flags_meta(*cabled, o) == "steering yes\ncables no\nrps yes\n");
	// a flag that negates sets its field to false
	for (const UpFlag &f : up_flags()) {
		UpOptions d;
		CAPTURE(f.flag);
		CHECK(d.*f.field == f.negates); // a flag changes its default
	}
}
