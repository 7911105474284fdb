/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* bpf_common.h - includes and small definitions every quench BPF program needs. */
#ifndef QN_BPF_COMMON_H
#define QN_BPF_COMMON_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>

/* tc verdicts (uapi/linux/pkt_cls.h macros; vmlinux.h carries no macros) */
#define TC_ACT_OK 0
#define TC_ACT_SHOT 2
#define TC_ACT_REDIRECT 7

#ifndef IPPROTO_UDP_NUM
#define IPPROTO_UDP_NUM 17
#endif

/*
 * skb->data / skb->data_end loaded with one fixed-offset instruction each. When the same loads
 * appear on several paths, clang 14 hoists "ctx + offsetof(...)" into a register and loads
 * through it later; the verifier rejects that ("dereference of modified ctx ptr"). The asm
 * keeps each load a direct ctx access (cilium's ctx_data() does the same).
 */
static __always_inline void *qn_skb_data(const struct __sk_buff *skb)
{
	void *ptr;

	asm volatile("%0 = *(u32 *)(%1 + %2)" : "=r"(ptr) : "r"(skb), "i"(__builtin_offsetof(struct __sk_buff, data)));
	return ptr;
}

static __always_inline void *qn_skb_data_end(const struct __sk_buff *skb)
{
	void *ptr;

	asm volatile("%0 = *(u32 *)(%1 + %2)" : "=r"(ptr) : "r"(skb), "i"(__builtin_offsetof(struct __sk_buff, data_end)));
	return ptr;
}

#endif /* QN_BPF_COMMON_H */
