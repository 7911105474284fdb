// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * qn_steer.bpf.c - XDP on every host veth: RoCEv2 (UDP 4791, including malformed ones, which
 * the engine counts), signal packets (BTS 4793, postcards 4792) and PFC/PAUSE frames go to the
 * AF_XDP socket bound on the receiving queue; everything else (ARP, ping, TCP) goes to the
 * kernel. With no socket on the queue the frame is passed and counted. A RoCE packet the
 * switch marked at dequeue gets its CE bit here (dqmark.h).
 *
 * Only UAPI structures (xdp_md, ethhdr, iphdr, udphdr), whose layout is the kernel's ABI: no
 * CO-RE relocation, so libbpf never reads the kernel's BTF to load it. With vmlinux.h's
 * preserve_access_index every header field was a relocation, and each load (one per host and per
 * cable end) parsed the kernel's BTF: 58% of `topo up`'s CPU time on a 16-host leaf-spine
 * (docs/PERFORMANCE.md "Bring-up"). qn_bpf_tests checks that it loads without it.
 */
#define BPF_NO_PRESERVE_ACCESS_INDEX
#include "bpf_common.h"
#include "dqmark.h"
#include "parse.h"

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} qn_xsks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, QN_STEER_MAX);
	__type(key, __u32);
	__type(value, __u64);
} qn_steer_stats SEC(".maps");

/* Put the arrival stamp in front of the frame (best effort: without metadata support the
 * engine uses its own receive time). */
static __always_inline void qn_stamp(struct xdp_md *ctx)
{
	struct qn_rx_meta *m;
	void *data;

	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*m)))
		return;
	m = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if ((void *)(m + 1) > data)
		return;
	m->magic = QN_RX_META_MAGIC;
	m->rx_mono_ns = bpf_ktime_get_ns();
}

static __always_inline void qn_steer_count(__u32 which)
{
	__u64 *c = bpf_map_lookup_elem(&qn_steer_stats, &which);

	if (c)
		(*c)++;
}

/* Return: 1 when the frame belongs to the engine. */
static __always_inline int qn_is_engine_frame(const struct qn_pkt *p)
{
	if (p->cls == QN_CLASS_PFC)
		return 1;
	if (p->eth_proto != QN_ETH_P_IPV4 || p->is_frag || p->proto != IPPROTO_UDP_NUM)
		return 0;
	return p->dport == QN_ROCE_UDP_PORT || p->dport == QN_BTS_UDP_PORT ||
	       p->dport == QN_POSTCARD_UDP_PORT;
}

SEC("xdp")
int qn_xdp_steer(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct qn_pkt p;
	long ret;

	qn_parse(data, data_end, (__u32)(data_end - data), &p);
	if (!qn_is_engine_frame(&p)) {
		qn_steer_count(QN_STEER_PASS);
		return XDP_PASS;
	}
	/* A mark the switch decided at dequeue (dqmark.h), before the pointers go stale. */
	qn_dqmark_apply(data, data_end, &p);
	/* Stamp only what goes to the engine: the kernel stack gets frames unchanged. The
	 * stamp is written before the redirect decision (the verifier invalidates packet
	 * pointers across adjust_meta) and is harmless if the frame ends up passed. */
	qn_stamp(ctx);
	ret = bpf_redirect_map(&qn_xsks, ctx->rx_queue_index, XDP_PASS);
	qn_steer_count(ret == XDP_REDIRECT ? QN_STEER_XSK : QN_STEER_NO_XSK);
	return ret;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * Cable ends (switch-to-switch links with propagation delay): every frame goes to the engine's
 * delay line; without a socket the frame is dropped (a cable with no engine is unplugged).
 */
SEC("xdp")
int qn_xdp_cable(struct xdp_md *ctx)
{
	long ret;

	qn_stamp(ctx);
	ret = bpf_redirect_map(&qn_xsks, ctx->rx_queue_index, XDP_DROP);

	qn_steer_count(ret == XDP_REDIRECT ? QN_STEER_XSK : QN_STEER_NO_XSK);
	return ret;
}
