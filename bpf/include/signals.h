/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * signals.h - a stage's request for a signal (echo, BTS, CC-postcard) about the packet in hand.
 * qn_sig_request() numbers the request, claims its entry in qn_sig_ring for the stage to fill
 * with the values it computed, and records the mark of the copy; after the stages, the
 * top-level program sends one copy per request to the recirculation device (qn_sig_emit), where
 * the builder (recirc.h) takes the entry the mark names. See qn_abi.h "typed recirculation
 * signals" for why values never travel in a per-CPU slot.
 */
#ifndef QN_SIGNAL_H
#define QN_SIGNAL_H

#include "pipeline.h"

/* Sequence numbers of this switch's signal requests (shared by both CPUs: atomic). */
__u64 qn_sig_seq = 0;

/*
 * qn_sig_request - ask for a `type` signal about the current packet.
 * Return: the entry to fill with the signal's values (type-specific part of `v`), or NULL when
 * this packet already has QN_SIGS_PER_PKT requests or the ring cannot be read.
 */
static __always_inline struct qn_sig_entry *qn_sig_request(struct qn_ctx *c, __u32 type)
{
	struct qn_sig_entry *e;
	__u32 seq, slot, mark, n = c->nsig;

	if (n >= QN_SIGS_PER_PKT)
		return 0;
	seq = (__u32)__sync_fetch_and_add(&qn_sig_seq, 1);
	slot = seq & (QN_SIG_RING - 1);
	e = bpf_map_lookup_elem(&qn_sig_ring, &slot);
	if (!e)
		return 0;
	mark = QN_SIG_MARK(type, c->in_port, seq);
	e->mark = mark;
	e->eport = c->eport;
	e->eifindex = c->nh ? c->nh->ifindex : 0;
	e->v.raw[0] = e->v.raw[1] = e->v.raw[2] = e->v.raw[3] = 0;
	c->sig_mark[n & (QN_SIGS_PER_PKT - 1)] = mark;
	c->nsig = n + 1;
	return e;
}

/*
 * qn_sig_emit - send one copy of the packet per request to the recirculation device, each with
 * its request's mark, while the original keeps its own. Top-level program only (clone_redirect
 * changes the packet). Counts `mirrored` on the ingress port.
 */
static __always_inline void qn_sig_emit(struct qn_ctx *c)
{
	__u32 zero = 0, *rc, saved;
	int i;

	if (!c->nsig)
		return;
	rc = bpf_map_lookup_elem(&qn_recirc, &zero);
	if (!rc || !*rc)
		return;
	saved = c->skb->mark;
#pragma unroll
	for (i = 0; i < QN_SIGS_PER_PKT; i++) {
		if (i >= c->nsig)
			break;
		c->skb->mark = c->sig_mark[i];
		if (bpf_clone_redirect(c->skb, *rc, BPF_F_INGRESS) == 0)
			c->st->mirrored++;
	}
	c->skb->mark = saved;
}

#endif /* QN_SIGNAL_H */
