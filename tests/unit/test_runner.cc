// The experiment library without a fabric (control/calibration.h, control/runner.h,
// control/report.h): the D rule against hand-computed cases, the next attempt's D, switch
// counters aggregated by name over switches and ports (gauges left out), host counters summed,
// a counter nobody listed reaching summary.csv, summary.json, summary.md and counters.txt by name,
// the switch settings a scheme runs with (derived, then the experiment's lines), the summary's
// figures from flow results, and `compare` matching columns by name.
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "control/calibration.h"
#include "control/experiment.h"
#include "control/report.h"
#include "control/runner.h"
#include "control/swcfg.h"

using namespace qn;
using namespace qn::tp;
namespace fs = std::filesystem;

TEST_CASE("dilation_rule__hand_computed_cases", "[runner]")
{
	// 8 senders x 10 Gbit/s offered, 2 Gbit/s moved at D=1 -> d_cpu 40; jitter 20 us over 5% of
	// a 10 us RTT (500 ns) -> d_timer 40; 2 x 40 = 80 (a multiple of 10 already)
	DChoice c = dilation_rule(DRuleInput{80e9, 2e9, 4e9, 20'000, 10'000});
	CHECK(c.d_cpu == Approx(40));
	CHECK(c.d_timer == Approx(40));
	CHECK(c.d == 80);
	CHECK(c.d_pair == 80); // 80/4 = 20 < d_timer 40 -> 2 x 40
	CHECK_FALSE(c.clamped);
	// the CPU term dominates and is rounded up to 10: 80/3 = 26.7 -> 53.3 -> 60
	c = dilation_rule(DRuleInput{80e9, 3e9, 0, 1'000, 10'000});
	CHECK(c.d_timer == Approx(2));
	CHECK(c.d == 60);
	CHECK(c.d_pair == 0); // not measured
	// a fast machine: every term below 1 -> 2 x 1 = 2 -> 10
	c = dilation_rule(DRuleInput{1e9, 100e9, 0, 10, 10'000});
	CHECK(c.d == 10);
	// beyond the largest factor: clamped, and said so
	c = dilation_rule(DRuleInput{80e9, 1e6, 0, 1'000, 10'000});
	CHECK(c.clamped);
	CHECK(c.d == kMaxDilation);
	// nothing measured: no division by zero, the largest factor, clamped
	c = dilation_rule(DRuleInput{80e9, 0, 0, 1'000, 10'000});
	CHECK(c.clamped);
	CHECK(c.d == kMaxDilation);
	c = dilation_rule(DRuleInput{80e9, 1e9, 0, 1'000, 0});
	CHECK(c.clamped);
}

TEST_CASE("next_dilation__one_and_a_half_rounded_up_to_ten_capped", "[runner]")
{
	CHECK(next_dilation(100) == 150);
	CHECK(next_dilation(110) == 170); // 165 -> 170
	CHECK(next_dilation(7) == 20);    // 10.5 -> 20
	CHECK(next_dilation(90000) == kMaxDilation);
}

TEST_CASE("paced_dilation__half_busy_and_half_a_frame_per_pass_at_most", "[runner]")
{
	PacedTrial t;
	t.d = 200;
	t.frame_wall_ns = 340'000;
	// both within half: D stays
	t.busy_frac = 0.4;
	t.pass_p90_wall_ns = 170'000;
	CHECK(paced_dilation(t) == 200);
	// busy 98%: D x 0.98 / 0.5 = 392 -> 400
	t.busy_frac = 0.98;
	CHECK(paced_dilation(t) == 400);
	// the pass term binds: 1.32 frame times -> 200 x 2.64 = 528 -> 530
	t.busy_frac = 0.3;
	t.pass_p90_wall_ns = 448'800;
	CHECK(paced_dilation(t) == 530);
	// the larger of the two
	t.busy_frac = 1.5;
	CHECK(paced_dilation(t) == 600);
	// capped; no frame time: only busy counts
	t.d = 90000;
	CHECK(paced_dilation(t) == kMaxDilation);
	t.d = 100;
	t.frame_wall_ns = 0;
	t.busy_frac = 0.2;
	CHECK(paced_dilation(t) == 100);
}

TEST_CASE("paced_search__grows_at_most_4x_then_bisects_to_the_smallest_passing_d", "[runner]")
{
	// a machine whose checks pass from D = 330 up; a failing check asks for 10x its D
	std::vector<double> tried;
	auto machine = [&](double d, PacedTrial &t) {
		tried.push_back(d);
		t.d = d;
		t.need = d >= 330 ? d : d * 10;
		return true;
	};
	// 100 fails and asks for 1000: capped at 4x, 400 passes; the bisection tries 200 and 290, both
	// fail: 400 stays
	CHECK(paced_search(100, machine) == 400);
	CHECK(tried == std::vector<double>{100, 400, 200, 290});
	// the bisection keeps a passing midpoint: from 160, 640 passes, then 320 fails, 460 passes
	tried.clear();
	CHECK(paced_search(160, machine) == 460);
	CHECK(tried == std::vector<double>{160, 640, 320, 460});
	// passes at once: one check
	tried.clear();
	CHECK(paced_search(500, machine) == 500);
	CHECK(tried == std::vector<double>{500});
	// never passes: the last answer, unchecked, capped
	tried.clear();
	auto never = [&](double d, PacedTrial &t) {
		tried.push_back(d);
		t.need = d * 2;
		return true;
	};
	CHECK(paced_search(100, never) == 800);
	CHECK(tried.size() == 3);
	// a check that stops the search
	CHECK(paced_search(100, [](double, PacedTrial &) { return false; }) == 0);
}

namespace {

SwitchCounters sw(std::initializer_list<std::pair<uint64_t, uint64_t>> marks_drops, uint64_t peak)
{
	SwitchCounters c;
	for (auto [m, d] : marks_drops) {
		PortCounters p;
		p.s.ecn_marked = m;
		p.s.drops[QN_DROP_BUFFER] = d;
		p.s.rx_pkts = 10 * m;
		p.q.peak_bytes = peak;
		c.ports.push_back(p);
	}
	return c;
}

} // namespace

TEST_CASE("switch_counter_delta__sums_ports_and_switches_by_name", "[runner]")
{
	// two switches: s1 with two ports, s2 with one; before/after per port
	std::vector<SwitchCounters> before = {sw({{5, 1}, {0, 0}}, 1000), sw({{7, 0}}, 0)};
	std::vector<SwitchCounters> after = {sw({{15, 4}, {2, 0}}, 9000), sw({{10, 2}}, 500)};
	Counters c = switch_counter_delta(before, after);
	CHECK(c.at("switch.ecn_marked") == (15 - 5) + (2 - 0) + (10 - 7));
	CHECK(c.at("switch.drops.buffer") == 3 + 0 + 2);
	CHECK(c.at("switch.drops") == 5);
	CHECK(c.at("switch.rx_pkts") == 10 * 15);
	// gauges are not counters: the queue series report them
	CHECK(c.count("switch.queue_peak_bytes") == 0);
	CHECK(c.count("switch.queue_bytes") == 0);
	// a port that appeared after `before` counts from zero
	after[1].ports.push_back(after[1].ports[0]);
	c = switch_counter_delta(before, after);
	CHECK(c.at("switch.ecn_marked") == 15 + 10);
	// a counter that went backwards (a reloaded map) adds nothing rather than wrapping
	after = {sw({{1, 0}, {0, 0}}, 0), sw({{7, 0}}, 0)};
	CHECK(switch_counter_delta(before, after).at("switch.ecn_marked") == 0);
}

TEST_CASE("host_counter_sum__every_field_by_name", "[runner]")
{
	HostCounters a, b;
	a.cnp_rx = 3;
	b.cnp_rx = 4;
	a.pfc_xoff = 2;
	b.paused_ns[3] = 1000;
	b.bad[size_t(ParseError::BadBth)] = 5;
	a.bad[size_t(ParseError::TooShort)] = 1;
	Counters c = host_counter_sum({a, b});
	CHECK(c.at("host.cnp_rx") == 7);
	CHECK(c.at("host.pfc_xoff") == 2);
	CHECK(c.at("host.paused_ns.prio3") == 1000);
	CHECK(c.at("host.malformed.bad_bth") == 5);
	CHECK(c.at("host.malformed") == 6);
	// an instant is the latest over hosts, not a sum
	a.pfc_last_pause_at_ns = 7'000;
	b.pfc_last_pause_at_ns = 5'000;
	a.pfc_pauses = b.pfc_pauses = 2;
	c = host_counter_sum({a, b});
	CHECK(c.at("host.pfc_last_pause_at_ns") == 7'000);
	CHECK(c.at("host.pfc_pauses") == 4);
	// every HostCounters field has a name (a new field without one would be missing here)
	CHECK(host_counters_by_name(a).size() == 23 + 8 + (size_t(ParseError::Count) - 1) + 1);
}

TEST_CASE("switch_settings_for__derived_then_all_schemes_then_the_scheme", "[runner]")
{
	auto x = parse_experiment("topology star\nparam N=3\nschemes none dcqcn\nworkload incast dst=h1 senders=2 "
				  "size=4KB\nswitch buffer=2MB kmin=10KB\nswitch dcqcn kmin=400KB kmax=1600KB pmax=0.2\n",
				  "t.exp", std::vector<std::string>{"none", "dcqcn"});
	REQUIRE(x.ok());
	const std::vector<std::pair<std::string, std::string>> derived = {{"pfc", "on"}, {"kmin", "4096"}};
	auto none = switch_settings_for(*x, "none", derived);
	auto dcqcn = switch_settings_for(*x, "dcqcn", derived);
	using KV = std::vector<std::pair<std::string, std::string>>;
	CHECK(none == KV{{"pfc", "on"}, {"kmin", "4096"}, {"buffer", "2MB"}, {"kmin", "10KB"}});
	CHECK(dcqcn == KV{{"pfc", "on"},	{"kmin", "4096"}, {"buffer", "2MB"}, {"kmin", "10KB"},
			  {"kmin", "400KB"}, {"kmax", "1600KB"}, {"pmax", "0.2"}});
	// applied in order, the last one wins
	qn_swcfg cfg = default_swcfg(12'000'000);
	for (const auto &[k, v] : dcqcn)
		REQUIRE(apply_swcfg(cfg, k, v).ok());
	CHECK(cfg.red.kmin_bytes == 400'000);
	CHECK(cfg.red.kmax_bytes == 1'600'000);
	CHECK(cfg.red.pmax_ppm == 200'000);
	CHECK(cfg.buffer.bytes == 2'000'000);
	// every setting reads back to the same value through its exact words
	qn_swcfg again = default_swcfg(1);
	for (const auto &[k, v] : swcfg_values(cfg))
		REQUIRE(apply_swcfg(again, k, v).ok());
	CHECK(std::memcmp(&again, &cfg, sizeof(cfg)) == 0);
}

namespace {

FlowResult flow(uint64_t id, uint64_t size, bool done, uint64_t fct, uint64_t standalone)
{
	FlowResult f;
	f.spec = FlowSpec{id, "h2", "h1", size, 0, 100};
	f.done = done;
	f.fct_ns = fct;
	f.standalone_ns = standalone;
	f.content_ok = done;
	return f;
}

ExperimentRun fake_run(size_t nflows)
{
	ExperimentRun r;
	r.x.name = "unit";
	r.x.source = "unit.exp";
	r.x.schemes = {"none", "dcqcn"};
	r.cal.d = 40;
	r.cal.base_rtt_min_ns = 8000;
	r.hash = 0xabcdef;
	r.flows.resize(nflows);
	return r;
}

SchemeResult fake_scheme(const std::string &name, uint64_t novel)
{
	SchemeResult s;
	s.scheme = name;
	s.rep.flows = {flow(0, 1000, true, 2000, 1000), flow(1, 2000, true, 3000, 1000), flow(2, 64'000, true, 40'000, 10'000),
		       flow(3, 64'000, true, 50'000, 10'000)};
	s.rep.delivered_bytes = 131'000;
	s.rep.elapsed_ns = 1'000'000;
	summarize_flows(s, 4);
	s.counters = {{"switch.ecn_marked", 12}, {"host.cnp_rx", 3}, {"qp.retransmitted", 0}};
	if (novel)
		s.counters["switch.novel_counter"] = novel; // a counter no report code names
	s.switch_applied = {{"kmin", "400KB"}};
	s.switch_in_force = {SwitchInForce{"tor", {{"kmin", "400000"}, {"kmax", "1600000"}}}};
	s.d = 40;
	return s;
}

std::string slurp(const fs::path &p)
{
	std::ifstream f(p);
	std::stringstream ss;
	ss << f.rdbuf();
	return ss.str();
}

} // namespace

TEST_CASE("summarize_flows__figures_and_reasons_from_flow_results", "[runner]")
{
	SchemeResult s = fake_scheme("none", 0);
	CHECK(s.done == 4);
	CHECK(s.sent_bytes == 131'000);
	// slowdowns 2, 3, 4, 5 (floored at 1): p50 index 2 -> 4
	CHECK(s.sd == std::vector<double>{2, 3, 4, 5});
	CHECK(percentile(s.sd, 0.5) == 4);
	CHECK(s.goodput_gbps == Approx(131'000 * 8 / 1e6)); // bytes over 1 ms, Gbit/s
	CHECK(s.valid);
	// 4 flows in 1 bin (n/5 bins, at least 1)
	CHECK(s.bins.size() == 1);
	// a flow not done and a content error make the run INVALID with both reasons
	s.rep.flows[1].done = false;
	s.rep.flows[0].content_ok = false;
	summarize_flows(s, 4);
	CHECK_FALSE(s.valid);
	REQUIRE(s.reasons.size() == 2);
	CHECK(s.reasons[0] == "1 flows did not complete within the time limit");
	CHECK(s.reasons[1] == "1 flows delivered wrong content");
	s.rep.interrupted = true;
	summarize_flows(s, 4);
	CHECK(s.reasons[0].rfind("interrupted by a signal", 0) == 0);
}

TEST_CASE("reports__a_new_counter_reaches_every_output_by_name", "[runner]")
{
	ExperimentRun r = fake_run(4);
	std::vector<SchemeResult> rs = {fake_scheme("none", 0), fake_scheme("dcqcn", 77)};
	// summary.csv: a column per counter any scheme has, 0 where a scheme lacks it
	const std::string csv = summary_csv(r, rs);
	std::istringstream is(csv);
	std::string header, l1, l2;
	std::getline(is, header);
	std::getline(is, l1);
	std::getline(is, l2);
	CHECK(header.find(",c.switch.novel_counter") != std::string::npos);
	CHECK(header.find(",c.switch.ecn_marked") != std::string::npos);
	CHECK(l1.rfind("none,1,4,4,", 0) == 0);
	// the columns are in name order: host.cnp_rx, qp.retransmitted, switch.ecn_marked, switch.novel_counter
	CHECK(l1.substr(l1.size() - 9) == ",3,0,12,0");
	CHECK(l2.substr(l2.size() - 10) == ",3,0,12,77");
	// summary.json: exact integers under counters, the settings in force per switch
	auto j = nlohmann::json::parse(summary_json(r, rs));
	CHECK(j["flows"] == 4);
	CHECK(j["flow_hash"] == "0000000000abcdef");
	CHECK(j["schemes"][1]["counters"]["switch.novel_counter"] == 77);
	CHECK(j["schemes"][0]["counters"].count("switch.novel_counter") == 0);
	CHECK(j["schemes"][1]["switch_in_force"]["tor"]["kmin"] == "400000");
	CHECK(j["schemes"][1]["switch_applied"]["kmin"] == "400KB");
	CHECK(j["schemes"][0]["fct_ns"]["p50"] == 40'000);
	CHECK(j["schemes"][0]["slowdown"]["p99"] == 5.0);
	CHECK(j["valid"] == true);
	// summary.md: the counters section by name, the headline table, the settings in force
	const std::string md = summary_markdown(r, rs, "meta\n", false);
	CHECK(md.find("switch.novel_counter=77") != std::string::npos);
	CHECK(md.find("in force at tor: `kmin=400000 kmax=1600000`") != std::string::npos);
	CHECK(md.find("| dcqcn | VALID | 40 | 4/4 |") != std::string::npos);
	// every headline counter is a column (CNPs = host.cnp_rx = 3, PAUSE, drops, tail drops 0,
	// ECN marks = 12, retx 0); no scheme of this run asks for more
	const std::string table = summary_table(r, rs);
	CHECK(table.find("| CNPs ") != std::string::npos);
	CHECK(table.find("| 3 | 0 | 0 | 0 | 12 | 0 |") != std::string::npos);
	CHECK(table.find("FS drops") == std::string::npos);
	// a scheme's parts add their own columns (cc::summary_columns), each once: LDCP's fast-start
	// drops, PB-FS's postcards and ignored postcards
	r.x.schemes = {"none", "ldcp", "dcqcn/pbfs", "dcqcn+w/pbfs:lossy"};
	const auto cols = headline_counters(r.x.schemes);
	REQUIRE(cols.size() == 10);
	CHECK(cols[6].title == "FS drops");
	CHECK(cols[6].counter == "switch.drops.ldcp_not_ect");
	CHECK(cols[7].counter == "cc.pbfs.postcards/cc.pbfs.eligible");
	CHECK(cols[8].counter == "cc.pbfs.ignored");
	CHECK(cols[9].counter == "loop.postcard.p50_ns");
	CHECK(summary_table(r, rs).find("| FS drops | postcards/eligible flow | PB-FS ignored | postcard loop p50 ns |") !=
	      std::string::npos);
	// an A/B column shows A over B, "-" where B is 0
	rs[1].counters["cc.pbfs.postcards"] = 6;
	rs[1].counters["cc.pbfs.eligible"] = 4;
	rs[1].counters["loop.postcard.p50_ns"] = 22195;
	const std::string t2 = summary_table(r, rs);
	CHECK(t2.find("| 0 | 1.50 | 0 | 22195 |") != std::string::npos);
	CHECK(t2.find("| 0 | - | 0 | 0 |") != std::string::npos);
	// a scheme that refused the fabric is listed with its reason under the table
	r.skipped = {{"dcqcn/pbfs", "N = 0 < 2"}};
	CHECK(summary_table(r, rs).find("\nskipped dcqcn/pbfs: N = 0 < 2\n") != std::string::npos);
	CHECK(summary_json(r, rs).find("\"reason\": \"N = 0 < 2\"") != std::string::npos);
	r.skipped.clear();
	// counters.txt and metadata lines
	const fs::path dir = fs::temp_directory_path() / ("qn-unit-report-" + std::to_string(getpid()));
	REQUIRE(write_scheme_files(dir.string(), rs[1]).ok());
	CHECK(slurp(dir / "dcqcn" / "counters.txt").find("switch.novel_counter 77\n") != std::string::npos);
	CHECK(scheme_metadata(rs[1]).find("switch_in_force dcqcn tor kmin=400000 kmax=1600000\n") != std::string::npos);
	fs::remove_all(dir);
}

TEST_CASE("compare_runs__ratios_by_column_name", "[runner]")
{
	const fs::path base = fs::temp_directory_path() / ("qn-unit-compare-" + std::to_string(getpid()));
	fs::create_directories(base / "a");
	fs::create_directories(base / "b");
	std::ofstream(base / "a" / "summary.csv") << "scheme,valid,goodput_gbps,c.switch.drops,flow_hash\n"
						    "dcqcn,1,10,4,00ff\nnone,1,5,0,00ff\n";
	// B: columns in another order, a counter A lacks, a scheme A lacks
	std::ofstream(base / "b" / "summary.csv") << "scheme,goodput_gbps,valid,c.switch.drops,c.host.new,flow_hash\n"
						    "dcqcn,12.5,1,2,9,00ff\npcn,1,1,0,0,00ff\n";
	int matched = -1;
	auto t = compare_runs((base / "a").string(), (base / "b").string(), matched);
	REQUIRE(t.ok());
	CHECK(matched == 1);
	CHECK(t->find("columns only in " + (base / "b").string() + ": c.host.new") != std::string::npos);
	CHECK(t->find("\nB / A                                     dcqcn\n") != std::string::npos);
	CHECK(t->find("\ngoodput_gbps                              1.250\n") != std::string::npos);
	CHECK(t->find("\nc.switch.drops                            0.500\n") != std::string::npos);
	CHECK(t->find("\nc.host.new                                  -/9\n") != std::string::npos);
	CHECK(t->find("none only in") != std::string::npos);
	CHECK(t->find("pcn only in") != std::string::npos);
	// not a summary: the file and line named
	std::ofstream(base / "b" / "summary.csv") << "scheme,valid\ndcqcn,1,extra\n";
	t = compare_runs((base / "a").string(), (base / "b").string(), matched);
	REQUIRE_FALSE(t.ok());
	CHECK(t.error().to_string().find("summary.csv:2: 3 fields, the header has 2") != std::string::npos);
	fs::remove_all(base);
}

TEST_CASE("expected_attempt_wall_s__span_plus_bytes_through_one_link_times_d", "[runner]")
{
	ExperimentRun r = fake_run(0);
	r.cal.host_rate_bps = 10'000'000'000ULL;
	r.x.duration_ns = 1'000'000'000;
	CHECK(expected_attempt_wall_s(r, 100) == Approx(2.0)); // no flow: the fixed cost
	// Two flows of 1.25 MB (1 ms each at 10 Gbit/s), the last starting at 3 ms: 5 ms of
	// fabric, 0.5 s at D=100, plus the 2 s fixed cost.
	r.flows.resize(2);
	r.flows[0].size = 1'250'000;
	r.flows[1].size = 1'250'000;
	r.flows[1].start_ns = 3'000'000;
	CHECK(expected_attempt_wall_s(r, 100) == Approx(2.5));
	CHECK(expected_attempt_wall_s(r, 1000) == Approx(7.0));
	CHECK(expected_attempt_wall_s(r, 1000, 0) == Approx(5.0));
	// Capped by the experiment's time limit after the last start (4 ms in all here).
	r.x.duration_ns = 1'000'000;
	CHECK(expected_attempt_wall_s(r, 1000, 0) == Approx(4.0));
}
