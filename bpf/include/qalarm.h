/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * qalarm.h - the queue alarm stage (docs/switch.md "Worked example"): count, on the egress port,
 * the packets that found their egress queue at or above the qalarm setting. Off (0) costs one
 * load and a compare.
 */
#ifndef QN_QALARM_H
#define QN_QALARM_H

#include "pipeline.h"

/* Return: 0. */
static __always_inline __u32 qn_stage_qalarm(struct qn_ctx *c)
{
	if (c->cfg && c->cfg->qalarm.bytes && c->depth_b >= c->cfg->qalarm.bytes && c->est)
		c->est->qalarm_pkts++;
	return 0;
}

#endif /* QN_QALARM_H */
