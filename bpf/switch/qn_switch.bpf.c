// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * qn_switch.bpf.c - quench's switch: one object per emulated switch, holding the tc clsact
 * ingress pipeline, the clsact egress classifier, the qdisc_dequeue departure hook and the
 * recirculation builder, so all share the switch's maps without pinning by name. Logic lives in bpf/include/switch.h.
 */
#include "switch.h"
#include "dequeue.h"
#include "recirc.h"

#include <bpf/bpf_tracing.h>

SEC("tc")
int qn_tc_ingress(struct __sk_buff *skb)
{
	return qn_ingress_pipeline(skb);
}

SEC("tc")
int qn_tc_egress(struct __sk_buff *skb)
{
	return qn_egress_classify(skb);
}

/* Departures from every qdisc; see dequeue.h. */
SEC("tp_btf/qdisc_dequeue")
int BPF_PROG(qn_tp_dequeue, struct Qdisc *q, const struct netdev_queue *txq, int packets, struct sk_buff *skb)
{
	return qn_dequeue_hook(q, txq, packets, skb);
}

/* The recirculation builder, on the recirculation device's ingress; see recirc.h. */
SEC("tc")
int qn_tc_recirc(struct __sk_buff *skb)
{
	return qn_recirc_build(skb);
}

/* The accounting sweep, run by the control thread through BPF_PROG_TEST_RUN; see acct.h. */
SEC("tc")
int qn_tc_sweep(struct __sk_buff *skb)
{
	return qn_acct_sweep();
}

/* A departure for BPF_PROG_TEST_RUN tables (no qdisc there); never attached. See dequeue.h. */
SEC("tc")
int qn_tc_depart_test(struct __sk_buff *skb)
{
	return qn_dq_test(skb);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
