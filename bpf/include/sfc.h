/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * sfc.h - SFC's congestion point at switch ingress (../shared/specs/sfc.md §3.1-§3.3,
 * docs/sfc.md): an SFC-eligible data packet whose egress queue is over Q_Th triggers a
 * back-to-sender signal (BTS) carrying the pause that drains the queue to Q_Tg at the port's
 * rate, unless the Bloom filter says this flow was already signalled in the current epoch.
 * The packet itself is forwarded unchanged (SFC never drops). The BTS is built by the
 * recirculation builder (recirc.h) from the ring entry filled here.
 *
 * Bloom filter: QN_SFC_BLOOM_HASHES arrays of QN_SFC_BLOOM_CELLS cells in one map value (one
 * lookup). A cell holds the epoch (wall time / T_BF, plus 1) in which it was last set and counts
 * as set only in that epoch (sfc.md §6): no reset pass races with the setters on the other CPU, and a
 * false positive cannot outlive its epoch. Two CPUs testing the same flow at once may both
 * send: a duplicate BTS, never a missing one.
 *
 * Settings: qn_set_sfc (on, qth_bytes, qtg_bytes, tbf_ns in fabric ns). Counters on the
 * congested (egress) port: sfc_congested, sfc_bts_queue, sfc_suppressed.
 */
#ifndef QN_SFC_H
#define QN_SFC_H

#include "pipeline.h"
#include "hash.h"
#include "signals.h"

struct qn_sfc_bloom {
	__u64 cell[QN_SFC_BLOOM_HASHES][QN_SFC_BLOOM_CELLS]; /* epoch + 1 when last set; 0 = never */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct qn_sfc_bloom);
} qn_sfc_bloom SEC(".maps");

/* SFC-eligible: RoCE data of the data class (priority 3; DSCP's low bit, PB-FS's marker, is
 * ignored). Control packets, BTS, postcards and non-RoCE traffic never trigger (sfc.md §6.8). */
static __always_inline int qn_sfc_eligible(const struct qn_ctx *c)
{
	return c->p.cls == QN_CLASS_DATA && ((c->p.tos >> 5) & (QN_NUM_PRIOS - 1)) == QN_PRIO_DATA;
}

/*
 * qn_sfc_bloom_test_and_set - has this flow been signalled in the current epoch? Sets its cells
 * either way. Return: 1 when every cell already held the current epoch (suppress).
 */
static __always_inline int qn_sfc_bloom_test_and_set(const struct qn_ctx *c, __u64 tbf_wall_ns)
{
	struct qn_sfc_bloom *b;
	__u32 zero = 0, h, i0, i1, i2;
	__u64 epoch;
	int all;

	if (!tbf_wall_ns)
		return 0; /* no filter: every congested packet signals */
	b = bpf_map_lookup_elem(&qn_sfc_bloom, &zero);
	if (!b)
		return 0;
	/* + 1: a cell never set (0) must not count as set in epoch 0 (the first T_BF after boot,
	 * or every packet when T_BF exceeds the uptime). 64 bits: no wrap. */
	epoch = c->now / tbf_wall_ns + 1;
	h = qn_flow_hash(&c->p, 0x5fc0b10du);
	i0 = qn_fmix32(h ^ 0x9e3779b9u) & (QN_SFC_BLOOM_CELLS - 1);
	i1 = qn_fmix32(h ^ 0x7f4a7c15u) & (QN_SFC_BLOOM_CELLS - 1);
	i2 = qn_fmix32(h ^ 0x94d049bbu) & (QN_SFC_BLOOM_CELLS - 1);
	all = b->cell[0][i0] == epoch && b->cell[1][i1] == epoch && b->cell[2][i2] == epoch;
	b->cell[0][i0] = epoch;
	b->cell[1][i1] = epoch;
	b->cell[2][i2] = epoch;
	return all;
}

/* Fabric µs to drain `bytes` at `rate_bps` (fabric), rounded up (sfc.md §3.2 B1). */
static __always_inline __u32 qn_sfc_pause_us(__u64 bytes, __u64 rate_bps)
{
	__u64 us;

	if (!bytes || !rate_bps)
		return 0;
	us = (bytes * 8 * 1000000 + rate_bps - 1) / rate_bps;
	return us > 0xFFFFFFFFull ? 0xFFFFFFFFu : (__u32)us;
}

/* SFC stage (sfc.md §3.1 I2-I4). Return: 0 (SFC never drops). */
static __always_inline __u32 qn_stage_sfc(struct qn_ctx *c)
{
	const struct qn_set_sfc *s;
	struct qn_sig_entry *e;
	struct qn_port *ep;
	__u32 eif;

	if (!c->cfg || !c->cfg->sfc.on || !c->qs)
		return 0;
	s = &c->cfg->sfc;
	if (c->depth_b <= s->qth_bytes || !qn_sfc_eligible(c))
		return 0;
	if (c->est)
		c->est->sfc_congested++;
	if (qn_sfc_bloom_test_and_set(c, qn_wall_ns(s->tbf_ns))) {
		if (c->est)
			c->est->sfc_suppressed++;
		return 0;
	}
	e = qn_sig_request(c, QN_SIG_BTS);
	if (!e)
		return 0;
	eif = c->nh->ifindex;
	ep = bpf_map_lookup_elem(&qn_ports, &eif);
	/* T_P = (qd - Q_Tg) / R from the depth this packet found, fabric µs; qd > Q_Th >= Q_Tg
	 * (validated), so T_P > 0 here (sfc.md §6.7). */
	e->v.bts.pause_us = ep ? qn_sfc_pause_us(c->depth_b > s->qtg_bytes ? c->depth_b - s->qtg_bytes : 0,
						 ep->rate_bps) : 0;
	e->v.bts.origin = QN_BTS_ORIGIN_CONGESTION;
	e->v.bts.cacheable = ep && ep->role == QN_ROLE_HOST;
	if (c->est)
		c->est->sfc_bts_queue++;
	return 0;
}

#endif /* QN_SFC_H */
