// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * qn_bare.bpf.c - the baseline for `quench bench switch`: the least a tc switch can do, one
 * hash lookup (ingress ifindex -> egress ifindex) and bpf_redirect. No parsing, no rewrite,
 * no counters.
 */
#include "bpf_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} qn_bare_port SEC(".maps");

SEC("tc")
int qn_bare_ingress(struct __sk_buff *skb)
{
	__u32 in = skb->ingress_ifindex;
	__u32 *out = bpf_map_lookup_elem(&qn_bare_port, &in);

	if (!out)
		return TC_ACT_SHOT;
	return bpf_redirect(*out, 0);
}



/* Sink for benchmarks: drop everything at the receiving host's XDP hook, so both runs of
 * `quench bench switch` end the same way whatever MACs the switch wrote. */
SEC("xdp")
int qn_xdp_sink(struct xdp_md *ctx)
{
	return XDP_DROP;
}
char LICENSE[] SEC("license") = "Dual BSD/GPL";
