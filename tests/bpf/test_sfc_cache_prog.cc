// BPF_PROG_TEST_RUN tables for SFC part 2 (bpf/include/sfc.h, sfc.md §3.1 I1/I3, §3.4, §3.5,
// §6.2-§6.5; paper §5.2):
// - the pause cache: a cacheable BTS transiting toward a host inserts (dst, DSCP) -> end; data
//   from a host toward that destination gets a BTS of origin 1 with the time left and is still
//   forwarded; an entry expires; the max-update keeps the later end; a live entry of another key
//   in the same slot (a tag collision) is neither overwritten nor answered; PB-FS's PBT bit does
//   not split a key while another DSCP does; where caches live (off / tor / all);
// - SFC-P: a BTS for a host, transiting or built here, becomes one PAUSE request (never a
//   drop), quanta = ceil(pause x rate / 512), the frame the control thread sends for it; with
//   SFC-P off or not at the last hop, the BTS goes on;
// - the incast estimator: the first BTS at the byte count E1 predicts, origin 2, its pause;
//   off, nothing.
#include "signal_fixture.h"

#include <chrono>
#include <optional>
#include <thread>

#include "control/gauges.h"
#include "control/pfc.h"
#include "control/rawsock.h"

#include <sys/mman.h>

using namespace qn_test;

namespace {

constexpr uint32_t kRecv = 0x0b000901;   // 11.0.9.1: the congested receiver the BTS names
constexpr uint8_t kDataTos = (QN_DSCP_DATA << 2) | 2;

// The cache slot and tag of (daddr, tos): a mirror of sfc.h qn_sfc_key_hash (the tests check the
// slot it names holds the entry, so a drift fails here).
struct Slot {
	uint32_t idx;
	uint64_t tag;
};
Slot slot_of(uint32_t daddr, uint8_t tos)
{
	const uint64_t mask = (1ull << QN_SFC_KEY_BITS) - 1;
	uint64_t k = (uint64_t(daddr) << 5) | ((((tos >> 2) & 0x3F) & ~uint64_t(QN_SFC_DSCP_IGNORE)) >> 1);
	k = (k * 0x9E3779B97Full) & mask;
	k ^= k >> 19;
	k = (k * 0x1C2B2AE35ull) & mask;
	k ^= k >> 17;
	return {uint32_t(k & (QN_SFC_CACHE_SLOTS - 1)), k >> QN_SFC_CACHE_IDX_BITS};
}

// A BTS from `recv` to the sender, as a congestion point's builder makes it (sfc.md §5): pause,
// cacheable flag, and the trimmed IPv4/UDP/BTH of a data packet with TOS `data_tos`.
Bytes bts_frame(uint32_t recv, uint16_t pause_us, bool cacheable, uint8_t data_tos = kDataTos)
{
	FrameSpec d = data_spec();
	d.daddr = recv;
	d.tos = data_tos;
	const Bytes data = build_frame(d);
	FrameSpec s = roce();
	s.saddr = recv;
	s.daddr = kSender;
	s.tos = QN_DSCP_CONTROL << 2;
	s.sport = 0xC123;
	s.dport = QN_BTS_UDP_PORT;
	s.bth = false;
	s.payload_len = 48;
	Bytes f = build_frame(s);
	uint8_t *b = &f[42];
	b[0] = QN_BTS_VERSION << 4;
	b[1] = cacheable ? QN_BTS_CACHEABLE : 0;
	b[2] = uint8_t(pause_us >> 8);
	b[3] = uint8_t(pause_us);
	std::memset(b + 4, 0, 4);
	std::memcpy(b + 8, &data[14], 40);
	return f;
}

struct CacheFixture : SignalFixture {
	CacheFixture()
	{
		add_route(kRecv, 1);
		cfg.test.qdepth = 1;
		cfg.sfc.on = 1;
		cfg.sfc.qth_bytes = 250'000;
		cfg.sfc.qtg_bytes = 125'000;
		cfg.sfc.tbf_ns = 0; // no suppression: every hit signals
		cfg.sfc.cache = QN_SFC_CACHE_TOR;
		write_cfg();
		depth(0); // an empty local queue: only the cache can signal
	}
	// A BTS arriving from the switch-facing port. Return: the verdict.
	uint32_t transit(const Bytes &bts) { return ingress(bts, kSwitchPort).retval; }
	// Data from a host toward `daddr`. Return: the BTS it triggered, if any.
	std::optional<qn_sig_entry> data(uint32_t daddr, uint8_t tos = kDataTos, uint16_t sport = 0xC200)
	{
		FrameSpec s = data_spec();
		s.daddr = daddr;
		s.tos = tos;
		s.sport = sport;
		const uint32_t seq = next_seq();
		REQUIRE(ingress(build_frame(s), kHostPort).retval == TC_ACT_REDIRECT_); // always forwarded
		if (next_seq() == seq)
			return std::nullopt;
		qn_sig_entry e = slot(seq);
		CHECK(QN_SIG_TYPE(e.mark) == QN_SIG_BTS);
		return e;
	}
	uint64_t word(uint32_t idx)
	{
		uint64_t w = 0;
		REQUIRE(bpf_map_lookup_elem(bpf_map__fd(skel->maps.qn_sfc_cache), &idx, &w) == 0);
		return w;
	}
	void set_role(uint32_t ifindex, uint32_t role)
	{
		qn_port p{};
		REQUIRE(bpf_map_lookup_elem(bpf_map__fd(skel->maps.qn_ports), &ifindex, &p) == 0);
		p.role = role;
		REQUIRE(bpf_map_update_elem(bpf_map__fd(skel->maps.qn_ports), &ifindex, &p, BPF_ANY) == 0);
	}
	// The PAUSE requests the programs posted since the last call.
	std::vector<qn_pfc_event> pfc_events()
	{
		std::vector<qn_pfc_event> v;
		auto cb = [](void *ctx, void *data, size_t len) -> int {
			if (len >= sizeof(qn_pfc_event)) {
				qn_pfc_event e;
				std::memcpy(&e, data, sizeof(e));
				static_cast<std::vector<qn_pfc_event> *>(ctx)->push_back(e);
			}
			return 0;
		};
		ring_buffer *rb = ring_buffer__new(bpf_map__fd(skel->maps.qn_pfc_events), cb, &v, nullptr);
		REQUIRE(rb);
		ring_buffer__consume(rb);
		ring_buffer__free(rb);
		return v;
	}
	uint64_t drops(uint32_t port)
	{
		uint64_t n = 0;
		for (uint64_t d : stats(port).drops)
			n += d;
		return n;
	}
};

constexpr uint64_t kEndMask = (1ull << QN_SFC_END_BITS) - 1;

} // namespace

TEST_CASE("qn_sfc_cache__insert_then_hit_with_the_time_left", "[bpf][sfc][cache]")
{
	if (!have_root())
		return;
	CacheFixture fx;
	CHECK_FALSE(fx.data(kRecv).has_value()); // empty cache, empty queue: nothing
	REQUIRE(fx.transit(bts_frame(kRecv, 60'000, true)) == TC_ACT_REDIRECT_); // the BTS goes on
	CHECK(fx.stats(1).sfc_cache_insert == 1);
	const Slot s = slot_of(kRecv, kDataTos);
	const uint64_t w = fx.word(s.idx);
	CHECK(w >> QN_SFC_END_BITS == s.tag);
	CHECK((w & kEndMask) != 0);
	auto b = fx.data(kRecv);
	REQUIRE(b.has_value());
	CHECK(b->v.bts.origin == QN_BTS_ORIGIN_CACHE);
	// The time left: at most the 60 ms cached (plus a µs of rounding), and not the whole of it
	// gone (a 14 ms stall of this VM leaves 46 ms).
	CHECK(b->v.bts.pause_us <= 60'001);
	CHECK(b->v.bts.pause_us > 40'000);
	CHECK(b->v.bts.cacheable == 1); // lo faces a host in this fixture
	CHECK(fx.stats(kLoPort).sfc_bts_cache == 1);
	CHECK(fx.stats(kLoPort).sfc_bts_queue == 0);
	// Another destination: no entry, no BTS.
	CHECK_FALSE(fx.data(kDst).has_value());
	// A BTS that is not cacheable (congestion inside the fabric) is not cached.
	REQUIRE(fx.transit(bts_frame(kDst, 60'000, false)) == TC_ACT_REDIRECT_);
	CHECK(fx.stats(1).sfc_cache_insert == 1);
	CHECK_FALSE(fx.data(kDst).has_value());
}

TEST_CASE("qn_sfc_cache__entries_expire", "[bpf][sfc][cache]")
{
	if (!have_root())
		return;
	CacheFixture fx;
	REQUIRE(fx.transit(bts_frame(kRecv, 1'000, true)) == TC_ACT_REDIRECT_); // 1 ms (D = 1)
	std::this_thread::sleep_for(std::chrono::milliseconds(5));
	CHECK_FALSE(fx.data(kRecv).has_value());
	CHECK(fx.stats(kLoPort).sfc_bts_cache == 0);
	// An expired entry of the same key is replaced by a new insert, not an update.
	REQUIRE(fx.transit(bts_frame(kRecv, 60'000, true)) == TC_ACT_REDIRECT_);
	CHECK(fx.stats(1).sfc_cache_insert == 2);
	CHECK(fx.stats(1).sfc_cache_update == 0);
	CHECK(fx.data(kRecv).has_value());
}

TEST_CASE("qn_sfc_cache__max_update_keeps_the_later_end", "[bpf][sfc][cache]")
{
	if (!have_root())
		return;
	CacheFixture fx;
	const Slot s = slot_of(kRecv, kDataTos);
	REQUIRE(fx.transit(bts_frame(kRecv, 60'000, true)) == TC_ACT_REDIRECT_);
	const uint64_t w1 = fx.word(s.idx);
	REQUIRE(fx.transit(bts_frame(kRecv, 20'000, true)) == TC_ACT_REDIRECT_); // ends earlier
	CHECK(fx.word(s.idx) == w1);
	CHECK(fx.stats(1).sfc_cache_update == 0);
	REQUIRE(fx.transit(bts_frame(kRecv, 65'000, true)) == TC_ACT_REDIRECT_); // ends later
	const uint64_t w2 = fx.word(s.idx);
	CHECK(w2 >> QN_SFC_END_BITS == s.tag);
	CHECK(((w2 - w1) & kEndMask) > 0);
	CHECK(((w2 - w1) & kEndMask) < (1ull << 30));
	CHECK(fx.stats(1).sfc_cache_update == 1);
	CHECK(fx.stats(1).sfc_cache_insert == 1);
	auto b = fx.data(kRecv);
	REQUIRE(b.has_value());
	CHECK(b->v.bts.pause_us > 50'000); // the later end, not the 20 ms one
}

TEST_CASE("qn_sfc_cache__a_tag_collision_sends_no_bts", "[bpf][sfc][cache]")
{
	if (!have_root())
		return;
	CacheFixture fx;
	const Slot a = slot_of(kRecv, kDataTos);
	// Another receiver whose key lands in the same slot with another tag.
	uint32_t other = 0;
	for (uint32_t x = 0x0b000000; x < 0x0b400000 && !other; x++)
		if (x != kRecv && slot_of(x, kDataTos).idx == a.idx)
			other = x;
	REQUIRE(other);
	REQUIRE(slot_of(other, kDataTos).tag != a.tag);
	fx.add_route(other, 1);
	REQUIRE(fx.transit(bts_frame(kRecv, 60'000, true)) == TC_ACT_REDIRECT_);
	const uint64_t w = fx.word(a.idx);
	CHECK(fx.stats(1).sfc_cache_insert == 1);
	// The other key's BTS finds a live entry of another key: not cached, the entry kept.
	REQUIRE(fx.transit(bts_frame(other, 65'000, true)) == TC_ACT_REDIRECT_);
	CHECK(fx.stats(1).sfc_cache_collide == 1);
	CHECK(fx.word(a.idx) == w);
	// Data toward the other receiver: the slot's tag is not its own, so no BTS (never a
	// wrong pause); data toward the first still hits.
	CHECK_FALSE(fx.data(other).has_value());
	CHECK(fx.data(kRecv).has_value());
	CHECK(fx.stats(kLoPort).sfc_bts_cache == 1);
}

TEST_CASE("qn_sfc_cache__key_ignores_the_pbt_bit_but_not_the_dscp", "[bpf][sfc][cache]")
{
	if (!have_root())
		return;
	CacheFixture fx;
	// The BTS names a PBT-marked data packet (PB-FS's bit set); plain data hits the same entry,
	// and so does marked data.
	REQUIRE(fx.transit(bts_frame(kRecv, 60'000, true, kDataTos | QN_TOS_PBT)) == TC_ACT_REDIRECT_);
	CHECK(slot_of(kRecv, kDataTos | QN_TOS_PBT).idx == slot_of(kRecv, kDataTos).idx);
	CHECK(fx.data(kRecv, kDataTos).has_value());
	CHECK(fx.data(kRecv, kDataTos | QN_TOS_PBT, 0xC201).has_value());
	CHECK(fx.stats(kLoPort).sfc_bts_cache == 2);
	// A BTS about another class's data (DSCP 28, priority 3 as well) is another key: data of
	// DSCP 26 does not hit it.
	REQUIRE(fx.transit(bts_frame(kDst, 60'000, true, (28 << 2) | 2)) == TC_ACT_REDIRECT_);
	CHECK(fx.stats(1).sfc_cache_insert == 2);
	CHECK_FALSE(fx.data(kDst, kDataTos).has_value());
	CHECK(fx.data(kDst, (28 << 2) | 2).has_value());
}

TEST_CASE("qn_sfc_cache__where_caches_live", "[bpf][sfc][cache]")
{
	if (!have_root())
		return;
	CacheFixture fx;
	// Off: no insert, no hit, while the congestion point still signals (the negative control).
	fx.cfg.sfc.cache = QN_SFC_CACHE_OFF;
	fx.write_cfg();
	REQUIRE(fx.transit(bts_frame(kRecv, 60'000, true)) == TC_ACT_REDIRECT_);
	CHECK(fx.stats(1).sfc_cache_insert == 0);
	CHECK_FALSE(fx.data(kRecv).has_value());
	fx.depth(400'000);
	auto q = fx.data(kRecv);
	REQUIRE(q.has_value());
	CHECK(q->v.bts.origin == QN_BTS_ORIGIN_CONGESTION);
	CHECK(fx.stats(kLoPort).sfc_bts_cache == 0);
	fx.depth(0);
	// tor: a BTS whose next hop is a switch (this switch is not the sender's ToR) is not cached.
	fx.cfg.sfc.cache = QN_SFC_CACHE_TOR;
	fx.write_cfg();
	fx.set_role(kLo, QN_ROLE_SWITCH);
	REQUIRE(fx.transit(bts_frame(kRecv, 60'000, true)) == TC_ACT_REDIRECT_);
	CHECK(fx.stats(1).sfc_cache_insert == 0);
	// all (Alg. 1): it is.
	fx.cfg.sfc.cache = QN_SFC_CACHE_ALL;
	fx.write_cfg();
	REQUIRE(fx.transit(bts_frame(kRecv, 60'000, true)) == TC_ACT_REDIRECT_);
	CHECK(fx.stats(1).sfc_cache_insert == 1);
	// tor answers only data from its hosts; all answers data from a switch port too.
	FrameSpec d = data_spec();
	d.daddr = kRecv;
	uint32_t seq = fx.next_seq();
	REQUIRE(fx.ingress(build_frame(d), kSwitchPort).retval == TC_ACT_REDIRECT_);
	CHECK(fx.next_seq() == seq + 1);
	fx.cfg.sfc.cache = QN_SFC_CACHE_TOR;
	fx.write_cfg();
	seq = fx.next_seq();
	REQUIRE(fx.ingress(build_frame(d), kSwitchPort).retval == TC_ACT_REDIRECT_);
	CHECK(fx.next_seq() == seq);
	CHECK(fx.data(kRecv).has_value());
}

TEST_CASE("qn_sfcp__a_transiting_bts_for_a_host_becomes_one_pause", "[bpf][sfc][sfcp]")
{
	if (!have_root())
		return;
	CacheFixture fx;
	fx.cfg.sfc.sfcp = 1;
	fx.write_cfg();
	fx.pfc_events();
	// 200 us at the host link's 10 Gbit/s: 2,000,000 bits / 512 = 3906.25 -> 3907 quanta.
	REQUIRE(fx.transit(bts_frame(kRecv, 200, true)) == TC_ACT_SHOT_);
	CHECK(fx.drops(1) == 0); // consumed, not dropped
	CHECK(fx.stats(kLoPort).sfcp_pause == 1);
	CHECK(fx.stats(1).sfc_cache_insert == 1); // cached before it was converted
	auto ev = fx.pfc_events();
	REQUIRE(ev.size() == 1);
	CHECK(ev[0].ifindex == kLo);
	CHECK(ev[0].port_no == kLoPort);
	CHECK(ev[0].prio == QN_PRIO_DATA); // the trimmed header's DSCP 26
	CHECK(ev[0].flags == QN_PFC_EV_ONCE);
	CHECK(ev[0].quanta == 3907);
	// The frame the control thread sends for it: MAC control to 01:80:C2:00:00:01, opcode 0x0101,
	// class-enable vector bit 3, quanta 3907 (0x0F43) for priority 3 alone, padded to 60 bytes.
	const Mac src{0x02, 0x51, 1, 0, 9, 0x77};
	Bytes want = {0x01, 0x80, 0xC2, 0x00, 0x00, 0x01, 0x02, 0x51, 0x01, 0x00, 0x09, 0x77, 0x88, 0x08,
		      0x01, 0x01, 0x00, 0x08, 0, 0, 0, 0, 0, 0, 0x0F, 0x43, 0, 0, 0, 0, 0, 0, 0, 0};
	want.resize(60, 0);
	CHECK(hex(pfc_frame_for(src, ev[0].prio, uint16_t(ev[0].quanta)), 64) == hex(want, 64));
	// Quanta saturate at 65535 (3.36 ms at 10 Gbit/s): a 60 ms pause asks for 65535.
	REQUIRE(fx.transit(bts_frame(kRecv, 60'000, true)) == TC_ACT_SHOT_);
	ev = fx.pfc_events();
	REQUIRE(ev.size() == 1);
	CHECK(ev[0].quanta == 65535);
	// A pause of 0 sends no PAUSE (0 quanta would be an XON).
	REQUIRE(fx.transit(bts_frame(kRecv, 0, true)) == TC_ACT_SHOT_);
	CHECK(fx.pfc_events().empty());
	CHECK(fx.stats(kLoPort).sfcp_pause == 2);
	// Not the last hop (the next hop is a switch): forwarded as a BTS.
	fx.set_role(kLo, QN_ROLE_SWITCH);
	CHECK(fx.transit(bts_frame(kRecv, 200, true)) == TC_ACT_REDIRECT_);
	CHECK(fx.pfc_events().empty());
	// SFC-P off: forwarded, nothing posted (the negative control).
	fx.set_role(kLo, QN_ROLE_HOST);
	fx.cfg.sfc.sfcp = 0;
	fx.write_cfg();
	CHECK(fx.transit(bts_frame(kRecv, 200, true)) == TC_ACT_REDIRECT_);
	CHECK(fx.pfc_events().empty());
	CHECK(fx.stats(kLoPort).sfcp_pause == 2);
}

TEST_CASE("qn_sfcp__a_bts_built_here_for_a_local_host_becomes_one_pause", "[bpf][sfc][sfcp]")
{
	if (!have_root())
		return;
	CacheFixture fx;
	fx.cfg.sfc.sfcp = 1;
	fx.write_cfg();
	fx.pfc_events();
	fx.depth(375'000); // 250 KB over Q_Tg at 10 Gbit/s: 200 us
	const Bytes in = build_frame(data_spec());
	const uint32_t seq = fx.next_seq();
	REQUIRE(fx.ingress(in, kHostPort).retval == TC_ACT_REDIRECT_);
	REQUIRE(fx.next_seq() == seq + 1);
	// The builder: the sender's next hop is a host port (lo), so the BTS becomes the PAUSE.
	TestRunOut out = fx.recirc(in, QN_SIG_MARK(QN_SIG_BTS, 0u, seq));
	CHECK(out.retval == TC_ACT_SHOT_);
	auto ev = fx.pfc_events();
	REQUIRE(ev.size() == 1);
	CHECK(ev[0].quanta == 3907);
	CHECK(ev[0].prio == QN_PRIO_DATA);
	CHECK(ev[0].flags == QN_PFC_EV_ONCE);
	CHECK(fx.stats(0).sig_bts == 1);
	CHECK(fx.stats(0).sig_lost == 0);
	CHECK(fx.stats(kLoPort).sfcp_pause == 1);
	// SFC-P off: the builder makes the BTS.
	fx.cfg.sfc.sfcp = 0;
	fx.write_cfg();
	const uint32_t seq2 = fx.next_seq();
	FrameSpec d2 = data_spec();
	d2.sport = 0xC777;
	const Bytes in2 = build_frame(d2);
	REQUIRE(fx.ingress(in2, kHostPort).retval == TC_ACT_REDIRECT_);
	REQUIRE(fx.next_seq() == seq2 + 1);
	out = fx.recirc(in2, QN_SIG_MARK(QN_SIG_BTS, 0u, seq2));
	CHECK(out.retval == TC_ACT_REDIRECT_);
	CHECK(fx.pfc_events().empty());
}

TEST_CASE("qn_sfc_estimator__signals_at_the_predicted_byte_count", "[bpf][sfc][est]")
{
	if (!have_root())
		return;
	CacheFixture fx;
	fx.cfg.sfc.cache = QN_SFC_CACHE_OFF;
	fx.cfg.sfc.qtg_bytes = 1'000;
	fx.cfg.sfc.est_tau_ns = 1'000'000'000;    // tau = 1 s: the decay over the test is < 1%
	fx.cfg.sfc.est_rate_bps = 100'000;        // R_dst = 100 kbit/s: 12,500 B drain in tau
	fx.write_cfg();
	FrameSpec d = data_spec();
	d.daddr = kRecv;
	const size_t len = build_frame(d).size();
	// Off: nothing, however many bytes.
	for (int i = 0; i < 20; i++)
		CHECK_FALSE(fx.data(kRecv).has_value());
	fx.cfg.sfc.est = 1;
	fx.write_cfg();
	// E1: X grows by each frame; the first BTS when X > R tau + Q_Tg = 13,500 B.
	const size_t want_n = 13'500 / len + 1;
	size_t first = 0;
	std::optional<qn_sig_entry> b;
	for (size_t n = 1; n <= want_n + 5 && !first; n++) {
		b = fx.data(kRecv);
		if (b)
			first = n;
	}
	REQUIRE(first);
	// The decay can only delay the first signal: not before the count, at most 1 late.
	CHECK(first >= want_n);
	CHECK(first <= want_n + 1);
	CHECK(b->v.bts.origin == QN_BTS_ORIGIN_ESTIMATOR);
	// Its pause: (X - 13,500 B) x 8 / 100 kbit/s, X = first x len at most.
	const double over = double(first * len) - 13'500.0;
	CHECK(double(b->v.bts.pause_us) <= over * 8 / 100'000 * 1e6 + 1);
	CHECK(double(b->v.bts.pause_us) >= 0.9 * (over - double(len)) * 8 / 100'000 * 1e6);
	CHECK(fx.stats(kLoPort).sfc_bts_est == 1);
	// Data from a switch port does not feed the estimator (only this switch's hosts).
	const uint32_t seq = fx.next_seq();
	REQUIRE(fx.ingress(build_frame(d), kSwitchPort).retval == TC_ACT_REDIRECT_);
	CHECK(fx.next_seq() == seq);
}

// The occupancy gauge (userspace/control/gauges.cc): the control thread's scan of the cache
// counts the entries with time left, by the stage's own liveness rule; expired, empty and stale
// words are not counted.
TEST_CASE("qn_sfc_cache__occupancy_scan_counts_live_entries", "[bpf][sfc][cache][gauge]")
{
	if (!have_root())
		return;
	CacheFixture fx;
	const qn::TableScan *scan = nullptr;
	for (const auto &t : qn::table_scans())
		if (std::string(t.map) == "qn_sfc_cache")
			scan = &t;
	REQUIRE(scan);
	auto d = qn::Dilation::make(1);
	REQUIRE(d);
	const int fd = bpf_map__fd(fx.skel->maps.qn_sfc_cache);
	const size_t len = QN_SFC_CACHE_SLOTS * sizeof(uint64_t);
	void *m = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
	REQUIRE(m != MAP_FAILED);
	const auto *w = static_cast<const uint64_t *>(m);
	auto live = [&] { return scan->count(w, QN_SFC_CACHE_SLOTS, qn::mono_ns(), *d); };
	CHECK(live() == 0);
	REQUIRE(fx.transit(bts_frame(kRecv, 60'000, true)) == TC_ACT_REDIRECT_); // 60 ms
	REQUIRE(fx.transit(bts_frame(kDst, 1'000, true)) == TC_ACT_REDIRECT_);   // 1 ms
	REQUIRE(fx.stats(1).sfc_cache_insert == 2);
	CHECK(live() == 2);
	std::this_thread::sleep_for(std::chrono::milliseconds(5));
	CHECK(live() == 1); // kDst's entry expired
	// A word whose end lies further ahead than any pause can reach is stale, not live.
	const Slot s = slot_of(kDst, kDataTos);
	const uint64_t now_u = qn::mono_ns() >> QN_SFC_END_SHIFT;
	const uint64_t stale = (s.tag << QN_SFC_END_BITS) | ((now_u + (1ull << 30)) & kEndMask);
	REQUIRE(bpf_map_update_elem(fd, &s.idx, &stale, BPF_ANY) == 0);
	CHECK(live() == 1);
	CHECK_FALSE(fx.data(kDst).has_value()); // the stage agrees: no time left
	munmap(m, len);
}
