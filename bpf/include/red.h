/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * red.h - the RED/ECN stage of the ingress pipeline (profile and CE write: ecn.h). Only the data
 * class is marked; the control class (CNP, ACK, signals) never is (dcqcn.md §3.1). At enqueue
 * the decision is drawn here on the depth ahead of the packet and applied by the rewrite stage;
 * with red.at_dequeue the departure hook decides (dequeue.h, dqmark.h) and this stage only
 * counts the candidate.
 */
#ifndef QN_RED_H
#define QN_RED_H

#include "pipeline.h"
#include "ecn.h"

/* Return: 0. */
static __always_inline __u32 qn_stage_red(struct qn_ctx *c)
{
	if (!c->cfg || !c->qs || !c->cfg->red.on || !qn_is_ect_data(&c->p))
		return 0;
	if (c->est)
		c->est->ecn_ect++;
	if (!c->cfg->red.at_dequeue && qn_red_decide(&c->cfg->red, c->depth_b))
		c->mark_ce = 1;
	return 0;
}

#endif /* QN_RED_H */
