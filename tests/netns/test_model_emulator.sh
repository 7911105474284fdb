#!/usr/bin/env bash
# netns: the reference model (quench model) and the emulator agree on the same scenario
# (DESIGN.md §8 "Verification").
# (a) An 8:1 incast of long flows (8 x 5 MB) on the 10 Gbit/s star, DCQCN's paper and Mellanox
#     variants with the same parameters on both sides (the spec's values for this fabric,
#     dcqcn.md §4: R_AI 10, R_HAI 50, R_min 25 Mbit/s, B 2.5 MB, N 50 us, T = tau' 55 us) and the
#     same switch (RED Kmin 4096 B, Kmax 50 KB, Pmax 1%, decided at dequeue; PFC on). Bounds: peak
#     queue within +-10%, mean FCT within +-15%, CNPs within +-30% of the model. (The peak's bound
#     was +-20% while the engine sent one packet too many at the line rate after each sender's
#     first cut: peaks +6 to +21%, one fresh-clone run failed; fixed, +1 to +3%: docs/cc.md
#     "A cut from the line rate came one packet late".)
# (b) An 8:1 incast of 500 KB on the 100 Gbit/s star, the Mellanox variant with its
#     firmware set unchanged (N 4 us, tau' 1 us, T 300 us, R_AI 5 Mbit/s, R_min 1 Mbit/s; the
#     cuts reach a few Mbit/s and the rate recovers while a packet waits: the re-pacing of
#     docs/cc.md) and RED 12.5 KB / 500 KB / 1% at dequeue (the spec's 10G values x s_C). The
#     model has no PFC (an unbounded buffer), so the switch runs lossy here (PFC off; the 12 MB
#     buffer holds the 1.5 MB peak: nothing is dropped, which is checked) and both sides see the
#     same network. Bounds: peak queue and mean FCT within +-25%, CNPs within +-30%.
# (c) PCN's rate laws (docs/pcn.md): the 8:1 incast of (a) with PCN (T 50 us, theta 0.95, w_min
#     1/128, w_max 1/2), step marking at K = 4096 B at dequeue (kmin = kmax = K, Pmax 1), PFC off
#     (the model has none; NP-ECN acts only on paused packets, so it has nothing to do here and the
#     12 MB buffer holds the peak: nothing is dropped, which is checked), the senders started
#     5 us apart on both sides. Bounds as (a). Why not together: PCN's first cut of a flow needs
#     theta of its first interval's ~5 packets marked, so whether its first packet left an almost
#     empty queue unmarked decides whether it is cut one T (50 us) later, and with it ~20% of
#     the peak. The model starts 8 senders in the same ns (1 unmarked first packet; 0-2 us of
#     start jitter keep it so, peak 627-637 KB); the engine's one thread kicks them one after
#     another (the first frames 100-150 us of wall time apart, about 2 us of fabric time at
#     D=360) and HTB's burst of two frames dequeues the first two at once: 3 unmarked, those flows
#     cut at 113-125 us instead of 62-73, peak 755-872 KB (+20-37%, three VALID runs). With a
#     stagger of 5 us the order is set by the stagger on both sides: model 975 KB, emulator
#     994-1023 KB (docs/pcn.md "Against the reference model").
# D: `topo up --dilation auto` (docs/experiments.md "Dilation and calibration"); at a fixed D=200
# the incasts' starts lost 4-33% of the senders' backlogged time on this machine (INVALID).
# Only VALID runs (up to three attempts each). Negative control: the same check fails with the
# emulator's notification point switched off (--no-np), on each fabric and for PCN (at 10 Gbit/s
# its peak queue, the run cut at 5 ms).
# dcqcn+w/sfc is held against the model in test_sfc.sh (its incast-slope part: per-N peaks
# and slopes on the long-10g fabric, where a BDP is many frames); dcqcn/pbfs in test_pbfs.sh (the
# single-port case at each trial's measured slot phase).
source "$(dirname "$0")/lib.sh"
[ -z "${QN_IN_VM:-}" ] || skip "fabric dynamics need line-rate engines; not run under emulation (DESIGN.md §7)"

# The fabric under test (set by fabric()): its switch settings, model options, CC parameters,
# flow size and the bounds of agree().
fabric() {
	case $1 in
	10g)
		up_auto "$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/star.topo")")" --param N=9
		"$QUENCH" switch set "$TOPO_NAME/tor" pfc=on ecn=on ecn_at=dequeue kmin=4096 kmax=50000 pmax=0.01 >/dev/null
		params="--cc-set rai=10Mbps --cc-set rhai=50Mbps --cc-set rmin=25Mbps --cc-set b=2500000 --cc-set n=50us --cc-set t=55us --cc-set tau_alpha=55us"
		mopts="--rate 10Gbps --duration 80ms --kmin 4096 --kmax 50000"
		size=5MB keep="" bounds="0.10 0.15 0.30"
		;;
	100g)
		local f
		f=$(write_topo "$(sed '/^name /d; s/rate=10Gbps/rate=100Gbps/' "$(dirname "$0")/../../netns/star.topo")")
		up_auto "$f" --param N=9
		# The incast is one burst: at the calibrated D its ~90 backlogged frames per sender
		# last ~45 ms of wall time, and one stop of this machine (0.5-3 ms, about 8 a second)
		# inside it costs each link 1-3% of that time: three runs in a row were INVALID at
		# 98.7-98.9% kept (one late frame per link, all at the same instant), 0 flows tagged.
		# At 3 x D (capped at 10000 here, so the run stays short) one such stop costs at most ~1%.
		D=$((D * 3 > 10000 ? 10000 : D * 3))
		"$QUENCH" topo up "$f" --param N=9 --dilation "$D" >/dev/null
		echo "100g: the burst runs at D=$D"
		"$QUENCH" switch set "$TOPO_NAME/tor" pfc=off ecn=on ecn_at=dequeue kmin=12500 kmax=500000 pmax=0.01 >/dev/null
		params="" # the Mellanox firmware set unchanged
		mopts="--rate 100Gbps --duration 10ms --kmin 12500 --kmax 500000"
		size=500KB keep="--keep-switch-pfc" bounds="0.25 0.25 0.30"
		;;
	esac
}

# ccargs VARIANT: the scheme options of a variant (DCQCN's parameter sets, or pcn) for model and gen.
ccargs() { if [ "$1" = pcn ]; then echo "--cc pcn"; else echo "--cc dcqcn --cc-params $1 $params"; fi; }
# start VARIANT [model|gen]: the start offsets of the senders (PCN's 5 us stagger, above)
start() { [ "$1" = pcn ] || return 0; if [ "$2" = model ]; then echo "--stagger 5us"; else echo "--interval 5us"; fi; }
# model VARIANT: "PEAK FCT_MEAN CNPS" of the reference model.
model() {
	local out pmax=0.01
	[ "$1" != pcn ] || pmax=1
	out=$("$QUENCH" model --senders 8 --size "$size" $mopts --dequeue --pmax $pmax $(ccargs "$1") $(start "$1" model))
	echo "model $1: $(grep -E '^(cc|queue|fct|signals):' <<<"$out" | tr '\n' ' ')" >&2
	echo "$(sed -n 's/^queue: .* peak \([0-9]*\) B.*/\1/p' <<<"$out") $(sed -n 's/^fct_mean_ns \([0-9]*\)/\1/p' <<<"$out") $(sed -n 's/.* \([0-9]*\) CNPs$/\1/p' <<<"$out")"
}
# emulate VARIANT [--no-np]: the same incast through the switch and the engine; sets OUT and
# EMU ("PEAK FCT_MEAN CNPS"). Return: 0 when the run is VALID and no affected period (an engine
# stop, a late host, a switch link that lost time: gen's `affected`, ns after t0) began before
# the queue's peak: the peak is the first loop's burst, and a stop inside it moves what the
# senders had sent when their first CNPs arrived. Such a run is VALID (the stop touched under
# 1% of each flow's life) but its peak is not the fabric's; the next attempt is taken.
# (Measured on a quiet machine, 2026-11-28, the Mellanox case twelve times at D=130: peaks
# 428,064-434,238 B, the model 428,896 B, no period before any peak; CI runs on a loaded machine
# gave +9.4% and +10.4%.)
emulate() {
	local v=$1
	shift
	local d0
	d0=$(drops)
	local rc=0
	OUT=$("$QUENCH" gen "$TOPO_NAME" --pattern long --senders 8 --size "$size" --dst h1 $(ccargs "$v") $(start "$v" gen) \
		$keep --queues tor:tor-p1 --queue-interval 5us --format json "$@" 2>"$WORK/gen.txt") || rc=$?
	# exit 3: flows not done, which only a control cut short on purpose (--timeout) may leave
	[ "$rc" = 0 ] || { [ "$rc" = 3 ] && [[ " $* " == *" --timeout "* ]]; } || fail "gen $v $*: $OUT"
	# the model drops nothing: neither may the switch (a lossy fabric must hold the incast); a
	# negative control (extra options) may: without CNPs and PFC the queue outgrows the buffer
	[ $# -gt 0 ] || [ "$(drops)" -eq "$d0" ] || fail "the switch dropped $(($(drops) - d0)) packets in the $v incast: $(grep -E '^goodput' "$WORK/gen.txt")"
	local peak fct cnp
	peak=$(jq '.queues[] | select(.port == "tor/tor-p1") | .max' <<<"$OUT")
	fct=$(jq 'if .flows_done == 8 then .fct_ns.mean | floor else 0 end' <<<"$OUT")
	cnp=$(jq '.counters["host.cnp_tx"]' <<<"$OUT")
	EMU="$peak $fct $cnp"
	echo "emulator $v $*: peak $peak B, mean FCT $fct ns, CNPs $cnp; $(grep -E '^validity' "$WORK/gen.txt"); $(grep -E '^loop delay' "$WORK/gen.txt" | tr '\n' ' ')"
	grep -E "^  reason:" "$WORK/gen.txt" || true
	jq -e .valid <<<"$OUT" >/dev/null || return 1
	local at
	at=$(jq '.queues[] | select(.port == "tor/tor-p1") | .max_at_ns' <<<"$OUT")
	window_touched "$OUT" "$at" || return 0
	echo "  inconclusive: affected periods $TOUCHED (ns after t0), 1% or more of the time before the peak at $at ns"
	return 1
}
# drops: every drop the switch counted, any reason
drops() { "$QUENCH" switch stats "$TOPO_NAME/tor" --format json | jq '[.switches[].ports[].counters.drops] | add'; }
# agree "EMU" "MODEL" [N]: every quantity (the first N: 1 the peak alone) within its bound
# ($bounds). Prints the relative differences.
agree() {
	local -a e m b n=(peak_queue fct_mean cnps)
	read -ra e <<<"$1"
	read -ra m <<<"$2"
	read -ra b <<<"$bounds"
	local i rc=0 d
	for i in $(seq 0 $((${3:-3} - 1))); do
		d="(if ${m[i]} > 0 then (${e[i]} - ${m[i]}) / ${m[i]} else 1 end)"
		echo "  ${n[i]}: emulator ${e[i]}, model ${m[i]}, $(jq -n "$d * 1000 | round / 10")% (bound +-$(jq -n "${b[i]} * 100")%)"
		holds "$d | fabs <= ${b[i]}" || rc=1
	done
	return $rc
}

unchecked=""
current=""
for case in 10g/paper 10g/mellanox 10g/pcn 100g/mellanox; do
	f=${case%/*} v=${case#*/}
	if [ "$f" != "$current" ]; then
		[ -z "$current" ] || "$QUENCH" topo down --name "$TOPO_NAME" >/dev/null
		fabric "$f"
		current=$f
	fi
	if [ "$v" = pcn ]; then # step marking at K, no PFC (the model has none)
		"$QUENCH" switch set "$TOPO_NAME/tor" pfc=off kmin=4096 kmax=4096 pmax=1 >/dev/null
		mopts="--rate 10Gbps --duration 80ms --kmin 4096 --kmax 4096" keep="--keep-switch-pfc"
	fi
	m=$(model "$v")
	valid=0
	for attempt in 1 2 3; do
		if emulate "$v"; then valid=1; break; fi
	done
	echo "$case: $((attempt - 1)) INVALID or touched attempt(s) before $([ "$valid" -eq 1 ] && echo "a VALID one" || echo "giving up")"
	if [ "$valid" -eq 0 ]; then
		machine_stalls "$OUT" || fail "no VALID run of the $case incast with an untouched peak in three attempts on a quiet machine ($STALLS)"
		unchecked="${unchecked:+$unchecked; }$case not compared (inconclusive): no VALID run with an untouched peak in three attempts; $STALLS"
		continue
	fi
	agree "$EMU" "$m" || fail "$case: the emulator and the reference model disagree"
	echo "$case: emulator and model agree"
	# Negative controls: without the notification point the check fails (once per fabric, and
	# for PCN). At 10 Gbit/s on the peak alone, in the first 5 ms: the peak comes within the
	# first millisecond (the queue reaches PFC's XOFF or the buffer), while the whole run
	# without CNPs took 33 ms of fabric time (DCQCN) and 185 ms (PCN, lossy: the buffer drops
	# and the flows wait for retransmissions), 15 and 80 s of wall time at D = 440; cut short,
	# its FCT and CNP count would disagree for that reason alone.
	if [ "$v" = paper ] || [ "$v" = pcn ] || [ "$f" = 100g ]; then
		if [ "$f" = 10g ]; then
			emulate "$v" --no-np --timeout 5ms || true
			if agree "$EMU" "$m" 1; then
				fail "$case: the peak agreed with the emulator's notification point off: the check cannot fail"
			fi
		else
			emulate "$v" --no-np || true
			if agree "$EMU" "$m"; then
				fail "$case: the check passed with the emulator's notification point off: it cannot fail"
			fi
		fi
		echo "$case NP off: the check fails, as it must"
	fi
	# ... and at 100 Gbit/s, where the incast is over before DCQCN acts much and the peak queue is
	# set by how synchronously the senders start, senders started 20 us apart (the model's start
	# together) fail it too: the peak-queue comparison sees start timing.
	if [ "$f" = 100g ]; then
		emulate "$v" --interval 20us || true
		if agree "$EMU" "$m"; then
			fail "$case: the check passed with the emulator's senders started 20 us apart: it cannot fail"
		fi
		echo "$case senders 20 us apart: the check fails, as it must"
	fi
done
[ -z "$unchecked" ] || skip "every other check passed; $unchecked"
pass "DCQCN at 10 Gbit/s (paper, Mellanox) and 100 Gbit/s (Mellanox), PCN at 10 Gbit/s: peak queue, mean FCT and CNPs within the bounds of the reference model; NP off and (100 Gbit/s) staggered starts fail the check"
