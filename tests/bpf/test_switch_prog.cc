// BPF_PROG_TEST_RUN tables for the switch (ingress pipeline, egress classifier) and the host
// steering program. Needs root (BPF); skips with the reason otherwise.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench/testrun.h"
#include "common/abi.h"
#include "control/packet.h"
#include "qn_steer.skel.h"
#include "switch_fixture.h"

using namespace qn;

using namespace qn_test;

TEST_CASE("qn_tc_ingress__parser_verdicts", "[bpf][switch]")
{
	if (!have_root())
		return;
	SwitchFixture fx;
	struct Case {
		const char *label;
		Bytes frame;
		uint32_t port;
		int verdict;
		uint32_t drop; // expected drop reason on port 0 (host) or 1 (switch); 0 = none
	};
	auto spec = [](auto mutate) {
		FrameSpec f = roce();
		mutate(f);
		return build_frame(f);
	};
	Bytes valid = build_frame(roce());
	Bytes bad_version = valid;
	bad_version[14] = 0x65; // version 6 in an IPv4 EtherType
	Bytes ihl4 = valid;
	ihl4[14] = 0x44;
	Bytes long_totlen = valid;
	long_totlen[16] = 0x0F; // total length 0x0Fxx > frame
	Bytes short_totlen = valid;
	short_totlen[16] = 0;
	short_totlen[17] = 10; // total length below IHL*4
	Bytes trunc_udp(valid.begin(), valid.begin() + 14 + 20 + 4);
	trunc_udp[16] = 0;
	trunc_udp[17] = 24;
	Bytes trunc_bth(valid.begin(), valid.begin() + 14 + 20 + 8 + 4);
	trunc_bth[16] = 0;
	trunc_bth[17] = 32;
	Bytes tiny(valid.begin(), valid.begin() + 14);
	tiny[12] = 0x81;
	tiny[13] = 0x00; // a VLAN tag announced, none present
	const Case cases[] = {
		{"valid RoCEv2 data is forwarded", valid, kHostPort, TC_ACT_REDIRECT_, 0},
		{"VLAN-tagged IPv4 is forwarded", spec([](FrameSpec &f) { f.vlan_tcis = {0x6005}; }), kHostPort,
		 TC_ACT_REDIRECT_, 0},
		{"two VLAN tags (QinQ) are forwarded", spec([](FrameSpec &f) { f.vlan_tcis = {0x0064, 0x6005}; }),
		 kHostPort, TC_ACT_REDIRECT_, 0},
		{"three VLAN tags are dropped", spec([](FrameSpec &f) { f.vlan_tcis = {1, 2, 3}; }), kHostPort,
		 TC_ACT_SHOT_, QN_DROP_VLAN_DEPTH},
		{"truncated VLAN tag is dropped", tiny, kHostPort, TC_ACT_SHOT_, QN_DROP_TRUNCATED},
		{"IPv4 options are parsed past and forwarded",
		 spec([](FrameSpec &f) { f.ip_options = {1, 1, 1, 0, 1, 1, 1, 0}; }), kHostPort, TC_ACT_REDIRECT_, 0},
		{"non-first fragment is forwarded", spec([](FrameSpec &f) { f.frag_off = 0x00B9; }), kHostPort,
		 TC_ACT_REDIRECT_, 0},
		{"first fragment (MF) is forwarded", spec([](FrameSpec &f) { f.frag_off = 0x2000; }), kHostPort,
		 TC_ACT_REDIRECT_, 0},
		{"ICMP is forwarded", spec([](FrameSpec &f) { f.proto = 1; }), kHostPort, TC_ACT_REDIRECT_, 0},
		{"non-RoCE UDP is forwarded", spec([](FrameSpec &f) { f.dport = 53; f.bth = false; }), kHostPort,
		 TC_ACT_REDIRECT_, 0},
		{"ARP is dropped", spec([](FrameSpec &f) { f.ipv4 = false; f.ethertype = 0x0806; f.payload_len = 28; }),
		 kHostPort, TC_ACT_SHOT_, QN_DROP_NOT_IPV4},
		{"IPv6 is dropped", spec([](FrameSpec &f) { f.ipv4 = false; f.ethertype = 0x86DD; f.payload_len = 60; }),
		 kHostPort, TC_ACT_SHOT_, QN_DROP_NOT_IPV4},
		{"UDP header cut short is dropped", trunc_udp, kHostPort, TC_ACT_SHOT_, QN_DROP_TRUNCATED},
		{"total length beyond the frame is dropped", long_totlen, kHostPort, TC_ACT_SHOT_, QN_DROP_TRUNCATED},
		{"total length below the header is dropped", short_totlen, kHostPort, TC_ACT_SHOT_, QN_DROP_BAD_IP},
		{"IP version 6 in an IPv4 frame is dropped", bad_version, kHostPort, TC_ACT_SHOT_, QN_DROP_BAD_IP},
		{"IHL below 5 is dropped", ihl4, kHostPort, TC_ACT_SHOT_, QN_DROP_BAD_IP},
		{"UDP 4791 without a full BTH is dropped", trunc_bth, kHostPort, TC_ACT_SHOT_, QN_DROP_MALFORMED_ROCE},
		{"TTL 1 is dropped", spec([](FrameSpec &f) { f.ttl = 1; }), kHostPort, TC_ACT_SHOT_, QN_DROP_TTL},
		{"unknown destination is dropped", spec([](FrameSpec &f) { f.daddr = 0x0b00ff01; }), kHostPort,
		 TC_ACT_SHOT_, QN_DROP_NO_ROUTE},
		{"BTS from a host is dropped",
		 spec([](FrameSpec &f) { f.dport = QN_BTS_UDP_PORT; f.bth = false; f.payload_len = 48; }), kHostPort,
		 TC_ACT_SHOT_, QN_DROP_HOST_BTS},
		{"postcard from a host is dropped",
		 spec([](FrameSpec &f) { f.dport = QN_POSTCARD_UDP_PORT; f.bth = false; f.payload_len = 56; }),
		 kHostPort, TC_ACT_SHOT_, QN_DROP_HOST_POSTCARD},
		{"PFC frame from a host is dropped",
		 spec([](FrameSpec &f) { f.ipv4 = false; f.ethertype = 0x8808; f.payload_len = 46; }), kHostPort,
		 TC_ACT_SHOT_, QN_DROP_HOST_PFC},
		{"BTS from a switch is forwarded",
		 spec([](FrameSpec &f) { f.dport = QN_BTS_UDP_PORT; f.bth = false; f.payload_len = 48; }), kSwitchPort,
		 TC_ACT_REDIRECT_, 0},
		{"postcard from a switch is forwarded",
		 spec([](FrameSpec &f) { f.dport = QN_POSTCARD_UDP_PORT; f.bth = false; f.payload_len = 56; }),
		 kSwitchPort, TC_ACT_REDIRECT_, 0},
		{"PFC frame from a switch is consumed",
		 spec([](FrameSpec &f) { f.ipv4 = false; f.ethertype = 0x8808; f.payload_len = 46; }), kSwitchPort,
		 TC_ACT_SHOT_, QN_DROP_PFC_FRAME},
	};
	for (const auto &c : cases) {
		SECTION(c.label)
		{
			uint32_t port_no = c.port == kHostPort ? 0 : 1;
			qn_port_stats before = fx.stats(port_no);
			TestRunOut out = fx.ingress(c.frame, c.port);
			INFO("frame " << hex(c.frame));
			CHECK(int(out.retval) == c.verdict);
			qn_port_stats after = fx.stats(port_no);
			CHECK(after.rx_pkts == before.rx_pkts + 1);
			for (uint32_t r = 1; r < QN_DROP_MAX; r++) {
				INFO("drop reason " << drop_reason_name(r));
				CHECK(after.drops[r] - before.drops[r] == (r == c.drop ? 1u : 0u));
			}
		}
	}
}

TEST_CASE("qn_tc_ingress__truncated_ipv4_behind_vlan", "[bpf][switch]")
{
	if (!have_root())
		return;
	SwitchFixture fx;
	// BPF_PROG_TEST_RUN (6.18) refuses frames with EtherType IPv4 shorter than Ethernet + a full
	// IPv4 header (EINVAL), and every frame shorter than 14 bytes. Behind a VLAN tag the kernel
	// does not look, so the parser's own truncation checks are reachable: tag + 10 IP bytes.
	for (size_t n : {size_t(18 + 1), size_t(18 + 10), size_t(18 + 19)}) {
		FrameSpec s = roce();
		s.vlan_tcis = {0x6005};
		Bytes f = build_frame(s);
		f.resize(n);
		qn_port_stats before = fx.stats(0);
		TestRunOut out = fx.ingress(f, kHostPort);
		INFO("frame of " << n << " bytes");
		CHECK(out.retval == TC_ACT_SHOT_);
		CHECK(fx.stats(0).drops[QN_DROP_TRUNCATED] == before.drops[QN_DROP_TRUNCATED] + 1);
	}
}

TEST_CASE("qn_tc_ingress__unknown_ingress_port", "[bpf][switch]")
{
	if (!have_root())
		return;
	SwitchFixture fx;
	uint64_t before = fx.orphan(QN_DROP_UNKNOWN_PORT);
	TestRunOut out = fx.ingress(build_frame(roce()), 555);
	CHECK(out.retval == TC_ACT_SHOT_);
	CHECK(fx.orphan(QN_DROP_UNKNOWN_PORT) == before + 1);
}

TEST_CASE("qn_tc_ingress__forwarding_rewrites_macs_and_ttl", "[bpf][switch]")
{
	if (!have_root())
		return;
	SwitchFixture fx;
	for (bool vlan : {false, true}) {
		SECTION(vlan ? "with a VLAN tag" : "untagged")
		{
			FrameSpec s = roce();
			if (vlan)
				s.vlan_tcis = {0x6005};
			s.ip_options = {};
			Bytes in = build_frame(s);
			TestRunOut out = fx.ingress(in, kHostPort);
			REQUIRE(out.retval == TC_ACT_REDIRECT_);
			REQUIRE(out.data.size() == in.size());
			size_t ip = vlan ? 18 : 14;
			// Expect: dst MAC = next hop, src MAC = egress port.
			CHECK(Mac{out.data[0], out.data[1], out.data[2], out.data[3], out.data[4], out.data[5]} == nh_dmac(0));
			CHECK(Mac{out.data[6], out.data[7], out.data[8], out.data[9], out.data[10], out.data[11]} == nh_smac(0));
			// Expect: TTL decremented, checksum still valid, TOS (DSCP+ECN) untouched.
			CHECK(out.data[ip + 8] == in[ip + 8] - 1);
			CHECK(ipv4_checksum(&out.data[ip], 20) == 0);
			CHECK(out.data[ip + 1] == in[ip + 1]);
			// Expect: every byte after the MACs except TTL and checksum is unchanged.
			for (size_t i = 12; i < in.size(); i++) {
				if (i == ip + 8 || i == ip + 10 || i == ip + 11)
					continue;
				INFO("byte " << i);
				CHECK(out.data[i] == in[i]);
			}
		}
	}
}

TEST_CASE("qn_tc_ingress__ecmp_spreads_flows", "[bpf][switch]")
{
	if (!have_root())
		return;
	SwitchFixture fx;
	std::map<int, int> per_nh;
	std::map<uint16_t, int> chosen;
	for (uint16_t sport = 0xC000; sport < 0xC000 + 400; sport++) {
		FrameSpec s = roce(kEcmpDst);
		s.sport = sport;
		TestRunOut out = fx.ingress(build_frame(s), kHostPort);
		REQUIRE(out.retval == TC_ACT_REDIRECT_);
		int nh = out.data[5] - 0x10;
		REQUIRE(nh >= 0);
		REQUIRE(nh < 4);
		per_nh[nh]++;
		chosen[sport] = nh;
	}
	// Expect: all four next hops used, none with less than half its fair share.
	REQUIRE(per_nh.size() == 4);
	for (auto [nh, n] : per_nh) {
		INFO("next hop " << nh << " got " << n << " of 400 flows");
		CHECK(n >= 50);
	}
	// Expect: a flow always takes the same next hop (no reordering within a flow).
	for (uint16_t sport = 0xC000; sport < 0xC000 + 50; sport++) {
		FrameSpec s = roce(kEcmpDst);
		s.sport = sport;
		s.psn = 99;
		TestRunOut out = fx.ingress(build_frame(s), kHostPort);
		CHECK(out.data[5] - 0x10 == chosen[sport]);
	}
	// Expect: fragments of one datagram share a next hop whatever their (absent) ports say.
	FrameSpec first = roce(kEcmpDst), later = roce(kEcmpDst);
	first.frag_off = 0x2000;
	later.frag_off = 0x00B9;
	later.sport = 0xDEAD;
	CHECK(fx.ingress(build_frame(first), kHostPort).data[5] == fx.ingress(build_frame(later), kHostPort).data[5]);
}

TEST_CASE("qn_tc_egress__control_class", "[bpf][switch]")
{
	if (!have_root())
		return;
	SwitchFixture fx;
	struct Case {
		const char *label;
		Bytes frame;
		uint32_t priority;
	};
	auto spec = [](auto mutate) {
		FrameSpec f = roce();
		mutate(f);
		return build_frame(f);
	};
	const Case cases[] = {
		{"RC SEND data", build_frame(roce()), QN_HTB_CLASS_DATA},
		{"RC WRITE data", spec([](FrameSpec &f) { f.opcode = QN_OP_RC_WRITE_ONLY; }), QN_HTB_CLASS_DATA},
		{"CNP", spec([](FrameSpec &f) { f.opcode = QN_OP_CNP; f.payload_len = 16; }), QN_HTB_CLASS_CONTROL},
		{"RC ACK", spec([](FrameSpec &f) { f.opcode = QN_OP_RC_ACK; f.payload_len = 4; }), QN_HTB_CLASS_CONTROL},
		{"atomic ACK", spec([](FrameSpec &f) { f.opcode = QN_OP_RC_ATOMIC_ACK; f.payload_len = 12; }),
		 QN_HTB_CLASS_CONTROL},
		{"LDCP ACK", spec([](FrameSpec &f) { f.opcode = QN_OP_LDCP_ACK; f.payload_len = 8; }), QN_HTB_CLASS_CONTROL},
		{"BTS", spec([](FrameSpec &f) { f.dport = QN_BTS_UDP_PORT; f.bth = false; f.payload_len = 48; }),
		 QN_HTB_CLASS_CONTROL},
		{"postcard", spec([](FrameSpec &f) { f.dport = QN_POSTCARD_UDP_PORT; f.bth = false; f.payload_len = 56; }),
		 QN_HTB_CLASS_CONTROL},
		{"CNP behind IP options and a VLAN tag",
		 spec([](FrameSpec &f) { f.opcode = QN_OP_CNP; f.ip_options = {1, 1, 1, 0}; f.vlan_tcis = {0x6001}; }),
		 QN_HTB_CLASS_CONTROL},
		{"ICMP", spec([](FrameSpec &f) { f.proto = 1; }), QN_HTB_CLASS_DATA},
		{"ARP", spec([](FrameSpec &f) { f.ipv4 = false; f.ethertype = 0x0806; f.payload_len = 28; }),
		 QN_HTB_CLASS_DATA},
		{"fragment of UDP 4791 is never control",
		 spec([](FrameSpec &f) { f.opcode = QN_OP_CNP; f.frag_off = 0x2000; }), QN_HTB_CLASS_DATA},
	};
	for (const auto &c : cases) {
		SECTION(c.label)
		{
			qn_port_stats before = fx.stats(2);
			TestRunOut out = fx.egress(c.frame);
			// Expect: egress never drops, writes the full HTB class id, leaves the frame alone.
			CHECK(out.retval == TC_ACT_OK_);
			CHECK(out.priority == c.priority);
			CHECK(out.data == c.frame);
			qn_port_stats after = fx.stats(2);
			CHECK(after.tx_pkts == before.tx_pkts + 1);
			bool ctrl = c.priority == QN_HTB_CLASS_CONTROL;
			CHECK(after.tx_ctrl_pkts - before.tx_ctrl_pkts == (ctrl ? 1u : 0u));
			CHECK(after.tx_data_pkts - before.tx_data_pkts == (ctrl ? 0u : 1u));
		}
	}
}

TEST_CASE("qn_xdp_steer__engine_frames_vs_kernel_frames", "[bpf][steer]")
{
	if (!have_root())
		return;
	qn_steer *skel = qn_steer__open_and_load();
	REQUIRE(skel);
	int prog = bpf_program__fd(skel->progs.qn_xdp_steer);
	int stats = bpf_map__fd(skel->maps.qn_steer_stats);
	auto counter = [&](uint32_t which) {
		std::vector<uint64_t> v(static_cast<size_t>(libbpf_num_possible_cpus()));
		REQUIRE(bpf_map_lookup_elem(stats, &which, v.data()) == 0);
		uint64_t s = 0;
		for (auto x : v)
			s += x;
		return s;
	};
	auto spec = [](auto mutate) {
		FrameSpec f = roce();
		mutate(f);
		return build_frame(f);
	};
	Bytes trunc_bth = build_frame(roce());
	trunc_bth.resize(14 + 20 + 8 + 4);
	trunc_bth[16] = 0;
	trunc_bth[17] = 32;
	struct Case {
		const char *label;
		Bytes frame;
		bool engine;
	};
	const Case cases[] = {
		{"RoCEv2 data", build_frame(roce()), true},
		{"CNP", spec([](FrameSpec &f) { f.opcode = QN_OP_CNP; }), true},
		{"BTS", spec([](FrameSpec &f) { f.dport = QN_BTS_UDP_PORT; f.bth = false; }), true},
		{"postcard", spec([](FrameSpec &f) { f.dport = QN_POSTCARD_UDP_PORT; f.bth = false; }), true},
		{"PFC", spec([](FrameSpec &f) { f.ipv4 = false; f.ethertype = 0x8808; f.payload_len = 46; }), true},
		{"malformed RoCE (the engine counts it)", trunc_bth, true},
		{"ARP", spec([](FrameSpec &f) { f.ipv4 = false; f.ethertype = 0x0806; f.payload_len = 28; }), false},
		{"ICMP", spec([](FrameSpec &f) { f.proto = 1; }), false},
		{"DNS", spec([](FrameSpec &f) { f.dport = 53; f.bth = false; }), false},
		{"IPv6", spec([](FrameSpec &f) { f.ipv4 = false; f.ethertype = 0x86DD; f.payload_len = 60; }), false},
		{"UDP 4791 fragment", spec([](FrameSpec &f) { f.frag_off = 0x00B9; }), false},
	};
	SECTION("a mark the switch decided at dequeue is applied to RoCE data, once")
	{
		Bytes f = build_frame(roce());
		qn_dqkey k = dqkey(f);
		const uint32_t one = 1;
		uint32_t v = 0;
		int marks = bpf_map__fd(skel->maps.qn_dqmarks);
		REQUIRE(bpf_map_update_elem(marks, &k, &one, BPF_ANY) == 0);
		auto out = test_run_xdp(prog, f);
		REQUIRE(out.ok());
		// The output carries the arrival stamp (metadata) in front of the frame.
		REQUIRE(out->data.size() >= f.size());
		const uint8_t *ip = &out->data[out->data.size() - f.size() + 14];
		CHECK((ip[1] & 3) == 3);
		CHECK((ip[1] >> 2) == (f[15] >> 2));
		CHECK(ipv4_checksum(ip, 20) == 0);
		CHECK(bpf_map_lookup_elem(marks, &k, &v) != 0);
		out = test_run_xdp(prog, f);
		REQUIRE(out.ok());
		CHECK((out->data[out->data.size() - f.size() + 15] & 3) == 2);
	}
	for (const auto &c : cases) {
		SECTION(c.label)
		{
			uint64_t pass = counter(QN_STEER_PASS), no_xsk = counter(QN_STEER_NO_XSK);
			auto out = test_run_xdp(prog, c.frame);
			REQUIRE(out.ok());
			// With no socket bound on queue 0, engine frames fall back to XDP_PASS and are
			// counted as such; kernel frames are passed as kernel frames.
			CHECK(out->retval == 2 /* XDP_PASS */);
			CHECK(counter(QN_STEER_NO_XSK) - no_xsk == (c.engine ? 1u : 0u));
			CHECK(counter(QN_STEER_PASS) - pass == (c.engine ? 0u : 1u));
		}
	}
	qn_steer__destroy(skel);
}

namespace {
std::string g_libbpf_log;
int capture_libbpf(enum libbpf_print_level, const char *fmt, va_list ap)
{
	char line[1024];
	std::vsnprintf(line, sizeof(line), fmt, ap);
	g_libbpf_log += line;
	return 0;
}
} // namespace

// `topo up` loads qn_steer once per host and per cable end. It uses UAPI structures only, so
// no CO-RE relocation makes libbpf read and parse the kernel's BTF at each load (that was 58% of a
// leaf-spine's bring-up). Fails when a header brings preserve_access_index back (qn_steer.bpf.c).
TEST_CASE("qn_xdp_steer__loads_without_the_kernel_btf", "[bpf][steer]")
{
	if (!have_root())
		return;
	g_libbpf_log.clear();
	libbpf_print_fn_t old = libbpf_set_print(capture_libbpf);
	qn_steer *skel = qn_steer__open_and_load();
	libbpf_set_print(old);
	REQUIRE(skel);
	qn_steer__destroy(skel);
	INFO(g_libbpf_log);
	// libbpf's debug line when it reads the kernel's BTF for relocations
	CHECK(g_libbpf_log.find("loading kernel BTF") == std::string::npos);
	CHECK(g_libbpf_log.find("CO-RE relocating") == std::string::npos);
	// the capture itself works: libbpf's debug output of this load was seen
	CHECK(g_libbpf_log.find("qn_xdp_steer") != std::string::npos);
}

namespace {

// Every map of `obj` as bytes (arrays: every value; hashes and tries: every key and value, in
// key order; ring buffers: the events waiting), .rodata left out: what a table can observe.
std::map<std::string, std::vector<uint8_t>> map_contents(bpf_object *obj)
{
	std::map<std::string, std::vector<uint8_t>> out;
	const size_t ncpu = size_t(libbpf_num_possible_cpus());
	bpf_map *m;
	bpf_object__for_each_map(m, obj)
	{
		const std::string name = bpf_map__name(m);
		if (name.size() >= 7 && name.compare(name.size() - 7, 7, ".rodata") == 0)
			continue;
		auto &o = out[name];
		const int fd = bpf_map__fd(m);
		const auto type = bpf_map__type(m);
		if (type == BPF_MAP_TYPE_RINGBUF) {
			ring_buffer *rb = ring_buffer__new(
				fd, [](void *ctx, void *data, size_t n) {
					auto *v = static_cast<std::vector<uint8_t> *>(ctx);
					v->insert(v->end(), static_cast<uint8_t *>(data), static_cast<uint8_t *>(data) + n);
					return 0;
				},
				&o, nullptr);
			REQUIRE(rb);
			REQUIRE(ring_buffer__consume(rb) >= 0);
			ring_buffer__free(rb);
			continue;
		}
		const size_t vs = bpf_map__value_size(m);
		const bool percpu = type == BPF_MAP_TYPE_PERCPU_ARRAY || type == BPF_MAP_TYPE_PERCPU_HASH;
		std::vector<uint8_t> val(percpu ? (vs + 7) / 8 * 8 * ncpu : vs);
		std::vector<uint8_t> key(bpf_map__key_size(m)), next(key.size());
		bool first = true;
		std::map<std::vector<uint8_t>, std::vector<uint8_t>> kv;
		while (bpf_map_get_next_key(fd, first ? nullptr : key.data(), next.data()) == 0) {
			first = false;
			key = next;
			REQUIRE(bpf_map_lookup_elem(fd, key.data(), val.data()) == 0);
			kv[key] = val;
		}
		for (const auto &[k, v] : kv) {
			o.insert(o.end(), k.begin(), k.end());
			o.insert(o.end(), v.begin(), v.end());
		}
	}
	return out;
}

} // namespace

// The tables share one loaded object per configuration (switch_fixture.h, cached_switch): a
// fixture after a table that used every stage must see every map as a fresh load has it.
// Negative control: the same comparison before the reset finds the dirtied maps.
TEST_CASE("switch_fixture__a_reused_object_starts_as_a_fresh_load", "[bpf][switch]")
{
	if (!have_root())
		return;
	std::map<std::string, std::vector<uint8_t>> dirty;
	{
		SwitchFixture fx(7, 0x0a000001);
		const uint32_t zero = 0;
		std::vector<uint8_t> ones(bpf_map__value_size(fx.skel->maps.qn_swcfg), 0xff);
		REQUIRE(bpf_map_update_elem(bpf_map__fd(fx.skel->maps.qn_swcfg), &zero, ones.data(), BPF_ANY) == 0);
		for (int i = 0; i < 64; i++) {
			FrameSpec f = roce(i % 2 ? kDst : kEcmpDst);
			f.sport = uint16_t(1000 + i);
			fx.ingress(build_frame(f), i % 3 ? kHostPort : kSwitchPort);
			fx.egress(build_frame(f));
		}
		fx.request(QN_SIG_BTS, 3);
		dirty = map_contents(fx.skel->obj);
	}
	qn_switch *fresh = load_switch_skel(7, 0x0a000001);
	const auto want = map_contents(fresh->obj);
	qn_switch__destroy(fresh);
	size_t differed = 0;
	for (const auto &[name, bytes] : dirty)
		differed += bytes != want.at(name);
	INFO("maps the table changed: " << differed);
	CHECK(differed >= 4); // the check can fail: the dirtied object differs from a fresh one
	// The fixture writes its ports and routes after the reset: the reference is a fresh load
	// given the same writes.
	SwitchFixture again(7, 0x0a000001);
	const auto got = map_contents(again.skel->obj);
	qn_switch *ref = load_switch_skel(7, 0x0a000001);
	{
		qn_switch *keep = again.skel;
		again.skel = ref; // the fixture's writes, on the reference object
		again.add_ports_and_routes();
		again.skel = keep;
	}
	const auto ref_contents = map_contents(ref->obj);
	qn_switch__destroy(ref);
	for (const auto &[name, bytes] : ref_contents) {
		INFO("map " << name);
		CHECK(got.at(name) == bytes);
	}
}
