// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * qn_switch.bpf.c - quench's switch: one object per emulated switch, holding the tc clsact
 * ingress pipeline and the clsact egress classifier so both share the switch's maps without
 * pinning by name. Logic lives in bpf/include/switch.h.
 */
#include "switch.h"

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

char LICENSE[] SEC("license") = "Dual BSD/GPL";
