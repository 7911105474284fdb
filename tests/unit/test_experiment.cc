// Experiments (userspace/control/experiment.h, transport/metrics.h, docs/experiments.md):
// percentile, slowdown and size-bin math against hand-computed cases; experiment, preset and
// ns-3 flow files parsed, and bad ones rejected naming file, line and field; the shipped CDFs
// load; DCQCN's parameters derived from the spec's rules.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

#include "control/experiment.h"
#include "control/topology.h"
#include "transport/cc/cc.h"
#include "transport/cc/dcqcn.h"
#include "transport/metrics.h"
#include "transport/traffic.h"

using namespace qn;
using namespace qn::tp;

namespace {
const std::vector<std::string> kSchemes = {"none", "pfc", "dcqcn", "dcqcn+w"};

std::string err_of(const std::string &text)
{
	auto r = parse_experiment(text, data_dir() + "/experiments/t.exp", kSchemes);
	REQUIRE_FALSE(r.ok());
	return r.error().message;
}
const char *kMin = "topology star\nschemes dcqcn\nworkload incast dst=h1 senders=2 size=4KB\n";
} // namespace

TEST_CASE("percentile__index_floor_n_p", "[experiment]")
{
	// 10 values 1..10: p50 -> index 5 (6), p95 -> index 9 (10), p0 -> 1, p99 -> index 9 (10)
	std::vector<double> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
	CHECK(percentile(v, 0.5) == 6);
	CHECK(percentile(v, 0.95) == 10);
	CHECK(percentile(v, 0.0) == 1);
	CHECK(percentile(v, 0.1) == 2);
	CHECK(percentile(std::vector<double>{}, 0.5) == 0);
	std::vector<uint64_t> u{5};
	CHECK(percentile(u, 0.99) == 5);
}

TEST_CASE("slowdown__fct_over_standalone_floored_at_one", "[experiment]")
{
	FlowResult f;
	f.standalone_ns = 1000;
	f.fct_ns = 2500;
	CHECK(f.slowdown() == Approx(2.5));
	f.fct_ns = 900; // faster than the standalone definition (a small message): floored
	CHECK(f.slowdown() == 1.0);
	f.standalone_ns = 0;
	CHECK(f.slowdown() == 0.0);
}

TEST_CASE("size_bins__size_percentile_bins_sorted_by_size", "[experiment]")
{
	// 10 flows, sizes 10..100 given out of order, slowdown = size / 10 -> 2 bins of 5 flows:
	// bin 0: sizes 10..50 (slowdowns 1..5): p50 index 2 -> 3, p95/p99 index 4 -> 5
	// bin 1: sizes 60..100 (6..10): p50 8, p95/p99 10
	std::vector<std::pair<uint64_t, double>> f;
	for (uint64_t s : {100ULL, 30ULL, 50ULL, 10ULL, 90ULL, 20ULL, 70ULL, 40ULL, 60ULL, 80ULL})
		f.emplace_back(s, double(s) / 10);
	auto b = size_bins(f, 2);
	REQUIRE(b.size() == 2);
	CHECK(b[0].min_size == 10);
	CHECK(b[0].max_size == 50);
	CHECK(b[0].count == 5);
	CHECK(b[0].p50 == 3);
	CHECK(b[0].p95 == 5);
	CHECK(b[1].min_size == 60);
	CHECK(b[1].max_size == 100);
	CHECK(b[1].p50 == 8);
	CHECK(b[1].p99 == 10);
	// 7 flows in 3 bins: [0,2) [2,4) [4,7) -> counts 2, 2, 3
	f.resize(7);
	b = size_bins(f, 3);
	REQUIRE(b.size() == 3);
	CHECK(b[0].count == 2);
	CHECK(b[1].count == 2);
	CHECK(b[2].count == 3);
	// the bin of each input flow follows the same rule (sizes 100,30,50,10,90,20,70 -> sorted
	// 10,20,30,50,70,90,100 -> bins [10,20] [30,50] [70,90,100])
	auto idx = size_bin_index({100, 30, 50, 10, 90, 20, 70}, 3);
	CHECK(idx == std::vector<size_t>{2, 1, 1, 0, 2, 0, 2});
	// a size never spans two bins: four equal sizes make one bin, not two
	CHECK(size_bin_index({5, 5, 5, 5}, 2) == std::vector<size_t>{0, 0, 0, 0});
	CHECK(size_bins({{5, 1}, {5, 2}, {5, 3}, {5, 4}}, 2).size() == 1);
	// the default experiment's shape: 64 KB incast flows are 60% of 10 flows in 5 bins. Equal-count
	// bins would give three bins all "64 KB"; here the 64 KB flows are one bin and the other
	// sizes keep theirs: sorted 1,2,64K x6,1M,2M; boundaries 2,4,6,8 -> 2 (ok), 4 -> run of 64K
	// ends at 8, 6 -> 8 (same), 8 -> 8: bins [1,2] [64K x6] [1M,2M]
	std::vector<std::pair<uint64_t, double>> g = {{65536, 2}, {1, 1}, {65536, 3}, {2'000'000, 9}, {65536, 4},
						      {2, 1}, {65536, 5}, {65536, 6}, {1'000'000, 8}, {65536, 7}};
	auto gb = size_bins(g, 5);
	REQUIRE(gb.size() == 3);
	CHECK(gb[0].max_size == 2);
	CHECK(gb[1].min_size == 65536);
	CHECK(gb[1].max_size == 65536);
	CHECK(gb[1].count == 6);
	CHECK(gb[1].p50 == 5); // slowdowns 2..7 sorted, index 3
	CHECK(gb[2].min_size == 1'000'000);
	std::vector<uint64_t> gs;
	for (const auto &[sz, sd] : g)
		gs.push_back(sz);
	CHECK(size_bin_index(gs, 5) == std::vector<size_t>{1, 0, 1, 2, 1, 0, 1, 1, 2, 1});
	// more bins than flows: one flow per bin
	CHECK(size_bins(f, 20).size() == 7);
	CHECK(size_bins({}, 20).empty());
}

TEST_CASE("series_stats__mean_percentiles_max", "[experiment]")
{
	auto s = series_stats({0, 0, 10, 20, 30, 40, 50, 60, 70, 1000});
	CHECK(s.samples == 10);
	CHECK(s.mean == Approx(128));
	CHECK(s.p50 == 40);
	CHECK(s.p99 == 1000);
	CHECK(s.max == 1000);
	// peak >= every sample
	CHECK(s.max >= s.p99);
}

TEST_CASE("experiment__parses_the_shipped_default", "[experiment]")
{
	auto x = load_experiment(data_dir() + "/experiments/incast-bg.exp", kSchemes);
	REQUIRE(x.ok());
	CHECK(x->name == "incast-bg");
	CHECK(x->schemes == kSchemes); // "schemes all"
	CHECK(x->dilation == 0);       // auto
	REQUIRE(x->workloads.size() == 2);
	CHECK(x->workloads[0].kind == Workload::Kind::Incast);
	CHECK(x->workloads[0].nsenders == 8);
	CHECK(x->workloads[0].size == 64'000);
	CHECK(x->workloads[0].window_ns == 20'000);
	CHECK(x->workloads[0].count == 8);
	CHECK(x->workloads[1].kind == Workload::Kind::Poisson);
	CHECK(x->workloads[1].cdf.find("WebSearch_distribution.txt") != std::string::npos);
	CHECK(x->topology.find("star.topo") != std::string::npos);
}

TEST_CASE("experiment__every_shipped_experiment_parses", "[experiment]")
{
	// the catalog `quench run` uses: every scheme of the grammar (cmd_run.cc)
	const SchemeCatalog cat(cc::schemes(), [](const std::string &n) -> std::string {
		auto s = cc::scheme(n);
		return s ? "" : s.error().to_string();
	});
	for (const char *f : {"incast-bg.exp", "dcqcn-c1-40g.exp", "sfc-hadoop-incast.exp", "sfc-hadoop80.exp",
			      "pbfs-hadoop-incast.exp"}) {
		INFO(f);
		auto x = load_experiment(data_dir() + "/experiments/" + f, cat);
		INFO((x.ok() ? std::string() : x.error().to_string()));
		REQUIRE(x.ok());
		CHECK_FALSE(x->schemes.empty());
		CHECK_FALSE(x->workloads.empty());
	}
	auto x = load_experiment(data_dir() + "/experiments/sfc-hadoop-incast.exp", cat);
	REQUIRE(x.ok());
	CHECK(x->schemes == std::vector<std::string>{"dcqcn+w:lossy", "dcqcn+w/sfc:lossy"});
}

TEST_CASE("experiment__schemes_and_cc_lines_checked_by_the_registry", "[experiment]")
{
	// The catalog quench run uses: the scheme grammar and each base's parameter table.
	const SchemeCatalog reg(
		cc::schemes(),
		[](const std::string &n) -> std::string {
			auto s = cc::scheme(n);
			return s ? "" : s.error().to_string();
		},
		[](const std::string &n, const std::string &k, const std::string &v) -> std::string {
			auto st = cc::check_param(n, k, v);
			return st.ok() ? "" : st.error().to_string();
		});
	const std::string f = data_dir() + "/experiments/t.exp";
	const std::string head = "topology star\nschemes dcqcn dcqcn+w:lossy\nworkload incast dst=h1 senders=2 size=4KB\n";
	auto err = [&](const std::string &text) {
		auto r = parse_experiment(text, f, reg);
		REQUIRE_FALSE(r.ok());
		return r.error().to_string();
	};
	// compositions are schemes; `all` is the named list
	auto ok = parse_experiment(head + "cc dcqcn+w:lossy params=mellanox w=20KB rai=10Mbps\n", f, reg);
	REQUIRE(ok.ok());
	CHECK(ok->schemes == std::vector<std::string>{"dcqcn", "dcqcn+w:lossy"});
	CHECK(ok->cc["dcqcn+w:lossy"].overrides["w"] == "20KB");
	auto all = parse_experiment("topology star\nschemes all\nworkload incast dst=h1 senders=2 size=4KB\n", f, reg);
	REQUIRE(all.ok());
	CHECK(all->schemes == cc::schemes());
	// bad names and bad parameters, reported at their file, line and field
	CHECK(err("topology star\nschemes dcqcn/nosuch\n").find("t.exp:2: field 'schemes': scheme 'dcqcn/nosuch': no start policy or flow control 'nosuch'") !=
	      std::string::npos);
	CHECK(err("topology star\nschemes dcqcn:lossyy\n").find("t.exp:2: field 'schemes': scheme 'dcqcn:lossyy': loss mode") !=
	      std::string::npos);
	CHECK(err(head + "cc dcqcn rai=fast\n").find("t.exp:4: field 'rai': dcqcn parameter 'rai':") != std::string::npos);
	CHECK(err(head + "cc dcqcn gain=1\n").find("t.exp:4: field 'gain': unknown dcqcn parameter 'gain' (variant,") !=
	      std::string::npos);
	CHECK(err(head + "cc dcqcn g=2\n").find("t.exp:4: field 'g': dcqcn parameter 'g': '2' is not a number in [1e-06, 1]") !=
	      std::string::npos);
	CHECK(err("topology star\nschemes none\nworkload incast dst=h1 senders=2 size=4KB\ncc none rai=10Mbps\n")
		      .find("t.exp:4: field 'rai': base algorithm none takes no parameters") != std::string::npos);
}

TEST_CASE("experiment__errors_name_file_line_and_field", "[experiment]")
{
	const std::string f = data_dir() + "/experiments/t.exp";
	CHECK(err_of(std::string(kMin) + "schemes dcqcn\n").find("t.exp:4: field 'schemes': given twice") != std::string::npos);
	CHECK(err_of("topology star\nschemes dcqcn hpcc\n").find("t.exp:2: field 'schemes': no scheme named 'hpcc'") !=
	      std::string::npos);
	CHECK(err_of("topology nosuch\n").find("t.exp:1: field 'topology': 'nosuch' not found") != std::string::npos);
	CHECK(err_of("topology star\nschemes none\nworkload incast dst=h1 size=4KB\n")
		      .find("t.exp:3: field 'senders': missing") != std::string::npos);
	CHECK(err_of("topology star\nschemes none\nworkload incast dst=h1 senders=2 size=-4\n")
		      .find("t.exp:3: field 'size'") != std::string::npos);
	CHECK(err_of("topology star\nschemes none\nworkload poisson load=1.5 cdf=websearch duration=1ms\n")
		      .find("t.exp:3: field 'load'") != std::string::npos);
	CHECK(err_of("topology star\nschemes none\nworkload poisson load=0.5 cdf=nosuch duration=1ms\n")
		      .find("t.exp:3: field 'cdf': 'nosuch' not found") != std::string::npos);
	CHECK(err_of("topology star\nschemes none\nworkload bursty\n").find("t.exp:3: field 'workload': unknown workload") !=
	      std::string::npos);
	CHECK(err_of("topology star\nschemes none\nworkload long dst=h1 senders=2 size=1MB window=3us\n")
		      .find("t.exp:3: field 'window': unknown workload long parameter 'window' (dst, senders, size, count, interval, start)") !=
	      std::string::npos);
	CHECK(err_of(std::string(kMin) + "dilation fast\n").find("t.exp:4: field 'dilation'") != std::string::npos);
	CHECK(err_of(std::string(kMin) + "colour blue\n").find("t.exp:4: field 'colour': unknown directive") !=
	      std::string::npos);
	CHECK(err_of(std::string(kMin) + "cc pfc params=paper\n").find("field 'cc': scheme 'pfc' is configured but not") !=
	      std::string::npos);
	CHECK(err_of(std::string(kMin) + "cc dcqcn params=fast\n").find("t.exp:4: field 'params'") != std::string::npos);
	CHECK(err_of("topology star\nworkload incast dst=h1 senders=2 size=4KB\n").find("field 'schemes': missing") !=
	      std::string::npos);
	CHECK(err_of("topology star\nschemes none\n").find("field 'workload': missing") != std::string::npos);
	auto ok = parse_experiment(std::string(kMin) + "cc dcqcn params=paper rai=10Mbps\nmode sr\nattempts 2\n", f, kSchemes);
	REQUIRE(ok.ok());
	CHECK(ok->cc["dcqcn"].params == "paper");
	CHECK(ok->cc["dcqcn"].overrides["rai"] == "10Mbps");
	CHECK(ok->mode == "sr");
	CHECK(ok->attempts == 2);
	// switch lines: keys and values checked against a switch, schemes against the list
	CHECK(err_of(std::string(kMin) + "switch kmin=lots\n").find("t.exp:4: field 'kmin': switch parameter 'kmin'") !=
	      std::string::npos);
	CHECK(err_of(std::string(kMin) + "switch dcqcn colour=red\n").find("t.exp:4: field 'colour': unknown switch parameter") !=
	      std::string::npos);
	CHECK(err_of(std::string(kMin) + "switch dcqcn\n").find("t.exp:4: field 'switch': expected 'switch [SCHEME] KEY=VALUE...'") !=
	      std::string::npos);
	CHECK(err_of(std::string(kMin) + "switch hpcc kmin=1KB\n").find("t.exp:4: field 'switch': no scheme named 'hpcc'") !=
	      std::string::npos);
	CHECK(err_of(std::string(kMin) + "switch pfc kmin=1KB\n").find("t.exp:4: field 'switch': scheme 'pfc' is configured but not") !=
	      std::string::npos);
	CHECK(err_of(std::string(kMin) + "trace 1 x\n").find("t.exp:4: field 'trace': 'x' is not a flow id") != std::string::npos);
	auto sw = parse_experiment(std::string(kMin) + "switch buffer=2MB\nswitch dcqcn kmin=400KB kmax=1600KB\ntrace 0 3\n", f,
				   kSchemes);
	REQUIRE(sw.ok());
	using KV = std::vector<std::pair<std::string, std::string>>;
	CHECK(sw->switch_settings[""] == KV{{"buffer", "2MB"}});
	CHECK(sw->switch_settings["dcqcn"] == KV{{"kmin", "400KB"}, {"kmax", "1600KB"}});
	CHECK(sw->trace_flows == std::vector<uint64_t>{0, 3});
}

TEST_CASE("experiment__single_value_directives_come_from_one_table", "[experiment]")
{
	// Every directive of the table parses, "auto" stands for 0 where the table says so, and a
	// bad value names the file, line, directive and what it accepts.
	const std::string f = data_dir() + "/experiments/t.exp";
	auto ok = parse_experiment(std::string(kMin) +
					   "name x1\ndilation 250\nduration 2ms\nseed 7\nqueue-interval 5us\nmode sr\nattempts 4\n",
				   f, kSchemes);
	REQUIRE(ok.ok());
	CHECK(ok->name == "x1");
	CHECK(ok->dilation == 250);
	CHECK(ok->duration_ns == 2'000'000);
	CHECK(ok->seed == 7);
	CHECK(ok->queue_interval_ns == 5'000);
	CHECK(ok->mode == "sr");
	CHECK(ok->attempts == 4);
	CHECK(experiment_table().describe(*ok) ==
	      "name=x1 dilation=250 duration=2ms seed=7 queue-interval=5us mode=sr attempts=4");
	auto au = parse_experiment(std::string(kMin) + "dilation auto\nqueue-interval auto\n", f, kSchemes);
	REQUIRE(au.ok());
	CHECK(au->dilation == 0);
	CHECK(au->queue_interval_ns == 0);
	CHECK(experiment_table().value(*au, experiment_table().rows()[1]) == "auto");
	const std::vector<std::pair<std::string, std::string>> bad = {
		{"dilation 0.5", "t.exp:4: field 'dilation': experiment parameter 'dilation': '0.5' is not a number in [1, 100000] or auto"},
		{"duration 0s", "t.exp:4: field 'duration': experiment parameter 'duration': '0s' is outside"},
		{"duration fast", "t.exp:4: field 'duration': experiment parameter 'duration':"},
		{"seed -1", "t.exp:4: field 'seed': experiment parameter 'seed': '-1' is not an integer"},
		{"queue-interval never", "t.exp:4: field 'queue-interval': experiment parameter 'queue-interval':"},
		{"mode irn", "t.exp:4: field 'mode': experiment parameter 'mode': 'irn' is not gbn or sr"},
		{"attempts 11", "t.exp:4: field 'attempts': experiment parameter 'attempts': '11' is not an integer in [1, 10]"},
		{"attempts 2 3", "t.exp:4: field 'attempts': expected 'attempts VALUE'"},
	};
	for (const auto &[line, want] : bad) {
		INFO(line);
		CHECK(err_of(std::string(kMin) + line + "\n").find(want) != std::string::npos);
	}
	// the unknown-directive message lists the table's names
	CHECK(err_of(std::string(kMin) + "colour blue\n").find("name, dilation, duration, seed, queue-interval, mode, attempts") !=
	      std::string::npos);
}

TEST_CASE("preset__parse_apply_and_errors", "[experiment]")
{
	for (const char *name : {"dcqcn-40g", "pbfs-25-100g", "sfc-100-400g"}) {
		auto p = load_preset(data_dir() + "/presets/" + name + ".preset");
		INFO(name);
		REQUIRE(p.ok());
		CHECK(p->name == name);
		CHECK(p->host_rate_bps > 0);
	}
	auto p = load_preset(data_dir() + "/presets/pbfs-25-100g.preset");
	REQUIRE(p.ok());
	CHECK(p->host_rate_bps == 25'000'000'000ULL);
	CHECK(p->fabric_rate_bps == 100'000'000'000ULL);
	CHECK(p->paper == "pbfs");
	auto t = parse_topology("name t\nswitch s1\nswitch s2\nhost a\nhost b\nlink a s1\nlink s1 s2\nlink s2 b\n", "t.topo");
	REQUIRE(t.ok());
	apply_preset(*t, *p);
	CHECK(t->links[0].rate_bps == 25'000'000'000ULL); // host link
	CHECK(t->links[1].rate_bps == 100'000'000'000ULL); // switch link
	CHECK(t->links[1].delay_ns == 2'000);
	CHECK(t->links[2].mtu == 1048);
	auto bad = [](const char *text) {
		auto r = parse_preset(text, "x.preset");
		REQUIRE_FALSE(r.ok());
		return r.error().message;
	};
	CHECK(bad("host-rate 10Gbps\nmtu 9000\n").find("x.preset:2: field 'mtu'") != std::string::npos);
	CHECK(bad("host-rate 10Gbps\nmtu 4000\n").find("outside [576, 3506]") != std::string::npos);
	CHECK(bad("host-rate fast\nmtu 1500\n").find("x.preset:1: field 'host-rate'") != std::string::npos);
	CHECK(bad("mtu 1500\n").find("field 'host-rate': missing") != std::string::npos);
	CHECK(bad("host-rate 10Gbps\nmtu 1500\nspeed 3\n").find("x.preset:3: field 'speed': unknown key") != std::string::npos);
}

TEST_CASE("ns3_flows__parse_and_errors", "[experiment]")
{
	auto f = parse_ns3_flows("2\n0 3 3 100 20000 2.000001\n1 3 3 200 4000 2.0000015\n", "flow.txt");
	REQUIRE(f.ok());
	REQUIRE(f->size() == 2);
	CHECK((*f)[0].src == 0);
	CHECK((*f)[0].dst == 3);
	CHECK((*f)[0].dport == 100);
	CHECK((*f)[0].size == 20000);
	CHECK((*f)[0].start_ns == 2'000'001'000ULL);
	CHECK((*f)[1].start_ns == 2'000'001'500ULL);
	auto bad = [](const char *text) {
		auto r = parse_ns3_flows(text, "flow.txt");
		REQUIRE_FALSE(r.ok());
		return r.error().message;
	};
	CHECK(bad("3\n0 3 3 100 20000 2.0\n").find("flow.txt:2: field 'count': the first line says 3 flows, the file has 1") !=
	      std::string::npos);
	CHECK(bad("1\n0 3 3 100 20000\n").find("flow.txt:2: field 'flow': expected") != std::string::npos);
	CHECK(bad("1\n0 x 3 100 20000 2.0\n").find("flow.txt:2: field 'dst'") != std::string::npos);
	CHECK(bad("1\n0 3 3 100 0 2.0\n").find("flow.txt:2: field 'size'") != std::string::npos);
	CHECK(bad("1\n0 3 3 100 10 -1\n").find("flow.txt:2: field 'start_s'") != std::string::npos);
	CHECK(bad("1\n3 3 3 100 10 1\n").find("flow.txt:2: field 'dst': the same node") != std::string::npos);
	CHECK(bad("two\n").find("flow.txt:1: field 'count'") != std::string::npos);
}

TEST_CASE("shipped_cdfs__load_and_keep_their_provenance", "[experiment]")
{
	for (const char *f : {"WebSearch_distribution.txt", "FbHdp_distribution.txt", "GoogleRPC2008.txt", "AliStorage2019.txt"}) {
		INFO(f);
		auto c = Cdf::load(data_dir() + "/workloads/" + f);
		REQUIRE(c.ok());
		CHECK(c->points().back().second == 100);
	}
	std::ifstream readme(data_dir() + "/workloads/README.md");
	std::string text((std::istreambuf_iterator<char>(readme)), std::istreambuf_iterator<char>());
	CHECK(text.find("HPCC") != std::string::npos);
}

TEST_CASE("dcqcn_derive__paper_fabric_keeps_values_others_scale", "[experiment]")
{
	// 40 Gbit/s, base RTT 5 us (< 50 us): s_C = 1, s_T = 1 -> the paper's values
	auto d = cc::derive("dcqcn", cc::Fabric{40'000'000'000ULL, 5'000, 1500}, true);
	REQUIRE(d.ok());
	CHECK(d->overrides["rai"] == "40000000bps");
	CHECK(d->overrides["t"] == "55000ns");
	CHECK(d->overrides["n"] == "50000ns");
	CHECK(d->overrides["b"] == "10000000");
	auto sw = [&](const cc::Derived &x, const std::string &k) {
		for (const auto &[kk, v] : x.switch_settings)
			if (kk == k)
				return v;
		return std::string();
	};
	CHECK(sw(*d, "kmin") == "5000");
	CHECK(sw(*d, "kmax") == "200000");
	CHECK(sw(*d, "ecn_at") == "dequeue"); // common.md §3's recommendation
	// 10 Gbit/s: s_C = 1/4 -> Kmax 50 KB, Kmin at least 2 MTU (4096), R_AI 10 Mbit/s
	d = cc::derive("dcqcn", cc::Fabric{10'000'000'000ULL, 7'000, 2048}, true);
	REQUIRE(d.ok());
	CHECK(sw(*d, "kmax") == "50000");
	CHECK(sw(*d, "kmin") == "4096");
	CHECK(d->overrides["rai"] == "10000000bps");
	CHECK(d->overrides["rmin"] == "25000000bps");
	// a 100 us base RTT: N = 100 us, s_T = 2 -> T = 110 us, Kmax x 2
	d = cc::derive("dcqcn", cc::Fabric{40'000'000'000ULL, 100'000, 1500}, true);
	REQUIRE(d.ok());
	CHECK(d->overrides["n"] == "100000ns");
	CHECK(d->overrides["t"] == "110000ns");
	CHECK(sw(*d, "kmax") == "400000");
	// unscaled: the paper's switch thresholds, no overrides
	d = cc::derive("dcqcn", cc::Fabric{10'000'000'000ULL, 7'000, 2048}, false);
	REQUIRE(d.ok());
	CHECK(d->overrides.empty());
	CHECK(sw(*d, "kmax") == "200000");
	// every derived override is accepted by the scheme
	d = cc::derive("dcqcn", cc::Fabric{25'000'000'000ULL, 12'000, 1048}, true);
	cc::Setup s;
	s.scheme = "dcqcn";
	s.overrides = d->overrides;
	s.line_rate_bps = 25'000'000'000ULL;
	CHECK(cc::make(s).ok());
	CHECK_FALSE(cc::derive("hpcc", cc::Fabric{1, 1, 1500}, true).ok());
	CHECK(sw(*cc::derive("none", cc::Fabric{1, 1, 1500}, true), "pfc") == "off");
}
