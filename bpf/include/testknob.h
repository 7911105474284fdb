/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * testknob.h - test knobs of the ingress pipeline, all behind one check of qn_set_test.on (the
 * control plane sets it when any knob is set), so none costs a lookup on the per-packet path
 * when off:
 *  - qdepth: egress depths from qn_test_qdepth (BPF_PROG_TEST_RUN has no real qdisc);
 *  - loss_ppm: random loss of RoCE data packets;
 *  - mirror_dport / mirror_signal: packets to that UDP port trigger the given signal type with
 *    the values a stage would compute from the context (BTS: the time to drain the egress queue
 *    at the port's rate; postcard: the depth as I_p and Q1), so the builder's formats can be
 *    exercised before the schemes that send them.
 */
#ifndef QN_TESTKNOB_H
#define QN_TESTKNOB_H

#include "pipeline.h"
#include "signals.h"

/* Return: 1 when the qdepth knob supplied the depth (written into the context). */
static __always_inline int qn_test_depth(struct qn_ctx *c)
{
	struct qn_test_qdepth *ov;

	if (!c->cfg->test.qdepth)
		return 0;
	ov = bpf_map_lookup_elem(&qn_test_qdepth, &c->eport);
	if (!ov || !ov->valid)
		return 0;
	c->depth_b = ov->bytes;
	c->depth_p = ov->pkts;
	return 1;
}

/* Loss knob. Return: 0 or QN_DROP_INJECTED. */
static __always_inline __u32 qn_stage_test_loss(struct qn_ctx *c)
{
	if (!c->cfg || !c->cfg->test.on || !c->cfg->test.loss_ppm || c->p.cls != QN_CLASS_DATA)
		return 0;
	return bpf_get_prandom_u32() % 1000000 < c->cfg->test.loss_ppm ? QN_DROP_INJECTED : 0;
}

/* Mirror knob: request the configured signal for packets to mirror_dport. Return: 0. */
static __always_inline __u32 qn_stage_test_mirror(struct qn_ctx *c)
{
	const struct qn_set_test *t;
	struct qn_sig_entry *e;
	__u32 type;

	if (!c->cfg || !c->cfg->test.on)
		return 0;
	t = &c->cfg->test;
	if (!t->mirror_dport || c->p.dport != t->mirror_dport || !c->p.l4_off)
		return 0;
	type = QN_SIG_ECHO + t->mirror_signal;
	if (type >= QN_SIG_MAX)
		return 0;
	e = qn_sig_request(c, type);
	if (!e)
		return 0;
	if (type == QN_SIG_BTS) {
		__u64 rate = 0, us = 0;
		__u32 eif = c->nh->ifindex;
		struct qn_port *ep = bpf_map_lookup_elem(&qn_ports, &eif);

		if (ep && ep->rate_bps)
			rate = ep->rate_bps;
		if (rate)
			us = c->depth_b * 8 * 1000000 / rate; /* fabric µs to drain the queue */
		e->v.bts.pause_us = us > 0xFFFFFFFFull ? 0xFFFFFFFFu : (__u32)us;
		e->v.bts.origin = QN_BTS_ORIGIN_CONGESTION;
		e->v.bts.cacheable = ep && ep->role == QN_ROLE_HOST;
	} else if (type == QN_SIG_POSTCARD) {
		__u32 eif = c->nh->ifindex;
		struct qn_port *ep = bpf_map_lookup_elem(&qn_ports, &eif);

		e->v.postcard.i_p = (__u32)c->depth_b;
		e->v.postcard.q1 = (__u32)c->depth_b;
		e->v.postcard.rate_mbps = ep ? (__u32)(ep->rate_bps / 1000000) : 0;
		e->v.postcard.recent_bytes = c->len;
		e->v.postcard.recent_marked_bytes = c->mark_ce ? c->len : 0;
		e->v.postcard.t0_ns = qn_fabric_ns(c->now);
	}
	return 0;
}

#endif /* QN_TESTKNOB_H */
