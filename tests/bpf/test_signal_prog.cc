// BPF_PROG_TEST_RUN tables for typed recirculation signals and a mutation campaign:
// - golden bytes of a BTS and a CC-postcard built by qn_tc_recirc from given side values;
// - two interleaved triggers at ingress, each with its own values, give two signals each with
//   its own values (the values travel in the ring entry the copy's mark names);
// - a request whose ring entry was taken by a newer one is counted lost, never built;
// - test knobs are behind one check: set in the map but off in the settings, they do nothing;
// - >= 100,000 random and mutated frames through the ingress program and the builder: every
//   output frame parses, every verdict is in the valid set, the counters add up.
#include "signal_fixture.h"

#include <algorithm>
#include <cstdlib>
#include <random>


using namespace qn_test;

namespace {

// Every output of the builder: an untagged IPv4/UDP frame with a 20-byte header, a valid
// checksum, lengths that match the frame, a signal port, control DSCP, Not-ECT.
void check_signal_frame(const Bytes &f)
{
	INFO(hex(f));
	REQUIRE(f.size() >= 42);
	CHECK(be16(&f[12]) == 0x0800);
	CHECK(f[14] == 0x45);
	CHECK(f[15] == QN_DSCP_CONTROL << 2);
	CHECK(be16(&f[16]) == f.size() - 14);
	CHECK(ipv4_checksum(&f[14], 20) == 0);
	CHECK(f[23] == 17);
	CHECK(be16(&f[38]) == f.size() - 34);
	const uint16_t dport = be16(&f[36]);
	CHECK((dport == QN_ECHO_UDP_PORT || dport == QN_BTS_UDP_PORT || dport == QN_POSTCARD_UDP_PORT));
	CHECK(f.size() == (dport == QN_ECHO_UDP_PORT ? QN_ECHO_LEN : dport == QN_BTS_UDP_PORT ? QN_BTS_LEN : QN_POSTCARD_LEN));
}

// A frame the ingress program forwarded, against what went in: same tags and EtherType, next
// hop MACs, an IPv4 header that a receiver parses (version, IHL, total length within the frame)
// differing only in TTL - 1, CE on an ECT packet, and a checksum that is valid exactly when the
// input's was (the incremental update keeps an error, it never makes one); every byte after the
// IPv4 header unchanged.
void qn_pkt_check_forwarded(const Bytes &in, const Bytes &out)
{
	INFO("in  " << hex(in, 96) << "\nout " << hex(out, 96));
	bool nh_mac = false;
	for (int i = 0; i < 4; i++)
		nh_mac = nh_mac || (std::equal(out.begin(), out.begin() + 6, nh_dmac(i).begin()) &&
				    std::equal(out.begin() + 6, out.begin() + 12, nh_smac(i).begin()));
	CHECK(nh_mac);
	size_t off = 12;
	int tags = 0;
	while (be16(&in[off]) == 0x8100 || be16(&in[off]) == 0x88A8) {
		REQUIRE(++tags <= QN_VLAN_MAX_DEPTH);
		REQUIRE(std::equal(in.begin() + long(off), in.begin() + long(off) + 4, out.begin() + long(off)));
		off += 4;
	}
	REQUIRE(be16(&in[off]) == 0x0800);
	REQUIRE(be16(&out[off]) == 0x0800);
	const size_t l3 = off + 2;
	REQUIRE(out.size() >= l3 + 20);
	const uint8_t *ip = &out[l3], *iip = &in[l3];
	const size_t ihl = (ip[0] & 0xF) * 4u;
	REQUIRE(ip[0] >> 4 == 4);
	REQUIRE(ihl >= 20);
	REQUIRE(be16(&ip[2]) >= ihl);
	REQUIRE(l3 + be16(&ip[2]) <= out.size());
	REQUIRE(l3 + ihl <= out.size());
	CHECK(ip[8] == iip[8] - 1);                   // TTL
	CHECK((ip[1] & 0xFC) == (iip[1] & 0xFC));     // DSCP kept
	if ((ip[1] & 3) != (iip[1] & 3))
		CHECK(((iip[1] & 3) != 0 && (ip[1] & 3) == 3)); // only ECT -> CE
	for (size_t k = 0; k < ihl; k++)
		if (k != 1 && k != 8 && k != 10 && k != 11)
			REQUIRE(ip[k] == iip[k]);
	CHECK((ipv4_checksum(ip, ihl) == 0) == (ipv4_checksum(iip, ihl) == 0));
	CHECK(std::equal(out.begin() + long(l3 + ihl), out.end(), in.begin() + long(l3 + ihl)));
}

} // namespace

TEST_CASE("qn_tc_recirc__golden_bts", "[bpf][signal]")
{
	if (!have_root())
		return;
	SignalFixture fx;
	Bytes in = build_frame(data_spec());
	qn_sig_entry v{};
	v.eport = 5;
	v.v.bts.pause_us = 1234;
	v.v.bts.origin = QN_BTS_ORIGIN_CACHE;
	v.v.bts.cacheable = 1;
	TestRunOut out = fx.recirc(in, fx.request(QN_SIG_BTS, 17, v, 0));
	REQUIRE(out.retval == TC_ACT_REDIRECT_);
	// src = the congested receiver (the data's dst), dst = the sender, UDP 4793, 48-byte BTS:
	// version 1 | origin 1, flags cacheable, pause 1234 us, reporter = switch 7 << 8 | port 5,
	// then the original's IPv4 (20), UDP (8) and BTH (12) headers as the copy carried them.
	Bytes want = signal_headers(kDst, QN_BTS_UDP_PORT, 48, in);
	want.insert(want.end(), {0x11, 0x01, 0x04, 0xD2, 0x00, 0x00, 0x07, 0x05});
	want.insert(want.end(), in.begin() + 14, in.begin() + 54);
	CHECK(hex(out.data, 200) == hex(want, 200));
	check_signal_frame(out.data);
	CHECK(fx.stats(0).sig_bts == 1);
	// A pause beyond 16 bits is clamped to 65535 us.
	v.v.bts.pause_us = 100000;
	out = fx.recirc(in, fx.request(QN_SIG_BTS, 18, v, 0));
	REQUIRE(out.retval == TC_ACT_REDIRECT_);
	CHECK(be16(&out.data[44]) == 65535);
}

TEST_CASE("qn_tc_recirc__golden_postcard", "[bpf][signal]")
{
	if (!have_root())
		return;
	SignalFixture fx;
	Bytes in = build_frame(data_spec());
	qn_sig_entry v{};
	v.eport = kLoPort;
	v.eifindex = kLo;
	v.v.postcard.i_p = 150'000;
	v.v.postcard.q1 = 40'000;
	v.v.postcard.rate_mbps = 10'000;
	v.v.postcard.recent_bytes = 90'000;
	v.v.postcard.recent_marked_bytes = 30'000;
	v.v.postcard.t0_ns = 0x0102030405060708ULL;
	TestRunOut out = fx.recirc(in, fx.request(QN_SIG_POSTCARD, 3, v, 1));
	REQUIRE(out.retval == TC_ACT_REDIRECT_);
	// src = the switch's address; 56 bytes: version 1, PSN, sID (switch 7, port MAC), flow id,
	// DestQP, I_p, Q1, T, recentBytes, recentMarkedBytes, t0.
	Bytes want = signal_headers(kSwitchAddr, QN_POSTCARD_UDP_PORT, 56, in);
	want.insert(want.end(), {0x01, 0x12, 0x34, 0x56});
	want.insert(want.end(), {0x00, 0x07, kLoMac[0], kLoMac[1], kLoMac[2], kLoMac[3], kLoMac[4], kLoMac[5]});
	want.insert(want.end(), in.begin() + 26, in.begin() + 34); // saddr, daddr
	want.insert(want.end(), in.begin() + 34, in.begin() + 38); // sport, dport
	want.insert(want.end(), {0x00, 0x0A, 0xBC, 0xDE});           // DestQP
	want.insert(want.end(), {0x00, 0x02, 0x49, 0xF0, 0x00, 0x00, 0x9C, 0x40, 0x00, 0x00, 0x27, 0x10});
	want.insert(want.end(), {0x00, 0x01, 0x5F, 0x90, 0x00, 0x00, 0x75, 0x30});
	want.insert(want.end(), {1, 2, 3, 4, 5, 6, 7, 8});
	CHECK(hex(out.data, 200) == hex(want, 200));
	check_signal_frame(out.data);
	CHECK(fx.stats(1).sig_postcard == 1);
}

TEST_CASE("qn_tc_recirc__echo_of_tagged_frame_with_ip_options", "[bpf][signal]")
{
	if (!have_root())
		return;
	SignalFixture fx;
	FrameSpec s = data_spec();
	s.vlan_tcis = {100, 200};
	s.ip_options = {0x01, 0x01, 0x01, 0x00}; // NOP NOP NOP EOL
	Bytes in = build_frame(s);
	TestRunOut out = fx.recirc(in, fx.request(QN_SIG_ECHO, 9));
	REQUIRE(out.retval == TC_ACT_REDIRECT_);
	// Expect: an untagged echo with a 20-byte header (tags and options gone), the BTH carried.
	check_signal_frame(out.data);
	CHECK((out.data[47] << 16 | out.data[48] << 8 | out.data[49]) == 0xABCDE);
	Bytes bts_in = in;
	out = fx.recirc(bts_in, fx.request(QN_SIG_BTS, 10));
	REQUIRE(out.retval == TC_ACT_REDIRECT_);
	check_signal_frame(out.data);
	// The trimmed IPv4 header is the original's first 20 bytes (its IHL says 6).
	CHECK(out.data[50] == 0x46);
}

TEST_CASE("qn_tc_ingress__interleaved_triggers_keep_their_own_values", "[bpf][signal]")
{
	if (!have_root())
		return;
	SignalFixture fx;
	fx.cfg.test.mirror_dport = QN_ROCE_UDP_PORT;
	fx.cfg.test.mirror_signal = QN_SIG_BTS - QN_SIG_ECHO;
	fx.cfg.test.qdepth = 1;
	fx.write_cfg();
	FrameSpec sa = data_spec(), sb = data_spec();
	sb.sport = 0xC456;
	Bytes a = build_frame(sa), b = build_frame(sb);
	// A finds 100 KB queued (80 us to drain at 10 Gbit/s), B 300 KB (240 us); both trigger
	// before either copy reaches the builder.
	fx.depth(100'000);
	uint32_t seq_a = fx.next_seq();
	REQUIRE(fx.ingress(a, kHostPort).retval == TC_ACT_REDIRECT_);
	fx.depth(300'000);
	uint32_t seq_b = fx.next_seq();
	REQUIRE(fx.ingress(b, kHostPort).retval == TC_ACT_REDIRECT_);
	REQUIRE(seq_b == seq_a + 1);
	CHECK(fx.slot(seq_a).v.bts.pause_us == 80);
	CHECK(fx.slot(seq_b).v.bts.pause_us == 240);
	// The copies as the ingress program sent them (mark = type, ingress port 0, sequence), in
	// the reverse order: each signal carries its own trigger's values and its own sender's port.
	TestRunOut ob = fx.recirc(b, QN_SIG_MARK(QN_SIG_BTS, 0u, seq_b));
	TestRunOut oa = fx.recirc(a, QN_SIG_MARK(QN_SIG_BTS, 0u, seq_a));
	REQUIRE(oa.retval == TC_ACT_REDIRECT_);
	REQUIRE(ob.retval == TC_ACT_REDIRECT_);
	CHECK(be16(&oa.data[44]) == 80);
	CHECK(be16(&ob.data[44]) == 240);
	CHECK(be16(&oa.data[34]) == 0xC123);
	CHECK(be16(&ob.data[34]) == 0xC456);
	CHECK((oa.data[43] & 1) == 1); // the congested port faces a host: cacheable
	CHECK(fx.stats(0).sig_bts == 2);
	// A copy arriving twice (or a forged mark) finds its entry consumed: lost, not rebuilt.
	CHECK(fx.recirc(a, QN_SIG_MARK(QN_SIG_BTS, 0u, seq_a)).retval == TC_ACT_SHOT_);
	CHECK(fx.stats(0).sig_lost == 1);
}

TEST_CASE("qn_tc_recirc__overwritten_request_is_lost_not_misbuilt", "[bpf][signal]")
{
	if (!have_root())
		return;
	SignalFixture fx;
	Bytes in = build_frame(data_spec());
	qn_sig_entry v{};
	v.v.bts.pause_us = 11;
	uint32_t old_mark = fx.request(QN_SIG_BTS, 5, v);
	v.v.bts.pause_us = 22;
	fx.request(QN_SIG_BTS, 5 + QN_SIG_RING, v); // QN_SIG_RING requests later, same slot
	CHECK(fx.recirc(in, old_mark).retval == TC_ACT_SHOT_);
	CHECK(fx.stats(0).sig_lost == 1);
	CHECK(fx.stats(0).sig_bts == 0);
}

TEST_CASE("qn_tc_ingress__test_knobs_are_off_unless_the_settings_say_so", "[bpf][signal]")
{
	if (!have_root())
		return;
	SignalFixture fx;
	Bytes f = build_frame(data_spec());
	fx.depth(5'000'000); // a depth map entry that would make admission drop everything
	fx.cfg.buffer.admission = 1;
	fx.cfg.test.mirror_dport = QN_ROCE_UDP_PORT;
	fx.cfg.test.qdepth = 1;
	fx.write_cfg();
	REQUIRE(fx.cfg.test.on == 1);
	uint32_t seq = fx.next_seq();
	CHECK(fx.ingress(f, kHostPort).retval == TC_ACT_SHOT_); // the knob's depth: refused
	CHECK(fx.next_seq() == seq);                           // dropped before the mirror stage
	// The same knob values with test.on cleared (as a stale writer would leave them): ignored.
	fx.cfg.test.on = 0;
	uint32_t zero = 0;
	REQUIRE(bpf_map_update_elem(bpf_map__fd(fx.skel->maps.qn_swcfg), &zero, &fx.cfg, BPF_ANY) == 0);
	CHECK(fx.ingress(f, kHostPort).retval == TC_ACT_REDIRECT_);
	CHECK(fx.next_seq() == seq); // no signal request
}

TEST_CASE("qn_switch__mutation_campaign", "[bpf][signal][mutation]")
{
	if (!have_root())
		return;
	SignalFixture fx;
	fx.cfg.buffer.admission = 1;
	fx.cfg.buffer.bytes = 1'000'000'000'000; // TEST_RUN never dequeues: keep admission admitting
	fx.cfg.red.on = 1;
	fx.cfg.red.kmin_bytes = 0;
	fx.cfg.red.kmax_bytes = 1;
	fx.cfg.pfc.on = 1;
	fx.cfg.pfc.hdrm_bytes = 1'000'000'000'000; // nothing departs: keep lossless admission admitting
	fx.cfg.test.qdepth = 1;
	fx.cfg.test.mirror_dport = QN_ROCE_UDP_PORT;
	fx.write_cfg();
	fx.depth(1000);
	std::mt19937_64 rng(20261124);
	auto pick = [&](size_t n) { return size_t(rng() % n); };

	// Templates: every class the parser knows, tagged and with options, fragments.
	std::vector<Bytes> templates;
	{
		FrameSpec s = data_spec();
		templates.push_back(build_frame(s));
		s.opcode = QN_OP_RC_ACK;
		templates.push_back(build_frame(s));
		s.opcode = QN_OP_CNP;
		templates.push_back(build_frame(s));
		s = data_spec();
		s.vlan_tcis = {7};
		templates.push_back(build_frame(s));
		s.vlan_tcis = {7, 8};
		s.ip_options = {1, 1, 1, 0, 0x94, 0x04, 0, 0};
		templates.push_back(build_frame(s));
		s = data_spec();
		s.vlan_tcis = {1, 2, 3};
		templates.push_back(build_frame(s));
		s = data_spec();
		s.frag_off = 0x2000; // first fragment
		templates.push_back(build_frame(s));
		s.frag_off = 0x0010; // a later fragment
		templates.push_back(build_frame(s));
		s = data_spec();
		s.dport = QN_BTS_UDP_PORT;
		s.bth = false;
		s.payload_len = 48;
		templates.push_back(build_frame(s));
		s.dport = QN_POSTCARD_UDP_PORT;
		s.payload_len = 56;
		templates.push_back(build_frame(s));
		s = data_spec();
		s.ipv4 = false;
		s.ethertype = 0x8808;
		templates.push_back(build_frame(s));
		s.ethertype = 0x0806;
		templates.push_back(build_frame(s));
		s = data_spec();
		s.proto = 6;
		s.bth = false;
		templates.push_back(build_frame(s));
		s = data_spec();
		s.dport = 5555;
		s.bth = false;
		s.payload_len = 3;
		templates.push_back(build_frame(s));
	}

	const uint32_t ports[] = {kHostPort, kSwitchPort, 4242 /* unknown */};
	uint64_t sent_known[2] = {}, redirects[2] = {}, sent_unknown = 0, built = 0, build_shot = 0;
	uint64_t ingress_runs = 0, builder_runs = 0, refused = 0;
	const qn_port_stats st0[2] = {fx.stats(0), fx.stats(1)};
	const uint64_t orphan0 = fx.orphan(QN_DROP_UNKNOWN_PORT);
	// A third of the frames under emulation (QN_IN_VM, the 6.1 guest's TCG: the whole campaign
	// took about 20 of that guest's 54 s of BPF tables); every bound below scales with it.
	const int kFrames = std::getenv("QN_IN_VM") ? 35'000 : 105'000;
	for (int i = 0; i < kFrames; i++) {
		Bytes f = templates[pick(templates.size())];
		switch (i % 5) {
		case 0: // truncation at every length (TEST_RUN needs an Ethernet header); half of them
			 // behind a VLAN tag, where TEST_RUN does not insist on a whole IPv4 header
			if (pick(2) && be16(&f[12]) != 0x8100) {
				f.insert(f.begin() + 12, {0x81, 0x00, 0x00, 0x05});
			}
			f.resize(14 + size_t(i / 5) % (f.size() - 13));
			break;
		case 1: { // random bytes flipped
			int n = 1 + int(pick(4));
			for (int k = 0; k < n; k++)
				f[pick(f.size())] ^= uint8_t(1u << pick(8));
			break;
		}
		case 2: { // random header fields (IHL, total length, TTL, protocol, ports, frag) in place
			size_t off = 14 + pick(std::min<size_t>(f.size() - 14, 50));
			f[off] = uint8_t(rng());
			if (pick(2))
				f[14 + pick(std::min<size_t>(f.size() - 14, 50))] = uint8_t(rng());
			break;
		}
		case 3: // a valid frame with a bad IPv4 checksum
			if (f.size() > 25)
				f[24] ^= 0x5A;
			break;
		default: // fully random frame of random length
			f.resize(14 + pick(200));
			for (auto &x : f)
				x = uint8_t(rng());
			if (pick(2)) { // mostly IPv4 so the deeper stages run
				f[12] = 0x08;
				f[13] = 0x00;
			}
			break;
		}
		const size_t pi = pick(3);
		const Bytes in = f;
		// Ingress: a verdict in the valid set; a forwarded frame keeps its length, its class
		// and the validity of its checksum, and parses as it did.
		INFO("frame " << i << ": " << hex(in));
		auto run = test_run_tc(bpf_program__fd(fx.skel->progs.qn_tc_ingress), f, ports[pi]);
		if (!run.ok()) {
			// BPF_PROG_TEST_RUN itself refuses an IPv4 (IPv6) frame shorter than its network
			// header; those lengths are covered behind a VLAN tag, where it does not look.
			const uint16_t et = be16(&in[12]);
			REQUIRE(((et == 0x0800 && in.size() < 34) || (et == 0x86DD && in.size() < 54)));
			refused++;
			continue;
		}
		const TestRunOut out = *run;
		ingress_runs++;
		REQUIRE((out.retval == TC_ACT_REDIRECT_ || out.retval == TC_ACT_SHOT_));
		if (pi == 2) {
			sent_unknown++;
			REQUIRE(out.retval == TC_ACT_SHOT_);
		} else {
			sent_known[pi]++;
		}
		if (out.retval == TC_ACT_REDIRECT_) {
			redirects[pi]++;
			REQUIRE(out.data.size() == in.size());
			qn_pkt_check_forwarded(in, out.data);
		}
		// The builder on the same frame, as a copy with a fresh request of a random type.
		{
			const uint32_t type = QN_SIG_ECHO + uint32_t(pick(3));
			qn_sig_entry v{};
			v.eport = kLoPort;
			v.eifindex = kLo;
			v.v.raw[0] = rng();
			v.v.raw[1] = rng();
			const uint32_t mark = fx.request(type, uint32_t(i), v, uint32_t(pi == 2 ? 0 : pi));
			TestRunOut o = fx.recirc(in, pick(16) == 0 ? mark ^ 1u : mark); // sometimes a stale mark
			builder_runs++;
			REQUIRE((o.retval == TC_ACT_REDIRECT_ || o.retval == TC_ACT_SHOT_));
			if (o.retval == TC_ACT_REDIRECT_) {
				built++;
				check_signal_frame(o.data);
			} else {
				build_shot++;
			}
		}
	}
	// Counters add up: every frame on a known port counted once on entry, and left as exactly
	// one of forwarded, dropped by a reason or taken (a PFC frame a switch obeyed: pfc.h); unknown
	// ports counted as orphans; every builder run counted as built (by type) or lost.
	uint64_t signals = 0, lost = 0;
	for (uint32_t p = 0; p < 2; p++) {
		const qn_port_stats s = fx.stats(p);
		uint64_t drops = 0;
		for (int r = 0; r < QN_DROP_MAX; r++)
			drops += s.drops[r] - st0[p].drops[r];
		const uint64_t pfc_taken = (s.pfc_rx - st0[p].pfc_rx) - (s.drops[QN_DROP_HOST_PFC] - st0[p].drops[QN_DROP_HOST_PFC]) -
					   (s.drops[QN_DROP_PFC_FRAME] - st0[p].drops[QN_DROP_PFC_FRAME]);
		CHECK(s.rx_pkts - st0[p].rx_pkts == sent_known[p]);
		CHECK(drops + redirects[p] + pfc_taken == sent_known[p]);
		CHECK(s.drops[QN_DROP_NONE] == 0);
		signals += s.sig_echo + s.sig_bts + s.sig_postcard;
		lost += s.sig_lost;
	}
	CHECK(fx.orphan(QN_DROP_UNKNOWN_PORT) - orphan0 == sent_unknown);
	CHECK(signals == built);
	CHECK(lost == build_shot);
	CHECK(ingress_runs >= uint64_t(kFrames) * 20 / 21);
	CHECK(builder_runs >= uint64_t(kFrames) * 20 / 21);
	CHECK(redirects[0] + redirects[1] > uint64_t(kFrames) / 10); // the campaign reached the deep stages
	CHECK(built > uint64_t(kFrames) / 10);
	WARN("mutation campaign: " << ingress_runs << " ingress runs (" << redirects[0] + redirects[1]
				   << " forwarded, " << refused << " frames TEST_RUN refuses), " << builder_runs
				   << " builder runs (" << built << " built)");
}
