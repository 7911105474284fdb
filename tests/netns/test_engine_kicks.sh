#!/usr/bin/env bash
# netns: the engine makes a send call only when it has frames to send. A 4:1 incast of line-rate
# senders (no CC) on the 10 Gbit/s star at D=200 keeps hundreds of each sender's frames queued
# at the ToR for milliseconds of wall time; the kernel completes them only when the switch
# forwards them. Expect: every send call carried frames the engine had just
# pushed, re-kicked frames the kernel left in the ring, or was a full batch of 32
# (send calls <= kicks carrying frames + TX-held kicks + TX frames / 32 + 1 per host), and the
# flows arrive intact. Before this check, every pass of every host with frames outstanding made
# an empty send call: 6.9 s of a 40 MB PCN incast at D=200 spent 2.9 s in the kernel against
# 1.0 s after (docs/PERFORMANCE.md "Empty kicks").
source "$(dirname "$0")/lib.sh"

topo=$(write_topo "$(sed '/^name /d' "$(dirname "$0")/../../netns/star.topo")")
"$QUENCH" topo up "$topo" --param N=5 --dilation "$(vm_or 1000 200)" >/dev/null
out=$("$QUENCH" gen "$TOPO_NAME" --pattern long --senders 4 --size 1MB --dst h1 --cc none --queues tor:tor-p1 --format json 2>"$WORK/gen.txt") ||
	fail "gen: $(tail -5 "$WORK/gen.txt")"
jq -c '{kicks, tx_frames: .counters["host.tx_frames"], queue_max: .queues[0].max, flows_done, content_errors}' <<<"$out"
holds "$(jq '.flows_done == 4 and .content_errors == 0' <<<"$out")" || fail "the incast did not arrive intact: $(grep -E '^flows' "$WORK/gen.txt")"
# the precondition: frames waited at the switch (the 4 MB incast queues about 3 MB)
holds "$(jq '.queues[0].max' <<<"$out") > 1000000" || fail "the incast queued less than 1 MB at the ToR: frames did not wait at the switch"
holds "$(jq '.kicks.send_calls <= .kicks.carrying_frames + .kicks.tx_held + (.counters["host.tx_frames"] / 32 | floor) + 5' <<<"$out")" ||
	fail "send calls without frames: $(jq -c .kicks <<<"$out")"
pass "$(jq -r '"\(.kicks.send_calls) send calls for \(.kicks.carrying_frames) kicks with frames and \(.counters["host.tx_frames"]) frames"' <<<"$out"): no empty kicks while frames waited at the switch"
