/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * pcn.h - PCN's NP-ECN ("non-paused ECN", ../shared/specs/pcn.md §3.1, docs/pcn.md): a packet
 * that waited behind a PAUSE from the neighbouring switch is never marked, so a port that is only
 * quasi-congested (its queue grew because the link ahead was paused) does not signal congestion.
 * Per egress port a count PN (qn_qstate.pn), data class only:
 *   CP1  a PAUSE (quanta > 0) arrives on the port: PN = max(PN, packets queued) (a refresh does
 *        not count the queue twice, §6.2);                                  qn_pcn_xoff (pfc.h)
 *   CP3  a data packet is enqueued while the port is paused: PN += 1 (pcn_pn = xoff+enq, the
 *        default; xoff loads PN at the PAUSE only);                          qn_stage_pcn
 *   CP4  a data packet departs: PN > 0 -> PN -= 1 and the packet is not marked; otherwise the
 *        RED profile decides on the queue behind it (step at K: kmin = kmax = K);
 *                                                        qn_dq_stage_pcn, RED in dequeue.h
 * With ecn_at = enqueue (a named variant) the decision is the enqueue RED stage's, and a packet
 * enqueued while the port is paused is spared; it cannot unmark what was marked before the pause.
 * Counters (egress port): pcn_paused (packets counted into PN), pcn_spared (packets over the
 * threshold left unmarked); marks stay ecn_marked.
 *
 * The queue at the PAUSE is the port's charged packets (qn_qstate.acct_pkts: charged at
 * enqueue, released at departure), both classes: the control class is strict priority and
 * almost never queued, and counting one too many spares one packet more.
 */
#ifndef QN_PCN_H
#define QN_PCN_H

#include "pipeline.h"
#include "ecn.h"

/* Return: 1 when port state `qs` is held by a PAUSE from its neighbour at wall time `now`. */
static __always_inline int qn_pcn_paused(const struct qn_qstate *qs, __u64 now)
{
	return qs->pause_start_ns && now < qs->pause_until_ns;
}

/* CP1: a PAUSE (quanta > 0) from the neighbour arrived for port state `qs`. */
static __always_inline void qn_pcn_xoff(const struct qn_swcfg *cfg, struct qn_qstate *qs, struct qn_port_stats *st)
{
	__s64 q, pn;

	if (!cfg || !cfg->pcn.on)
		return;
	q = qs->acct_pkts;
	pn = qs->pn;
	if (q > pn) {
		qs->pn = q; /* racing departures may be lost: PN is a bound, not a ledger */
		if (st)
			st->pcn_paused += q - pn;
	}
}

/* CP3 and the enqueue variant, a scheme stage (switch.h). Return: 0. */
static __always_inline __u32 qn_stage_pcn(struct qn_ctx *c)
{
	const struct qn_swcfg *cfg = c->cfg;

	if (!cfg || !c->qs || !cfg->pcn.on || qn_is_ctrl(&c->p) || !qn_pcn_paused(c->qs, c->now))
		return 0;
	if (cfg->pcn.pn_mode == QN_PCN_PN_XOFF_ENQ) {
		__sync_fetch_and_add(&c->qs->pn, 1);
		if (c->est)
			c->est->pcn_paused++;
	}
	if (!cfg->red.at_dequeue && c->mark_ce) {
		c->mark_ce = 0;
		if (c->est)
			c->est->pcn_spared++;
	}
	return 0;
}

/* CP4's count, a departure stage (dequeue.h): a packet leaves port state `qs` (`is_data`: a
 * data packet the pipeline charged). Return: 1 when it was a paused packet (PN was > 0 and is
 * one less), which must not be marked. */
static __always_inline int qn_dq_stage_pcn(const struct qn_swcfg *cfg, struct qn_qstate *qs, int is_data)
{
	if (!is_data || !cfg->pcn.on || qs->pn <= 0)
		return 0;
	if (__sync_fetch_and_add(&qs->pn, -1) > 0)
		return 1;
	__sync_fetch_and_add(&qs->pn, 1); /* another CPU took the last one */
	return 0;
}

#endif /* QN_PCN_H */
