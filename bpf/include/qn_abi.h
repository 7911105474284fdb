/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * qn_abi.h - the wire and map contract shared by quench's BPF programs and its C++ code.
 *
 * Every number that crosses the BPF/C++ boundary is defined here once: UDP ports, opcodes,
 * DSCP/priority values, HTB class ids, map key/value layouts and drop reasons. C++ pins every
 * layout with static_assert (userspace/common/abi.h). Multi-byte fields in map values are in
 * host byte order unless the name ends in _be; MAC addresses are in wire order.
 *
 * Units: rates in bit/s, sizes in bytes, times in nanoseconds. A field named *_wall_ns is
 * wall-clock time (already multiplied by the dilation factor D at load time); every other time
 * field is fabric time (docs/units.md).
 */
#ifndef QN_ABI_H
#define QN_ABI_H

#ifdef __bpf__
/* vmlinux.h provides __u8..__u64 for BPF programs. */
#else
#include <linux/types.h>
#endif

/* ---- sizes and bounds ---- */
#define QN_MAX_PORTS 32       /* ports per switch (array map sizes) */
#define QN_MAX_NEXTHOPS 8     /* ECMP fan-out per forwarding entry; a power of two */
#define QN_MAX_ROUTES 4096    /* forwarding entries per switch */
#define QN_VLAN_MAX_DEPTH 2   /* 802.1Q / 802.1ad tags the parser walks */
#define QN_DEFAULT_MTU 2048   /* path MTU (IP MTU of every link), docs/units.md */

/* ---- EtherTypes ---- */
#define QN_ETH_P_IPV4 0x0800
#define QN_ETH_P_ARP 0x0806
#define QN_ETH_P_8021Q 0x8100
#define QN_ETH_P_8021AD 0x88A8
#define QN_ETH_P_IPV6 0x86DD
#define QN_ETH_P_MAC_CONTROL 0x8808 /* 802.3x / 802.1Qbb PAUSE */
#define QN_PFC_OPCODE 0x0101        /* 802.1Qbb priority-based flow control */
#define QN_PAUSE_OPCODE 0x0001      /* 802.3x link-level PAUSE */

/* ---- UDP ports (common.md §1, sfc.md §5, pbfs.md §5) ---- */
#define QN_ROCE_UDP_PORT 4791      /* RoCEv2 */
#define QN_POSTCARD_UDP_PORT 4792  /* PB-FS CC-postcard */
#define QN_BTS_UDP_PORT 4793       /* SFC back-to-sender signal */
#define QN_ROCE_SPORT_BASE 0xC000  /* sender QPN encoded as 0xC000 | (qp & 0x3FFF) */

/* ---- BTH opcodes (common.md §1.2, ldcp.md §5) ---- */
#define QN_OP_RC_SEND_FIRST 0x00
#define QN_OP_RC_SEND_MIDDLE 0x01
#define QN_OP_RC_SEND_LAST 0x02
#define QN_OP_RC_SEND_ONLY 0x04
#define QN_OP_RC_WRITE_FIRST 0x06
#define QN_OP_RC_WRITE_ONLY 0x0A
#define QN_OP_RC_ACK 0x11
#define QN_OP_RC_ATOMIC_ACK 0x12
#define QN_OP_CNP 0x81
#define QN_OP_LDCP_ACK 0xC0

/* ---- header sizes ---- */
#define QN_ETH_HLEN 14
#define QN_IPV4_HLEN 20
#define QN_UDP_HLEN 8
#define QN_BTH_LEN 12
#define QN_AETH_LEN 4
#define QN_ICRC_LEN 4
/* RoCEv2 per-packet overhead on the wire without ICRC: Eth + IPv4 + UDP + BTH */
#define QN_ROCE_HDR_LEN (QN_ETH_HLEN + QN_IPV4_HLEN + QN_UDP_HLEN + QN_BTH_LEN)
/* Bytes HTB charges per packet beyond the Ethernet header+payload: preamble 8 + IFG 12 + FCS 4. */
#define QN_WIRE_OVERHEAD 24
/* Minimum wire footprint of a frame (64 B minimum frame + preamble + IFG). */
#define QN_WIRE_MPU 84

/* ---- DSCP, priorities, traffic classes ---- */
#define QN_DSCP_DATA 26      /* RoCE data (PFC priority 3) */
#define QN_DSCP_CONTROL 48   /* CNP, ACK, BTS, postcards (priority 6) */
#define QN_PRIO_DATA 3
#define QN_PRIO_CONTROL 6
/* HTB on every switch egress port: root 1:, parent 1:1, control 1:10 (prio 0), data 1:20 (prio 1).
 * The clsact egress program writes the full class id into skb->priority. */
#define QN_HTB_HANDLE 0x00010000u
#define QN_HTB_CLASS_PARENT 0x00010001u
#define QN_HTB_CLASS_CONTROL 0x00010010u
#define QN_HTB_CLASS_DATA 0x00010020u

/* ---- port roles ---- */
enum qn_port_role {
	QN_ROLE_HOST = 1,   /* faces a host: drops BTS, postcards and PFC frames from it */
	QN_ROLE_SWITCH = 2, /* faces another switch */
};

/* ---- verdict/drop reasons ----
 * QN_DROP_REASONS(X): X(ID, name, doc), in enum order. The enum (QN_DROP_<ID>), C++'s
 * drop_reason_name() ("drops.<name>" counters) and docs/switch.md's table follow from it: a new
 * reason is one line here. */
#define QN_DROP_REASONS(X) \
	X(NONE, none, "not dropped") \
	X(TRUNCATED, truncated, "frame shorter than the headers it announces") \
	X(NOT_IPV4, not_ipv4, "ARP, IPv6, LLDP...: this switch routes IPv4 only") \
	X(BAD_IP, bad_ip, "IPv4 version/IHL/total length inconsistent") \
	X(TTL, ttl, "TTL would reach 0") \
	X(NO_ROUTE, no_route, "no forwarding entry for the destination") \
	X(UNKNOWN_PORT, unknown_port, "ingress ifindex not in qn_ports") \
	X(HOST_BTS, host_bts, "BTS arriving from a host") \
	X(HOST_POSTCARD, host_postcard, "postcard arriving from a host") \
	X(HOST_PFC, host_pfc, "PFC/PAUSE frame arriving from a host") \
	X(MALFORMED_ROCE, malformed_roce, "UDP 4791 without a full BTH") \
	X(VLAN_DEPTH, vlan_depth, "more than QN_VLAN_MAX_DEPTH tags") \
	X(PFC_FRAME, pfc_frame, "PFC from a switch, not obeyed (pfc_obey=off); obeyed ones are taken, not dropped") \
	X(REDIRECT, redirect, "bpf_redirect refused the egress ifindex") \
	X(BUFFER, buffer, "shared-buffer admission (dynamic threshold) refused it") \
	X(INJECTED, injected, "random loss injected by the loss test knob") \
	X(LDCP_NOT_ECT, ldcp_not_ect, "LDCP: a Not-ECT (fast-start) data packet found its egress queue at or above K") \
	X(LOSSLESS, lossless, "PFC on: a data packet found its paused account's headroom or the shared buffer full (a lossless class must never drop: a run with one is not a result)")

enum qn_drop_reason {
#define QN_X_ENUM(id, name, doc) QN_DROP_##id,
	QN_DROP_REASONS(QN_X_ENUM)
#undef QN_X_ENUM
	QN_DROP_MAX
};

/* ---- packet classes, as the parser sees them ---- */
enum qn_pkt_class {
	QN_CLASS_OTHER = 0,   /* IPv4, not RoCE/signal (ping, TCP, fragments...) */
	QN_CLASS_DATA = 1,    /* RoCEv2 data */
	QN_CLASS_CONTROL = 2, /* RoCEv2 ACK/NAK/CNP/LDCP-ACK */
	QN_CLASS_BTS = 3,
	QN_CLASS_POSTCARD = 4,
	QN_CLASS_PFC = 5,
};

/* ---- maps (all pinned under /sys/fs/bpf/quench/<topology>/<switch>/) ---- */

/* qn_ports: key = ifindex (u32, in the switch namespace). One entry per switch port. */
struct qn_port {
	__u32 port_no;    /* 0..QN_MAX_PORTS-1, index into qn_port_stats */
	__u32 role;       /* enum qn_port_role */
	__u64 rate_bps;   /* fabric link rate */
	__u32 mtu;        /* IP MTU */
	__u8 mac[6];      /* this port's MAC */
	__u8 pad[2];
	__u32 burst_bytes; /* the port's HTB burst (the virtual queue's token bucket depth) */
	__u32 hdrm_bytes;  /* PFC headroom of an account of this ingress port: bytes it may still take
	                    * after its XOFF (pfc.h; sized by the control plane, docs/switch.md "PFC") */
	__u32 pad2;
};

/* qn_fib: LPM trie, key = {prefixlen, IPv4 address in network order}. */
struct qn_fib_key {
	__u32 prefixlen;
	__u32 addr_be;
};

struct qn_nexthop {
	__u32 ifindex;    /* egress port (validated inside the switch namespace) */
	__u8 dmac[6];     /* neighbour MAC (host or next switch's port) */
	__u8 smac[6];     /* egress port MAC */
	__u32 port_no;    /* egress port number (index into the per-port maps) */
};

struct qn_fib_val {
	__u32 n_nexthops; /* 1..QN_MAX_NEXTHOPS: ECMP set */
	struct qn_nexthop nh[QN_MAX_NEXTHOPS];
};

/* qn_port_stats: per-CPU array indexed by port_no; counts what entered on that port (rx_*), what
 * left through it (tx_*, counted at its egress hook), what its stages did and drops by reason.
 *
 * QN_PORT_COUNTERS(X): X(name, column, doc), one per __u64 field in layout order. `column` is
 * the header of the counter's column in `quench switch stats` ("" = not a column: the counter is
 * printed on the port's detail line when non-zero). The struct, the per-CPU sum, the counters'
 * names (JSON, summary reports, `switch.NAME` in experiments) and the table follow from it: a
 * new counter is one line here plus the stage that counts it. Append only (the layout is ABI). */
#define QN_PORT_COUNTERS(X) \
	X(rx_pkts, "rx_pkts", "frames that entered on this port") \
	X(rx_bytes, "rx_bytes", "their bytes") \
	X(tx_pkts, "tx_pkts", "frames that left through this port (its egress hook)") \
	X(tx_bytes, "tx_bytes", "their bytes") \
	X(tx_ctrl_pkts, "tx_ctrl", "of them, classified into the control class") \
	X(tx_data_pkts, "tx_data", "of them, classified into the data class") \
	X(rx_nonlinear, "", "frames whose headers were not in the linear area (pulled)") \
	X(ecn_marked, "ecn_ce", "ECT packets this switch set CE on, toward this port") \
	X(ecn_ect, "ecn_ect", "ECT data packets toward this port (marking candidates)") \
	X(pfc_xoff_sent, "xoff", "XOFF events for this port's peer (first XOFF of a pause)") \
	X(pfc_xon_sent, "xon", "XON events for this port's peer") \
	X(pfc_rx, "pfc_rx", "PFC/PAUSE frames received on this port") \
	X(paused_wall_ns, "", "wall ns this port's peer was held paused by us (closed pauses)") \
	X(mirrored, "", "copies sent to the recirculation builder from this port") \
	X(sig_echo, "", "echo signals built for packets that entered on this port") \
	X(sig_bts, "", "BTS built for packets that entered on this port") \
	X(sig_postcard, "", "CC-postcards built for packets that entered on this port") \
	X(sig_lost, "", "signal requests the builder could not make (value entry gone, no route, bad frame)") \
	X(qalarm_pkts, "qalarm", "packets that found their egress queue at or above the qalarm setting") \
	X(acct_repaired, "", "bytes charged toward this port whose departure the dequeue hook never saw, released when its queue was found empty") \
	X(sfc_congested, "sfc_cong", "SFC-eligible packets that found this port's queue over sfc_qth") \
	X(sfc_bts_queue, "bts_q", "of them, BTS requested (origin: this switch's queue)") \
	X(sfc_suppressed, "", "BTS requests (congested, cache hit or estimate) suppressed by the Bloom filter") \
	X(sfc_bts_cache, "bts_c", "BTS requested by a pause-cache hit for data leaving through this port") \
	X(sfc_bts_est, "bts_e", "BTS requested by the incast estimator for data leaving through this port") \
	X(sfc_cache_insert, "", "cacheable BTS that entered here and created a pause-cache entry") \
	X(sfc_cache_update, "", "... that raised the pause end of a live entry of their key (max-update)") \
	X(sfc_cache_collide, "", "... that found a live entry of another key in their slot (not cached)") \
	X(sfc_cache_lost, "", "... whose insert lost its compare-and-exchange race four times (not cached)") \
	X(sfcp_pause, "sfcp", "BTS for the host on this port turned into one PFC PAUSE (SFC-P)") \
	X(ldcp_drop, "ldcp_d", "Not-ECT data packets toward this port dropped at K (LDCP's fast-start drop)") \
	X(pbfs_marked, "pbt", "PBT-marked data packets toward this port (PB-FS)") \
	X(pbfs_congested, "pbfs_c", "of them, found this port congested (PB-FS Definition 1): a CC-postcard requested") \
	X(pfc_rx_xoff, "xoff_rx", "PAUSE frames (quanta > 0) from the neighbouring switch on this port") \
	X(pfc_rx_xon, "xon_rx", "XON frames (quanta 0) from the neighbouring switch on this port") \
	X(pfc_slip_bytes, "slip_B", "data bytes that left through this port while its neighbour had it paused") \
	X(pcn_paused, "pn_in", "data packets counted into PN (PCN's NP-ECN): queued when a PAUSE from the neighbour began, or enqueued while it lasted") \
	X(pcn_spared, "np_sp", "data packets over the marking threshold that left unmarked because they had been paused (NP-ECN)") \
	X(pfc_slip_over, "slip_over", "pauses from the neighbour that let more data slip than this link's headroom holds (the pause latency exceeded its budget: a lossless run with one is not a result)")

struct qn_port_stats {
#define QN_X_FIELD(name, column, doc) __u64 name;
	QN_PORT_COUNTERS(QN_X_FIELD)
#undef QN_X_FIELD
	__u64 drops[QN_DROP_MAX];
};

/* qn_cfg: load-time configuration in .rodata (set through the skeleton before load). */
struct qn_cfg {
	__u32 switch_id;      /* unique per topology; diagnostics and signal reporter ids */
	__u32 ecmp_seed;      /* hash seed, distinct per switch to avoid ECMP polarisation */
	__u32 dilation_milli; /* D x 1000; BPF converts bpf_ktime_get_ns() to fabric ns with it */
	__u32 addr_be;        /* the switch's IPv4 address (source of the signals it originates) */
	__u64 sample_interval_wall_ns; /* queue samples at most this often per port (fabric x D) */
	__u32 nports;         /* ports of this switch */
	__u32 host_ports;     /* its ports facing a host: one or more make it a ToR (sfc_where=tor) */
	__u64 hdrm_total_bytes; /* the sum of the ports' qn_port.hdrm_bytes: the buffer PFC reserves */
};

/* ---- queues (issue 4) ---- */

/* skb->mark written by the ingress pipeline on every packet it forwards, so the dequeue
 * tracepoint can release the packet's accounting: magic | ingress port_no << 16 | prio << 8. */
#define QN_MARK_MAGIC 0xA5000000u
#define QN_MARK_MAGIC_MASK 0xFF000000u
#define QN_MARK_PORT_SHIFT 16
#define QN_MARK_PRIO_SHIFT 8
#define QN_NUM_PRIOS 8

enum qn_queue_mode {
	QN_QMODE_AUTO = 0,    /* real qdisc backlog; virtual queue until the port's device is known */
	QN_QMODE_REAL = 1,
	QN_QMODE_VIRTUAL = 2, /* bytes in - wall rate x time (the fallback, forced) */
};

/* qn_swcfg: single-entry ARRAY, the switch's run-time settings (written by the control plane,
 * read on every packet), one sub-struct per feature. User space sets every field through one key
 * table (userspace/control/swcfg.cc); docs/switch.md "Settings". Sizes in bytes, fractions in
 * millionths (ppm), flags 0/1, times in fabric ns (qn_wall_ns() converts with the running D). A
 * scheme appends its own sub-struct at the end. */
struct qn_set_buffer {
	__u64 bytes;            /* shared buffer B */
	__u32 alpha_data_ppm;   /* dynamic threshold alpha of the data class (1e6 = 1.0) */
	__u32 alpha_ctrl_ppm;   /* ... of the control class */
	__u32 admission;        /* 1 = enforce the dynamic threshold */
	__u32 queue_mode;       /* enum qn_queue_mode */
};
struct qn_set_red {
	__u32 on;               /* 1 = RED/ECN marking of the data class */
	__u32 at_dequeue;       /* 1 = decided at dequeue on the queue behind the packet, applied by
	                         * the next hop (qn_dqmarks); 0 = at enqueue (docs/switch.md) */
	__u32 pmax_ppm;         /* marking probability at Kmax */
	__u32 pad;
	__u64 kmin_bytes;
	__u64 kmax_bytes;
};
struct qn_set_pfc {
	__u32 on;               /* 1 = PFC: XOFF/XON per (ingress port, priority), data class lossless */
	__u32 quanta;           /* quanta in XOFF frames */
	__u64 xoff_bytes;       /* per (ingress port, priority) */
	__u64 xon_bytes;        /* resume threshold */
	__u32 edge_only;        /* 1 = generate on host-facing ports only (edge PFC) */
	__u32 obey;             /* 1 = a PAUSE from a neighbouring switch stops this port's data class */
	__u32 alpha_ppm;        /* > 0: dynamic XOFF threshold alpha x (B - headroom - used), 1e6 = 1 */
	__u32 pad;
	__u64 hdrm_bytes;       /* headroom per (ingress port, priority); 0 = each port's qn_port.hdrm_bytes */
};
/* Test knobs. `on` is derived by the control plane (1 when any other field is non-zero): one
 * check keeps every knob off the per-packet path when none is set. */
struct qn_set_test {
	__u32 on;
	__u32 mirror_dport;     /* packets to this UDP dport trigger signal `mirror_signal` (0 = off) */
	__u32 mirror_signal;    /* that trigger's signal: QN_SIG_ECHO + mirror_signal (0 echo, 1 BTS,
	                         * 2 postcard) */
	__u32 loss_ppm;         /* injected random loss of RoCE data packets (1e6 = all) */
	__u32 qdepth;           /* 1 = egress depths come from qn_test_qdepth (TEST_RUN has no qdisc) */
	__u32 pad;
};
struct qn_set_qalarm {
	__u64 bytes;            /* count packets finding the egress queue at or above this (0 = off) */
};
/* SFC's congestion point (sfc.h, sfc.md §3.1-§3.3). */
struct qn_set_sfc {
	__u32 on;               /* 1 = BTS from this switch's ingress */
	__u32 where;            /* enum qn_sfc_where: which switches with sfc=on are congestion points */
	__u64 qth_bytes;        /* Q_Th: a BTS when the egress queue is over this */
	__u64 qtg_bytes;        /* Q_Tg: the pause drains the queue to this */
	__u64 tbf_ns;           /* T_BF: Bloom filter epoch (0 = no suppression) */
	__u32 cache;            /* enum qn_sfc_cache_mode: where pause caches live (sfc.md §3.1) */
	__u32 sfcp;             /* 1 = SFC-P: a BTS leaving toward a host becomes one PFC PAUSE */
	__u32 est;              /* 1 = the incast estimator (sfc.md §3.4) at this switch's host ports */
	__u32 pad2;
	__u64 est_tau_ns;       /* its time constant tau (fabric ns) */
	__u64 est_rate_bps;     /* R_dst, the receivers' link rate (fabric bits/s) */
};
enum qn_sfc_where {
	QN_SFC_WHERE_TOR = 0, /* switches with a host port (ToRs), as the paper's simulations deploy SFC */
	QN_SFC_WHERE_ALL = 1, /* every switch (the paper's testbed: all three Tofino2) */
};
enum qn_sfc_cache_mode {
	QN_SFC_CACHE_OFF = 0,
	QN_SFC_CACHE_TOR = 1,   /* cache BTS leaving this switch toward a host (a sender-side ToR) */
	QN_SFC_CACHE_ALL = 2,   /* cache every cacheable BTS that transits this switch (Alg. 1) */
};
/* LDCP's switch rule (ldcp.h, ldcp.md §3.1 S3): Not-ECT data is dropped at K. */
struct qn_set_ldcp {
	__u32 on;               /* 1 = drop Not-ECT data packets finding the egress queue at or above K */
	__u32 pad;
	__u64 k_bytes;          /* K (0 = the RED profile's kmin) */
};
/* PB-FS's switch side (pbfs.h, pbfs.md §3.2): per egress port a history of slots. */
struct qn_set_pbfs {
	__u32 on;               /* 1 = keep the history and answer PBT-marked packets */
	__u32 n;                /* N: history slots per half DC_RTT, 1..QN_PBFS_MAX_N */
	__u64 slot_ns;          /* slot length DC_RTT / 2N (fabric; 0 = off) */
	__u64 tdelta_ns;        /* T_Δ, the window of recentBytes (fabric) */
	__u64 dc_rtt_ns;        /* DC_RTT (fabric) */
};
/* PCN's NP-ECN (pcn.h, pcn.md §3.1): packets that were paused by a neighbour's PFC are never
 * marked; the marking itself is the RED profile (step at K: kmin = kmax = K) at ecn_at. */
enum qn_pcn_pn_mode {
	QN_PCN_PN_XOFF_ENQ = 0, /* PN = queue at the PAUSE, + every data packet enqueued while paused */
	QN_PCN_PN_XOFF = 1,     /* PN = queue at the PAUSE only */
};
struct qn_set_pcn {
	__u32 on;               /* 1 = NP-ECN */
	__u32 pn_mode;          /* enum qn_pcn_pn_mode [R] */
};
struct qn_swcfg {
	struct qn_set_buffer buffer;
	struct qn_set_red red;
	struct qn_set_pfc pfc;
	struct qn_set_test test;
	struct qn_set_qalarm qalarm;
	struct qn_set_sfc sfc;
	struct qn_set_ldcp ldcp;
	struct qn_set_pbfs pbfs;
	struct qn_set_pcn pcn;
};

/*
 * PB-FS history (pbfs.h): per (egress port, CPU) a ring of slot cells and a ring of sub-slot cells
 * for the T_Δ window, in a per-CPU array, so each CPU writes only its own cells and needs no
 * atomics; a reader sums every CPU's cells (bpf_map_lookup_percpu_elem). No timer rotates them:
 * a cell carries its epoch + 1 (slot number since boot, wall time / slot), a writer that finds an
 * older epoch in the cell of its epoch restarts it, and a reader takes only cells whose epoch is in
 * the window it sums, so a cell not written for a while (an idle port) counts as empty.
 */
#define QN_PBFS_MAX_N 16
#define QN_PBFS_RING 32         /* slot cells: N completed slots and the current one fit */
#define QN_PBFS_SUB 4           /* sub-slots per slot (the T_Δ window's grain) */
#define QN_PBFS_FINE 32         /* sub-slot cells (8 slots) */
#define QN_PBFS_MAX_CPUS 64
struct qn_pbfs_cell {
	__u64 epoch1;           /* slot number + 1 (0 = never written) */
	__u64 first_ns;         /* wall ns of the slot's first packet on this CPU */
	__u32 bytes;            /* bytes toward the port in the slot */
	__u32 q_first;          /* the port's queue ahead of that first packet (bytes) */
};
struct qn_pbfs_fine {
	__u64 epoch1;           /* sub-slot number + 1 */
	__u32 bytes;
	__u32 marked;           /* of them, PBT-marked */
};
struct qn_pbfs_hist {
	struct qn_pbfs_cell slot[QN_PBFS_RING];
	struct qn_pbfs_fine fine[QN_PBFS_FINE];
};
/* What Definition 1 reads, summed over CPUs. */
struct qn_pbfs_sum {
	__u64 i_before;         /* bytes of the N completed slots before the current one */
	__u64 i_last;           /* of them, the newest slot's */
	__u64 q1;               /* queue at the start of the history: ahead of its earliest packet */
	__u64 q1_ns;            /* that packet's wall ns (~0 = no packet in the history) */
	__u64 recent;           /* bytes of the T_Δ window (sub-slots), the packet in hand included */
	__u64 recent_marked;
};

/* qn_pbfs_add_slot, qn_pbfs_add_fine - add one cell to `s` when it lies in the window: slots
 * e-n .. e-1 (e = the current slot), sub-slots fe-nfine+1 .. fe. */
static inline void qn_pbfs_add_slot(const struct qn_pbfs_cell *c, __u64 e, __u32 n, struct qn_pbfs_sum *s)
{
	__u64 ep = c->epoch1 - 1;

	if (!c->epoch1 || ep >= e || ep + n < e)
		return;
	s->i_before += c->bytes;
	if (ep + 1 == e)
		s->i_last += c->bytes;
	if (c->first_ns < s->q1_ns) {
		s->q1_ns = c->first_ns;
		s->q1 = c->q_first;
	}
}
static inline void qn_pbfs_add_fine(const struct qn_pbfs_fine *f, __u64 fe, __u32 nfine, struct qn_pbfs_sum *s)
{
	__u64 ep = f->epoch1 - 1;

	if (!f->epoch1 || ep > fe || ep + nfine <= fe)
		return;
	s->recent += f->bytes;
	s->recent_marked += f->marked;
}
/* qn_pbfs_add - add one CPU's history to `s` (the unit tests' form; the stage walks the cells
 * with bpf_loop, one cell per callback, so the verifier checks one cell, not 64 in a row). */
static inline void qn_pbfs_add(const struct qn_pbfs_hist *h, __u64 e, __u32 n, __u64 fe, __u32 nfine,
			       struct qn_pbfs_sum *s)
{
	__u32 i;

	for (i = 0; i < QN_PBFS_RING; i++)
		qn_pbfs_add_slot(&h->slot[i], e, n, s);
	for (i = 0; i < QN_PBFS_FINE; i++)
		qn_pbfs_add_fine(&h->fine[i], fe, nfine, s);
}

/* qn_pbfs_ip - Eq. 1's I_p: the N slots before plus N times the newest (the next N predicted). */
static inline __u64 qn_pbfs_ip(const struct qn_pbfs_sum *s, __u32 n) { return s->i_before + s->i_last * n; }

/* qn_pbfs_congested - Definition 1: I_p above what the port can still send in 2N slots,
 * rate x DC_RTT / 8 - Q1 (fabric bit/s and ns). */
static inline int qn_pbfs_congested(const struct qn_pbfs_sum *s, __u32 n, __u64 rate_bps, __u64 dc_rtt_ns)
{
	__u64 cap = rate_bps / 1000 * dc_rtt_ns / 8000000; /* bytes; rate in kbit/s keeps it in 64 bits */

	return qn_pbfs_ip(s, n) + s->q1 > cap;
}
#define QN_SFC_BLOOM_HASHES 3   /* sfc.md §4: 3 hash functions */
#define QN_SFC_BLOOM_CELLS 4096 /* cells per hash (a power of two) */
/* Pause cache (sfc.h): QN_SFC_CACHE_SLOTS u64 words, hash-addressed by (dst IP, DSCP without
 * the bits in QN_SFC_DSCP_IGNORE). A word packs the rest of the key's bijective hash (the tag,
 * QN_SFC_TAG_BITS) and the pause end (wall ns / 1024, rounded up, modulo 2^QN_SFC_END_BITS), so
 * one compare-and-exchange updates an entry: a tag names exactly one key (no false match). */
#define QN_SFC_CACHE_SLOTS 32768    /* sfc.md §4: 32K entries */
#define QN_SFC_CACHE_IDX_BITS 15
#define QN_SFC_KEY_BITS 37          /* 32 bits of address, 5 of DSCP */
#define QN_SFC_TAG_BITS 22          /* QN_SFC_KEY_BITS - QN_SFC_CACHE_IDX_BITS */
#define QN_SFC_END_BITS 42          /* 64 - QN_SFC_TAG_BITS: 2^42 x 1024 ns = 52 days */
#define QN_SFC_END_SHIFT 10         /* end units: 1024 ns */
#define QN_SFC_DSCP_IGNORE 0x01     /* PB-FS's PBT bit (QN_TOS_PBT >> 2) never splits a key */
#define QN_SFC_EST_SLOTS 1024      /* incast estimator: slots by destination (sfc.h) */

/* qn_sfc_cache_word_live - 1 when cache word `w` holds an entry whose end lies ahead of now_u
 * (now / 1024 ns) by at most max_units (further ahead is stale: sfc.h qn_sfc_max_units). Shared by
 * the stage (sfc.h) and the occupancy scan of the control thread (userspace/control/gauges.cc). */
static inline int qn_sfc_cache_word_live(__u64 w, __u64 now_u, __u64 max_units)
{
	__u64 rem = ((w & ((1ull << QN_SFC_END_BITS) - 1)) - now_u) & ((1ull << QN_SFC_END_BITS) - 1);

	return rem && rem <= max_units;
}

/* qn_sw_gauges: ARRAY of __u64 by enum qn_sw_gauge, one per switch (pinned), written by the
 * switch's control thread (switchd) from scans of the switch's tables: levels, not event counts.
 * QN_SW_GAUGES(X): X(name, doc). A `_peak` gauge is the highest level since it was last zeroed
 * (an experiment zeroes it when an attempt starts). Append only. */
#define QN_SW_GAUGES(X) \
	X(sfc_cache_live, "pause-cache entries with time left at the last scan (every 1 ms wall)") \
	X(sfc_cache_peak, "the most pause-cache entries seen live at one scan since the peak was zeroed")
enum qn_sw_gauge {
#define QN_X_ENUM(name, doc) QN_GAUGE_##name,
	QN_SW_GAUGES(QN_X_ENUM)
#undef QN_X_ENUM
	QN_GAUGE_MAX
};

/* qn_dqmarks: LRU hash shared by every switch and host steering program of a topology (pinned
 * at /sys/fs/bpf/quench/<topology>/qn_dqmarks). A switch's dequeue hook, which cannot write the
 * packet, records a CE decision under the packet's identity; the next hop that can write it (a
 * switch's ingress, a host's XDP) looks the packet up, sets CE and deletes the entry. */
#define QN_DQMARK_ENTRIES 16384
struct qn_dqkey {
	__u32 saddr_be;
	__u32 daddr_be;
	__u16 ip_id_be;
	__u16 sport_be;
};

/* qn_qstate: ARRAY by egress port_no; shared across CPUs, updated with atomics. */
struct qn_qstate {
	__u64 dev;              /* struct net_device * of the port, recorded by its egress hook */
	__s64 acct_bytes;       /* charged at enqueue (ingress), released at dequeue (tracepoint) */
	__s64 acct_pkts;
	__u64 peak_bytes;       /* highest queue depth seen, bytes */
	__u64 last_bytes;       /* the real queue at the latest event: with the last packet the
	                         * ingress stage admitted (ahead of it when not admitted), or behind
	                         * the last departure the dequeue hook saw; what queue probes read
	                         * (acct_bytes drifts, acct.h) */
	__u64 last_pkts;
	__u64 vq_bytes;         /* virtual queue (fallback): a token bucket like the port's HTB */
	__s64 vq_tokens;        /* its tokens, at most the port's burst; negative after an overdraw */
	__u64 vq_last_ns;       /* wall ns of its last update */
	__u64 last_sample_ns;   /* wall ns of the last queue sample posted */
	/* PFC from the neighbouring switch on this port (pfc.h): its data class is paused while
	 * now < pause_until_ns. Written at the PAUSE's arrival (ingress) and by departures (the
	 * dequeue hook), which also close a pause: the first data departure at or after its end. */
	__u64 pause_until_ns;   /* wall ns the pause ends (an XON: its arrival) */
	__u64 pause_start_ns;   /* wall ns the open pause began; 0 = none open */
	__u64 paused_rx_ns;     /* closed pauses, wall ns */
	__u64 pauses;           /* pauses begun */
	__u64 ep_slip_bytes;    /* data bytes that left in the open pause */
	__u64 ep_last_slip_ns;  /* wall ns of its last one (0 = none) */
	__u64 slip_max_bytes;   /* most data bytes one closed pause let out */
	__u64 quiet_max_ns;     /* longest time from a pause's start to its last data departure */
	__u64 resume_max_ns;    /* longest time from a pause's end to the first data departure */
	__u64 resume_sum_ns;    /* their sum, over resume_cnt pauses closed by a departure */
	__u64 resume_cnt;
	__u64 hdrm_bytes;       /* this link's PFC headroom (qn_port.hdrm_bytes), set at load: a pause
	                         * that lets more slip is counted in pfc_slip_over */
	__s64 pn;               /* PCN's PN (pcn.h): data packets still queued that had been paused;
	                         * the next pn data departures are never marked */
};

/* qn_test_qdepth: ARRAY by port_no, read only with qn_set_test.qdepth (BPF_PROG_TEST_RUN has no
 * real qdisc). */
struct qn_test_qdepth {
	__u32 valid;
	__u32 pkts;
	__u64 bytes;
};

/* qn_pfc_acct: ARRAY by port_no * QN_NUM_PRIOS + prio (ingress accounting for PFC). */
struct qn_pfc_acct {
	__s64 bytes;            /* charged at enqueue, released at dequeue */
	__u64 paused;           /* 1 while the peer is held in XOFF (64-bit: BPF cmpxchg) */
	__u64 since_ns;         /* wall ns of the XOFF that started the pause */
	__s64 xoff_at;          /* bytes at that XOFF: a paused account may grow to xoff_at + headroom */
	__u64 pause_rx;         /* bytes that arrived since that XOFF (this pause) */
	__u64 pause_rx_max;     /* the most bytes one pause of this account took in (headroom used,
	                         * departures not subtracted) */
	__u64 hdrm_peak;        /* the highest bytes - xoff_at seen while paused */
	__s64 by_egress[QN_MAX_PORTS]; /* of the charges, those not yet released, by egress port
	                                * (acct.h: what the repair releases when a queue is empty) */
};

/* Ring buffer records. */
struct qn_pfc_event {
	__u32 ifindex;          /* port whose peer is paused/resumed */
	__u32 port_no;
	__u16 prio;
	__u16 flags;            /* QN_PFC_EV_ONCE, QN_PFC_EV_RX */
	__u32 quanta;           /* 0 = XON */
	__u64 t_ns;             /* wall ns (CLOCK_MONOTONIC) of the post: the control thread's latency */
};
#define QN_PFC_EV_ONCE 0x1      /* one PAUSE frame, never refreshed, no XON (SFC-P) */
#define QN_PFC_EV_RX 0x2        /* received: the neighbour on port_no paused (quanta > 0) or resumed
                                 * (0) this port's data class; switchd gates it */

struct qn_qsample {
	__u64 ts_ns;            /* bpf_ktime_get_ns() (wall) */
	__u32 port_no;
	__u32 pkts;
	__u64 bytes;
};

/* ---- fidelity monitor (issue 14, docs/experiments.md "Validity") ----
 * Per switch port, one qn_fid_port in the mmapable ARRAY qn_fid (key = port_no). Two monitors,
 * each an ideal line-rate clock over the frames it sees, in wall ns:
 *  - arrivals (ingress of a host-facing port): frames the engine declared backlogged (it was
 *    ready to send them back to back at line rate) should arrive one serialization time after
 *    the previous one; the engine writes `engine_backlogged` before each transmit kick;
 *  - departures (the dequeue hook, every port): a packet that was queued behind the previous
 *    departure should leave one serialization time after it.
 * Lateness beyond `credit_wall_ns` (one maximum frame: the catch-up a link may make) is link
 * time lost for good; each such period goes to qn_fid_events. A window of QN_FID_WINDOW
 * backlogged frames that took less than their serialization time minus one frame is "fast" (the
 * link caught up). The control plane writes the three configuration fields; BPF the rest;
 * userspace zeroes the counters (qn_fid_port_reset) before a run. */
#define QN_FID_WINDOW 8
enum qn_fid_dir {
	QN_FID_ARRIVAL = 0,
	QN_FID_DEPARTURE = 1,
};
struct qn_fid_mon {
	__u64 next_ns;          /* ideal end of the last frame (wall) */
	__u64 bl_ns;            /* serialization time of backlogged frames (wall) */
	__u64 lost_ns;          /* lateness beyond the credit (wall) */
	__u64 bl_frames;        /* backlogged frames seen */
	__u64 late_frames;      /* of them, later than the credit */
	__u64 windows;          /* windows of QN_FID_WINDOW backlogged frames checked */
	__u64 fast_windows;     /* of them, faster than line rate plus one frame */
	__u64 events_lost;      /* lost periods not posted (ring buffer full) */
	__u64 ring_ts[QN_FID_WINDOW];  /* wall time of the last frames (by run % QN_FID_WINDOW) */
	__u64 ring_cum[QN_FID_WINDOW]; /* cumulative ideal time at them */
	__u64 cum_ns;           /* cumulative ideal time of the current backlogged run */
	__u64 run;              /* frames in the current backlogged run */
	__u64 prev_left;        /* departures: bytes the previous departure left queued */
	__u64 pad[5];           /* 256 bytes: four cache lines */
};
struct qn_fid_port {
	/* configuration (control plane) */
	__u64 ps_per_byte;      /* wall ps per wire byte at the port's rate (0 = monitor off) */
	__u64 credit_wall_ns;   /* one maximum frame's serialization time (wall) */
	__u32 engine_backlogged; /* written by the engine: the frames it kicks now are backlogged */
	__u32 pad0;
	__u64 pad1[5];
	struct qn_fid_mon mon[2]; /* [enum qn_fid_dir]; each its own cache lines */
};
/* qn_fid_events record: a period [from_ns, to_ns) (wall) in which a port's link lost time. */
struct qn_fid_event {
	__u64 from_ns;
	__u64 to_ns;
	__u32 port_no;
	__u32 dir;              /* enum qn_fid_dir */
};

/* ---- typed recirculation signals (docs/switch.md "Signals and the builder") ----
 * A stage that wants a signal for the packet in hand takes the next sequence number, writes the
 * values it computed into qn_sig_ring[seq % QN_SIG_RING] and asks the top-level program for a
 * copy to the recirculation device carrying QN_SIG_MARK(type, seq) in skb->mark. The builder
 * (recirc.h) takes the entry whose `mark` equals the copy's mark, so two packets' requests never
 * share a slot however the copies interleave; an entry overwritten before its copy arrived
 * (QN_SIG_RING requests in between) is counted as sig_lost, never built from another's values. */
enum qn_sig_type {
	QN_SIG_NONE = 0,
	QN_SIG_ECHO = 1,        /* test: trimmed echo to the sender (QN_ECHO_UDP_PORT) */
	QN_SIG_BTS = 2,         /* SFC back-to-sender signal (struct qn_bts) */
	QN_SIG_POSTCARD = 3,    /* PB-FS CC-postcard (struct qn_postcard) */
	QN_SIG_MAX = 4,
};
/* The copy's mark: 0x5A (31..24) | type (23..20) | ingress port_no (19..15) | seq (14..0). */
#define QN_MARK_RECIRC 0x5A000000u
#define QN_SIG_TYPE_SHIFT 20
#define QN_SIG_PORT_SHIFT 15
#define QN_SIG_SEQ_MASK 0x00007FFFu
#define QN_SIG_MARK(type, port, seq) (QN_MARK_RECIRC | (((type) & 0xFu) << QN_SIG_TYPE_SHIFT) | \
				      (((port) & (QN_MAX_PORTS - 1u)) << QN_SIG_PORT_SHIFT) | ((seq) & QN_SIG_SEQ_MASK))
#define QN_SIG_TYPE(mark) (((mark) >> QN_SIG_TYPE_SHIFT) & 0xF)
#define QN_SIG_PORT(mark) (((mark) >> QN_SIG_PORT_SHIFT) & (QN_MAX_PORTS - 1))
#define QN_SIG_RING 1024        /* a power of two dividing QN_SIG_SEQ_MASK + 1 */
#define QN_SIGS_PER_PKT 2       /* signals one packet may trigger (e.g. a BTS and a postcard) */

/* Side values of a BTS (sfc.md §3.2): the stage decides them, the builder writes them. */
struct qn_sig_bts_vals {
	__u32 pause_us;         /* fabric microseconds, clamped to 65535 by the builder */
	__u8 origin;            /* enum qn_bts_origin */
	__u8 cacheable;         /* the congested port faces a host */
	__u16 pad;
};
/* Side values of a CC-postcard (pbfs.md §5). */
struct qn_sig_postcard_vals {
	__u32 i_p;
	__u32 q1;
	__u32 rate_mbps;
	__u32 recent_bytes;
	__u32 recent_marked_bytes;
	__u32 pad;
	__u64 t0_ns;
};
struct qn_sig_entry {
	__u32 mark;             /* QN_SIG_MARK() of the request; 0 = free or consumed */
	__u32 eport;            /* egress port_no the packet was forwarded to (the reporter's queue) */
	__u32 eifindex;         /* its ifindex (the postcard's sID is that port's MAC) */
	__u32 pad;
	union {
		struct qn_sig_bts_vals bts;
		struct qn_sig_postcard_vals postcard;
		__u64 raw[4];
	} v;
};

#define QN_ECHO_UDP_PORT 4794      /* the test format the builder makes (a trimmed echo) */
#define QN_ECHO_LEN (QN_ETH_HLEN + QN_IPV4_HLEN + QN_UDP_HLEN + QN_BTH_LEN)
#define QN_BTS_LEN (QN_ETH_HLEN + QN_IPV4_HLEN + QN_UDP_HLEN + 48)
#define QN_POSTCARD_LEN (QN_ETH_HLEN + QN_IPV4_HLEN + QN_UDP_HLEN + 56)

/*
 * Arrival stamp the host/cable XDP programs put in the XDP metadata area in front of every frame
 * they hand to the engine (copy-mode AF_XDP copies metadata along), so delay lines count from
 * the frame's arrival, not from when the event loop got to it.
 */
struct qn_rx_meta {
	__u64 magic;            /* QN_RX_META_MAGIC; the engine clears it when it recycles the frame */
	__u64 rx_mono_ns;       /* bpf_ktime_get_ns() at XDP (CLOCK_MONOTONIC) */
};
#define QN_RX_META_MAGIC 0x71656e6368525831ULL /* "quenchRX1" */

/* qn_steer_stats (host XDP steering): per-CPU array indexed by enum qn_steer_counter. */
enum qn_steer_counter {
	QN_STEER_XSK = 0,      /* redirected to the AF_XDP socket */
	QN_STEER_PASS = 1,     /* passed to the kernel stack */
	QN_STEER_NO_XSK = 2,   /* RoCE/signal/PFC but no socket bound on this queue: passed */
	QN_STEER_MAX = 3,
};


/*
 * RoCEv2 transport headers as the engine writes them (../shared/specs/common.md §1). All
 * multi-byte fields big-endian (wire order). A frame is Eth / IPv4 (DSCP, ECN) / UDP 4791 /
 * BTH / [AETH [/ qn_qack]] / payload / pad / [ICRC].
 */
struct qn_bth {
	__u8 opcode;
	__u8 flags;        /* SE(7) M(6) PadCnt(5..4) TVer(3..0) */
	__be16 pkey;       /* 0xFFFF */
	__u8 becn_resv;    /* FECN(7) BECN(6); masked in the ICRC */
	__u8 dest_qp[3];   /* 24-bit destination QPN */
	__u8 ack_req;      /* A(7) */
	__u8 psn[3];       /* 24-bit PSN */
};

struct qn_aeth {
	__u8 syndrome;     /* 0x00..0x1F ACK (credits), 0x60 NAK PSN sequence error */
	__u8 msn[3];       /* messages completed at the responder */
};

/*
 * quench's ACK extension after the AETH of every ACK/NAK the engine sends: ECN echo for the
 * congestion controller and the selective-repeat SACK bitmap (docs/wire.md).
 */
struct qn_qack {
	__u8 flags;        /* QN_QACK_ECE: a CE-marked data packet arrived since the last ACK */
	__u8 resv;
	__be16 ce_pkts;    /* CE-marked data packets since the previous ACK (saturating) */
	__be32 resv2;
	__be64 sack;       /* bit i: PSN (expected + 1 + i) is held by the receiver */
};

#define QN_QACK_ECE 0x01
#define QN_AETH_ACK 0x1F           /* ACK, credits invalid/unlimited */
#define QN_AETH_NAK_SEQ 0x60       /* NAK: PSN sequence error */
#define QN_CNP_PAYLOAD_LEN 16      /* reserved bytes after the CNP's BTH */
#define QN_ROCE_DEFAULT_PKEY 0xFFFF

/* TOS bit a sender sets on PB-FS-marked data packets (pbfs.md §5: the DSCP's least significant
 * bit; ECN bits untouched, ICRC unaffected because TOS is masked). */
#define QN_TOS_PBT 0x04

/*
 * Back-to-sender signal (SFC, sfc.md §5): Eth / IPv4 (src = the congested receiver, dst = the
 * data's sender, DSCP 48, Not-ECT) / UDP (sport = the data's sport, which carries the sender
 * QPN; dport QN_BTS_UDP_PORT; checksum 0) / qn_bts. Not a RoCE packet: no ICRC. IP length 76.
 */
struct qn_bts {
	__u8 ver_origin;   /* version (7..4) = QN_BTS_VERSION, origin (3..0): enum qn_bts_origin */
	__u8 flags;        /* QN_BTS_CACHEABLE */
	__be16 pause_us;   /* pause time, fabric microseconds */
	__be32 reporter;   /* switch id (31..8) and egress port number (7..0), diagnostics */
	__u8 orig_ip[QN_IPV4_HLEN];  /* the triggering packet's IPv4 header, as it arrived */
	__u8 orig_udp[QN_UDP_HLEN];  /* ... its UDP header */
	struct qn_bth orig_bth;      /* ... its BTH (DestQP, PSN) */
};
#define QN_BTS_VERSION 1
#define QN_BTS_CACHEABLE 0x01
enum qn_bts_origin {
	QN_BTS_ORIGIN_CONGESTION = 0, /* the congested queue's switch */
	QN_BTS_ORIGIN_CACHE = 1,      /* a near-source pause cache hit */
	QN_BTS_ORIGIN_ESTIMATOR = 2,  /* the incast estimator */
};
#define QN_BTS_IP_LEN (QN_IPV4_HLEN + QN_UDP_HLEN + 48)

/*
 * CC-postcard (PB-FS, pbfs.md §5): Eth / IPv4 (src = the switch, dst = the flow's sender,
 * DSCP 48) / UDP (sport = the data's sport, dport QN_POSTCARD_UDP_PORT, checksum 0) /
 * qn_postcard. All fields big-endian. The spec's three reserved bytes after the version carry
 * the PSN of the marked packet that triggered the postcard (docs/wire.md).
 */
struct qn_postcard {
	__u8 version;      /* QN_POSTCARD_VERSION */
	__u8 psn[3];       /* PSN of the triggering packet */
	__be32 sid_hi;     /* sID: switch id, 64 bits (the port MAC in the low 6 bytes) */
	__be32 sid_lo;
	__be32 flow_saddr; /* flow id: the data's source and destination IPv4, UDP ports */
	__be32 flow_daddr;
	__be16 flow_sport;
	__be16 flow_dport;
	__be32 dest_qp;    /* the data's BTH DestQP (low 24 bits) */
	__be32 i_p;        /* I_p, bytes */
	__be32 q1;         /* Q1, bytes */
	__be32 rate_mbps;  /* T, the port's rate in Mbit/s */
	__be32 recent_bytes;
	__be32 recent_marked_bytes;
	__be64 t0_ns;      /* switch timestamp (diagnostics) */
};
#define QN_POSTCARD_VERSION 1
#define QN_POSTCARD_IP_LEN (QN_IPV4_HLEN + QN_UDP_HLEN + 56)

/*
 * Soft-RoCE hosts (docs/agent.md): qn_rxe.bpf.c on an rxe host's veth and the agent. A QP is
 * named by its peer's IPv4 address and the BTH DestQP of its packets: at egress the remote QPN,
 * at ingress the local one.
 */
struct qn_rxe_qp_key {
	__u32 peer_ip_be;
	__u32 qpn;
};

/* qn_rxe_qps: what the egress program learned of a QP from its packets. */
struct qn_rxe_qp {
	__u64 pkts;
	__u64 bytes;        /* frame bytes (skb->len) */
	__u64 first_ns;     /* CLOCK_MONOTONIC */
	__u64 last_ns;
	__u32 local_ip_be;
	__u16 sport;        /* host order: rxe's UDP source port, 0xC000 + a hash of the local QPN */
	__u16 pad;
	/* SFC (written by the ingress program when a BTS names this QP) */
	__u64 pause_until_ns; /* CLOCK_MONOTONIC: the QP's data leaves no earlier (0: never paused) */
	__u64 paused_ns;      /* the union of the QP's BTS pauses so far */
	__u64 bts;            /* BTS that named this QP */
	__u64 pkts_at_bts;    /* `pkts` when the last BTS arrived (its backlog in the qdisc: what it
			       * had handed to the qdisc minus what had left by then) */
};

/* qn_rxe_cfg (one entry): the host link's rate (the EDT pacer of all RoCE frames, agent or
 * not) and whether the agent runs (ECT(0) on data, per-QP pacing, CNP and CE events). */
struct qn_rxe_cfg {
	__u64 link_bps;
	__u32 agent;
	__u32 honor;        /* QN_RXE_HONOR_*: what the programs obey, agent or not (a NIC's part) */
};
#define QN_RXE_HONOR_PFC 0x1 /* PFC/PAUSE frames pause their priority (qn_rxe_pause) */
#define QN_RXE_HONOR_BTS 0x2 /* a BTS pauses the QP it names (qn_rxe_qp.pause_until_ns) */

/* qn_rxe_pause: ARRAY of QN_NUM_PRIOS, the PFC state of each priority as the host's PAUSE
 * frames set it (priority = DSCP >> 3 of the frames, as the switch accounts them). */
struct qn_rxe_pause {
	__u64 until_ns;     /* CLOCK_MONOTONIC: data of this priority leaves no earlier */
	__u64 paused_ns;    /* the union of the pauses so far, XON cutting one short */
	__u64 xoff;         /* PAUSE frames with quanta > 0 for this priority */
	__u64 xon;          /* ... with quanta 0 */
};

/* An 802.1Qbb PFC frame after its Ethernet header. Big-endian. An 802.3x PAUSE (opcode
 * QN_PAUSE_OPCODE) has its one pause time, for every priority, where `enable` is. */
struct qn_pfc_body {
	__be16 opcode;      /* QN_PFC_OPCODE or QN_PAUSE_OPCODE */
	__be16 enable;      /* bit i: quanta[i] is valid (802.3x: the pause time) */
	__be16 quanta[8];   /* in 512-bit times of the link */
};
#define QN_PAUSE_OPCODE 0x0001

/* qn_rxe_events (ring buffer): what the ingress program hands the agent. */
enum qn_rxe_event_kind {
	QN_RXE_EV_CNP = 1,  /* a CNP for local QP `qpn` from `peer` (taken from rxe) */
	QN_RXE_EV_CE = 2,   /* a CE-marked data packet for local QP `qpn` from `peer` */
};
struct qn_rxe_event {
	__u64 t_ns;         /* CLOCK_MONOTONIC */
	__u32 kind;
	__u32 qpn;
	__u32 peer_ip_be;
	__u32 psn;
	__u32 len;          /* frame bytes */
	__u16 sport;        /* host order */
	__u8 opcode;
	__u8 pad;
};

/* qn_rxe_stats: per-CPU array indexed by enum qn_rxe_counter. */
enum qn_rxe_counter {
	QN_RXE_TX_DATA = 0,     /* RoCE data frames leaving */
	QN_RXE_TX_CTRL = 1,     /* RoCE ACK/NAK/CNP frames leaving */
	QN_RXE_TX_ECT = 2,      /* data frames this program set ECT(0) on */
	QN_RXE_TX_PACED = 3,    /* frames given a departure time in the future */
	QN_RXE_RX_DATA = 4,     /* RoCE data frames arriving */
	QN_RXE_RX_CE = 5,       /* ... of them CE-marked */
	QN_RXE_RX_CNP = 6,      /* CNPs arriving */
	QN_RXE_EV_LOST = 7,     /* events the ring buffer had no room for */
	QN_RXE_RX_DQMARK = 8,   /* CE applied here for an upstream dequeue decision (dqmark.h) */
	QN_RXE_RX_PFC = 9,      /* PFC/PAUSE frames taken (obeyed or not) */
	QN_RXE_RX_BTS = 10,     /* BTS taken (obeyed or not) */
	QN_RXE_RX_BTS_NO_QP = 11, /* ... naming no QP this host has sent from */
	QN_RXE_TX_PFC_HELD = 12, /* frames given a departure time at a PFC pause's end */
	QN_RXE_TX_BTS_HELD = 13, /* data frames given a departure time at their QP's BTS pause end */
	QN_RXE_MAX = 14,
};

#endif /* QN_ABI_H */
