/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * switch.h - the switch's ingress pipeline (tc clsact ingress) as stages over one context
 * (pipeline.h), and the egress classifier (tc clsact egress). docs/switch.md "Stages".
 *
 *   port         fwd.h      ingress port, counters                    (unknown port: orphan drop)
 *   [pull+parse] here       headers linear, parsed                    (parser verdicts)
 *   port_filter  fwd.h      what a port may send; a switch's PFC frames obeyed (pfc.h)
 *   fidelity     fidmon.h   arrival monitor of host ports
 *   dqmark       dqmark.h   a mark the upstream switch decided at dequeue
 *   forward      fwd.h      FIB, ECMP: next hop, egress port
 *   lossless     queue.h, pfc.h  with PFC on: the data class admitted by its ingress account
 *   queue        queue.h    egress depth ahead of the packet
 *   test_loss    testknob.h injected loss (test knob)
 *   admit        queue.h    dynamic-threshold admission (not the lossless data class)
 *   red          red.h      RED/ECN decision at enqueue
 *   (schemes)    one header per scheme stage, registered in QN_SCHEME_STAGES below:
 *                ldcp.h (LDCP: Not-ECT data dropped at K)
 *                sfc.h (SFC: BTS trigger, pause caches, SFC-P, incast estimator)
 *                pcn.h (PCN: packets enqueued while the port is paused counted into PN)
 *   rewrite      fwd.h      TTL, CE, MACs
 *   charge, pfc  queue.h, pfc.h  accounting released at dequeue; XOFF on every port
 *   test_mirror  testknob.h signal trigger (test knob)
 *   [emit+redirect] here    copies for the builder (signals.h), bpf_redirect
 *
 * Stages return 0 or a drop reason; the packet-changing helpers (pull, clone_redirect) stay in
 * this top-level function (pipeline.h).
 */
#ifndef QN_SWITCH_H
#define QN_SWITCH_H

#include "pipeline.h"
#include "fwd.h"
#include "queue.h"
#include "red.h"
#include "pfc.h"
#include "dqmark.h"
#include "fidmon.h"
#include "signals.h"
#include "testknob.h"
#include "qalarm.h"
#include "ldcp.h"
#include "sfc.h"
#include "pbfs.h"

/* Scheme stages, run after RED and before the rewrite, each `r = qn_stage_X(c); if (r) return r;`
 * in a header of its own: a scheme adds its include above and one line here. */
#define QN_SCHEME_STAGES(c, r) do {                                                          \
		QN_STAGE(r, qn_stage_ldcp(c));    /* ldcp.h */                                 \
		QN_STAGE(r, qn_stage_sfc(c));     /* sfc.h */                                  \
		QN_STAGE(r, qn_stage_pbfs(c));    /* pbfs.h */                                 \
		QN_STAGE(r, qn_stage_pcn(c));     /* pcn.h */                                  \
	} while (0)

#define QN_STAGE(r, call) do { (r) = (call); if (r) goto drop; } while (0)

/*
 * qn_ingress_pipeline - run the stages on one frame entering a switch port.
 * Return: TC_ACT_REDIRECT (forwarded) or TC_ACT_SHOT (dropped and counted).
 */
static __always_inline int qn_ingress_pipeline(struct __sk_buff *skb)
{
	struct qn_ctx c; /* fields are set before they are read (the verifier checks): no memset */
	__u32 r;
	long ret;

	c.skb = skb;
	c.depth_b = c.depth_p = 0;
	c.tokens = 0;
	c.mark_ce = c.nsig = 0;
	c.cfg = 0;
	c.qs = 0;
	c.pa = 0;
	c.est = 0;
	c.ifindex = skb->ingress_ifindex;
	c.len = skb->len;
	c.qsrc = -1;
	if (qn_stage_port(&c)) {
		qn_orphan_drop(QN_DROP_UNKNOWN_PORT);
		return TC_ACT_SHOT;
	}
	if (qn_skb_data(skb) + 14 + 20 > qn_skb_data_end(skb) && c.len >= 14 + 20)
		c.st->rx_nonlinear++;
	if (qn_skb_linearize(skb) < 0) {
		r = QN_DROP_TRUNCATED;
		goto drop;
	}
	c.data = qn_skb_data(skb);
	c.data_end = qn_skb_data_end(skb);
	if (qn_parse(c.data, c.data_end, c.len, &c.p)) {
		r = c.p.drop;
		goto drop;
	}
	QN_STAGE(r, qn_stage_port_filter(&c));
	c.now = bpf_ktime_get_ns();
	if (c.in->role == QN_ROLE_HOST)
		qn_fid_arrival(c.in_port, c.len, c.now);
	/* A mark the upstream switch decided at dequeue: the packet is CE from here. Only a switch
	 * can have marked it: frames from a host port are not looked up. */
	else if (qn_dqmark_apply(c.data, c.data_end, &c.p))
		c.p.tos |= QN_ECN_CE;
	QN_STAGE(r, qn_stage_forward(&c));
	c.prio = (c.p.tos >> 5) & (QN_NUM_PRIOS - 1); /* DSCP >> 3: 26 -> 3 (data), 48 -> 6 (control) */
	/* The (ingress port, priority) account, looked up once for admission and the charge, and
	 * always here: a pointer that some paths carry and others not keeps the verifier from
	 * pruning every later stage's paths (6.1 went past its budget). */
	c.pa = qn_pfc_acct_of(c.in_port, c.prio);
	if (!c.pa) {
		r = QN_DROP_UNKNOWN_PORT; /* never: the key is masked into the array */
		goto drop;
	}
	c.cfg = qn_swcfg_get();
	QN_STAGE(r, qn_stage_lossless(&c));
	QN_STAGE(r, qn_stage_queue(&c));
	QN_STAGE(r, qn_stage_test_loss(&c));
	QN_STAGE(r, qn_stage_admit(&c));
	QN_STAGE(r, qn_stage_red(&c));
	QN_STAGE(r, qn_stage_qalarm(&c));
	QN_SCHEME_STAGES(&c, r);
	QN_STAGE(r, qn_stage_rewrite(&c));
	qn_stage_charge(&c);
	QN_STAGE(r, qn_stage_test_mirror(&c));
	qn_sig_emit(&c);

	ret = bpf_redirect(c.nh->ifindex, 0);
	if (ret != TC_ACT_REDIRECT) {
		r = QN_DROP_REDIRECT;
		goto drop;
	}
	return TC_ACT_REDIRECT;
drop:
	if (r != QN_VERDICT_CONSUMED)
		qn_count_drop(c.st, r);
	return TC_ACT_SHOT;
}

/*
 * qn_egress_classify - put control packets (ACK/NAK/CNP/LDCP-ACK/BTS/postcard) into the
 * strict-priority control class and everything else into the data class, by writing the full
 * HTB class id into skb->priority. Never drops.
 * Return: TC_ACT_OK.
 */
static __always_inline int qn_egress_classify(struct __sk_buff *skb)
{
	struct qn_port_stats *st = 0;
	struct qn_port *port;
	struct qn_pkt p;
	__u32 ifindex = skb->ifindex;
	__u32 idx;
	int ctrl = 0;

	if (qn_skb_linearize(skb) == 0 &&
	    qn_parse(qn_skb_data(skb), qn_skb_data_end(skb), skb->len, &p) == 0)
		ctrl = qn_is_ctrl(&p);
	skb->priority = ctrl ? QN_HTB_CLASS_CONTROL : QN_HTB_CLASS_DATA;

	port = bpf_map_lookup_elem(&qn_ports, &ifindex);
	if (port) {
		struct qn_qstate *qs;

		idx = port->port_no;
		st = bpf_map_lookup_elem(&qn_port_stats, &idx);
		qs = bpf_map_lookup_elem(&qn_qstate, &idx);
		/* Record this port's net_device for the ingress depth read and the dequeue hook.
		 * The __sk_buff context is the kernel's sk_buff; read its dev pointer with CO-RE. */
		if (qs) {
			__u64 dev = (__u64)BPF_CORE_READ((struct sk_buff *)skb, dev);

			if (dev && qs->dev != dev) {
				bpf_map_update_elem(&qn_dev_port, &dev, &idx, BPF_ANY);
				qs->dev = dev;
			}
		}
	}
	if (st) {
		st->tx_pkts++;
		st->tx_bytes += skb->len;
		if (ctrl)
			st->tx_ctrl_pkts++;
		else
			st->tx_data_pkts++;
	}
	return TC_ACT_OK;
}

#endif /* QN_SWITCH_H */
