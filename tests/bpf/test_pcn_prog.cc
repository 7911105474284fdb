// BPF_PROG_TEST_RUN table for PCN's NP-ECN (bpf/include/pcn.h, pcn.md §3.1) with a forced pause
// (a PFC frame from the neighbouring switch on the egress port, then held) and forced depths (the
// qdepth test knob); departures through qn_tc_depart_test, which runs the dequeue hook's
// per-packet stages (PN, RED at dequeue, the release) on a packet without a qdisc:
// - CP1: the PAUSE loads PN with the packets queued; a refresh does not count them twice;
// - CP3: k data packets enqueued while paused raise PN by k (control packets do not);
// - CP4: the next PN data departures are never marked although the queue behind them is far
//   above K, and marking resumes at exactly the (PN+1)-th; a control departure leaves PN alone;
// - negative control: NP-ECN off marks the first departure; pcn_pn = xoff resumes after the
//   queue at the PAUSE alone; with marking at enqueue, packets enqueued while paused leave
//   unmarked and marking resumes when the pause ends.
#include "signal_fixture.h"

#include "control/pfc.h"

using namespace qn_test;

namespace {

constexpr uint64_t kK = 10'000;                   // step threshold: kmin = kmax = K
constexpr uint64_t kDeep = 1'000'000;             // a queue far above K
const Mac kNeighbour{2, 0, 0, 0, 0, 9};

struct PcnFixture : SignalFixture {
	PcnFixture()
	{
		// The egress port (lo, port 2) faces a switch: a PAUSE on it holds its data class. 1 Mbit/s:
		// 1000 quanta last 512 ms (the pause is then held by hand, so a slow guest cannot outrun it).
		qn_port p{};
		p.port_no = kLoPort;
		p.role = QN_ROLE_SWITCH;
		p.rate_bps = 1'000'000;
		p.hdrm_bytes = 64 * 1024;
		REQUIRE(bpf_map_update_elem(bpf_map__fd(skel->maps.qn_ports), &kLo, &p, BPF_ANY) == 0);
		cfg.test.qdepth = 1;
		cfg.red.on = 1;
		cfg.red.at_dequeue = 1;
		cfg.red.kmin_bytes = kK;
		cfg.red.kmax_bytes = kK;
		cfg.red.pmax_ppm = 1'000'000;
		cfg.pfc.obey = 1;
		cfg.pcn.on = 1;
		write_cfg();
		depth(0);
	}
	qn_qstate qstate()
	{
		qn_qstate q{};
		REQUIRE(bpf_map_lookup_elem(bpf_map__fd(skel->maps.qn_qstate), &kLoPort, &q) == 0);
		return q;
	}
	// A PAUSE (quanta > 0) or XON from the neighbour on the egress port.
	void pfc(uint16_t quanta)
	{
		TestRunOut o = ingress(pfc_frame_for(kNeighbour, 3, quanta), kLo);
		REQUIRE(o.retval == TC_ACT_SHOT_);
	}
	// Hold the open pause for an hour (what the PFC frame began; no test outruns it).
	void hold()
	{
		qn_qstate q = qstate();
		REQUIRE(q.pause_start_ns != 0);
		q.pause_until_ns = q.pause_start_ns + 3'600'000'000'000ull;
		REQUIRE(bpf_map_update_elem(bpf_map__fd(skel->maps.qn_qstate), &kLoPort, &q, BPF_ANY) == 0);
	}
	// Enqueue `n` data packets from the host port. Return: how many left the ingress CE.
	int enqueue(const Bytes &f, int n)
	{
		int ce = 0;
		for (int i = 0; i < n; i++) {
			TestRunOut o = ingress(f, kHostPort);
			REQUIRE(o.retval == TC_ACT_REDIRECT_);
			ce += (o.data[15] & 3) == 3;
		}
		return ce;
	}
	// One departure from port 2 with `backlog` bytes behind it. Return: 1 marked, 2 spared, 0.
	int depart(const Bytes &f, uint64_t backlog, bool control = false)
	{
		depth(backlog);
		__sk_buff ctx{};
		ctx.mark = QN_MARK_MAGIC | (0u << QN_MARK_PORT_SHIFT) | ((control ? QN_PRIO_CONTROL : 3u) << QN_MARK_PRIO_SHIFT);
		ctx.priority = control ? QN_HTB_CLASS_CONTROL : QN_HTB_CLASS_DATA;
		ctx.cb[0] = kLoPort;
		Bytes out(f.size() + 64);
		DECLARE_LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = f.data(), .data_out = out.data(),
				    .data_size_in = uint32_t(f.size()), .data_size_out = uint32_t(out.size()),
				    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx));
		REQUIRE(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.qn_tc_depart_test), &opts) == 0);
		return int(opts.retval);
	}
	// Departures until the first mark (at most `limit`). Return: how many left before it.
	int until_mark(const Bytes &f, int limit)
	{
		for (int i = 0; i < limit; i++) {
			const int r = depart(f, kDeep);
			if (r == 1)
				return i;
			REQUIRE(r == 2); // over K, not marked: spared
		}
		return limit;
	}
};

} // namespace

TEST_CASE("qn_tc_ingress__pcn_np_ecn_never_marks_paused_packets", "[bpf][pcn][pfc]")
{
	if (!have_root())
		return;
	PcnFixture fx;
	const Bytes f = build_frame(data_spec());
	const uint64_t marked0 = fx.stats(kLoPort).ecn_marked;

	REQUIRE(fx.enqueue(f, 3) == 0); // queued before the pause
	REQUIRE(fx.qstate().acct_pkts == 3);
	fx.pfc(1000);
	fx.hold();
	CHECK(fx.qstate().pn == 3); // CP1: PN = the queue at the PAUSE

	SECTION("k packets enqueued while paused are never marked, marking resumes after exactly PN departures")
	{
		const int k = 5;
		fx.depth(kDeep);
		CHECK(fx.enqueue(f, k) == 0); // marking is at dequeue: ingress marks nothing
		CHECK(fx.qstate().pn == 3 + k);
		CHECK(fx.stats(kLoPort).pcn_paused == uint64_t(3 + k));
		// a refresh while paused: PN = max(PN, queue), not PN + queue
		fx.pfc(1000);
		fx.hold();
		CHECK(fx.qstate().pn == 3 + k);
		// the pause ends; packets enqueued after it are not paused packets
		fx.pfc(0);
		fx.depth(0);
		REQUIRE(fx.enqueue(f, 4) == 0);
		CHECK(fx.qstate().pn == 3 + k);
		// a control departure does not use up PN
		CHECK(fx.depart(f, kDeep, true) == 0);
		CHECK(fx.qstate().pn == 3 + k);
		CHECK(fx.until_mark(f, 50) == 3 + k);
		CHECK(fx.qstate().pn == 0);
		CHECK(fx.stats(kLoPort).pcn_spared == uint64_t(3 + k));
		CHECK(fx.stats(kLoPort).ecn_marked - marked0 == 1);
		// and every later departure over K is marked, one under K is not
		CHECK(fx.depart(f, kDeep) == 1);
		CHECK(fx.depart(f, kK) == 0);
	}
	SECTION("negative control: NP-ECN off marks the first departure")
	{
		fx.cfg.pcn.on = 0;
		fx.write_cfg();
		REQUIRE(fx.enqueue(f, 5) == 0);
		CHECK(fx.until_mark(f, 50) == 0);
		CHECK(fx.stats(kLoPort).pcn_spared == 0);
	}
	SECTION("pcn_pn = xoff: only the queue at the PAUSE is spared")
	{
		fx.cfg.pcn.pn_mode = QN_PCN_PN_XOFF;
		fx.write_cfg();
		REQUIRE(fx.enqueue(f, 5) == 0);
		CHECK(fx.qstate().pn == 3);
		CHECK(fx.until_mark(f, 50) == 3);
	}
	SECTION("marking at enqueue (the variant): packets enqueued while paused leave unmarked")
	{
		fx.cfg.red.at_dequeue = 0;
		fx.write_cfg();
		fx.depth(kDeep);
		CHECK(fx.enqueue(f, 6) == 0);
		CHECK(fx.stats(kLoPort).pcn_spared == 6);
		fx.pfc(0); // resumed: the same depth marks every packet
		CHECK(fx.enqueue(f, 6) == 6);
		fx.cfg.pcn.on = 0; // and with NP-ECN off a paused port marks too
		fx.write_cfg();
		fx.pfc(1000);
		fx.hold();
		CHECK(fx.enqueue(f, 3) == 3);
	}
}
