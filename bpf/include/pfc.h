/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pfc.h - PFC (802.1Qbb), both directions (docs/switch.md "PFC").
 *
 * Generation: per (ingress port, priority) accounting, charged when the ingress pipeline
 * forwards a packet and released when it leaves its egress queue (dequeue.h, acct.h). Crossing
 * the XOFF threshold posts an XOFF request, falling to the XON threshold an XON request; the
 * control thread (switchd) sends the frames. The threshold is static (pfc.xoff_bytes /
 * pfc.xon_bytes) or dynamic, a fraction of the free shared buffer (pfc.alpha_ppm: alpha x
 * (B - headroom - used), as the ns-3 RDMA simulator's switch does, XON the same gap below). On
 * every port, or host-facing ports only (pfc.edge_only).
 *
 * Lossless admission: with PFC on, the data class is not admitted by the egress dynamic
 * threshold but by its ingress account: a paused account may take up to its headroom past the
 * bytes it held at its XOFF (the frames its neighbour sends before it stops), an unpaused one
 * the shared buffer less every port's headroom; anything else is a QN_DROP_LOSSLESS, which a
 * lossless run must never have.
 *
 * Reception: a PAUSE from a neighbouring switch pauses this port's data class until its quanta
 * run out (at the port's wall rate) or an XON; the state is in the port's qn_qstate (read by the
 * dequeue hook, which counts the data that still leaves and closes the pause at the first
 * departure after its end) and, with pfc.obey, the control thread stops the class (switchd.cc:
 * the class's gate qdisc). Times in wall ns.
 */
#ifndef QN_PFC_H
#define QN_PFC_H

#include "pipeline.h"
#include "pcn.h"

/* Post a request for the control thread: XOFF (quanta > 0) or XON (quanta 0) to send on
 * port_no, or with QN_PFC_EV_RX a pause received there. ifindex 0 lets the control thread map
 * port_no to its ifindex. Return: 0 on success. */
static __always_inline int qn_pfc_post_ev(__u32 ifindex, __u32 port_no, __u32 prio, __u32 quanta, __u16 flags)
{
	struct qn_pfc_event *ev = bpf_ringbuf_reserve(&qn_pfc_events, sizeof(*ev), 0);

	if (!ev)
		return -1;
	ev->ifindex = ifindex;
	ev->port_no = port_no;
	ev->prio = prio;
	ev->flags = flags;
	ev->quanta = quanta;
	ev->t_ns = bpf_ktime_get_ns();
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

static __always_inline int qn_pfc_post(__u32 ifindex, __u32 port_no, __u32 prio, __u32 quanta)
{
	return qn_pfc_post_ev(ifindex, port_no, prio, quanta, 0);
}

static __always_inline struct qn_pfc_acct *qn_pfc_acct_of(__u32 port_no, __u32 prio)
{
	__u32 k = (port_no & (QN_MAX_PORTS - 1)) * QN_NUM_PRIOS + (prio & (QN_NUM_PRIOS - 1));

	return bpf_map_lookup_elem(&qn_pfc_acct, &k);
}

/* The buffer PFC reserves for headroom: every port's (or pfc.hdrm_bytes per port). */
static __always_inline __u64 qn_pfc_reserved(const struct qn_set_pfc *pfc)
{
	return pfc->hdrm_bytes ? pfc->hdrm_bytes * qn_cfg.nports : qn_cfg.hdrm_total_bytes;
}

/* The headroom of an account of ingress port `in`. */
static __always_inline __u64 qn_pfc_headroom(const struct qn_set_pfc *pfc, const struct qn_port *in)
{
	return pfc->hdrm_bytes ? pfc->hdrm_bytes : in->hdrm_bytes;
}

/* The XOFF threshold now: static, or alpha x (B - reserved - used) with `used` the shared
 * buffer in use. */
static __always_inline __s64 qn_pfc_xoff_thr(const struct qn_set_pfc *pfc, __u64 buffer, __s64 used)
{
	__s64 free_b;

	if (!pfc->alpha_ppm)
		return (__s64)pfc->xoff_bytes;
	free_b = (__s64)buffer - (__s64)qn_pfc_reserved(pfc) - used;
	if (free_b < 0)
		free_b = 0;
	return free_b / 1000 * pfc->alpha_ppm / 1000;
}

/* The XON threshold now: static, or the dynamic XOFF threshold less the static gap. */
static __always_inline __s64 qn_pfc_xon_thr(const struct qn_set_pfc *pfc, __u64 buffer, __s64 used)
{
	if (!pfc->alpha_ppm)
		return (__s64)pfc->xon_bytes;
	return qn_pfc_xoff_thr(pfc, buffer, used) - (__s64)(pfc->xoff_bytes - pfc->xon_bytes);
}

/*
 * qn_pfc_admit - lossless admission of a data packet of `len` bytes into account `pa` of ingress
 * port `in` (PFC on). `used`: the shared buffer in use. Return: 1 to admit.
 */
static __always_inline int qn_pfc_admit(const struct qn_swcfg *cfg, const struct qn_port *in,
					struct qn_pfc_acct *pa, __s64 used, __u32 len)
{
	const struct qn_set_pfc *pfc = &cfg->pfc;

	if (used + (__s64)len > (__s64)cfg->buffer.bytes)
		return 0;
	if (pa->paused)
		return pa->bytes - pa->xoff_at + (__s64)len <= (__s64)qn_pfc_headroom(pfc, in);
	return used + (__s64)len <= (__s64)cfg->buffer.bytes - (__s64)qn_pfc_reserved(pfc);
}

/*
 * qn_pfc_charge - charge `len` bytes toward egress port `eport` to account `pa` (in_port, prio);
 * with PFC on (on this port's role), the first crossing of the XOFF threshold pauses the peer.
 * `st`: the ingress port's counters; `buffer`/`used`: the shared buffer and its use.
 */
static __always_inline void qn_pfc_charge(const struct qn_set_pfc *pfc, struct qn_pfc_acct *pa, const struct qn_port *in,
					  struct qn_port_stats *st, __u32 ifindex, __u32 in_port, __u32 prio,
					  __u32 eport, __u32 len, __u64 now, __u64 buffer, __s64 used)
{
	__s64 b;

	__sync_fetch_and_add(&pa->by_egress[eport & (QN_MAX_PORTS - 1)], len);
	b = __sync_fetch_and_add(&pa->bytes, len) + len;
	if (pa->paused) {
		__u64 rx = pa->pause_rx + len;

		pa->pause_rx = rx; /* racy sums and maxima: one packet lost under contention */
		if (rx > pa->pause_rx_max)
			pa->pause_rx_max = rx;
		if (b - pa->xoff_at > (__s64)pa->hdrm_peak)
			pa->hdrm_peak = b - pa->xoff_at;
		return;
	}
	if (!pfc->on || (pfc->edge_only && in->role != QN_ROLE_HOST))
		return;
	if (b >= qn_pfc_xoff_thr(pfc, buffer, used) && __sync_val_compare_and_swap(&pa->paused, 0, 1) == 0) {
		pa->since_ns = now;
		pa->xoff_at = b;
		pa->pause_rx = 0;
		st->pfc_xoff_sent++;
		qn_pfc_post(ifindex, in_port, prio, pfc->quanta);
	}
}

/* qn_pfc_release - release `len` bytes of account `pa` (in_port, prio); a paused peer whose
 * account fell to the XON threshold is resumed and its pause time counted. `buffer`/`used`: the
 * shared buffer and its use (after this release). */
static __always_inline void qn_pfc_release(const struct qn_set_pfc *pfc, struct qn_pfc_acct *pa, __u32 in_port,
					   __u32 prio, __u32 len, __u64 now, __u64 buffer, __s64 used)
{
	if (__sync_fetch_and_add(&pa->bytes, -(__s64)len) - (__s64)len <= qn_pfc_xon_thr(pfc, buffer, used) &&
	    pa->paused && __sync_val_compare_and_swap(&pa->paused, 1, 0) == 1) {
		__u32 in = in_port & (QN_MAX_PORTS - 1);
		struct qn_port_stats *st = bpf_map_lookup_elem(&qn_port_stats, &in);

		if (st) {
			st->pfc_xon_sent++;
			st->paused_wall_ns += now - pa->since_ns;
		}
		qn_pfc_post(0, in, prio, 0);
	}
}

/* Close port state `qs`'s open pause that ended at pause_until_ns (caller checked); `st` the
 * port's counters (may be NULL: looked up here when needed). */
static __always_inline void qn_pfc_rx_close(struct qn_qstate *qs, struct qn_port_stats *st, __u32 port_no)
{
	__u64 start = qs->pause_start_ns, until = qs->pause_until_ns;

	if (!start)
		return;
	qs->pause_start_ns = 0;
	if (until > start)
		qs->paused_rx_ns += until - start;
	if (qs->ep_slip_bytes > qs->slip_max_bytes)
		qs->slip_max_bytes = qs->ep_slip_bytes;
	if (qs->hdrm_bytes && qs->ep_slip_bytes > qs->hdrm_bytes) {
		if (!st)
			st = bpf_map_lookup_elem(&qn_port_stats, &port_no);
		if (st)
			st->pfc_slip_over++;
	}
	if (qs->ep_last_slip_ns > start && qs->ep_last_slip_ns - start > qs->quiet_max_ns)
		qs->quiet_max_ns = qs->ep_last_slip_ns - start;
}

struct qn_pfc_prios {
	__be16 q[QN_NUM_PRIOS];
	__u32 enable, max, any;
};

/* bpf_loop callback over a PFC frame's priorities: the largest quanta among the enabled ones
 * other than the control class's. */
static long qn_pfc_prio(__u32 i, void *arg)
{
	struct qn_pfc_prios *x = arg;
	__u32 q;

	if (i >= QN_NUM_PRIOS)
		return 1;
	if (!(x->enable & (1u << i)) || i == QN_PRIO_CONTROL)
		return 0;
	x->any = 1;
	/* the mask in asm: clang drops a C mask after the bound check and indexes with the
	 * unchecked copy, which the verifier refuses */
	asm volatile("%[i] &= 7" : [i] "+r"(i));
	q = bpf_ntohs(x->q[i]);
	if (q > x->max)
		x->max = q;
	return 0;
}

/*
 * qn_pfc_receive - a PFC (or 802.3x PAUSE) frame from the neighbouring switch on port `in`
 * (`qs` its queue state, `st` its counters): pause or resume the port's data class. The quanta
 * taken are the largest of the enabled priorities other than the control class's (a frame
 * naming none changes nothing: switchd's resume kick, switchd.cc). Return: the quanta taken
 * (0 = XON), -1 for a frame that changes nothing.
 */
static __always_inline long qn_pfc_receive(const struct qn_swcfg *cfg, const struct qn_port *in, __u32 in_port,
					  struct qn_qstate *qs, struct qn_port_stats *st, void *data, void *data_end,
					  __u64 now)
{
	struct qn_pfc_body *b = data + 14;
	__u32 quanta = 0, enable, op;
	int any = 0;
	__u64 rate, dur;

	if ((void *)(b + 1) > data_end)
		return -1;
	op = bpf_ntohs(b->opcode);
	enable = bpf_ntohs(b->enable);
	if (op == QN_PAUSE_OPCODE) {
		quanta = enable; /* 802.3x: the pause time, every priority */
		any = 1;
	} else if (op == QN_PFC_OPCODE) {
		struct qn_pfc_prios x = {.enable = enable};

		__builtin_memcpy(x.q, b->quanta, sizeof(x.q));
		/* a callback verified once: eight forks of the running maximum inline multiplied the
		 * ingress program's verification paths (6.1: over the budget, docs/switch.md) */
		bpf_loop(QN_NUM_PRIOS, qn_pfc_prio, &x, 0);
		quanta = x.max;
		any = x.any;
	}
	if (!any)
		return -1;
	if (quanta) {
		st->pfc_rx_xoff++;
		rate = qn_wall_rate_bps(in, qn_cfg.dilation_milli);
		dur = rate ? (__u64)quanta * 512 * 1000000000ull / rate : 0;
		if (qs->pause_start_ns && now >= qs->pause_until_ns)
			qn_pfc_rx_close(qs, st, in_port); /* expired with nothing left to send: closed here */
		if (!qs->pause_start_ns) {
			qs->pause_start_ns = now;
			qs->ep_slip_bytes = 0;
			qs->ep_last_slip_ns = 0;
			qs->pauses++;
		}
		qs->pause_until_ns = now + dur;
		qn_pcn_xoff(cfg, qs, st); /* PCN's PN: what is queued now waited behind this pause */
	} else {
		st->pfc_rx_xon++;
		if (qs->pause_start_ns && now < qs->pause_until_ns)
			qs->pause_until_ns = now;
	}
	return quanta;
}

/* Dequeue side: one departing data packet of `len` bytes on port `eport` with state `qs`. */
static __always_inline void qn_pfc_departure(struct qn_qstate *qs, __u32 eport, __u32 len, __u64 now)
{
	struct qn_port_stats *st;
	__u64 lat;

	if (!qs->pause_start_ns)
		return;
	if (now < qs->pause_until_ns) {
		qs->ep_slip_bytes += len;
		qs->ep_last_slip_ns = now;
		st = bpf_map_lookup_elem(&qn_port_stats, &eport);
		if (st)
			st->pfc_slip_bytes += len;
		return;
	}
	/* The first data departure after the pause's end: its resume latency. */
	lat = now - qs->pause_until_ns;
	if (lat > qs->resume_max_ns)
		qs->resume_max_ns = lat;
	qs->resume_sum_ns += lat;
	qs->resume_cnt++;
	qn_pfc_rx_close(qs, 0, eport);
}

#endif /* QN_PFC_H */
