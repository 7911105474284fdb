// The scheme descriptor (transport/cc/cc.h "Scheme"): the composition grammar, aliases, typed
// properties by loss mode, the derived switch PFC setting, and controllers built from parts.
#include <catch2/catch.hpp>

#include <map>

#include "control/swcfg.h"
#include "transport/cc/cc.h"
#include "transport/cc/sfc.h"

using namespace qn::tp::cc;
using qn::apply_swcfg;
using qn::default_swcfg;
using qn::validate_swcfg;

TEST_CASE("scheme__grammar_accepts_compositions", "[scheme]")
{
	struct Case {
		const char *name, *canonical;
		bool lossless, ecn;
	};
	const Case cases[] = {
		{"none", "none/line-rate/no-pause:lossy", false, false},
		{"pfc", "none/line-rate/no-pause:lossless", true, false},
		{"dcqcn", "dcqcn/line-rate/no-pause:lossless", true, true},
		{"dcqcn+w", "dcqcn+w/line-rate/no-pause:lossless", true, true},
		{"dcqcn+w:lossy", "dcqcn+w/line-rate/no-pause:lossy", false, true},
		{"dcqcn:lossless", "dcqcn/line-rate/no-pause:lossless", true, true},
		{"dcqcn/line-rate", "dcqcn/line-rate/no-pause:lossless", true, true},
		{"dcqcn/no-pause/line-rate:lossy", "dcqcn/line-rate/no-pause:lossy", false, true},
		{"none:lossless", "none/line-rate/no-pause:lossless", true, false},
	};
	for (const auto &c : cases) {
		CAPTURE(c.name);
		auto s = scheme(c.name);
		REQUIRE(s.ok());
		CHECK(s->name == c.name);
		CHECK(s->canonical() == c.canonical);
		CHECK(s->lossless() == c.lossless);
		CHECK(s->ecn == c.ecn);
		// the canonical form names the same scheme
		auto again = scheme(s->canonical());
		REQUIRE(again.ok());
		CHECK(again->canonical() == s->canonical());
	}
}

TEST_CASE("scheme__grammar_rejects_bad_names_with_the_reason", "[scheme]")
{
	struct Case {
		const char *name, *why;
	};
	const Case cases[] = {
		{"", "empty name"},
		{"hpcc", "no base algorithm 'hpcc' (base algorithms: none, dcqcn, dcqcn+w, ldcp, pcn)"},
		{"ldcp:lossless", "ldcp runs only lossy"},
		{"dcqcn:lossyy", "loss mode 'lossyy' is not lossy or lossless"},
		{"dcqcn:", "loss mode '' is not lossy or lossless"},
		{"dcqcn/nosuch", "no start policy or flow control 'nosuch'"},
		{"dcqcn/sfc/sfc", "two flow controls"},
		{"dcqcn//line-rate", "an empty part between '/'"},
		{"dcqcn/", "an empty part between '/'"},
		{"dcqcn/line-rate/line-rate", "two start policies ('line-rate', 'line-rate')"},
		{"dcqcn/no-pause/no-pause", "two flow controls ('no-pause', 'no-pause')"},
		{"/dcqcn", "an empty part between '/'"},
		{"DCQCN", "no base algorithm 'DCQCN'"},
	};
	for (const auto &c : cases) {
		CAPTURE(c.name);
		auto s = scheme(c.name);
		REQUIRE_FALSE(s.ok());
		CHECK(s.error().message.find(std::string("scheme '") + c.name + "': ") == 0);
		CHECK(s.error().message.find(c.why) != std::string::npos);
	}
}

TEST_CASE("scheme__loss_mode_sets_pfc_and_rto", "[scheme]")
{
	const Fabric f{10'000'000'000ULL, 8'000, 2048, 8'000, 8'000};
	auto pfc_of = [&](const std::string &n) {
		auto d = derive(n, f, true);
		REQUIRE(d.ok());
		std::string v;
		for (const auto &[k, val] : d->switch_settings)
			if (k == "pfc")
				v += val;
		return v; // exactly one entry: "on" or "off"
	};
	CHECK(pfc_of("dcqcn") == "on");
	CHECK(pfc_of("dcqcn:lossy") == "off");
	CHECK(pfc_of("dcqcn+w:lossy") == "off");
	CHECK(pfc_of("none") == "off");
	CHECK(pfc_of("pfc") == "on");
	// The lossy form keeps the base algorithm's other switch settings (DCQCN's RED profile).
	auto d = derive("dcqcn:lossy", f, true);
	REQUIRE(d.ok());
	bool kmin = false;
	for (const auto &[k, v] : d->switch_settings)
		kmin |= k == "kmin";
	CHECK(kmin);
	auto lossy = scheme("dcqcn:lossy"), lossless = scheme("dcqcn");
	REQUIRE(lossy.ok());
	REQUIRE(lossless.ok());
	CHECK(lossy->rto_low_ns == 100'000);
	CHECK(lossy->rto_high_ns == 320'000);
	CHECK(lossless->rto_low_ns == 67'108'864);
	CHECK_FALSE(derive("hpcc", f, true).ok());
}

TEST_CASE("scheme__sfc_derives_its_switch_settings_and_others_switch_it_off", "[scheme][sfc]")
{
	// 10 Gbit/s, 8 us base RTT: BDP 10 KB, Q_Th 20 KB, Q_Tg 10 KB, T_BF 4 us (sfc.md §4).
	const Fabric f{10'000'000'000ULL, 8'000, 2048, 8'000, 8'000};
	auto settings = [&](const std::string &n) {
		auto d = derive(n, f, true);
		REQUIRE(d.ok());
		std::map<std::string, std::string> m;
		for (const auto &[k, v] : d->switch_settings)
			m[k] = v; // later wins, as the runner applies them
		return m;
	};
	auto on = settings("dcqcn+w/sfc:lossy");
	CHECK(on["sfc"] == "on");
	CHECK(on["sfc_qth"] == "20000");
	CHECK(on["sfc_qtg"] == "10000");
	CHECK(on["sfc_tbf"] == "4000ns");
	CHECK(on["pfc"] == "off");
	for (const char *n : {"dcqcn+w:lossy", "dcqcn", "none", "pfc"}) {
		CAPTURE(n);
		CHECK(settings(n)["sfc"] == "off");
	}
	// The values are valid switch settings (the key table accepts them).
	qn_swcfg c = default_swcfg(1'000'000);
	for (const auto &[k, v] : on)
		CHECK(apply_swcfg(c, k, v).ok());
	CHECK(c.sfc.on == 1);
	CHECK(c.sfc.qth_bytes == 20'000);
	CHECK(c.sfc.tbf_ns == 4'000);
	CHECK(validate_swcfg(c).ok());
	// The BDP is the network-wide one (the largest base RTT over host pairs, sfc.md §4), not the
	// smallest pair's nor the one the base algorithm scales with: a leaf-spine of 8 us in a rack
	// and 12 us across: BDP 15 KB, Q_Th 30 KB, T_BF 6 us, whatever base_rtt_ns the flows give.
	for (uint64_t base : {8'000ULL, 12'000ULL}) {
		auto d = derive_stages("dcqcn+w/sfc:lossy", Fabric{10'000'000'000ULL, base, 2048, 8'000, 12'000});
		REQUIRE(d.ok());
		std::map<std::string, std::string> m(d->switch_settings.begin(), d->switch_settings.end());
		CHECK(m["sfc_qth"] == "30000");
		CHECK(m["sfc_qtg"] == "15000");
		CHECK(m["sfc_tbf"] == "6000ns");
	}
	// A BTS replaces the pause end, earlier or later; 0 ends it.
	SfcPause p;
	p.on_bts(BtsEvent{1'000, 100});
	CHECK(p.pause_until_ns() == 101'000);
	p.on_bts(BtsEvent{2'000, 10});
	CHECK(p.pause_until_ns() == 12'000);
	p.on_bts(BtsEvent{3'000, 0});
	CHECK(p.pause_until_ns() == 3'000);
}

TEST_CASE("scheme__controllers_are_built_from_the_parts", "[scheme]")
{
	Setup s;
	s.line_rate_bps = 10'000'000'000ULL;
	s.bdp_bytes = 10'000;
	for (const char *n : {"none", "pfc", "dcqcn", "dcqcn+w", "dcqcn+w:lossy", "dcqcn/line-rate/no-pause"}) {
		CAPTURE(n);
		s.scheme = n;
		auto p = make(s);
		REQUIRE(p.ok());
		REQUIRE(p->controller);
		// the notification point comes with the base algorithm
		CHECK((p->np != nullptr) == scheme(n)->ecn);
		CHECK(p->describe.find(scheme(n)->canonical()) != std::string::npos);
	}
	// window variants get their window, lossy or not
	s.scheme = "dcqcn+w:lossy";
	auto p = make(s);
	REQUIRE(p.ok());
	CHECK(p->controller->output().window_bytes == 10'000);
	// a bad parameter names it; a parameter for a base that takes none is rejected
	s.scheme = "dcqcn";
	s.overrides = {{"rai", "fast"}};
	auto bad = make(s);
	REQUIRE_FALSE(bad.ok());
	CHECK(bad.error().message.find("rai") != std::string::npos);
	s.scheme = "pfc";
	s.overrides = {{"rai", "10Mbps"}};
	REQUIRE_FALSE(make(s).ok());
	s.overrides.clear();
	s.scheme = "dcqcn/nosuch";
	REQUIRE_FALSE(make(s).ok());
	s.scheme = "dcqcn+w/sfc:lossy";
	auto sfc = make(s);
	REQUIRE(sfc.ok());
	CHECK(sfc->controller->name() == "dcqcn+w/line-rate/sfc");
}

#include "transport/cc/dcqcn.h"

TEST_CASE("params__dcqcn_table_parses_validates_and_describes", "[scheme]")
{
	DcqcnParams p;
	// good values of every kind, and what describe says back
	REQUIRE(dcqcn_override(p, "variant", "mellanox").ok());
	CHECK(p.variant == DcqcnParams::Mellanox);
	REQUIRE(dcqcn_override(p, "g", "0.0625").ok());
	CHECK(p.g == 0.0625);
	REQUIRE(dcqcn_override(p, "f", "3").ok());
	CHECK(p.f == 3);
	REQUIRE(dcqcn_override(p, "t", "300us").ok());
	CHECK(p.t_ns == 300'000);
	REQUIRE(dcqcn_override(p, "rai", "5Mbps").ok());
	CHECK(p.rai_bps == 5'000'000);
	REQUIRE(dcqcn_override(p, "b", "0").ok());
	CHECK(p.b_bytes == 0);
	REQUIRE(dcqcn_override(p, "clamp", "off").ok());
	CHECK_FALSE(p.clamp_target);
	const std::string d = dcqcn_describe(p);
	CHECK(d.find("variant=mellanox") != std::string::npos);
	CHECK(d.find("t=300us") != std::string::npos);
	CHECK(d.find("rai=5Mbit/s") != std::string::npos);
	CHECK(d.find("clamp=off") != std::string::npos);
	CHECK(d.find("w=") == std::string::npos); // no window: DCQCN+W's keys left out
	// every value describe prints is accepted back and gives the same parameters
	DcqcnParams q;
	for (const auto &r : dcqcn_table().rows()) {
		CAPTURE(r.name);
		REQUIRE(dcqcn_override(q, r.name, dcqcn_table().value(p, r)).ok());
	}
	CHECK(dcqcn_table().describe(q) == dcqcn_table().describe(p));
	// bad values: the error names the parameter and says what is accepted
	struct Bad {
		const char *key, *value, *why;
	};
	const Bad bad[] = {
		{"g", "2", "dcqcn parameter 'g': '2' is not a number in [1e-06, 1]"},
		{"g", "x", "dcqcn parameter 'g': 'x' is not a number"},
		{"f", "2.5", "dcqcn parameter 'f': '2.5' is not an integer in [0, 1000]"},
		{"t", "0us", "dcqcn parameter 't': '0us' is outside [1ns, 1s]"},
		{"t", "fast", "dcqcn parameter 't': "},
		{"rai", "-1Mbps", "dcqcn parameter 'rai': "},
		{"clamp", "maybe", "dcqcn parameter 'clamp': 'maybe' is not on or off"},
		{"variant", "hpcc", "dcqcn parameter 'variant': 'hpcc' is not paper or mellanox"},
		{"kmin", "5KB", "unknown dcqcn parameter 'kmin' (variant, g, alpha0, f, tau_alpha, t, n"},
	};
	for (const auto &b : bad) {
		CAPTURE(b.key, b.value);
		DcqcnParams x;
		auto st = dcqcn_override(x, b.key, b.value);
		REQUIRE_FALSE(st.ok());
		CHECK(st.error().message.find(b.why) == 0);
	}
	// the usage lists every parameter with its range
	const std::string u = dcqcn_table().usage();
	for (const auto &r : dcqcn_table().rows())
		CHECK(u.find(r.name) != std::string::npos);
	CHECK(u.find("paper|mellanox") != std::string::npos);
}
