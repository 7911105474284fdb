// BPF_PROG_TEST_RUN table for LDCP's switch rule (bpf/include/ldcp.h, ldcp.md §3.1), with the
// egress depth forced through the qdepth test knob:
// - Not-ECT data at or above K is dropped with the LDCP reason (ingress port) and counted on the
//   egress port; one byte below K it is forwarded, unmarked;
// - ECT data is never dropped by the rule, at any depth, and is marked per the RED profile;
// - the control class (CNP, ACK) is never touched; the rule off drops nothing; K = 0 follows
//   the RED profile's Kmin, an explicit K overrides it.
#include "signal_fixture.h"

using namespace qn_test;

namespace {

constexpr uint64_t kKmin = 10'000, kKmax = 50'000;

// The signal tables' switch (its cfg, write_cfg, depth) with RED on the instantaneous queue
// (Kmin 10 KB, Kmax 50 KB, Pmax 1, at enqueue) and the LDCP rule on, K = Kmin.
struct LdcpFixture : SignalFixture {
	LdcpFixture()
	{
		cfg.test.qdepth = 1;
		cfg.red.on = 1;
		cfg.red.kmin_bytes = kKmin;
		cfg.red.kmax_bytes = kKmax;
		cfg.red.pmax_ppm = 1'000'000;
		cfg.ldcp.on = 1;
		write_cfg();
	}
	// Send `f` from the host port at depth `d`. Return: the verdict; *ce: whether it left CE.
	int send(const Bytes &f, uint64_t d, bool *ce = nullptr)
	{
		depth(d);
		TestRunOut out = ingress(f, kHostPort);
		if (ce)
			*ce = out.retval == TC_ACT_REDIRECT_ && (out.data[15] & 3) == 3;
		return int(out.retval);
	}
	uint64_t ldcp_drops_in() { return stats(0).drops[QN_DROP_LDCP_NOT_ECT]; }
	uint64_t ldcp_drops_out() { return stats(kLoPort).ldcp_drop; }
};

Bytes frame(uint8_t ecn, uint8_t opcode = QN_OP_RC_SEND_ONLY, uint8_t dscp = QN_DSCP_DATA)
{
	FrameSpec f = roce();
	f.tos = uint8_t(dscp << 2 | ecn);
	f.opcode = opcode;
	return build_frame(f);
}

} // namespace

TEST_CASE("qn_stage_ldcp__not_ect_data_dropped_at_k_only", "[bpf][ldcp]")
{
	if (!have_root())
		return;
	LdcpFixture fx;
	const Bytes notect = frame(0), ect0 = frame(2), ect1 = frame(1);

	SECTION("Not-ECT: forwarded one byte below K (K = Kmin), dropped at K and above, with the LDCP reason")
	{
		bool ce = true;
		CHECK(fx.send(notect, kKmin - 1, &ce) == TC_ACT_REDIRECT_);
		CHECK_FALSE(ce);
		CHECK(fx.ldcp_drops_in() == 0);
		CHECK(fx.send(notect, kKmin) == TC_ACT_SHOT_);
		CHECK(fx.send(notect, 10 * kKmax) == TC_ACT_SHOT_);
		CHECK(fx.ldcp_drops_in() == 2);
		CHECK(fx.ldcp_drops_out() == 2);
		CHECK(fx.stats(0).drops[QN_DROP_BUFFER] == 0);
	}
	SECTION("ECT(0) and ECT(1): never dropped by the rule; marked per the profile")
	{
		int marked = 0;
		for (const Bytes *f : {&ect0, &ect1}) {
			bool ce = true;
			CHECK(fx.send(*f, kKmin, &ce) == TC_ACT_REDIRECT_); // at Kmin: p = 0
			CHECK_FALSE(ce);
			for (int i = 0; i < 200; i++) { // above Kmax: p = 1
				REQUIRE(fx.send(*f, kKmax + 1, &ce) == TC_ACT_REDIRECT_);
				marked += ce;
			}
		}
		CHECK(marked == 400);
		// midway: p = (30000 - 10000) / 40000 = 0.5
		int mid = 0;
		for (int i = 0; i < 2000; i++) {
			bool ce = false;
			REQUIRE(fx.send(ect0, 30'000, &ce) == TC_ACT_REDIRECT_);
			mid += ce;
		}
		INFO("marked " << mid << " of 2000 at p = 0.5");
		CHECK(mid > 850);
		CHECK(mid < 1150);
		CHECK(fx.ldcp_drops_in() == 0);
		CHECK(fx.ldcp_drops_out() == 0);
	}
	SECTION("the control class is never dropped or marked, Not-ECT far above K")
	{
		for (uint8_t op : {uint8_t(QN_OP_CNP), uint8_t(QN_OP_RC_ACK)}) {
			CAPTURE(int(op));
			bool ce = true;
			CHECK(fx.send(frame(0, op, QN_DSCP_CONTROL), 10 * kKmax, &ce) == TC_ACT_REDIRECT_);
			CHECK_FALSE(ce);
		}
		CHECK(fx.ldcp_drops_in() == 0);
	}
	SECTION("the rule off: Not-ECT above K is forwarded")
	{
		fx.cfg.ldcp.on = 0;
		fx.write_cfg();
		CHECK(fx.send(notect, 10 * kKmax) == TC_ACT_REDIRECT_);
		CHECK(fx.ldcp_drops_in() == 0);
	}
	SECTION("an explicit K overrides Kmin")
	{
		fx.cfg.ldcp.k_bytes = 20'000;
		fx.write_cfg();
		CHECK(fx.send(notect, 19'999) == TC_ACT_REDIRECT_);
		CHECK(fx.send(notect, 20'000) == TC_ACT_SHOT_);
		CHECK(fx.ldcp_drops_in() == 1);
	}
}
