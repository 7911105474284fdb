// The switch's settings and counters come from one table each (docs/switch.md): the key table
// generates parsing, defaults, describe and exact values; QN_PORT_COUNTERS the counters' names,
// their per-CPU sum and the JSON of `quench switch stats`.
#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "control/stats.h"
#include "control/swcfg.h"

using namespace qn;

TEST_CASE("switch_stats_json__keeps_every_counter_shown_before_the_tables", "[switch][tables]")
{
	// The JSON keys `quench switch stats --format json` printed before the counters became a
	// table (main 37698a9): none may disappear.
	const char *before[] = {"rx_pkts", "rx_bytes", "tx_pkts", "tx_bytes", "tx_ctrl_pkts", "tx_data_pkts",
				"rx_nonlinear", "ecn_marked", "ecn_ect", "pfc_xoff_sent", "pfc_xon_sent", "pfc_rx",
				"paused_wall_ns", "mirrored", "queue_peak_bytes", "queue_bytes", "queue_pkts",
				"drops.none", "drops.truncated", "drops.not_ipv4", "drops.bad_ip", "drops.ttl",
				"drops.no_route", "drops.unknown_port", "drops.host_bts", "drops.host_postcard",
				"drops.host_pfc", "drops.malformed_roce", "drops.vlan_depth", "drops.pfc_frame",
				"drops.redirect", "drops.buffer", "drops.injected", "drops"};
	SwitchCounters c;
	c.topology = "t";
	c.sw = "s1";
	c.cfg = default_swcfg(1'000'000);
	PortCounters p;
	p.ifname = "s1-p1";
	// Every counter field a distinct value, so a name bound to the wrong field shows.
	uint64_t k = 1;
	for (const auto &ci : port_counter_info()) {
		uint64_t v = 1000 + k++;
		std::memcpy(reinterpret_cast<unsigned char *>(&p.s) + ci.offset, &v, sizeof(v));
	}
	p.s.drops[QN_DROP_BUFFER] = 7;
	c.ports.push_back(p);
	auto j = nlohmann::json::parse(counters_json({c}));
	const auto &cj = j["switches"][0]["ports"][0]["counters"];
	for (const char *name : before)
		CHECK(cj.contains(name));
	k = 1;
	for (const auto &ci : port_counter_info())
		CHECK(cj[ci.name].get<uint64_t>() == 1000 + k++);
	CHECK(cj["paused_wall_ns"].get<uint64_t>() == p.s.paused_wall_ns);
	CHECK(cj["drops.buffer"] == 7);
	CHECK(cj["drops"] == 7);
	// The per-CPU sum covers every counter of the table.
	qn_port_stats sum{};
	accumulate(sum, p.s);
	accumulate(sum, p.s);
	for (const auto &ci : port_counter_info())
		CHECK(port_counter(sum, ci) == 2 * port_counter(p.s, ci));
	// The table shows every counter that has a column, and the others on the detail line.
	const std::string text = format_counters(c);
	for (const auto &ci : port_counter_info())
		CHECK(text.find(ci.column[0] ? ci.column : ci.name) != std::string::npos);
}

TEST_CASE("swcfg_table__one_table_drives_parse_defaults_describe_and_values", "[switch][tables]")
{
	const qn_swcfg d = default_swcfg(12'000'000);
	// The documented defaults.
	CHECK(d.buffer.bytes == 12'000'000);
	CHECK(d.buffer.admission == 1);
	CHECK(d.buffer.alpha_data_ppm == 1'000'000);
	CHECK(d.buffer.alpha_ctrl_ppm == 8'000'000);
	CHECK(d.red.on == 1);
	CHECK(d.red.kmin_bytes == 5'000);
	CHECK(d.red.kmax_bytes == 200'000);
	CHECK(d.red.pmax_ppm == 10'000);
	CHECK(d.pfc.on == 0);
	CHECK(d.pfc.quanta == 65535);
	CHECK(d.test.on == 0);
	// Every key appears in describe, in swcfg_values and in the unknown-key error.
	const std::string desc = describe_swcfg(d);
	qn_swcfg x = d;
	auto err = apply_swcfg(x, "colour", "red");
	REQUIRE(!err.ok());
	std::set<std::string> keys;
	for (const auto &[kk, v] : swcfg_values(d))
		keys.insert(kk);
	for (const auto &p : swcfg_table().rows()) {
		CHECK(desc.find(std::string(p.name) + "=") != std::string::npos);
		CHECK(keys.count(p.name) == 1);
		CHECK(err.error().message.find(p.name) != std::string::npos);
	}
	// Bad values name the key and what it accepts.
	CHECK(apply_swcfg(x, "pmax", "2").error().message.find("'pmax'") != std::string::npos);
	CHECK(apply_swcfg(x, "queue", "fast").error().message.find("auto, real or virtual") != std::string::npos);
	CHECK(apply_swcfg(x, "kmin", "lots").error().message.find("'kmin'") != std::string::npos);
	// Fractions are stored in millionths; choices by index; flags 0/1.
	REQUIRE(apply_swcfg(x, "alpha", "0.125").ok());
	CHECK(x.buffer.alpha_data_ppm == 125'000);
	REQUIRE(apply_swcfg(x, "ecn_at", "dequeue").ok());
	CHECK(x.red.at_dequeue == 1);
	REQUIRE(apply_swcfg(x, "queue", "virtual").ok());
	CHECK(x.buffer.queue_mode == QN_QMODE_VIRTUAL);
	// A test knob switches the one check on; clearing it switches it off again.
	REQUIRE(apply_swcfg(x, "mirror_dport", "5555").ok());
	CHECK(x.test.on == 1);
	REQUIRE(apply_swcfg(x, "mirror_dport", "0").ok());
	CHECK(x.test.on == 0);
	REQUIRE(apply_swcfg(x, "mirror_signal", "postcard").ok());
	CHECK(x.test.mirror_signal == QN_SIG_POSTCARD - QN_SIG_ECHO);
	CHECK(x.test.on == 1); // any non-default knob counts, even one without effect alone
	// Contradictions are refused.
	qn_swcfg y = d;
	REQUIRE(apply_swcfg(y, "kmin", "300KB").ok());
	CHECK(!validate_swcfg(y).ok());
}

TEST_CASE("swcfg__ecn_before_pfc_names_the_values_that_break_it", "[switch][tables]")
{
	// 10 ports: one ingress account can be fed by 9 egress queues (DCQCN §4's worst case).
	qn_swcfg c = default_swcfg(12'000'000);
	REQUIRE(apply_swcfg(c, "ecn", "on").ok());
	REQUIRE(apply_swcfg(c, "pfc", "on").ok());
	REQUIRE(apply_swcfg(c, "pfc_alpha", "0").ok());
	REQUIRE(apply_swcfg(c, "xoff", "90000").ok());
	REQUIRE(apply_swcfg(c, "xon", "45000").ok());
	REQUIRE(apply_swcfg(c, "kmax", "200000").ok());
	// static XOFF 90 KB: 9 x 9,999 B = 89,991 B < 90 KB holds; 9 x 10 KB = 90 KB does not
	REQUIRE(apply_swcfg(c, "kmin", "9999").ok());
	CHECK(ecn_before_pfc(c, 10, 0).empty());
	REQUIRE(apply_swcfg(c, "kmin", "10000").ok());
	const std::string w = ecn_before_pfc(c, 10, 0);
	CHECK_THAT(w, Catch::Contains("kmin 10000 B"));
	CHECK_THAT(w, Catch::Contains("xoff 90000 B"));
	CHECK_THAT(w, Catch::Contains("9 ports"));
	// either mechanism off: nothing to order
	qn_swcfg off = c;
	REQUIRE(apply_swcfg(off, "pfc", "off").ok());
	CHECK(ecn_before_pfc(off, 10, 0).empty());
	off = c;
	REQUIRE(apply_swcfg(off, "ecn", "off").ok());
	CHECK(ecn_before_pfc(off, 10, 0).empty());
	// dynamic XOFF, alpha 1: Kmin < (12 MB - 2 MB) / (9 x 2) = 555,555 B
	REQUIRE(apply_swcfg(c, "pfc_alpha", "1").ok());
	REQUIRE(apply_swcfg(c, "kmin", "555000").ok());
	REQUIRE(apply_swcfg(c, "kmax", "600000").ok());
	CHECK(ecn_before_pfc(c, 10, 2'000'000).empty());
	REQUIRE(apply_swcfg(c, "kmin", "556000").ok());
	CHECK_THAT(ecn_before_pfc(c, 10, 2'000'000), Catch::Contains("555556 B"));
}
