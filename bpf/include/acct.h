/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * acct.h - the switch's buffer accounting, charged when the ingress pipeline forwards a packet
 * and released when it leaves its egress queue, made exact even when departures go unseen.
 *
 * Three accounts hold a queued packet's bytes: its egress port (qn_qstate.acct_*), the shared
 * buffer (qn_buffer) and its (ingress port, priority) PFC account (qn_pfc_acct). The dequeue
 * hook (dequeue.h) releases them per departing packet, but the kernel does not run it for every
 * qdisc_dequeue event: measured on the 6.18 host, 0.3-2% of one port's departures in runs with
 * PFC pauses reached the tracepoint (ftrace saw them) without the BPF program running and
 * without a recursion miss counted (docs/switch.md, "Accounting"). Each such packet stayed
 * charged for good; enough of them held a peer paused until the run ended.
 *
 * So every charge is also recorded per egress port inside its PFC account
 * (qn_pfc_acct.by_egress: no extra lookup per packet), a release takes its bytes from there
 * first, and when an egress queue is found empty (its real root qdisc has no packet and no
 * byte) whatever the accounts still hold toward that port belongs to departures nobody saw:
 * qn_acct_repair releases it from all three accounts, resumes paused peers that fall to XON,
 * and counts the bytes in acct_repaired. "Found empty" is checked by the dequeue hook after each
 * departure and by the control thread every 2 ms of wall time or 20 us of fabric time, whichever
 * is longer (switchd.cc), through the qn_tc_sweep program, so a queue that drained while its last
 * departures went unseen (a paused sender sends nothing more) is repaired within that.
 *
 * Races: a packet charged on the other CPU but not yet in the qdisc when the queue is found
 * empty is released by the repair; its later departure finds its (ingress, priority) cell too
 * small and releases nothing, or takes the bytes of a later packet of the same cell, whose own
 * departure then finds nothing. Each charge is released exactly once either way; the accounts
 * are short by at most the packets in flight at the repair, until the cell next empties.
 */
#ifndef QN_ACCT_H
#define QN_ACCT_H

#include "pipeline.h"
#include "pfc.h"

/*
 * qn_acct_release - a departing packet of (in_port, prio) leaves egress port `eport`: take its
 * bytes from the account's by_egress cell (compare-and-swap) and, if the cell still held them,
 * release the egress, buffer and PFC accounts. If a repair already released them (or the cell
 * is contended three times in a row), nothing is released here: the bytes stay for the repair.
 */
static __always_inline void qn_acct_release(const struct qn_swcfg *cfg, struct qn_qstate *qs, __u32 eport,
					    __u32 in_port, __u32 prio, __u32 len, __u64 now)
{
	struct qn_pfc_acct *pa = qn_pfc_acct_of(in_port, prio);
	__u32 zero = 0;
	__s64 *cell, old, *used;

	if (!pa)
		return;
	cell = &pa->by_egress[eport & (QN_MAX_PORTS - 1)];
	/* Written out, not a loop (6.1's back-edge check; see dequeue.h). */
#define QN_TAKE_TRY()                                                                               \
	old = *(volatile __s64 *)cell;                                                             \
	if (old < (__s64)len)                                                                      \
		return;                                                                            \
	if (__sync_val_compare_and_swap(cell, old, old - (__s64)len) == old)                       \
		goto taken;
	QN_TAKE_TRY()
	QN_TAKE_TRY()
	QN_TAKE_TRY()
#undef QN_TAKE_TRY
	return;
taken:
	__sync_fetch_and_add(&qs->acct_bytes, -(__s64)len);
	__sync_fetch_and_add(&qs->acct_pkts, -1);
	used = bpf_map_lookup_elem(&qn_buffer, &zero);
	if (used)
		__sync_fetch_and_add(used, -(__s64)len);
	qn_pfc_release(&cfg->pfc, pa, in_port, prio, len, now, cfg->buffer.bytes, used ? *used : 0);
}

struct qn_repair_ctx {
	const struct qn_swcfg *cfg;
	__s64 used;             /* the shared buffer in use before the repair */
	__u64 now;
	__s64 taken;
	__u32 eport;
};

/* One (ingress port, priority) account: release whatever it holds toward the port. bpf_loop
 * callback over port_no * QN_NUM_PRIOS + prio. */
static long qn_repair_cell(__u32 i, void *arg)
{
	struct qn_repair_ctx *x = arg;
	struct qn_pfc_acct *pa;
	__s64 *cell, b;

	if (i >= QN_MAX_PORTS * QN_NUM_PRIOS)
		return 1;
	pa = bpf_map_lookup_elem(&qn_pfc_acct, &i);
	if (!pa)
		return 0;
	cell = &pa->by_egress[x->eport & (QN_MAX_PORTS - 1)];
	if (*cell <= 0)
		return 0;
	b = __sync_lock_test_and_set(cell, 0); /* never negative: only a compare-and-swap takes */
	if (b <= 0)
		return 0;
	qn_pfc_release(&x->cfg->pfc, pa, i / QN_NUM_PRIOS, i % QN_NUM_PRIOS, (__u32)b, x->now, x->cfg->buffer.bytes,
		       x->used - x->taken - b);
	x->taken += b;
	return 0;
}

/*
 * qn_acct_repair - egress port `eport`'s queue was found empty: release every byte still
 * charged toward it (departures the dequeue hook did not see) and count them.
 */
static __always_inline void qn_acct_repair(const struct qn_swcfg *cfg, struct qn_qstate *qs, __u32 eport, __u64 now)
{
	struct qn_repair_ctx x = {};
	struct qn_port_stats *st;
	__u32 zero = 0;
	__s64 *used;

	if (!cfg)
		return;
	x.cfg = cfg;
	used = bpf_map_lookup_elem(&qn_buffer, &zero);
	x.used = used ? *used : 0;
	x.now = now;
	x.eport = eport;
	bpf_loop(QN_MAX_PORTS * QN_NUM_PRIOS, qn_repair_cell, &x, 0);
	if (!x.taken)
		return;
	__sync_fetch_and_add(&qs->acct_bytes, -x.taken);
	qs->acct_pkts = 0; /* the queue is empty; at most an in-flight packet is not counted */
	used = bpf_map_lookup_elem(&qn_buffer, &zero);
	if (used)
		__sync_fetch_and_add(used, -x.taken);
	st = bpf_map_lookup_elem(&qn_port_stats, &eport);
	if (st)
		__sync_fetch_and_add(&st->acct_repaired, x.taken);
}

/* qn_acct_sweep_port - the control thread's check of one port: repair if its real root qdisc is
 * empty while bytes are still charged toward it. bpf_loop callback over port numbers. */
struct qn_sweep_ctx {
	const struct qn_swcfg *cfg;
};

static long qn_acct_sweep_port(__u32 eport, void *arg)
{
	const struct qn_swcfg *cfg = ((struct qn_sweep_ctx *)arg)->cfg;
	struct qn_qstate *qs = bpf_map_lookup_elem(&qn_qstate, &eport);
	struct net_device *dev;
	struct Qdisc *q;

	if (!qs || !qs->dev || qs->acct_bytes <= 0)
		return 0;
	dev = (struct net_device *)qs->dev;
	q = BPF_CORE_READ(dev, qdisc);
	if (!q || BPF_CORE_READ(q, q.qlen) || BPF_CORE_READ(q, qstats.backlog))
		return 0;
	qn_acct_repair(cfg, qs, eport, bpf_ktime_get_ns());
	return 0;
}

/* qn_acct_sweep - every port (the qn_tc_sweep program, run by the control thread). Return: 0. */
static __always_inline int qn_acct_sweep(void)
{
	struct qn_sweep_ctx x = {.cfg = qn_swcfg_get()};

	if (x.cfg)
		bpf_loop(QN_MAX_PORTS, qn_acct_sweep_port, &x, 0);
	return 0;
}

#endif /* QN_ACCT_H */
