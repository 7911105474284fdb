// BPF_PROG_TEST_RUN tables for the switch's queues: RED/ECN marking, dynamic-threshold
// admission, accounting and the skb->mark tag, PFC XOFF events, and the recirculation builder.
// TEST_RUN has no real qdisc (skb->dev is lo), so depths come from qn_test_qdepth (the qdepth test knob).
#include "switch_fixture.h"

#include "control/pfc.h"
#include "control/swcfg.h"

#include <bpf/libbpf.h>

using namespace qn_test;

namespace {

struct QueueFixture : SwitchFixture {
	QueueFixture()
	{
		cfg = qn_swcfg{};
		cfg.buffer.bytes = 1'000'000;
		cfg.buffer.alpha_data_ppm = 1'000'000;
		cfg.buffer.alpha_ctrl_ppm = 8'000'000;
		cfg.test.qdepth = 1; // depths from qn_test_qdepth
		write_cfg();
	}
	qn_swcfg cfg{};
	void write_cfg()
	{
		uint32_t zero = 0;
		finalize_swcfg(cfg);
		REQUIRE(bpf_map_update_elem(bpf_map__fd(skel->maps.qn_swcfg), &zero, &cfg, BPF_ANY) == 0);
	}
	void depth(uint64_t bytes, uint32_t pkts = 1)
	{
		qn_test_qdepth o{1, pkts, bytes};
		uint32_t port = kLoPort;
		REQUIRE(bpf_map_update_elem(bpf_map__fd(skel->maps.qn_test_qdepth), &port, &o, BPF_ANY) == 0);
	}
	void buffer_used(int64_t used)
	{
		uint32_t zero = 0;
		REQUIRE(bpf_map_update_elem(bpf_map__fd(skel->maps.qn_buffer), &zero, &used, BPF_ANY) == 0);
	}
	int64_t buffer_used()
	{
		uint32_t zero = 0;
		int64_t v = 0;
		REQUIRE(bpf_map_lookup_elem(bpf_map__fd(skel->maps.qn_buffer), &zero, &v) == 0);
		return v;
	}
	qn_qstate qstate()
	{
		uint32_t port = kLoPort;
		qn_qstate q{};
		REQUIRE(bpf_map_lookup_elem(bpf_map__fd(skel->maps.qn_qstate), &port, &q) == 0);
		return q;
	}
};

FrameSpec with_tos(uint8_t tos)
{
	FrameSpec f = roce();
	f.tos = tos;
	return f;
}

// Fraction of `n` runs of frame f that come out CE.
double ce_fraction(QueueFixture &fx, const Bytes &f, int n, uint32_t port = kHostPort)
{
	int ce = 0;
	for (int i = 0; i < n; i++) {
		TestRunOut out = fx.ingress(f, port);
		REQUIRE(out.retval == TC_ACT_REDIRECT_);
		REQUIRE(ipv4_checksum(&out.data[14], 20) == 0);
		REQUIRE((out.data[15] >> 2) == (f[15] >> 2)); // DSCP kept
		ce += (out.data[15] & 3) == 3;
	}
	return double(ce) / n;
}

} // namespace

TEST_CASE("qn_tc_ingress__red_ecn_marking", "[bpf][queue][ecn]")
{
	if (!have_root())
		return;
	QueueFixture fx;
	fx.cfg.red.on = 1;
	fx.cfg.red.kmin_bytes = 10'000;
	fx.cfg.red.kmax_bytes = 110'000;
	fx.cfg.red.pmax_ppm = 200'000; // Pmax 0.2
	fx.write_cfg();
	const uint8_t ect0 = (QN_DSCP_DATA << 2) | 2, ect1 = (QN_DSCP_DATA << 2) | 1, notect = QN_DSCP_DATA << 2;
	Bytes f0 = build_frame(with_tos(ect0)), f1 = build_frame(with_tos(ect1)), fn = build_frame(with_tos(notect));

	SECTION("below Kmin: never marked")
	{
		fx.depth(9'999);
		CHECK(ce_fraction(fx, f0, 300) == 0.0);
		CHECK(ce_fraction(fx, f1, 300) == 0.0);
	}
	SECTION("above Kmax: always marked, ECT(0) and ECT(1)")
	{
		fx.depth(110'001);
		CHECK(ce_fraction(fx, f0, 300) == 1.0);
		CHECK(ce_fraction(fx, f1, 300) == 1.0);
	}
	SECTION("between: the fraction follows Pmax (q - Kmin) / (Kmax - Kmin)")
	{
		fx.depth(60'000); // p = 0.2 * 0.5 = 0.1
		double p = ce_fraction(fx, f0, 4000);
		INFO("marked fraction " << p << " (expected 0.10)");
		CHECK(p > 0.08);
		CHECK(p < 0.12);
		fx.depth(100'000); // p = 0.2 * 0.9 = 0.18
		double p2 = ce_fraction(fx, f1, 4000);
		INFO("marked fraction " << p2 << " (expected 0.18)");
		CHECK(p2 > 0.155);
		CHECK(p2 < 0.205);
	}
	SECTION("Not-ECT is never marked, even above Kmax")
	{
		fx.depth(10'000'000);
		CHECK(ce_fraction(fx, fn, 300) == 0.0);
	}
	SECTION("the control class (CNP, ACK) is never marked, even ECT above Kmax")
	{
		fx.depth(10'000'000);
		for (uint8_t op : {uint8_t(QN_OP_CNP), uint8_t(QN_OP_RC_ACK)}) {
			FrameSpec c = with_tos(ect0);
			c.opcode = op;
			CAPTURE(int(op));
			CHECK(ce_fraction(fx, build_frame(c), 50) == 0.0);
		}
	}
	SECTION("ECN off: nothing marked")
	{
		fx.cfg.red.on = 0;
		fx.write_cfg();
		fx.depth(10'000'000);
		CHECK(ce_fraction(fx, f0, 100) == 0.0);
	}
	SECTION("counters: candidates and marks on the egress port")
	{
		fx.depth(110'001);
		qn_port_stats before = fx.stats(kLoPort);
		ce_fraction(fx, f0, 10);
		ce_fraction(fx, fn, 10);
		qn_port_stats after = fx.stats(kLoPort);
		CHECK(after.ecn_ect - before.ecn_ect == 10);
		CHECK(after.ecn_marked - before.ecn_marked == 10);
	}
}

TEST_CASE("qn_tc_ingress__dequeue_marking_defers_and_applies_upstream_marks", "[bpf][queue][ecn]")
{
	if (!have_root())
		return;
	QueueFixture fx;
	fx.cfg.red.on = 1;
	fx.cfg.red.at_dequeue = 1;
	fx.cfg.red.kmin_bytes = 10'000;
	fx.cfg.red.kmax_bytes = 110'000;
	fx.cfg.red.pmax_ppm = 200'000;
	fx.write_cfg();
	fx.depth(10'000'000); // far above Kmax: at enqueue every ECT packet would be marked
	const uint8_t ect0 = (QN_DSCP_DATA << 2) | 2, notect = QN_DSCP_DATA << 2;
	Bytes f = build_frame(with_tos(ect0)), fn = build_frame(with_tos(notect));
	const int marks = bpf_map__fd(fx.skel->maps.qn_dqmarks);
	const uint32_t one = 1;
	uint32_t v = 0;
	SECTION("at dequeue: ingress marks nothing itself (the departure hook decides)")
	{
		qn_port_stats before = fx.stats(kLoPort);
		CHECK(ce_fraction(fx, f, 50) == 0.0);
		qn_port_stats after = fx.stats(kLoPort);
		CHECK(after.ecn_ect - before.ecn_ect == 50);
		CHECK(after.ecn_marked == before.ecn_marked);
	}
	SECTION("a mark an upstream switch decided at dequeue is applied once, then forgotten")
	{
		qn_dqkey k = dqkey(f);
		REQUIRE(bpf_map_update_elem(marks, &k, &one, BPF_ANY) == 0);
		// From a host port: no switch can have marked it, the entry is not even looked up.
		CHECK(ce_fraction(fx, f, 1, kHostPort) == 0.0);
		CHECK(bpf_map_lookup_elem(marks, &k, &v) == 0);
		qn_port_stats before = fx.stats(kLoPort);
		CHECK(ce_fraction(fx, f, 1, kSwitchPort) == 1.0); // CE, DSCP kept, checksum valid
		CHECK(bpf_map_lookup_elem(marks, &k, &v) != 0);
		CHECK(ce_fraction(fx, f, 1, kSwitchPort) == 0.0);
		// It is the upstream switch's mark: not counted as this port's.
		CHECK(fx.stats(kLoPort).ecn_marked == before.ecn_marked);
	}
	SECTION("another packet's entry and a Not-ECT packet leave the entry alone")
	{
		FrameSpec other = with_tos(ect0);
		other.sport = 0xC001;
		qn_dqkey k = dqkey(build_frame(other));
		REQUIRE(bpf_map_update_elem(marks, &k, &one, BPF_ANY) == 0);
		CHECK(ce_fraction(fx, f, 1, kSwitchPort) == 0.0);
		qn_dqkey kn = dqkey(fn);
		REQUIRE(bpf_map_update_elem(marks, &kn, &one, BPF_ANY) == 0);
		CHECK(ce_fraction(fx, fn, 1, kSwitchPort) == 0.0);
		CHECK(bpf_map_lookup_elem(marks, &k, &v) == 0);
		CHECK(bpf_map_lookup_elem(marks, &kn, &v) == 0);
	}
	SECTION("at enqueue, an upstream mark still applies")
	{
		fx.cfg.red.at_dequeue = 0;
		fx.write_cfg();
		fx.depth(0);
		qn_dqkey k = dqkey(f);
		REQUIRE(bpf_map_update_elem(marks, &k, &one, BPF_ANY) == 0);
		CHECK(ce_fraction(fx, f, 1, kSwitchPort) == 1.0);
		CHECK(ce_fraction(fx, f, 20, kSwitchPort) == 0.0); // empty queue: no mark of its own
	}
}

TEST_CASE("qn_tc_ingress__dynamic_threshold_admission", "[bpf][queue][admission]")
{
	if (!have_root())
		return;
	QueueFixture fx;
	fx.cfg.buffer.admission = 1;
	fx.write_cfg();
	Bytes data = build_frame(roce());
	FrameSpec cs = roce();
	cs.opcode = QN_OP_CNP;
	Bytes ctrl = build_frame(cs);
	const uint64_t len = data.size();
	struct Case {
		const char *label;
		int64_t used;    // buffer in use
		uint64_t depth;  // this queue
		const Bytes *frame;
		bool admitted;
	};
	// B = 1 MB, alpha data 1 (limit = B - used), alpha control 8.
	const Case cases[] = {
		{"empty buffer, short queue", 0, 10'000, &data, true},
		{"lone queue up to B/2 + : limit = B - used", 0, 1'000'000 - len, &data, true},
		{"lone queue one byte over the limit", 0, 1'000'000 - len + 1, &data, false},
		{"busy buffer lowers the limit", 600'000, 400'000 - len, &data, true},
		{"busy buffer, over", 600'000, 400'000 - len + 1, &data, false},
		{"full buffer drops data", 1'000'000, 0, &data, false},
		{"control class has alpha 8", 600'000, 3'000'000, &ctrl, true},
	};
	for (const auto &c : cases) {
		SECTION(c.label)
		{
			fx.buffer_used(c.used);
			fx.depth(c.depth);
			qn_port_stats before = fx.stats(0);
			TestRunOut out = fx.ingress(*c.frame, kHostPort);
			CHECK(int(out.retval) == (c.admitted ? TC_ACT_REDIRECT_ : TC_ACT_SHOT_));
			CHECK(fx.stats(0).drops[QN_DROP_BUFFER] - before.drops[QN_DROP_BUFFER] == (c.admitted ? 0u : 1u));
			// Expect: an admitted packet is charged to the buffer, a dropped one is not.
			CHECK(fx.buffer_used() == c.used + (c.admitted ? int64_t(c.frame->size()) : 0));
		}
	}
	SECTION("admission off admits anything")
	{
		fx.cfg.buffer.admission = 0;
		fx.write_cfg();
		fx.buffer_used(2'000'000);
		fx.depth(5'000'000);
		CHECK(fx.ingress(data, kHostPort).retval == TC_ACT_REDIRECT_);
	}
}

TEST_CASE("qn_tc_ingress__accounting_and_mark", "[bpf][queue]")
{
	if (!have_root())
		return;
	QueueFixture fx;
	fx.depth(0);
	Bytes f = build_frame(roce());
	qn_qstate before = fx.qstate();
	int64_t used = fx.buffer_used();
	TestRunOut out = fx.ingress(f, kHostPort);
	REQUIRE(out.retval == TC_ACT_REDIRECT_);
	qn_qstate after = fx.qstate();
	// Expect: charged to the egress port and the buffer; skb->mark names ingress port 0, prio 3.
	CHECK(after.acct_bytes - before.acct_bytes == int64_t(f.size()));
	CHECK(after.acct_pkts - before.acct_pkts == 1);
	CHECK(fx.buffer_used() - used == int64_t(f.size()));
	CHECK(out.mark == (QN_MARK_MAGIC | (0u << QN_MARK_PORT_SHIFT) | (3u << QN_MARK_PRIO_SHIFT)));
	// Expect: the queue the probes read is the depth the decision used plus the admitted packet
	// (the real queue with it in); the peak is at least the depth read.
	fx.depth(12'345, 7);
	fx.ingress(f, kHostPort);
	CHECK(fx.qstate().last_bytes == 12'345 + f.size());
	CHECK(fx.qstate().last_pkts == 8);
	CHECK(fx.qstate().peak_bytes >= 12'345);
}

// XOFF/XON requests the programs posted to qn_pfc_events, read as the control thread would.
struct PfcEvents {
	std::vector<qn_pfc_event> events;
	ring_buffer *rb = nullptr;
	explicit PfcEvents(QueueFixture &fx)
	{
		rb = ring_buffer__new(bpf_map__fd(fx.skel->maps.qn_pfc_events), on_event, &events, nullptr);
		REQUIRE(rb);
	}
	~PfcEvents() { ring_buffer__free(rb); }
	void consume() { ring_buffer__consume(rb); }
	static int on_event(void *ctx, void *data, size_t len)
	{
		if (len == sizeof(qn_pfc_event)) {
			qn_pfc_event e;
			std::memcpy(&e, data, sizeof(e));
			static_cast<std::vector<qn_pfc_event> *>(ctx)->push_back(e);
		}
		return 0;
	}
};

TEST_CASE("qn_tc_ingress__pfc_xoff_event", "[bpf][queue][pfc]")
{
	if (!have_root())
		return;
	QueueFixture fx;
	fx.cfg.pfc.on = 1;
	fx.cfg.pfc.quanta = 4096;
	fx.cfg.pfc.xoff_bytes = 1000;
	fx.cfg.pfc.xon_bytes = 500;
	fx.write_cfg();
	fx.depth(0);
	PfcEvents pev(fx);
	std::vector<qn_pfc_event> &events = pev.events;
	Bytes f = build_frame(roce()); // 118 B, DSCP 26 -> priority 3
	int sent = 0;
	while ((sent + 1) * int(f.size()) < 1000) { // stay below XOFF
		fx.ingress(f, kHostPort);
		sent++;
	}
	pev.consume();
	// Expect: no event until the (port 0, prio 3) account reaches XOFF.
	CHECK(events.empty());
	fx.ingress(f, kHostPort);
	fx.ingress(f, kHostPort); // still paused: no second XOFF
	pev.consume();
	REQUIRE(events.size() == 1);
	CHECK(events[0].port_no == 0);
	CHECK(events[0].prio == 3);
	CHECK(events[0].quanta == 4096);
	CHECK(events[0].ifindex == kHostPort);
	CHECK(events[0].flags == 0);
	CHECK(fx.stats(0).pfc_xoff_sent == 1);
	events.clear();
	SECTION("pfc_ports=host: a switch-facing port never pauses its peer (edge PFC)")
	{
		fx.cfg.pfc.edge_only = 1;
		fx.write_cfg();
		for (int i = 0; i < 20; i++)
			fx.ingress(f, kSwitchPort);
		pev.consume();
		CHECK(events.empty());
		CHECK(fx.stats(1).pfc_xoff_sent == 0);
	}
	SECTION("pfc_ports=all: a switch-facing port pauses its neighbour switch, and resumes it")
	{
		for (int i = 0; i < 20; i++)
			fx.ingress(f, kSwitchPort);
		pev.consume();
		REQUIRE(events.size() == 1);
		CHECK(events[0].port_no == 1);
		CHECK(events[0].prio == 3);
		CHECK(events[0].quanta == 4096);
		CHECK(events[0].ifindex == kSwitchPort);
		CHECK(fx.stats(1).pfc_xoff_sent == 1);
		// The queue drains (the sweep releases what TEST_RUN never dequeues, acct.h): XON to
		// both paused peers.
		fx.egress(f);
		fx.sweep(f);
		pev.consume();
		REQUIRE(events.size() == 3);
		CHECK(events[1].quanta == 0);
		CHECK(events[2].quanta == 0);
		CHECK(events[1].port_no + events[2].port_no == 1); // ports 0 and 1
		CHECK(fx.stats(1).pfc_xon_sent == 1);
	}
}

// Lossless admission (pfc.h): with PFC on, a paused account takes its headroom and no more; the
// egress dynamic threshold no longer drops the data class.
TEST_CASE("qn_tc_ingress__pfc_lossless_admission_and_headroom", "[bpf][queue][pfc]")
{
	if (!have_root())
		return;
	QueueFixture fx;
	fx.cfg.pfc.on = 1;
	fx.cfg.pfc.quanta = 4096;
	fx.cfg.pfc.xoff_bytes = 1000;
	fx.cfg.pfc.xon_bytes = 500;
	fx.cfg.pfc.hdrm_bytes = 2000;
	fx.cfg.buffer.admission = 1;
	fx.write_cfg();
	fx.depth(999'000); // the egress threshold alone would drop everything (alpha 1, B 1 MB)
	Bytes f = build_frame(roce()); // 118 B
	int fwd = 0, n = 0;
	int64_t xoff_at = 0;
	for (; n < 100; n++) {
		TestRunOut o = fx.ingress(f, kHostPort);
		if (o.retval == TC_ACT_REDIRECT_)
			fwd++;
		if (!xoff_at && fx.stats(0).pfc_xoff_sent)
			xoff_at = int64_t(fwd) * int64_t(f.size());
	}
	REQUIRE(xoff_at >= 1000);
	// Expect: after the XOFF exactly floor(headroom / frame) more frames, then drops by reason.
	CHECK(int64_t(fwd) * int64_t(f.size()) - xoff_at == 2000 / int64_t(f.size()) * int64_t(f.size()));
	CHECK(fx.stats(0).drops[QN_DROP_LOSSLESS] == uint64_t(n - fwd));
	CHECK(fx.stats(0).drops[QN_DROP_BUFFER] == 0);
	SECTION("PFC off: the egress dynamic threshold drops as before (control)")
	{
		fx.cfg.pfc.on = 0;
		fx.write_cfg();
		TestRunOut o = fx.ingress(f, kSwitchPort);
		CHECK(o.retval == TC_ACT_SHOT_);
		CHECK(fx.stats(1).drops[QN_DROP_BUFFER] == 1);
	}
	SECTION("an unpaused account is refused only when the shared buffer is full")
	{
		fx.buffer_used(int64_t(fx.cfg.buffer.bytes) - 100);
		TestRunOut o = fx.ingress(f, kSwitchPort);
		CHECK(o.retval == TC_ACT_SHOT_);
		CHECK(fx.stats(1).drops[QN_DROP_LOSSLESS] == 1);
	}
}

// The dynamic XOFF threshold: alpha x (B - reserved - used). With one account filling the buffer
// alone, used = its bytes, so it pauses at b >= alpha (B - b): B/3 for alpha 0.5.
TEST_CASE("qn_tc_ingress__pfc_dynamic_threshold", "[bpf][queue][pfc]")
{
	if (!have_root())
		return;
	QueueFixture fx;
	fx.cfg.buffer.bytes = 30'000;
	fx.cfg.pfc.on = 1;
	fx.cfg.pfc.quanta = 4096;
	fx.cfg.pfc.xoff_bytes = 1'000'000; // the static threshold would never be reached
	fx.cfg.pfc.xon_bytes = 999'000;
	fx.cfg.pfc.alpha_ppm = 500'000;
	fx.cfg.pfc.hdrm_bytes = 1; // nothing reserved to speak of
	fx.write_cfg();
	fx.depth(0);
	Bytes f = build_frame(roce()); // 118 B
	int64_t at = 0;
	for (int i = 1; i <= 200 && !at; i++) {
		fx.ingress(f, kHostPort);
		if (fx.stats(0).pfc_xoff_sent)
			at = int64_t(i) * int64_t(f.size());
	}
	INFO("XOFF at " << at << " B");
	const int64_t thr = (30'000 - 2 * 1) / 3; // 3 fixture ports x 1 B reserved... B/3 within a frame
	CHECK(at >= thr);
	CHECK(at < thr + 2 * int64_t(f.size()));
}

// A PAUSE from the neighbouring switch (pfc.h, qn_pfc_receive): the port's data class is paused
// for the frame's quanta at the port's wall rate, an XON ends it, the control thread is told
// when it obeys; hosts cannot pause a switch.
TEST_CASE("qn_tc_ingress__pause_from_a_switch", "[bpf][queue][pfc]")
{
	if (!have_root())
		return;
	QueueFixture fx;
	fx.cfg.pfc.obey = 1;
	fx.write_cfg();
	{
		qn_port p{};
		p.port_no = 1;
		p.role = QN_ROLE_SWITCH;
		p.rate_bps = 1'000'000; // 1 Mbit/s (D = 1): a quantum is 512 us, 1000 last 512 ms (a slow
		                        // guest under emulation runs the next frame well within it)
		REQUIRE(bpf_map_update_elem(bpf_map__fd(fx.skel->maps.qn_ports), &kSwitchPort, &p, BPF_ANY) == 0);
	}
	PfcEvents pev(fx);
	auto port_state = [&](uint32_t no) {
		qn_qstate q{};
		REQUIRE(bpf_map_lookup_elem(bpf_map__fd(fx.skel->maps.qn_qstate), &no, &q) == 0);
		return q;
	};
	const Mac nb{2, 0, 0, 0, 0, 9};
	TestRunOut o = fx.ingress(qn::pfc_frame_for(nb, 3, 1000), kSwitchPort);
	CHECK(o.retval == TC_ACT_SHOT_); // taken, not forwarded
	qn_qstate q = port_state(1);
	REQUIRE(q.pause_start_ns != 0);
	CHECK(q.pause_until_ns - q.pause_start_ns == 1000ull * 512 * 1000); // 1000 quanta at 1 Mbit/s
	CHECK(q.pauses == 1);
	qn_port_stats st = fx.stats(1);
	CHECK(st.pfc_rx_xoff == 1);
	uint64_t drops = 0;
	for (int r = 0; r < QN_DROP_MAX; r++)
		drops += st.drops[r];
	CHECK(drops == 0); // obeyed: not a drop
	pev.consume();
	REQUIRE(pev.events.size() == 1);
	CHECK(pev.events[0].flags == QN_PFC_EV_RX);
	CHECK(pev.events[0].port_no == 1);
	CHECK(pev.events[0].quanta == 1000);

	SECTION("a refresh extends the same pause; an XON ends it at its arrival")
	{
		fx.ingress(qn::pfc_frame_for(nb, 3, 2000), kSwitchPort);
		qn_qstate r = port_state(1);
		CHECK(r.pause_start_ns == q.pause_start_ns);
		CHECK(r.pauses == 1);
		CHECK(r.pause_until_ns > q.pause_until_ns);
		fx.ingress(qn::pfc_frame_for(nb, 3, 0), kSwitchPort);
		qn_qstate x = port_state(1);
		CHECK(x.pause_until_ns < r.pause_until_ns);
		CHECK(fx.stats(1).pfc_rx_xon == 1);
		pev.consume();
		REQUIRE(pev.events.size() == 3);
		CHECK(pev.events[2].quanta == 0);
	}
	SECTION("a frame naming no priority (switchd's kick) or only the control priority changes nothing")
	{
		fx.ingress(qn::pfc_frame_kick(nb), kSwitchPort);
		fx.ingress(qn::pfc_frame_for(nb, QN_PRIO_CONTROL, 5000), kSwitchPort);
		qn_qstate r = port_state(1);
		CHECK(r.pause_until_ns == q.pause_until_ns);
		CHECK(fx.stats(1).pfc_rx_xoff == 1);
		pev.consume();
		CHECK(pev.events.size() == 1);
	}
	SECTION("an 802.3x PAUSE carries its time where PFC's enable vector is")
	{
		std::array<uint16_t, 8> qq{};
		Bytes p = qn::build_pfc_frame(nb, 0, qq);
		p[14] = 0x00; // opcode 0x0001
		p[15] = 0x01;
		p[16] = 0x0B; // pause time 3000
		p[17] = 0xB8;
		fx.ingress(p, kSwitchPort);
		qn_qstate r = port_state(1);
		CHECK(r.pause_until_ns >= r.pause_start_ns + 3000ull * 512 * 1000);
	}
	SECTION("pfc_obey=off: counted and recorded, dropped by reason, the control thread not told")
	{
		fx.cfg.pfc.obey = 0;
		fx.write_cfg();
		fx.ingress(qn::pfc_frame_for(nb, 3, 1000), kSwitchPort);
		CHECK(fx.stats(1).drops[QN_DROP_PFC_FRAME] == 1);
		CHECK(fx.stats(1).pfc_rx_xoff == 2);
		pev.consume();
		CHECK(pev.events.size() == 1);
	}
	SECTION("a PAUSE from a host is dropped: hosts cannot pause a switch")
	{
		fx.ingress(qn::pfc_frame_for(nb, 3, 1000), kHostPort);
		CHECK(fx.stats(0).drops[QN_DROP_HOST_PFC] == 1);
		CHECK(fx.stats(0).pfc_rx_xoff == 0);
		CHECK(port_state(0).pause_start_ns == 0);
		pev.consume();
		CHECK(pev.events.size() == 1);
	}
}

// TEST_RUN redirects nowhere: a charged packet never departs, exactly as a departure the dequeue
// hook did not see (acct.h). The sweep must release it once the port's real queue reads empty.
TEST_CASE("qn_tc_sweep__releases_charges_whose_departure_went_unseen", "[bpf][queue][pfc][acct]")
{
	if (!have_root())
		return;
	QueueFixture fx;
	fx.cfg.pfc.on = 1;
	fx.cfg.pfc.quanta = 4096;
	fx.cfg.pfc.xoff_bytes = 1000;
	fx.cfg.pfc.xon_bytes = 500;
	fx.write_cfg();
	fx.depth(0);
	PfcEvents pev(fx);
	std::vector<qn_pfc_event> &events = pev.events;
	Bytes f = build_frame(roce()); // priority 3, toward lo (port 2)
	const int n = 10;
	for (int i = 0; i < n; i++)
		fx.ingress(f, kHostPort);
	const int64_t charged = int64_t(n) * int64_t(f.size());
	auto pfc_bytes = [&] {
		uint32_t k = 0 * QN_NUM_PRIOS + 3;
		qn_pfc_acct a{};
		REQUIRE(bpf_map_lookup_elem(bpf_map__fd(fx.skel->maps.qn_pfc_acct), &k, &a) == 0);
		return a.bytes;
	};
	pev.consume();
	REQUIRE(events.size() == 1); // the XOFF
	REQUIRE(fx.qstate().acct_bytes == charged);
	REQUIRE(pfc_bytes() == charged);

	SECTION("a port whose queue was never read keeps its charges (the sweep needs an empty real queue)")
	{
		fx.sweep(f);
		pev.consume();
		CHECK(fx.qstate().acct_bytes == charged);
		CHECK(fx.buffer_used() == charged);
		CHECK(pfc_bytes() == charged);
		CHECK(fx.stats(kLoPort).acct_repaired == 0);
		CHECK(events.size() == 1);
	}
	SECTION("found empty: every charge is released once and the paused peer resumes")
	{
		fx.egress(f); // records lo's net_device; lo's queue (noqueue) is empty
		fx.sweep(f);
		pev.consume();
		CHECK(fx.qstate().acct_bytes == 0);
		CHECK(fx.qstate().acct_pkts == 0);
		CHECK(fx.buffer_used() == 0);
		CHECK(pfc_bytes() == 0);
		CHECK(fx.stats(kLoPort).acct_repaired == uint64_t(charged));
		REQUIRE(events.size() == 2);
		CHECK(events[1].quanta == 0); // XON
		CHECK(events[1].port_no == 0);
		CHECK(events[1].prio == 3);
		CHECK(fx.stats(0).pfc_xon_sent == 1);
		// Nothing is left to release: a second sweep changes nothing.
		fx.sweep(f);
		CHECK(fx.buffer_used() == 0);
		CHECK(fx.stats(kLoPort).acct_repaired == uint64_t(charged));
	}
}

TEST_CASE("qn_tc_recirc__builds_an_echo_to_the_sender", "[bpf][queue][recirc]")
{
	if (!have_root())
		return;
	QueueFixture fx;
	fx.add_route(0x0b000101, 1); // the sender 11.0.1.1
	FrameSpec s = roce();
	s.payload_len = 500;
	s.sport = 0xC123;
	s.dest_qp = 0xABCDE;
	Bytes in = build_frame(s);
	__sk_buff ctx{};
	ctx.mark = fx.request(QN_SIG_ECHO, 0);
	TestRunOut out;
	out.data.resize(in.size() + 64);
	DECLARE_LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in.data(), .data_out = out.data.data(),
			    .data_size_in = uint32_t(in.size()), .data_size_out = uint32_t(out.data.size()),
			    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx));
	REQUIRE(bpf_prog_test_run_opts(bpf_program__fd(fx.skel->progs.qn_tc_recirc), &opts) == 0);
	out.data.resize(opts.data_size_out);
	CHECK(opts.retval == TC_ACT_REDIRECT_);
	REQUIRE(out.data.size() == QN_ECHO_LEN);
	const uint8_t *ip = &out.data[14];
	// Expect: addressed to the sender, control DSCP, lengths and checksum fixed.
	CHECK((ip[12] << 24 | ip[13] << 16 | ip[14] << 8 | ip[15]) == int(kDst));
	CHECK(uint32_t(ip[16] << 24 | ip[17] << 16 | ip[18] << 8 | ip[19]) == 0x0b000101u);
	CHECK(ip[1] == QN_DSCP_CONTROL << 2);
	CHECK((ip[2] << 8 | ip[3]) == QN_ECHO_LEN - 14);
	CHECK(ipv4_checksum(ip, 20) == 0);
	const uint8_t *udp = &out.data[34];
	CHECK((udp[0] << 8 | udp[1]) == 0xC123); // the sender's QPN stays in the source port
	CHECK((udp[2] << 8 | udp[3]) == QN_ECHO_UDP_PORT);
	CHECK((udp[4] << 8 | udp[5]) == 20);
	// Expect: the original BTH is carried (DestQP).
	CHECK((out.data[47] << 16 | out.data[48] << 8 | out.data[49]) == 0xABCDE);
	CHECK(Mac{out.data[0], out.data[1], out.data[2], out.data[3], out.data[4], out.data[5]} == nh_dmac(0));
	// Expect: only marked copies are built.
	ctx.mark = 0;
	out.data.resize(in.size() + 64);
	opts.data_size_out = uint32_t(out.data.size());
	REQUIRE(bpf_prog_test_run_opts(bpf_program__fd(fx.skel->progs.qn_tc_recirc), &opts) == 0);
	CHECK(opts.retval == TC_ACT_SHOT_);
}

TEST_CASE("qn_tc_ingress__queue_alarm_counts_packets_at_or_above_the_setting", "[bpf][queue][qalarm]")
{
	if (!have_root())
		return;
	QueueFixture fx;
	Bytes f = build_frame(roce());
	fx.depth(50'000);
	fx.ingress(f, kHostPort);
	CHECK(fx.stats(kLoPort).qalarm_pkts == 0); // off by default
	fx.cfg.qalarm.bytes = 60'000;
	fx.write_cfg();
	fx.ingress(f, kHostPort);
	CHECK(fx.stats(kLoPort).qalarm_pkts == 0); // below
	fx.depth(60'000);
	fx.ingress(f, kHostPort);
	fx.depth(900'000);
	fx.ingress(f, kHostPort);
	CHECK(fx.stats(kLoPort).qalarm_pkts == 2); // at and above, on the egress port
}
