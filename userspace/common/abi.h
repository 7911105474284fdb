// abi.h - the BPF/C++ contract (bpf/include/qn_abi.h) seen from C++: layouts pinned with
// static_assert so a change on either side fails the build, and names for enums.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

extern "C" {
#include "qn_abi.h"
}

static_assert(sizeof(struct qn_port) == 40, "qn_port layout changed");
static_assert(offsetof(struct qn_port, rate_bps) == 8, "qn_port layout changed");
static_assert(offsetof(struct qn_port, mac) == 20, "qn_port layout changed");
static_assert(sizeof(struct qn_fib_key) == 8, "qn_fib_key layout changed");
static_assert(sizeof(struct qn_nexthop) == 20, "qn_nexthop layout changed");
static_assert(sizeof(struct qn_fib_val) == 4 + 20 * QN_MAX_NEXTHOPS, "qn_fib_val layout changed");
// Counters and settings grow by appending (one line in QN_PORT_COUNTERS, one feature sub-struct
// at the end of qn_swcfg): the asserts pin what exists, not the total.
#define QN_X_ONE(name, column, doc) +1
static_assert(sizeof(struct qn_port_stats) == 8 * (0 QN_PORT_COUNTERS(QN_X_ONE) + QN_DROP_MAX),
	      "qn_port_stats: every field is a __u64 counter of QN_PORT_COUNTERS, then the drops");
#undef QN_X_ONE
static_assert(offsetof(struct qn_port_stats, mirrored) == 8 * 13 && offsetof(struct qn_port_stats, sig_lost) == 8 * 17,
	      "qn_port_stats: append counters only");
static_assert(sizeof(struct qn_cfg) == 40, "qn_cfg layout changed");
static_assert(sizeof(struct qn_set_buffer) == 24 && sizeof(struct qn_set_red) == 32 &&
		      sizeof(struct qn_set_pfc) == 48 && sizeof(struct qn_set_test) == 24,
	      "qn_swcfg feature layouts changed");
static_assert(offsetof(struct qn_swcfg, red) == 24 && offsetof(struct qn_swcfg, pfc) == 56 &&
		      offsetof(struct qn_swcfg, test) == 104 && sizeof(struct qn_swcfg) % 8 == 0,
	      "qn_swcfg layout changed (append feature sub-structs only)");
static_assert(sizeof(struct qn_sig_entry) == 48 && offsetof(struct qn_sig_entry, v) == 16, "qn_sig_entry layout changed");
static_assert(QN_SIG_RING <= QN_SIG_SEQ_MASK + 1 && (QN_SIG_RING & (QN_SIG_RING - 1)) == 0, "QN_SIG_RING");
static_assert(QN_SIG_MAX <= 16 && QN_MAX_PORTS <= 32, "the signal mark has 4 type and 5 port bits");
static_assert(sizeof(struct qn_dqkey) == 12, "qn_dqkey layout changed");
static_assert(sizeof(struct qn_qstate) == 184, "qn_qstate layout changed");
static_assert(sizeof(struct qn_test_qdepth) == 16, "qn_test_qdepth layout changed");
static_assert(sizeof(struct qn_pfc_acct) == 56 + 8 * QN_MAX_PORTS, "qn_pfc_acct layout changed");
static_assert(sizeof(struct qn_pfc_event) == 24, "qn_pfc_event layout changed");
static_assert(sizeof(struct qn_qsample) == 24, "qn_qsample layout changed");
static_assert(sizeof(struct qn_fid_mon) == 256, "qn_fid_mon layout changed");
static_assert(sizeof(struct qn_fid_port) == 576, "qn_fid_port layout changed");
static_assert(offsetof(struct qn_fid_port, mon) == 64, "qn_fid_port layout changed");
static_assert(offsetof(struct qn_fid_port, engine_backlogged) == 16, "qn_fid_port layout changed");
static_assert(sizeof(struct qn_fid_event) == 24, "qn_fid_event layout changed");
static_assert(sizeof(struct qn_bth) == QN_BTH_LEN, "qn_bth layout changed");
static_assert(sizeof(struct qn_aeth) == QN_AETH_LEN, "qn_aeth layout changed");
static_assert(sizeof(struct qn_qack) == 16, "qn_qack layout changed");
static_assert(sizeof(struct qn_rx_meta) == 16, "qn_rx_meta layout changed");
static_assert(sizeof(struct qn_bts) == 48, "qn_bts layout changed (sfc.md §5: 8 + 40 trimmed bytes)");
static_assert(offsetof(struct qn_bts, pause_us) == 2 && offsetof(struct qn_bts, reporter) == 4 &&
		      offsetof(struct qn_bts, orig_ip) == 8 && offsetof(struct qn_bts, orig_bth) == 36,
	      "qn_bts layout changed");
static_assert(QN_BTS_IP_LEN == 76, "sfc.md §5: a BTS is 76 bytes of IP");
static_assert(sizeof(struct qn_postcard) == 56, "qn_postcard layout changed (pbfs.md §5)");
static_assert(offsetof(struct qn_postcard, sid_hi) == 4 && offsetof(struct qn_postcard, flow_saddr) == 12 &&
		      offsetof(struct qn_postcard, dest_qp) == 24 && offsetof(struct qn_postcard, i_p) == 28 &&
		      offsetof(struct qn_postcard, recent_marked_bytes) == 44 &&
		      offsetof(struct qn_postcard, t0_ns) == 48,
	      "qn_postcard layout changed (pbfs.md §5)");
static_assert(sizeof(struct qn_rxe_qp) == 72 && sizeof(struct qn_rxe_cfg) == 16 && sizeof(struct qn_rxe_pause) == 32,
	      "qn_rxe layouts changed");
static_assert(sizeof(struct qn_pfc_body) == 20, "802.1Qbb: opcode, enable vector, 8 quanta");
static_assert(QN_HTB_CLASS_CONTROL == (QN_HTB_HANDLE | 0x10), "control class must be 1:10");
static_assert(QN_HTB_CLASS_DATA == (QN_HTB_HANDLE | 0x20), "data class must be 1:20");

namespace qn {

// Add b's counters to a (summing per-CPU values).
void accumulate(qn_port_stats &a, const qn_port_stats &b);

// The port counters of QN_PORT_COUNTERS, in layout order: name, `switch stats` column ("" = none),
// doc, and where the field is.
struct PortCounterInfo {
	const char *name;
	const char *column;
	const char *doc;
	size_t offset;
};
const std::vector<PortCounterInfo> &port_counter_info();
uint64_t port_counter(const qn_port_stats &s, const PortCounterInfo &c);

// Return: the short name of a drop reason ("no_route"), or "reason_N" when unknown.
std::string drop_reason_name(unsigned reason);
std::string drop_reason_doc(unsigned reason);
// Return: the short name of a packet class ("control").
std::string pkt_class_name(unsigned cls);

} // namespace qn
