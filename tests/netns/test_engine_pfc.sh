#!/usr/bin/env bash
# netns: PAUSE frames from the ToR stop the host's data priority in the engine: nothing arrives
# from the host while paused; traffic resumes when the quanta expire, and an XON ends the pause
# early. The engine's paused time matches the quanta (and the XON) in fabric time.
source "$(dirname "$0")/lib.sh"
[ -z "${QN_IN_VM:-}" ] || skip "wall-clock pause windows are not asserted under emulation (DESIGN.md §7)"

D=50
topo=$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/star.topo")")
"$QUENCH" topo up "$topo" --param N=2 --dilation "$D" >/dev/null
wall_rate=$((10000000000 / D))
bg gen "$QUENCH" gen "$TOPO_NAME" --pattern long --size 40MB --dst h1 --senders h2
sleep 0.5
p1=$("$TRAFFIC" pause --netns "$(ns tor)" --dev tor-p2 --prio 3 --quanta 65535 --link-rate $wall_rate)
echo "$p1"
p2=$("$TRAFFIC" pause --netns "$(ns tor)" --dev tor-p2 --prio 3 --quanta 65535 --link-rate $wall_rate --xon-after-ms 40)
echo "$p2"
wait "$PID_gen" || fail "the flow did not complete: $(cat "$WORK/gen.out")"
out=$(cat "$WORK/gen.out")
grep -q "flows done 1/1, content errors 0" <<<"$out" || fail "flow: $out"
for p in "$p1" "$p2"; do
	before=$(sed -n 's/.*rx_before_20ms=\([0-9]*\).*/\1/p' <<<"$p")
	paused=$(sed -n 's/.*rx_paused=\([0-9]*\).*/\1/p' <<<"$p")
	resumed=$(sed -n 's/.*rx_resumed=\([0-9]*\).*/\1/p' <<<"$p")
	[ "$before" -gt 0 ] || fail "the host was not sending before the PAUSE: $p"
	[ "$paused" -eq 0 ] || fail "$paused frames arrived from a paused host: $p"
	[ "$resumed" -gt 0 ] || fail "the host did not resume: $p"
done
line=$(grep "^host h2:" <<<"$out")
echo "$line"
# Expected: 65535 quanta at 10 Gbit/s = 3355.4 us, plus 40 ms wall / D = 800 us until the XON.
got=$(sed -n 's/.*paused prio3 \([0-9.]*\) \(us\|ms\).*/\1 \2/p' <<<"$line")
awk -v g="$got" 'BEGIN { split(g, a, " "); v = a[1] * (a[2] == "ms" ? 1000 : 1); want = 3355.4 + 800;
	err = (v - want) / want; printf "paused %.1f us, expected %.1f us (%+.1f%%)\n", v, want, 100 * err;
	exit (err < -0.1 || err > 0.1) }' || fail "paused time off by more than 10%"
xon=$(sed -n 's/.*xon \([0-9]*\),.*/\1/p' <<<"$line")
[ "${xon:-0}" -ge 1 ] || fail "no XON counted: $line"
pass "PAUSE stops priority 3 for its quanta, XON ends it early"
