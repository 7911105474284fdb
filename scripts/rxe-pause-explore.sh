#!/usr/bin/env bash
# rxe-pause-explore.sh QUENCH_BIN QN_TRAFFIC_BIN: the measurements behind docs/agent.md "PAUSE and
# SFC on rxe hosts", inside a VM kernel with rdma_rxe:
#   bash scripts/vmtest.sh --build build --run "RUNS='on on on off' bash scripts/rxe-pause-explore.sh build/quench build/qn_traffic" backports
# Per run (a fresh topology each): two rxe hosts on a quench switch, h1's link H1 (default
# 12Mbps) into a 10 Mbit/s port, buffer 4 MB (nothing drops), ECN off; four ib_write_bw pairs
# (8 x 64 KB in flight, QP timeout 2^U x 4.096 us) started 0.5 s apart, 5 s each. RUNS lists the
# runs: `on` = PFC on (XOFF 16 KB, XON 8 KB, quanta Q, default 4700 = 200 ms at 12 Mbit/s),
# `off` = PFC off, `sfc` = SFC on (Q_Th 30 KB, Q_Tg 15 KB, one pair, traffic class TCLASS).
# Prints per run the port's peak queue, drops, PAUSE/BTS counts, h1's largest fq backlog and
# rxe's counters that moved.
source "$(dirname "$0")/../tests/netns/lib.sh"
source "$(dirname "$0")/../tests/vm/rxe_lib.sh"
rxe_require rdma ib_write_bw jq
H1=${H1:-12Mbps} Q=${Q:-4700} U=${U:-20} TCLASS=${TCLASS:-0}
hw_dump() { for d in "$D1" "$D2"; do for f in /sys/class/infiniband/"$d"/ports/1/hw_counters/*; do echo "$d $(basename "$f") $(cat "$f")"; done; done; }
n=0
for mode in ${RUNS:-on off}; do
	n=$((n + 1))
	topo=$(write_topo "defaults rate=10Mbps mtu=2048 delay=0 buffer=4MB
switch tor
host h1 stack=rxe
host h2 stack=rxe
link h1 tor rate=$H1
link h2 tor")
	rxe_up "$topo" >/dev/null
	pairs=4 stag=0.5
	case $mode in
	on | off) "$QUENCH" switch set "$TOPO_NAME/tor" ecn=off pfc=$mode xoff=16000 xon=8000 quanta="$Q" >/dev/null ;;
	sfc) "$QUENCH" switch set "$TOPO_NAME/tor" ecn=off pfc=off sfc=on sfc_qth=30000 sfc_qtg=15000 sfc_tbf=1ms >/dev/null
		pairs=1 ;;
	*) fail "RUNS: on, off or sfc, not $mode" ;;
	esac
	hw_dump >"$WORK/hw0"
	(while :; do hx h1 tc -s qdisc show dev "$IF1" | grep -o 'backlog [0-9]*b'; sleep 0.05; done) >"$WORK/fq" &
	fqp=$!
	BG_PIDS+=("$fqp")
	pids=()
	for i in $(seq 1 $pairs); do
		hx h2 timeout 120 ib_write_bw -F -d "$D2" -x "$g2" -D 5 -s 65536 -t 8 -u "$U" --tclass="$TCLASS" -p $((18600 + i)) >/dev/null 2>&1 &
		pids+=($!)
	done
	sleep 1.5
	for i in $(seq 1 $pairs); do
		hx h1 timeout 120 ib_write_bw -F -d "$D1" -x "$g1" -D 5 -s 65536 -t 8 -u "$U" --tclass="$TCLASS" -p $((18600 + i)) "$IP2" >"$WORK/c$i" 2>&1 &
		pids+=($!)
		sleep $stag
	done
	for p in "${pids[@]}"; do wait "$p" || echo "a perftest pair failed"; done
	kill "$fqp"
	hw_dump >"$WORK/hw1"
	echo "run $n ($mode, h1 $H1, quanta $Q, -u $U, tclass $TCLASS): peak $(sw queue_peak_bytes) B, drops $(sw drops), XOFF events $(sw pfc_xoff_sent), BTS $(sw sfc_bts_queue), h1 fq backlog max $(grep -o '[0-9]*' "$WORK/fq" | sort -n | tail -1) B"
	paste "$WORK/hw0" "$WORK/hw1" | awk '$3 != $6 && $2 !~ /bytes|pkts/ {print "  rxe " $1 " " $2 " +" $6 - $3}'
	"$QUENCH" topo down --name "$TOPO_NAME" >/dev/null
done
