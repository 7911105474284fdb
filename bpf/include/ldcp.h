/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * ldcp.h - LDCP's switch rule (../shared/specs/ldcp.md §3.1 S3, docs/ldcp.md): in the data class,
 * a Not-ECT packet (a fast-start packet) that finds its egress queue at or above K is dropped,
 * with its own drop reason (ldcp_not_ect, counted on the ingress port) and counter (ldcp_drop,
 * on the egress port), so "only fast-start packets were lost" can be checked. ECT packets are
 * left to the RED stage (the instantaneous-queue profile, S2) and to admission (tail drop, S4).
 * The control class is never touched. The depth is the queue ahead of the packet (the queue
 * stage's read of the real qdisc backlog).
 */
#ifndef QN_LDCP_H
#define QN_LDCP_H

#include "pipeline.h"
#include "ecn.h"

/* Return: 0, or QN_DROP_LDCP_NOT_ECT. */
static __always_inline __u32 qn_stage_ldcp(struct qn_ctx *c)
{
	const struct qn_swcfg *cfg = c->cfg;
	__u64 k;

	if (!cfg || !c->qs || !cfg->ldcp.on || qn_is_ctrl(&c->p) || (c->p.tos & QN_ECN_MASK))
		return 0;
	k = cfg->ldcp.k_bytes ? cfg->ldcp.k_bytes : cfg->red.kmin_bytes;
	if (c->depth_b < k)
		return 0;
	if (c->est)
		c->est->ldcp_drop++;
	return QN_DROP_LDCP_NOT_ECT;
}

#endif /* QN_LDCP_H */
