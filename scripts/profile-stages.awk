# profile-stages.awk - attribute `perf script` samples to the stages of a packet's path
# (docs/PERFORMANCE.md "Where a packet's time goes"; driven by scripts/profile.sh).
#
# Input: `perf script -F comm,pid,tid,period,ip,sym` of `perf record -a -g -e cpu-clock`: one
# header line per sample (comm, pid/tid, period in ns) followed by its call chain, leaf first,
# and a blank line. Variables (-v): engine=PID (the engine's process), switchd=PID (switchd's).
# Output, tab-separated, one line per stage: stage, samples, summed period (ns).
#
# A sample belongs to the stage of the leaf-most frame that names one (the rules below, first
# match per frame): a copy under the AF_XDP receive is the receive's, a veth transmit under the
# kick is the veth's. Samples with no named frame go to "kernel, other" or "engine, other" by
# where their leaf is; samples of other processes go by process (switchd, ksoftirqd, idle).
function stage_of(sym)
{
	# switch, departures: the tp_btf/qdisc_dequeue hook and the tracepoint's own calls
	if (sym ~ /^bpf_prog_[0-9a-f]+_qn_(tp_dequeue|dq_disp)/ || sym ~ /^(bpf_trace_run[0-9]+|__bpf_trace_qdisc_dequeue|__traceiter_qdisc_dequeue)$/)
		return "switch dequeue hook (tp_btf)"
	if (sym ~ /^bpf_prog_[0-9a-f]+_qn_tc_ingress/)
		return "switch tc ingress program"
	if (sym ~ /^bpf_prog_[0-9a-f]+_qn_tc_egress/)
		return "switch tc egress classifier"
	if (sym ~ /^bpf_prog_[0-9a-f]+_qn_xdp_steer/ || sym ~ /^bpf_prog_[0-9a-f]+_qn_xdp/)
		return "XDP steering program"
	if (sym ~ /^bpf_prog_/)
		return "other BPF programs"
	if (sym ~ /^(tcf_classify|__tcf_classify.*|tc_run|cls_bpf_classify|sch_handle_ingress.*|sch_handle_egress.*|tcf_action_exec|skb_do_redirect|bpf_redirect.*|tcx_run)$/)
		return "tc hooks and redirect"
	if (sym ~ /^(htb_.*|__qdisc_run|qdisc_run.*|sch_direct_xmit|dequeue_skb|__dev_xmit_skb|dev_qdisc_enqueue|qdisc_pkt_len.*|pfifo_.*|qdisc_dequeue.*|qdisc_restart|__netif_schedule|net_tx_action|psched_.*|qdisc_watchdog.*)$/)
		return "HTB enqueue and dequeue"
	if (sym ~ /^(xsk_rcv|__xsk_rcv.*|xsk_rcv_check|xsk_copy_xdp.*|xp_alloc.*|xp_.*|xsk_flush|__xsk_map_flush|xsk_map_redirect|__xsk_map_redirect|xdp_do_redirect.*|xdp_do_flush.*|bpf_xdp_redirect_map|__bpf_xdp_redirect_map|xsk_generic_rcv|xsk_buff_.*)$/)
		return "AF_XDP receive (redirect, copy)"
	if (sym ~ /^(veth_poll|veth_xdp_rcv.*|veth_convert_skb_to_xdp_buff|skb_pp_cow_data|veth_xdp_get|page_pool_.*|bpf_prog_run_generic_xdp|do_xdp_generic|netif_receive_generic_xdp|generic_xdp_tx)$/)
		return "veth receive (NAPI, XDP)"
	if (sym ~ /^(xsk_sendmsg|__xsk_sendmsg.*|__xsk_generic_xmit|xsk_generic_xmit|xsk_build_skb.*|xsk_destruct_skb|xsk_tx_.*|__dev_direct_xmit|dev_direct_xmit|__sys_sendto|__x64_sys_sendto|sock_sendmsg|__sock_sendmsg|xskq_.*)$/)
		return "the kick (AF_XDP transmit syscall)"
	if (sym ~ /^(veth_xmit|veth_forward_skb|__netif_rx|netif_rx.*|enqueue_to_backlog|dev_hard_start_xmit|__dev_queue_xmit|dev_queue_xmit|validate_xmit_skb.*|netif_skb_features|xmit_one|skb_network_protocol|dev_forward_skb|__dev_forward_skb.*)$/)
		return "veth transmit"
	if (sym ~ /^(__netif_receive_skb.*|netif_receive_skb.*|process_backlog|net_rx_action|eth_type_trans|napi_.*|__napi_poll.*|handle_softirqs|__do_softirq|do_softirq.*|__local_bh_enable_ip|gro_.*|dev_gro_receive|napi_gro_.*|ip_rcv.*|ip_forward.*)$/)
		return "kernel receive core (softirq)"
	if (sym ~ /^(io_uring_enter|__do_sys_io_uring_enter|__x64_sys_io_uring_enter|io_cqring_wait|io_submit_sqes|io_poll_.*|io_uring_.*|schedule.*|__schedule|do_nanosleep|hrtimer_nanosleep|finish_task_switch.*|__x64_sys_ppoll|do_sys_poll|do_poll.*)$/)
		return "engine waits (io_uring, scheduler)"
	if (sym ~ /^qn::tp::(Engine::(pump|tx_.*|send_.*|queue_.*|emit.*|kick.*)|LinkPacer|Pacer|QpSender|XskPort::(flush|tx_.*|reserve.*|submit.*|complete.*|reclaim.*)|pattern_fill|write_ip_udp|encode_.*|TxLine|Scheduler|RateWheel)/)
		return "engine TX and pacing"
	if (sym ~ /^qn::tp::(Engine::(rx_.*|process.*|on_.*|deliver.*|handle_.*|apply_cc|signal.*)|XskPort::(rx_.*|refill.*|release.*)|parse.*|QpReceiver|IntervalSet|decode_.*|verify.*)/ || sym ~ /^qn::cc::/)
		return "engine RX and CC"
	if (sym ~ /^qn::tp::(Engine::(step|run|next_deadline|fire_timers|sleep_until_wall|poll_switch_monitors|end_long_streak|sample_queues|rearm_timers)|Histogram|XskPort::tx_needs_service)/ || sym ~ /^(qn::mono_ns|qn::mono_wall_ns|clock_gettime|__vdso_clock_gettime|__io_uring_.*|io_uring_.*)/)
		return "engine per-pass bookkeeping"
	return ""
}

function flush_sample(   i, st, leafk)
{
	if (!have)
		return
	have = 0
	if (proc == "idle") {
		st = "idle"
	} else if (proc == "switchd") {
		st = "switchd (all threads)"
	} else if (proc == "ksoftirqd") {
		st = "ksoftirqd"
	} else if (proc == "other") {
		st = "other processes"
	} else {
		st = ""
		for (i = 1; i <= nf && st == ""; i++)
			st = stage_of(frames[i])
		if (st == "") {
			leafk = (nf > 0 && frames_k[1]) ? 1 : 0
			st = (proc == "engine") ? (leafk ? "kernel, other (engine's CPU time)" : "engine, other") : "other processes"
		}
	}
	samples[st]++
	ns[st] += period
}

BEGIN {
	have = 0
}

# A sample's header: COMM PID/TID PERIOD (comm may hold spaces: pid/tid is the first field
# matching N/N).
/^[^ \t]/ {
	flush_sample()
	have = 1
	nf = 0
	period = 0
	pidf = 0
	for (i = 1; i <= NF; i++)
		if ($i ~ /^[0-9]+\/[0-9]+$/) {
			pidf = i
			break
		}
	if (!pidf) {
		have = 0
		next
	}
	split($pidf, pt, "/")
	comm = $1
	for (i = 2; i < pidf; i++)
		comm = comm " " $i
	period = $(pidf + 1) + 0
	if (pt[1] == 0 || comm ~ /^swapper/)
		proc = "idle"
	else if (engine != "" && pt[1] == engine)
		proc = "engine"
	else if (switchd != "" && pt[1] == switchd)
		proc = "switchd"
	else if (comm ~ /^ksoftirqd/)
		proc = "ksoftirqd"
	else
		proc = "other"
	next
}

# A frame: IP SYMBOL+OFF (DSO); kernel frames have a ffff... address.
/^[ \t]+[0-9a-f]+ / {
	if (!have)
		next
	sym = $2
	sub(/\+0x[0-9a-f]+$/, "", sym)
	nf++
	frames[nf] = sym
	frames_k[nf] = ($1 ~ /^ffff/) ? 1 : 0
	next
}

/^[ \t]*$/ {
	flush_sample()
	next
}

END {
	flush_sample()
	for (s in samples)
		printf "%s\t%d\t%d\n", s, samples[s], ns[s]
}
