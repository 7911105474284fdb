// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * qn_dqdisp.bpf.c - one departure hook per topology. The tp_btf/qdisc_dequeue tracepoint fires
 * for every qdisc of the machine, twice per departure (the packet, then the empty dequeue that
 * ends __qdisc_run's loop). Attached once per switch, every firing ran every switch's program,
 * which looked the device up and returned: 400 program runs per data packet and its ACK over 5
 * hops of a 20-switch fat-tree, half of the packet's CPU (docs/PERFORMANCE.md "Where a packet's
 * time goes"). This program is the only one attached: it drops the empty dequeues, finds the
 * switch by the network namespace of the departing device (qn_dq_nets: namespace inode -> the
 * switch's node id, filled at load) and tail-calls that switch's own departure program
 * (qn_tp_dequeue of qn_switch.bpf.c, never attached itself) with the same arguments. Both maps
 * are sized from the topology by the loader (userspace/control/switch_loader.cc). The object also
 * makes the topology's shared qn_dqmarks (dqmark.h), which no program here uses: loaded once
 * before the switches, it gives them a pin to share instead of racing to create it.
 */
#include "bpf_common.h"
#include "dqmark.h" /* qn_dqmarks: made here, once per topology, before the switches load */

#include <bpf/bpf_tracing.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1); /* set at load: the topology's switches */
	__type(key, __u32);     /* the switch namespace's inode number */
	__type(value, __u32);   /* its slot in qn_dq_progs: the switch's node id */
} qn_dq_nets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1); /* set at load: the topology's nodes */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} qn_dq_progs SEC(".maps");

SEC("tp_btf/qdisc_dequeue")
int BPF_PROG(qn_dq_disp, struct Qdisc *q, const struct netdev_queue *txq, int packets, struct sk_buff *skb)
{
	__u32 inum, *slot;

	if (!skb || !txq)
		return 0;
	inum = txq->dev->nd_net.net->ns.inum;
	slot = bpf_map_lookup_elem(&qn_dq_nets, &inum);
	if (!slot)
		return 0;
	bpf_tail_call(ctx, &qn_dq_progs, *slot);
	return 0; /* no program in the slot (a switch being reloaded, or the bare baseline) */
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
