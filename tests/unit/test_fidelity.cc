// Affected periods and flow tagging (transport/fidelity.h) on synthetic runs.
#include <catch2/catch.hpp>

#include "fidelity.h"

using namespace qn::tp;

TEST_CASE("interval_set__merges_and_measures", "[fidelity]")
{
	IntervalSet s;
	s.add(10, 20);
	s.add(30, 40);
	s.add(5, 5);  // empty: ignored
	s.add(20, 25); // touches [10, 20): merges
	REQUIRE(s.intervals() == std::vector<std::pair<uint64_t, uint64_t>>{{10, 25}, {30, 40}});
	s.add(24, 31); // bridges both
	REQUIRE(s.intervals() == std::vector<std::pair<uint64_t, uint64_t>>{{10, 40}});
	s.add(100, 110);
	s.add(0, 1);
	REQUIRE(s.size() == 3);
	CHECK(s.covered(0, 1000) == 1 + 30 + 10);
	CHECK(s.covered(35, 105) == 5 + 5);
	// Closed queries: a flow ending exactly as a period begins was touched; one ending before
	// was not.
	CHECK(s.overlaps(41, 99) == false);
	CHECK(s.overlaps(41, 100));
	CHECK(s.overlaps(40, 41)); // [10, 40) ends at 40: a flow from 40 on starts as it ends
	CHECK(s.overlaps(2, 9) == false);
}

TEST_CASE("tag_flows__by_fabric_and_host_periods", "[fidelity]")
{
	// A run over [0, 1000): a stall of the whole fabric at [100, 110), a late period of h2 at
	// [500, 520). Flows: a on h1->h3 over [0, 90] untouched; b on h1->h3 over [50, 200] meets
	// the stall; c on h2->h3 over [300, 600] meets h2's period; d on h4->h2 over [510, 900]
	// meets it at its destination; e on h4->h5 over [300, 900] untouched.
	Affected a;
	a.all.add(100, 110);
	a.host["h2"].add(500, 520);
	std::vector<FlowSpan> f = {{"h1", "h3", 0, 90, 1000},   {"h1", "h3", 50, 200, 2000},
				   {"h2", "h3", 300, 600, 3000}, {"h4", "h2", 510, 900, 4000},
				   {"h4", "h5", 300, 900, 10000}};
	FidelityReport r = tag_flows(f, a, 0, 1000);
	CHECK(r.tagged == std::vector<bool>{false, true, true, true, false});
	CHECK(r.flows_tagged == 3);
	CHECK(r.bytes_tagged_frac == Approx(9000.0 / 20000.0));
	CHECK(r.time_affected_frac == Approx(30.0 / 1000.0));
	CHECK(r.periods == 2);
	// b: 10 of its 150 ns in the stall; c: 20 of 300 in h2's period; d: 10 of 390.
	REQUIRE(r.affected_frac.size() == 5);
	CHECK(r.affected_frac[0] == 0);
	CHECK(r.affected_frac[1] == Approx(10.0 / 150.0));
	CHECK(r.affected_frac[2] == Approx(20.0 / 300.0));
	CHECK(r.affected_frac[3] == Approx(10.0 / 390.0));
	CHECK(r.affected_frac[4] == 0);
	// Nothing affected: nothing tagged.
	FidelityReport clean = tag_flows(f, Affected{}, 0, 1000);
	CHECK(clean.flows_tagged == 0);
	CHECK(clean.bytes_tagged_frac == 0);
	CHECK(clean.time_affected_frac == 0);
}
