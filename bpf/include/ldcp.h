/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ldcp.h - LDCP's switch rule (../shared/specs/ldcp.md §3.1 S3, docs/ldcp.md): in the data class,
 * a Not-ECT packet (a fast-start packet) that finds its egress queue at or above K is dropped,
 * with its own drop reason (ldcp_not_ect, counted on the ingress port) and counter (ldcp_drop,
 * on the egress port), so "only fast-start packets were lost" can be checked. ECT packets are
 * left to the RED stage (the instantaneous-queue profile, S2) and to admission (tail drop, S4).
 * The control class is never touched. The depth is the queue ahead of the packet (the queue
 * stage's read of the real qdisc backlog).
 *
 * The decision is a global function, verified once on its own: inlined, its branches multiplied
 * the ingress program's verified instructions by 1.3 (163,944 -> 213,394 on 6.18;
 * docs/PERFORMANCE.md "Verifier cost"). The caller passes scalars only (6.1 accepts those).
 */
#ifndef QN_LDCP_H
#define QN_LDCP_H

#include "pipeline.h"
#include "ecn.h"

/* Return: 1 when the rule is on, the packet is Not-ECT data (tos_ctrl: the TOS byte, bit 8 set
 * for the control class) and `depth` >= K (k, or kmin when k is 0); 0 otherwise. The caller
 * turns 1 into the drop reason (a constant the verifier can bound). */
__noinline __u32 qn_ldcp_decide(__u32 on, __u64 k, __u64 kmin, __u64 depth, __u32 tos_ctrl)
{
	if (!on || (tos_ctrl & (QN_ECN_MASK | 0x100)))
		return 0;
	return depth >= (k ? k : kmin);
}

/* Return: 0, or QN_DROP_LDCP_NOT_ECT. */
static __always_inline __u32 qn_stage_ldcp(struct qn_ctx *c)
{
	const struct qn_swcfg *cfg = c->cfg;
	__u32 r;

	if (!cfg || !c->qs)
		return 0;
	r = qn_ldcp_decide(cfg->ldcp.on, cfg->ldcp.k_bytes, cfg->red.kmin_bytes, c->depth_b,
			   (__u32)c->p.tos | (qn_is_ctrl(&c->p) ? 0x100u : 0));
	if (!r)
		return 0;
	if (c->est)
		c->est->ldcp_drop++;
	return QN_DROP_LDCP_NOT_ECT;
}

#endif /* QN_LDCP_H */
