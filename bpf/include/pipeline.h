/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pipeline.h - the context every switch stage works on, and what all stages share.
 *
 * The ingress program (switch.h) runs the stages in order over one struct qn_ctx: the packet
 * (parsed headers and its window), the ingress and egress ports, the egress queue's depth, the
 * time and the settings. A stage is `static __always_inline __u32 qn_stage_X(struct qn_ctx *c)`
 * returning 0 to go on or a drop reason (enum qn_drop_reason) to drop the packet, counted on the
 * ingress port, or QN_VERDICT_CONSUMED for a packet the stage turned into something else (SFC-P's
 * BTS that became a PAUSE): not forwarded and not a drop. A stage never calls a helper that changes the packet's length or data
 * (clone_redirect, change_tail, pull_data): on newer kernels such a call inside a subprogram
 * invalidates its caller's packet pointers, so only the top-level program makes them; a stage
 * that wants a copy for the builder asks for it with qn_sig_request() (signals.h).
 */
#ifndef QN_PIPELINE_H
#define QN_PIPELINE_H

#include "bpf_common.h"
#include "qn_abi.h"
#include "parse.h"
#include "maps.h"

/* A stage's verdict for a packet it consumed (not a drop reason: never counted as one). */
#define QN_VERDICT_CONSUMED 0xC0u

/* Load-time constants of this switch (set through the skeleton before load). */
const volatile struct qn_cfg qn_cfg = {};

struct qn_ctx {
	struct __sk_buff *skb;
	void *data, *data_end;        /* the packet window the parser read (headers linear) */
	struct qn_pkt p;              /* parsed headers */
	struct qn_port *in;           /* ingress port */
	struct qn_port_stats *st;     /* its counters */
	struct qn_nexthop *nh;        /* chosen next hop (forward stage) */
	struct qn_port_stats *est;    /* egress port counters (may be NULL) */
	struct qn_qstate *qs;         /* egress queue state (may be NULL) */
	struct qn_pfc_acct *pa;       /* (ingress port, priority) PFC account, once looked up */
	const struct qn_swcfg *cfg;   /* settings (may be NULL before the control plane wrote them) */
	__u64 now;                    /* wall ns (bpf_ktime_get_ns) */
	__u64 depth_b, depth_p;       /* egress queue ahead of this packet */
	__s64 tokens;                 /* virtual queue tokens at `now` */
	__u32 ifindex, in_port, eport, len, prio;
	int qsrc;                     /* qn_queue_depth's source, -1 when not read */
	__u8 mark_ce;                 /* a stage decided to set CE */
	__u8 nsig;                    /* signals requested (qn_sig_request) */
	__u8 pad[2];
	__u32 sig_mark[QN_SIGS_PER_PKT];
};

/* Wall ns for a time in fabric ns (settings hold fabric time; docs/units.md). */
static __always_inline __u64 qn_wall_ns(__u64 fabric_ns)
{
	return qn_cfg.dilation_milli ? fabric_ns * qn_cfg.dilation_milli / 1000 : fabric_ns;
}

/* Fabric ns for a wall duration. */
static __always_inline __u64 qn_fabric_ns(__u64 wall_ns)
{
	return qn_cfg.dilation_milli ? wall_ns * 1000 / qn_cfg.dilation_milli : wall_ns;
}

static __always_inline struct qn_swcfg *qn_swcfg_get(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&qn_swcfg, &zero);
}

static __always_inline void qn_count_drop(struct qn_port_stats *st, __u32 reason)
{
	if (reason < QN_DROP_MAX)
		__sync_fetch_and_add(&st->drops[reason], 1);
}

static __always_inline void qn_orphan_drop(__u32 reason)
{
	__u64 *c = bpf_map_lookup_elem(&qn_orphan_drops, &reason);

	if (c)
		(*c)++;
}

static __always_inline int qn_is_ctrl(const struct qn_pkt *p)
{
	return p->cls == QN_CLASS_CONTROL || p->cls == QN_CLASS_BTS || p->cls == QN_CLASS_POSTCARD ||
	       p->cls == QN_CLASS_PFC; /* a frame a switch sends itself through its qdisc (switchd's kick) */
}

/* A port's link rate in wall bit/s (fabric rate / D). */
static __always_inline __u64 qn_wall_rate_bps(const struct qn_port *port, __u32 dilation_milli)
{
	if (!dilation_milli)
		return port->rate_bps;
	return port->rate_bps * 1000 / dilation_milli;
}

/* An ECT data packet that is not yet CE: what RED may mark. */
static __always_inline int qn_is_ect_data(const struct qn_pkt *p)
{
	return !qn_is_ctrl(p) && (p->tos & 0x3) && (p->tos & 0x3) != 0x3;
}

#endif /* QN_PIPELINE_H */
