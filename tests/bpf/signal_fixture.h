// signal_fixture.h - a switch with an egress port that has a rate, a MAC and a role, depth
// overrides and access to the signal ring: the fixture of the signal and SFC test tables.
#pragma once

#include "switch_fixture.h"

#include "control/swcfg.h"

namespace qn_test {

inline constexpr uint32_t kSender = 0x0b000101; // 11.0.1.1, the data's source
inline constexpr uint32_t kSwitchAddr = 0x0b00ff01;
inline constexpr uint32_t kSwitchId = 7;
inline constexpr uint64_t kLoRate = 10'000'000'000ULL;
inline const Mac kLoMac{0x02, 0x51, 1, 0, 9, 0x77};

struct SignalFixture : SwitchFixture {
	qn_swcfg cfg{};
	explicit SignalFixture(uint32_t host_ports = 1) : SwitchFixture(kSwitchId, kSwitchAddr, host_ports)
	{
		add_route(kSender, 1);
		// The egress port (lo) at 10 Gbit/s with a MAC: the BTS drain time and the postcard sID.
		qn_port p{};
		p.port_no = kLoPort;
		p.role = QN_ROLE_HOST;
		p.rate_bps = kLoRate;
		std::memcpy(p.mac, kLoMac.data(), 6);
		REQUIRE(bpf_map_update_elem(bpf_map__fd(skel->maps.qn_ports), &kLo, &p, BPF_ANY) == 0);
		cfg = default_swcfg(1'000'000);
		cfg.buffer.admission = 0;
		cfg.red.on = 0;
		write_cfg();
	}
	void write_cfg()
	{
		uint32_t zero = 0;
		finalize_swcfg(cfg);
		REQUIRE(bpf_map_update_elem(bpf_map__fd(skel->maps.qn_swcfg), &zero, &cfg, BPF_ANY) == 0);
	}
	void depth(uint64_t bytes)
	{
		qn_test_qdepth o{1, 1, bytes};
		uint32_t port = kLoPort;
		REQUIRE(bpf_map_update_elem(bpf_map__fd(skel->maps.qn_test_qdepth), &port, &o, BPF_ANY) == 0);
	}
	uint32_t next_seq() const { return uint32_t(skel->bss->qn_sig_seq); }
	qn_sig_entry slot(uint32_t seq)
	{
		qn_sig_entry e{};
		uint32_t k = seq & (QN_SIG_RING - 1);
		REQUIRE(bpf_map_lookup_elem(bpf_map__fd(skel->maps.qn_sig_ring), &k, &e) == 0);
		return e;
	}
};

inline uint16_t be16(const uint8_t *p) { return uint16_t(p[0] << 8 | p[1]); }

// The data frame signals are built from: RoCE SEND_ONLY 11.0.1.1 -> 11.0.2.1, sport 0xC123,
// DestQP 0xABCDE, PSN 0x123456, 200 B payload, ECT(0).
inline FrameSpec data_spec()
{
	FrameSpec s = roce();
	s.saddr = kSender;
	s.sport = 0xC123;
	s.dest_qp = 0xABCDE;
	s.psn = 0x123456;
	s.payload_len = 200;
	return s;
}

// Expected headers of a signal (pbfs.md §5, sfc.md §5): Eth to the sender's next hop, IPv4
// (id copied from the original, DF, TTL 64, UDP, DSCP 48 Not-ECT), UDP with checksum 0.
inline Bytes signal_headers(uint32_t saddr, uint16_t dport, uint16_t body_len, const Bytes &orig)
{
	Bytes b;
	auto put = [&](std::initializer_list<uint8_t> v) { b.insert(b.end(), v); };
	auto put16 = [&](uint16_t v) { put({uint8_t(v >> 8), uint8_t(v)}); };
	auto put32 = [&](uint32_t v) { put({uint8_t(v >> 24), uint8_t(v >> 16), uint8_t(v >> 8), uint8_t(v)}); };
	Mac d = nh_dmac(0), s = nh_smac(0);
	b.insert(b.end(), d.begin(), d.end());
	b.insert(b.end(), s.begin(), s.end());
	put({0x08, 0x00});
	put({0x45, 0xC0});
	put16(uint16_t(20 + 8 + body_len));
	put({orig[18], orig[19], 0x40, 0x00, 64, 17, 0, 0}); // checksum filled below
	put32(saddr);
	put32(kSender);
	uint16_t c = ipv4_checksum(&b[14], 20);
	b[24] = uint8_t(c >> 8);
	b[25] = uint8_t(c);
	put16(be16(&orig[34])); // the data's sport (its sender's QPN)
	put16(dport);
	put16(uint16_t(8 + body_len));
	put({0, 0});
	return b;
}

} // namespace qn_test
