// The flow-list builder (userspace/control/flows.h): `quench run` (an experiment's workload
// lines) and `quench gen` (a Workload filled from its options) give the same flows and hash for
// the same workload and seed; long rounds, Poisson at the slowest host link, ns-3 flow files
// mapped to host names; bad hosts and flow files named by source, line and field.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include "control/experiment.h"
#include "control/flows.h"
#include "control/topology.h"
#include "transport/traffic.h"

using namespace qn;
using namespace qn::tp;

namespace {

const std::vector<std::string> kSchemes = {"none", "dcqcn"};

Topology star(int n)
{
	auto u = parse_topology("name fl\nswitch tor\nhost h[1.." + std::to_string(n) + "]\nlink h[2.." + std::to_string(n) +
					"] tor rate=25Gbps\nlink h1 tor rate=10Gbps\n",
				"fl.topo");
	REQUIRE(u.ok());
	return *u;
}

bool same(const std::vector<FlowSpec> &a, const std::vector<FlowSpec> &b)
{
	if (a.size() != b.size())
		return false;
	for (size_t i = 0; i < a.size(); i++)
		if (a[i].id != b[i].id || a[i].src != b[i].src || a[i].dst != b[i].dst || a[i].size != b[i].size ||
		    a[i].start_ns != b[i].start_ns || a[i].dport != b[i].dport)
			return false;
	return true;
}

} // namespace

TEST_CASE("flows__run_and_gen_build_the_same_list", "[flows]")
{
	const Topology t = star(5);
	// run: an experiment's workload line, senders as a count
	auto x = parse_experiment("topology star\nschemes none\nseed 5\n"
				  "workload incast dst=h1 senders=3 size=20KB window=5us count=2 interval=300us\n",
				  data_dir() + "/experiments/t.exp", kSchemes);
	REQUIRE(x.ok());
	auto a = build_flows(x->workloads, x->seed, t, x->source);
	REQUIRE(a.ok());
	// gen: the Workload its options fill (senders as names, as gen resolves them), seed 5
	Workload w;
	w.kind = Workload::Kind::Incast;
	w.dst = "h1";
	w.senders = {"h2", "h3", "h4"};
	w.size = 20'000;
	w.window_ns = 5'000;
	w.count = 2;
	w.interval_ns = 300'000;
	auto b = build_flows({w}, 5, t, "gen");
	REQUIRE(b.ok());
	REQUIRE(a->size() == 6);
	CHECK(same(*a, *b));
	CHECK(flow_list_hash(*a) == flow_list_hash(*b));
	// the seed matters, and round 2 starts one interval later with other start times
	auto c = build_flows({w}, 6, t, "gen");
	REQUIRE(c.ok());
	CHECK(flow_list_hash(*c) != flow_list_hash(*a));
	for (const auto &f : *a) {
		CHECK(f.dport == 200);
		CHECK(f.dst == "h1");
		CHECK(f.start_ns <= 305'000);
	}
	CHECK((*a)[3].start_ns >= 300'000);
	CHECK((*a)[2].start_ns <= 5'000);
}

TEST_CASE("flows__long_rounds_poisson_rate_and_flow_files", "[flows]")
{
	const Topology t = star(4);
	Workload l;
	l.kind = Workload::Kind::Long;
	l.dst = "h1";
	l.nsenders = 2;
	l.size = 1'000'000;
	l.count = 2;
	l.interval_ns = 10'000;
	l.start_ns = 1'000;
	auto v = build_flows({l}, 1, t, "x.exp");
	REQUIRE(v.ok());
	REQUIRE(v->size() == 4);
	// sender i of round r starts at start + (r x 2 + i) x interval; the first N hosts but dst
	for (size_t i = 0; i < 4; i++) {
		CHECK((*v)[i].start_ns == 1'000 + i * 10'000);
		CHECK((*v)[i].src == (i % 2 == 0 ? "h2" : "h3"));
		CHECK((*v)[i].id == i);
	}
	// Poisson load is a fraction of the slowest host link (h1's 10 Gbit/s, not 25)
	CHECK(host_link_rate(t) == 10'000'000'000ULL);

	// an ns-3 flow file: node ids in declaration order (tor 0, h1 1, ...), times from the first
	char path[] = "/tmp/qn-flows-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0);
	close(fd);
	{
		std::ofstream f(path);
		f << "2\n2 1 3 100 30000 2.000000\n3 1 3 100 5000 2.000050\n";
	}
	Workload fw;
	fw.kind = Workload::Kind::Flows;
	fw.file = path;
	fw.start_ns = 100'000;
	auto r = build_flows({fw}, 1, t, "x.exp");
	REQUIRE(r.ok());
	REQUIRE(r->size() == 2);
	CHECK((*r)[0].src == "h2");
	CHECK((*r)[0].dst == "h1");
	CHECK((*r)[0].size == 30'000);
	CHECK((*r)[0].start_ns == 100'000);
	CHECK((*r)[1].start_ns == 150'000);
	{
		std::ofstream f(path);
		f << "1\n0 1 3 100 30000 2.0\n"; // node 0 is the switch
	}
	auto bad = build_flows({fw}, 1, t, "x.exp");
	REQUIRE_FALSE(bad.ok());
	CHECK_THAT(bad.error().message, Catch::Contains(std::string(path) + ":2: field 'src': node 0 is not a host"));
	std::remove(path);

	Workload u = l;
	u.nsenders = 0;
	u.senders = {"h9"};
	u.line = 7;
	auto e1 = build_flows({u}, 1, t, "x.exp");
	REQUIRE_FALSE(e1.ok());
	CHECK_THAT(e1.error().message, Catch::Contains("x.exp:7: field 'senders': no host 'h9'"));
	u.senders = {};
	u.nsenders = 4;
	auto e2 = build_flows({u}, 1, t, "x.exp");
	REQUIRE_FALSE(e2.ok());
	CHECK_THAT(e2.error().message, Catch::Contains("x.exp:7: field 'senders': 4 senders, but the topology has only 3"));
}
