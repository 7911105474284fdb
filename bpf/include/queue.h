/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * queue.h - egress queue depth, shared-buffer accounting and dynamic-threshold admission.
 *
 * Depth is read from the egress port's real root qdisc (CO-RE read of dev->qdisc->qstats.backlog
 * and q.qlen) through the net_device pointer that port's egress hook recorded; the virtual queue
 * (bytes in - wall rate x elapsed) is the fallback. Accounting: bytes are charged per egress
 * port, per (ingress port, priority) and for the whole buffer when the ingress pipeline
 * forwards a packet, and released by the qdisc_dequeue tracepoint (acct.h: exact when departures go
 * unseen). Units: bytes; times are
 * wall-clock ns (bpf_ktime_get_ns).
 */
#ifndef QN_QUEUE_H
#define QN_QUEUE_H

#include "pipeline.h"
#include "pfc.h"
#include "testknob.h"

/* Wall-clock rate of a port: its fabric rate / D. */
/*
 * The virtual queue models the port's HTB class as a fluid token bucket: tokens accrue at the
 * wall rate up to the burst, a packet finding no queue and positive tokens leaves at once and
 * may overdraw them (HTB sends while tokens are non-negative and charges afterwards), queued
 * bytes leave as tokens allow. qn_vq_drain advances it to `now` (without the new packet).
 * Wire overhead (24 B per frame) is not modelled: under 1.2% for 2 KB frames.
 */
static __always_inline void qn_vq_drain(struct qn_qstate *qs, __u64 rate_bps, __u64 burst, __u64 now,
					__u64 *vq, __s64 *tokens)
{
	__u64 last = qs->vq_last_ns, sent;
	__s64 avail;

	*vq = qs->vq_bytes;
	*tokens = qs->vq_tokens;
	if (now <= last)
		return;
	/* bytes = ns * bit/s / 8e9, split to keep the product within 64 bits */
	avail = *tokens + (__s64)((now - last) / 1000 * (rate_bps / 8000) / 1000);
	if (!last)
		avail = burst; /* first packet: a full bucket, as a new HTB class */
	if (avail <= 0) {
		*tokens = avail;
		return;
	}
	sent = (__u64)avail < *vq ? (__u64)avail : *vq;
	*vq -= sent;
	avail -= sent;
	*tokens = avail > (__s64)burst ? (__s64)burst : avail;
}

/*
 * qn_queue_depth - the egress queue as this packet would find it.
 * Return: 0 for a real qdisc read, 1 for the virtual queue.
 */
static __always_inline int qn_queue_depth(struct qn_qstate *qs, const struct qn_swcfg *cfg, __u64 rate_bps,
					  __u64 burst, __u64 now, __u64 *bytes, __u64 *pkts, __s64 *tokens)
{
	if (cfg->buffer.queue_mode != QN_QMODE_VIRTUAL && qs->dev) {
		struct net_device *dev = (struct net_device *)qs->dev;
		struct Qdisc *q = BPF_CORE_READ(dev, qdisc);

		if (q) {
			*bytes = BPF_CORE_READ(q, qstats.backlog);
			*pkts = BPF_CORE_READ(q, q.qlen);
			return 0;
		}
	}
	qn_vq_drain(qs, rate_bps, burst, now, bytes, tokens);
	*pkts = 0;
	return 1;
}

static __always_inline void qn_peak(struct qn_qstate *qs, __u64 bytes)
{
	if (bytes > qs->peak_bytes)
		qs->peak_bytes = bytes; /* racy max: a lost update under contention is one sample */
}

/*
 * qn_admit - dynamic threshold (Choudhury-Hahne): queue i may grow while
 * Q_i + len <= alpha * (B - sum_j Q_j). Return: 1 to admit.
 */
static __always_inline int qn_admit(const struct qn_swcfg *cfg, __u64 depth, __u32 len, int ctrl)
{
	__u32 zero = 0;
	__s64 *used = bpf_map_lookup_elem(&qn_buffer, &zero);
	__u64 free_bytes, limit, alpha;

	if (!cfg->buffer.admission || !used)
		return 1;
	free_bytes = *used > 0 && (__u64)*used < cfg->buffer.bytes ? cfg->buffer.bytes - *used :
		     (*used > 0 ? 0 : cfg->buffer.bytes);
	alpha = ctrl ? cfg->buffer.alpha_ctrl_ppm : cfg->buffer.alpha_data_ppm;
	limit = free_bytes / 1000 * alpha / 1000;
	return depth + len <= limit;
}

/* Charge an admitted packet to its egress port, the buffer and (when in use) the virtual
 * queue, whose state at `now` is vq/tokens. */
static __always_inline __s64 qn_charge(struct qn_qstate *qs, __u32 len, int vq_used, __u64 vq, __s64 tokens,
				       __u64 now)
{
	__u32 zero = 0;
	__s64 *used = bpf_map_lookup_elem(&qn_buffer, &zero), u = 0;

	__sync_fetch_and_add(&qs->acct_bytes, len);
	__sync_fetch_and_add(&qs->acct_pkts, 1);
	/* the real queue with this packet in it, for the probes (qn_stage_queue wrote it ahead) */
	qs->last_bytes += len;
	qs->last_pkts++;
	qn_peak(qs, qs->last_bytes); /* a sample never exceeds the peak */
	if (used)
		u = __sync_fetch_and_add(used, len) + len;
	if (!vq_used)
		return u;
	if (!vq && tokens > 0)
		tokens -= len; /* leaves at once, possibly overdrawing the bucket */
	else
		vq += len;
	qs->vq_bytes = vq;
	qs->vq_tokens = tokens;
	qs->vq_last_ns = now;
	return u;
}

/* Queue stage: the egress queue's depth ahead of this packet (real qdisc, virtual queue, or the
 * qdepth test knob), its peak. Return: 0. */
static __always_inline __u32 qn_stage_queue(struct qn_ctx *c)
{
	const struct qn_swcfg *cfg = c->cfg;
	struct qn_qstate *qs = c->qs;
	__u64 rate = 0, burst = 0;

	if (!cfg || !qs)
		return 0;
	if (cfg->test.on && qn_test_depth(c)) {
		c->qsrc = 2;
	} else {
		if (cfg->buffer.queue_mode == QN_QMODE_VIRTUAL || !qs->dev) {
			__u32 eif = c->nh->ifindex;
			struct qn_port *ep = bpf_map_lookup_elem(&qn_ports, &eif);

			if (ep) {
				rate = qn_wall_rate_bps(ep, qn_cfg.dilation_milli);
				burst = ep->burst_bytes;
			}
		}
		c->qsrc = qn_queue_depth(qs, cfg, rate, burst, c->now, &c->depth_b, &c->depth_p, &c->tokens);
	}
	qs->last_bytes = c->depth_b;
	qs->last_pkts = c->depth_p;
	qn_peak(qs, c->depth_b);
	return 0;
}

/* Lossless admission stage (pfc.h): with PFC on, the data class is admitted by its ingress
 * account, not by the egress threshold. Early in the pipeline (it needs no queue depth): fewer
 * verifier states reach it there, and inlined further down it doubled the ingress program's
 * verification (6.1 went past its budget). Return: 0 or QN_DROP_LOSSLESS. */
static __always_inline __u32 qn_stage_lossless(struct qn_ctx *c)
{
	__u32 zero = 0;
	__s64 *used;

	if (!c->cfg || !c->cfg->pfc.on || qn_is_ctrl(&c->p))
		return 0;
	used = bpf_map_lookup_elem(&qn_buffer, &zero);
	if (c->pa && used && !qn_pfc_admit(c->cfg, c->in, c->pa, *used, c->len))
		return QN_DROP_LOSSLESS;
	return 0;
}

/* Admission stage: the dynamic threshold (not for the data class with PFC on: the lossless
 * stage admitted it). Return: 0 or QN_DROP_BUFFER. */
static __always_inline __u32 qn_stage_admit(struct qn_ctx *c)
{
	int ctrl = qn_is_ctrl(&c->p), ok;

	if (!c->cfg || !c->qs)
		return 0;
	/* Decided either way, then overridden: skipping the threshold's code on one branch
	 * doubled the ingress program's verification (the states after it no longer prune). */
	ok = qn_admit(c->cfg, c->depth_b, c->len, ctrl);
	if (c->cfg->pfc.on && !ctrl)
		ok = 1;
	return ok ? 0 : QN_DROP_BUFFER;
}

/* Account an admitted packet (released by the dequeue hook, dequeue.h) and tag it for the hook:
 * QN_MARK_MAGIC | ingress port_no << 16 | prio << 8. */
static __always_inline void qn_stage_charge(struct qn_ctx *c)
{
	__s64 used;

	if (!c->cfg || !c->qs)
		return;
	used = qn_charge(c->qs, c->len, c->qsrc == 1, c->depth_b, c->tokens, c->now);
	c->skb->mark = QN_MARK_MAGIC | (c->in_port << QN_MARK_PORT_SHIFT) | (c->prio << QN_MARK_PRIO_SHIFT);
	if (c->pa)
		qn_pfc_charge(&c->cfg->pfc, c->pa, c->in, c->st, c->ifindex, c->in_port, c->prio, c->eport, c->len, c->now,
			      c->cfg->buffer.bytes, used);
}

#endif /* QN_QUEUE_H */
