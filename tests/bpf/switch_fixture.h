// switch_fixture.h - a loaded qn_switch skeleton with fake ports and routes for
// BPF_PROG_TEST_RUN tables (shared by the switch and queue test files).
#pragma once

#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <cstring>
#include <string>
#include <utility>
#include <unistd.h>
#include <vector>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bench/testrun.h"
#include "common/abi.h"
#include "control/packet.h"
#include "qn_switch.skel.h"

using namespace qn;

namespace qn_test {

constexpr uint32_t kHostPort = 100;   // ingress ifindex of a host-facing port (fake)
constexpr uint32_t kSwitchPort = 101; // ingress ifindex of a switch-facing port (fake)
constexpr uint32_t kLo = 1;           // every next hop redirects to lo: TEST_RUN never sends
constexpr uint32_t kLoPort = 2;       // lo's port number (the egress queue of every route)
constexpr uint32_t kDst = 0x0b000201; // 11.0.2.1: one next hop
constexpr uint32_t kEcmpDst = 0x0b000301; // 11.0.3.1: four next hops
constexpr int TC_ACT_OK_ = 0, TC_ACT_SHOT_ = 2, TC_ACT_REDIRECT_ = 7;

const Mac kSrcMac{0x02, 0x51, 0, 0, 1, 1};
const Mac kSwMac{0x02, 0x51, 1, 0, 9, 1};

inline Mac nh_dmac(int i) { return Mac{0x02, 0x51, 0, 0, 0x30, uint8_t(0x10 + i)}; }
inline Mac nh_smac(int i) { return Mac{0x02, 0x51, 1, 0, 0x09, uint8_t(0x20 + i)}; }

inline bool have_root()
{
	if (geteuid() == 0)
		return true;
	WARN("skipped: BPF_PROG_TEST_RUN needs root (CAP_BPF, CAP_NET_ADMIN)");
	return false;
}

// Every map of a loaded object back to the state a fresh load has: arrays (and .bss) zeroed in
// one batch, hash maps and tries emptied, ring buffers drained; .rodata is frozen and was set
// before the load. Returns false (with the reason in `why`) if a map could not be reset.
inline bool reset_maps(bpf_object *obj, std::string &why)
{
	const size_t ncpu = size_t(libbpf_num_possible_cpus());
	bpf_map *m;
	bpf_object__for_each_map(m, obj)
	{
		const int fd = bpf_map__fd(m);
		const auto type = bpf_map__type(m);
		const std::string name = bpf_map__name(m);
		if (name.size() >= 7 && name.compare(name.size() - 7, 7, ".rodata") == 0)
			continue;
		if (type == BPF_MAP_TYPE_RINGBUF) {
			ring_buffer *rb = ring_buffer__new(fd, [](void *, void *, size_t) { return 0; }, nullptr, nullptr);
			if (!rb || ring_buffer__consume(rb) < 0) {
				why = name + ": cannot drain";
				ring_buffer__free(rb);
				return false;
			}
			ring_buffer__free(rb);
			continue;
		}
		if (type == BPF_MAP_TYPE_ARRAY || type == BPF_MAP_TYPE_PERCPU_ARRAY) {
			const size_t vs = bpf_map__value_size(m);
			const size_t per = type == BPF_MAP_TYPE_PERCPU_ARRAY ? ((vs + 7) / 8 * 8) * ncpu : vs;
			uint32_t n = bpf_map__max_entries(m);
			std::vector<uint32_t> keys(n);
			for (uint32_t i = 0; i < n; i++)
				keys[i] = i;
			std::vector<uint8_t> zeros(per * n, 0);
			if (bpf_map_update_batch(fd, keys.data(), zeros.data(), &n, nullptr)) {
				why = name + ": batch update failed";
				return false;
			}
			continue;
		}
		// hash, LRU hash, LPM trie: delete every key
		std::vector<uint8_t> key(bpf_map__key_size(m));
		for (int guard = 0; bpf_map_get_next_key(fd, nullptr, key.data()) == 0; guard++)
			if (bpf_map_delete_elem(fd, key.data()) || guard > (1 << 22)) {
				why = name + ": cannot empty";
				return false;
			}
	}
	return true;
}

// A newly loaded qn_switch for switch `switch_id` at `addr` (the caller destroys it).
inline qn_switch *load_switch_skel(uint32_t switch_id, uint32_t addr, uint32_t host_ports = 1)
{
	qn_switch *skel = qn_switch__open();
	REQUIRE(skel);
	skel->rodata->qn_cfg.ecmp_seed = 0x1234567;
	skel->rodata->qn_cfg.host_ports = host_ports; // a ToR unless told (sfc_where=tor)
	skel->rodata->qn_cfg.switch_id = switch_id;
	skel->rodata->qn_cfg.addr_be = htonl(addr);
	REQUIRE(qn_switch__load(skel) == 0);
	return skel;
}

// A loaded qn_switch per (switch_id, addr), kept for the whole process: a load (the verifier on
// the ingress program's ~100 K instructions) took 0.35 s of each table's 0.4 s here and most of
// the 376 s the tables took under TCG in the 6.1 guest (2026-11-27); every fixture gets it back
// with its maps reset to a fresh load's state (reset_maps).
inline qn_switch *cached_switch(uint32_t switch_id, uint32_t addr, uint32_t host_ports = 1)
{
	struct Cache {
		std::vector<std::pair<uint64_t, qn_switch *>> v;
		~Cache()
		{
			for (auto &e : v)
				qn_switch__destroy(e.second);
		}
	};
	static Cache cache;
	const uint64_t key = (uint64_t(switch_id) << 32 | addr) ^ (uint64_t(host_ports == 0) << 63);
	for (auto &e : cache.v)
		if (e.first == key) {
			std::string why;
			const bool ok = reset_maps(e.second->obj, why);
			INFO("reset of the cached switch object: " << why);
			REQUIRE(ok);
			return e.second;
		}
	qn_switch *skel = load_switch_skel(switch_id, addr, host_ports);
	cache.v.emplace_back(key, skel);
	return skel;
}

struct SwitchFixture {
	qn_switch *skel = nullptr;

	// host_ports: qn_cfg.host_ports of the load (0: a switch without hosts, a spine)
	explicit SwitchFixture(uint32_t switch_id = 0, uint32_t addr = 0, uint32_t host_ports = 1)
	{
		skel = cached_switch(switch_id, addr, host_ports);
		add_ports_and_routes();
	}
	// The fixture's fake ports and routes, written into `skel`'s maps.
	void add_ports_and_routes()
	{
		add_port(kHostPort, 0, QN_ROLE_HOST);
		add_port(kSwitchPort, 1, QN_ROLE_SWITCH);
		add_port(kLo, 2, QN_ROLE_HOST); // egress counters in TEST_RUN land on lo
		add_route(kDst, 1);
		add_route(kEcmpDst, 4);
	}

	void add_port(uint32_t ifindex, uint32_t no, uint32_t role)
	{
		qn_port p{};
		p.port_no = no;
		p.role = role;
		p.hdrm_bytes = 64 * 1024; // PFC headroom (pfc.h): what a paused account may still take
		REQUIRE(bpf_map_update_elem(bpf_map__fd(skel->maps.qn_ports), &ifindex, &p, BPF_ANY) == 0);
	}
	void add_route(uint32_t dst, int n)
	{
		qn_fib_key k{32, htonl(dst)};
		qn_fib_val v{};
		v.n_nexthops = uint32_t(n);
		for (int i = 0; i < n; i++) {
			v.nh[i].ifindex = kLo;
			v.nh[i].port_no = kLoPort;
			std::memcpy(v.nh[i].dmac, nh_dmac(i).data(), 6);
			std::memcpy(v.nh[i].smac, nh_smac(i).data(), 6);
		}
		REQUIRE(bpf_map_update_elem(bpf_map__fd(skel->maps.qn_fib), &k, &v, BPF_ANY) == 0);
	}
	qn_port_stats stats(uint32_t port_no)
	{
		int ncpu = libbpf_num_possible_cpus();
		std::vector<qn_port_stats> v(static_cast<size_t>(ncpu));
		REQUIRE(bpf_map_lookup_elem(bpf_map__fd(skel->maps.qn_port_stats), &port_no, v.data()) == 0);
		qn_port_stats sum{};
		for (const auto &s : v)
			accumulate(sum, s);
		return sum;
	}
	uint64_t orphan(uint32_t reason)
	{
		int ncpu = libbpf_num_possible_cpus();
		std::vector<uint64_t> v(static_cast<size_t>(ncpu));
		REQUIRE(bpf_map_lookup_elem(bpf_map__fd(skel->maps.qn_orphan_drops), &reason, v.data()) == 0);
		uint64_t s = 0;
		for (auto x : v)
			s += x;
		return s;
	}
	TestRunOut ingress(const Bytes &f, uint32_t port)
	{
		auto r = test_run_tc(bpf_program__fd(skel->progs.qn_tc_ingress), f, port);
		INFO((r.ok() ? std::string() : r.error().to_string() + " on " + hex(f)));
		REQUIRE(r.ok());
		return *r;
	}
	// Write a signal request into the ring as a stage would (slot `seq`) and return the mark its
	// copy would carry (ingress port `port`).
	uint32_t request(uint32_t type, uint32_t seq, const qn_sig_entry &vals = {}, uint32_t port = 0)
	{
		qn_sig_entry e = vals;
		e.mark = QN_SIG_MARK(type, port, seq);
		uint32_t slot = seq & (QN_SIG_RING - 1);
		REQUIRE(bpf_map_update_elem(bpf_map__fd(skel->maps.qn_sig_ring), &slot, &e, BPF_ANY) == 0);
		return e.mark;
	}
	// Run the builder on a copy marked `mark`.
	TestRunOut recirc(const Bytes &f, uint32_t mark)
	{
		__sk_buff ctx{};
		ctx.mark = mark;
		TestRunOut out;
		out.data.resize(f.size() + 256);
		DECLARE_LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = f.data(), .data_out = out.data.data(),
				    .data_size_in = uint32_t(f.size()), .data_size_out = uint32_t(out.data.size()),
				    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx));
		REQUIRE(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.qn_tc_recirc), &opts) == 0);
		out.data.resize(opts.data_size_out);
		out.retval = opts.retval;
		return out;
	}
	TestRunOut egress(const Bytes &f)
	{
		auto r = test_run_tc(bpf_program__fd(skel->progs.qn_tc_egress), f, 0);
		REQUIRE(r.ok());
		return *r;
	}
	// The control thread's accounting sweep (acct.h); it ignores the frame it runs on.
	void sweep(const Bytes &f)
	{
		auto r = test_run_tc(bpf_program__fd(skel->progs.qn_tc_sweep), f, 0);
		REQUIRE(r.ok());
	}
};

inline FrameSpec roce(uint32_t dst = kDst)
{
	FrameSpec f;
	f.dst = kSwMac;
	f.src = kSrcMac;
	f.saddr = 0x0b000101;
	f.daddr = dst;
	f.tos = (QN_DSCP_DATA << 2) | 0x2;
	f.payload_len = 64;
	return f;
}

// The dequeue-mark key of an IPv4/UDP frame without VLAN tags or IP options (dqmark.h): fields
// in network order, as the programs read them from the packet.
inline qn_dqkey dqkey(const Bytes &f)
{
	qn_dqkey k{};
	std::memcpy(&k.saddr_be, &f[26], 4);
	std::memcpy(&k.daddr_be, &f[30], 4);
	std::memcpy(&k.ip_id_be, &f[18], 2);
	std::memcpy(&k.sport_be, &f[34], 2);
	return k;
}

} // namespace qn_test
