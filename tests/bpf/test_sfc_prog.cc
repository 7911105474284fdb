// BPF_PROG_TEST_RUN tables for SFC's congestion point (bpf/include/sfc.h, sfc.md §3.1-§3.3),
// with the egress depth forced through the qdepth test knob:
// - the trigger at Q_Th: a queue at Q_Th gives no BTS, one byte over gives one;
// - the pause time (qd - Q_Tg) / R in fabric µs, rounded up, against hand-computed values;
// - the Bloom filter: a second packet of the flow in the same epoch is suppressed, another flow
//   is not, a new epoch signals again, T_BF = 0 never suppresses;
// - the cacheable bit follows the congested port's role;
// - control packets and non-data classes never trigger; SFC off never triggers;
// - golden bytes of the BTS the builder makes from the ingress trigger's own ring entry.
#include "signal_fixture.h"

#include <arpa/inet.h>
#include <time.h>

#include <array>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

using namespace qn_test;

namespace {

constexpr uint64_t kQth = 250'000, kQtg = 125'000;

struct SfcFixture : SignalFixture {
	// host_ports: 0 loads a switch without hosts (a spine)
	explicit SfcFixture(uint64_t tbf_ns = 1'000'000'000'000ULL, uint32_t host_ports = 1) // 1000 s: one epoch
		: SignalFixture(host_ports)
	{
		cfg.test.qdepth = 1;
		cfg.sfc.on = 1;
		cfg.sfc.qth_bytes = kQth;
		cfg.sfc.qtg_bytes = kQtg;
		cfg.sfc.tbf_ns = tbf_ns;
		write_cfg();
	}
	// Send `f` from the host port at egress depth `d`. Return: the BTS request it made, if any.
	std::optional<qn_sig_entry> send(const Bytes &f, uint64_t d)
	{
		depth(d);
		const uint32_t seq = next_seq();
		REQUIRE(ingress(f, kHostPort).retval == TC_ACT_REDIRECT_); // SFC never drops
		if (next_seq() == seq)
			return std::nullopt;
		REQUIRE(next_seq() == seq + 1);
		qn_sig_entry e = slot(seq);
		CHECK(QN_SIG_TYPE(e.mark) == QN_SIG_BTS);
		return e;
	}
	void set_lo_role(uint32_t role)
	{
		qn_port p{};
		REQUIRE(bpf_map_lookup_elem(bpf_map__fd(skel->maps.qn_ports), &kLo, &p) == 0);
		p.role = role;
		REQUIRE(bpf_map_update_elem(bpf_map__fd(skel->maps.qn_ports), &kLo, &p, BPF_ANY) == 0);
	}
};

Bytes flow(uint16_t sport)
{
	FrameSpec s = data_spec();
	s.sport = sport;
	return build_frame(s);
}

} // namespace

TEST_CASE("qn_stage_sfc__triggers_one_byte_over_qth_with_the_drain_time", "[bpf][sfc]")
{
	if (!have_root())
		return;
	SfcFixture fx;
	CHECK_FALSE(fx.send(flow(0xC001), kQth).has_value()); // at Q_Th: not over it
	CHECK(fx.stats(kLoPort).sfc_congested == 0);
	// One byte over: (250001 - 125000) B at 10 Gbit/s = 100.0008 us -> 101 us (rounded up).
	auto b = fx.send(flow(0xC002), kQth + 1);
	REQUIRE(b.has_value());
	CHECK(b->v.bts.pause_us == 101);
	CHECK(b->v.bts.origin == QN_BTS_ORIGIN_CONGESTION);
	CHECK(b->eport == kLoPort);
	// 375000 B: 250000 B over Q_Tg = 200 us exactly; 1.125 MB: 1 MB over = 800 us.
	b = fx.send(flow(0xC003), 375'000);
	REQUIRE(b.has_value());
	CHECK(b->v.bts.pause_us == 200);
	b = fx.send(flow(0xC004), 1'125'000);
	REQUIRE(b.has_value());
	CHECK(b->v.bts.pause_us == 800);
	const qn_port_stats st = fx.stats(kLoPort);
	CHECK(st.sfc_congested == 3);
	CHECK(st.sfc_bts_queue == 3);
	CHECK(st.sfc_suppressed == 0);
}

TEST_CASE("qn_stage_sfc__bloom_suppresses_a_flow_within_its_epoch_only", "[bpf][sfc]")
{
	if (!have_root())
		return;
	{
		SfcFixture fx; // one epoch of 1000 s
		REQUIRE(fx.send(flow(0xC010), 400'000).has_value());
		CHECK_FALSE(fx.send(flow(0xC010), 400'000).has_value()); // same flow, same epoch
		CHECK_FALSE(fx.send(flow(0xC010), 900'000).has_value());
		CHECK(fx.send(flow(0xC011), 400'000).has_value()); // another flow
		const qn_port_stats st = fx.stats(kLoPort);
		CHECK(st.sfc_congested == 4);
		CHECK(st.sfc_suppressed == 2);
		CHECK(st.sfc_bts_queue == 2);
	}
	{
		SfcFixture fx(2'000'000); // epochs of 2 ms (the fixture runs at D = 1)
		REQUIRE(fx.send(flow(0xC020), 400'000).has_value());
		std::this_thread::sleep_for(std::chrono::milliseconds(5)); // past the epoch's end
		CHECK(fx.send(flow(0xC020), 400'000).has_value());
	}
	{
		// An epoch number of 0 (T_BF beyond the time since boot: the first epoch after boot,
		// where the 6.1 VM ran this test) is not the value of a cell never set.
		SfcFixture fx(1ULL << 62);
		REQUIRE(fx.send(flow(0xC025), 400'000).has_value());
		CHECK_FALSE(fx.send(flow(0xC025), 400'000).has_value());
	}
	{
		SfcFixture fx(0); // no filter
		CHECK(fx.send(flow(0xC030), 400'000).has_value());
		CHECK(fx.send(flow(0xC030), 400'000).has_value());
		CHECK(fx.stats(kLoPort).sfc_suppressed == 0);
	}
}

namespace {
// The Bloom filter's cells of a flow in an epoch, as bpf/include/sfc.h and hash.h compute them
// (addresses as loaded from the packet: network order; ports in host order).
uint32_t fmix32(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}
std::array<uint32_t, 3> bloom_cells(const FrameSpec &s, uint64_t epoch)
{
	uint32_t h = 0x5fc0b10du ^ uint32_t(epoch) ^ uint32_t(epoch >> 32);
	h = fmix32(h ^ htonl(s.saddr));
	h = fmix32(h ^ htonl(s.daddr));
	h = fmix32(h ^ s.proto);
	h = fmix32(h ^ ((uint32_t(s.sport) << 16) | s.dport));
	constexpr uint32_t m = QN_SFC_BLOOM_CELLS - 1;
	return {fmix32(h ^ 0x9e3779b9u) & m, fmix32(h ^ 0x7f4a7c15u) & m, fmix32(h ^ 0x94d049bbu) & m};
}
// Three flows that, signalled in `epoch`, set every cell of `victim` (each one of its cells):
// the victim then reads as already signalled (a false positive). Ports from 0x1000 on.
std::vector<FrameSpec> colliders(const FrameSpec &victim, uint64_t epoch)
{
	const auto want = bloom_cells(victim, epoch);
	std::vector<FrameSpec> out;
	for (size_t k = 0; k < 3; k++) {
		FrameSpec c = victim;
		for (uint32_t port = 0x1000; port <= 0xFFFF; port++) {
			c.sport = uint16_t(port);
			if (c.sport != victim.sport && bloom_cells(c, epoch)[k] == want[k]) {
				out.push_back(c);
				break;
			}
		}
		REQUIRE(out.size() == k + 1);
	}
	return out;
}
uint64_t mono_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts); // bpf_ktime_get_ns's clock
	return uint64_t(ts.tv_sec) * 1'000'000'000ULL + uint64_t(ts.tv_nsec);
}
} // namespace

TEST_CASE("qn_stage_sfc__a_bloom_false_positive_lasts_one_epoch", "[bpf][sfc]")
{
	if (!have_root())
		return;
	// Three epoch lengths whose epoch numbers (now / T_BF + 1, the fixture at D = 1) differ and
	// stay put for at least now / 5 (6 s in a VM booted 30 s ago).
	const uint64_t now = mono_ns();
	REQUIRE(now > 1'000'000'000ULL);
	const uint64_t tbf[3] = {1ULL << 50, now / 3, now / 5};
	uint64_t ep[3];
	for (int i = 0; i < 3; i++)
		ep[i] = now / tbf[i] + 1;
	REQUIRE(ep[0] != ep[1]);
	REQUIRE(ep[1] != ep[2]);
	FrameSpec victim = data_spec();
	victim.sport = 0xC100;
	const Bytes v = build_frame(victim);
	SfcFixture fx(tbf[0]);
	auto signal_all = [&](const std::vector<FrameSpec> &cs) {
		for (const auto &c : cs)
			fx.send(build_frame(c), 400'000); // each signals (or is itself suppressed): either way its cells are set
	};
	// Epoch 1: three other flows cover the victim's cells; its first congested packet is
	// suppressed though it was never signalled (the false positive).
	const auto c1 = colliders(victim, ep[0]);
	signal_all(c1);
	CHECK_FALSE(fx.send(v, 400'000).has_value());
	// Epoch 2: the same three flows signalled again; the victim's cells moved, so it is
	// signalled. (With positions independent of the epoch it collided again in every epoch.)
	fx.cfg.sfc.tbf_ns = tbf[1];
	fx.write_cfg();
	signal_all(c1);
	CHECK(fx.send(v, 400'000).has_value());
	// Epoch 3: the mirror above is the program's: the colliders computed for this epoch make
	// the victim's packet a false positive again.
	fx.cfg.sfc.tbf_ns = tbf[2];
	fx.write_cfg();
	signal_all(colliders(victim, ep[2]));
	CHECK_FALSE(fx.send(v, 400'000).has_value());
	REQUIRE(mono_ns() / tbf[2] + 1 == ep[2]); // no epoch ended during the test
}

TEST_CASE("qn_stage_sfc__sfc_where_tor_leaves_switches_without_hosts_out", "[bpf][sfc]")
{
	if (!have_root())
		return;
	// A ToR (the default fixture: host ports) is a congestion point with either setting.
	for (uint32_t where : {uint32_t(QN_SFC_WHERE_TOR), uint32_t(QN_SFC_WHERE_ALL)}) {
		SfcFixture tor;
		tor.cfg.sfc.where = where;
		tor.write_cfg();
		CHECK(tor.send(flow(0xC050), 400'000).has_value());
	}
	// A switch without host ports (a spine): none with the default (tor), one BTS with all.
	SfcFixture spine(1'000'000'000'000ULL, 0);
	CHECK(spine.cfg.sfc.where == QN_SFC_WHERE_TOR); // the default
	CHECK_FALSE(spine.send(flow(0xC051), 400'000).has_value());
	CHECK(spine.stats(kLoPort).sfc_congested == 0);
	spine.cfg.sfc.where = QN_SFC_WHERE_ALL;
	spine.write_cfg();
	CHECK(spine.send(flow(0xC052), 400'000).has_value());
}

TEST_CASE("qn_stage_sfc__cacheable_when_the_congested_port_faces_a_host", "[bpf][sfc]")
{
	if (!have_root())
		return;
	SfcFixture fx;
	auto b = fx.send(flow(0xC040), 400'000);
	REQUIRE(b.has_value());
	CHECK(b->v.bts.cacheable == 1);
	fx.set_lo_role(QN_ROLE_SWITCH);
	b = fx.send(flow(0xC041), 400'000);
	REQUIRE(b.has_value());
	CHECK(b->v.bts.cacheable == 0);
}

TEST_CASE("qn_stage_sfc__only_data_class_roce_data_triggers", "[bpf][sfc]")
{
	if (!have_root())
		return;
	SfcFixture fx;
	FrameSpec ack = data_spec();
	ack.opcode = QN_OP_RC_ACK;
	CHECK_FALSE(fx.send(build_frame(ack), 900'000).has_value());
	FrameSpec cnp = data_spec();
	cnp.opcode = QN_OP_CNP;
	cnp.tos = QN_DSCP_CONTROL << 2;
	CHECK_FALSE(fx.send(build_frame(cnp), 900'000).has_value());
	FrameSpec other_class = data_spec();
	other_class.tos = (10 << 2) | 2; // DSCP 10: priority 1, not the data class
	CHECK_FALSE(fx.send(build_frame(other_class), 900'000).has_value());
	FrameSpec pbt = data_spec();
	pbt.sport = 0xC050;
	pbt.tos |= QN_TOS_PBT; // PB-FS's marker bit does not change the class
	CHECK(fx.send(build_frame(pbt), 900'000).has_value());
	CHECK(fx.stats(kLoPort).sfc_congested == 1);
	// SFC off: the same congested data packet requests nothing (the negative control).
	fx.cfg.sfc.on = 0;
	fx.write_cfg();
	CHECK_FALSE(fx.send(flow(0xC051), 900'000).has_value());
	CHECK(fx.stats(kLoPort).sfc_congested == 1);
}

TEST_CASE("qn_stage_sfc__golden_bts_from_its_own_trigger", "[bpf][sfc]")
{
	if (!have_root())
		return;
	SfcFixture fx;
	Bytes in = build_frame(data_spec());
	const uint32_t seq = fx.next_seq();
	REQUIRE(fx.send(in, 375'000).has_value()); // 200 us
	TestRunOut out = fx.recirc(in, QN_SIG_MARK(QN_SIG_BTS, 0u, seq));
	REQUIRE(out.retval == TC_ACT_REDIRECT_);
	// src = the congested receiver, dst = the sender, UDP 4793; version 1 | origin 0,
	// cacheable, 200 us (0x00C8), reporter switch 7 << 8 | port 2; the original's IPv4, UDP, BTH.
	Bytes want = signal_headers(kDst, QN_BTS_UDP_PORT, 48, in);
	want.insert(want.end(), {0x10, 0x01, 0x00, 0xC8, 0x00, 0x00, 0x07, 0x02});
	want.insert(want.end(), in.begin() + 14, in.begin() + 54);
	CHECK(hex(out.data, 200) == hex(want, 200));
	CHECK(fx.stats(0).sig_bts == 1);
}
