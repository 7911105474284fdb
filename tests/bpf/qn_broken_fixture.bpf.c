// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * qn_broken_fixture.bpf.c - TEST FIXTURE, never shipped: reads the packet without a bounds
 * check, which every verifier must reject. The verifier gate's negative test loads it and
 * expects a failure with the verifier log.
 */
#include "bpf_common.h"

SEC("tc")
int qn_broken_unchecked_read(struct __sk_buff *skb)
{
	__u8 *data = (void *)(long)skb->data;

	return data[20]; /* no check against data_end: "invalid access to packet" */
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
