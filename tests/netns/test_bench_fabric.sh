#!/usr/bin/env bash
# netns: `quench bench fabric` (docs/PERFORMANCE.md "`quench bench fabric`") on the 8-host star and
# a k=4 fat-tree with 1 us cables, one round each, as JSON. Checks what must hold on any machine:
#  - the shapes are what they claim: sockets (hosts + 2 x cables), veth pairs (links + cables),
#    switches on the ring's paths (star 1; k=4: 1, 3, 1, 5 per four hosts = 2.5);
#  - every figure was measured: the engine's capacity and both raw baselines above zero, the
#    ratios are the figures' quotients, the engine's UMEM shows in its memory (at least half of
#    sockets x chunks x 4 KiB) and its sockets in its descriptors;
#  - the raw baselines lost no frame (counted end to end after a drain) and received nothing else;
#  - nothing is left behind: no namespace, no topology of the test's names;
#  - bad input is refused naming it: an unknown shape (with the list), a bad topology prefix.
# No timing is asserted (the figures are for docs/PERFORMANCE.md).
source "$(dirname "$0")/lib.sh"

out=$("$QUENCH" bench fabric --shapes star-8,fattree-k4 --rounds 1 --seconds 0.1 --format json \
	--prefix "$TOPO_NAME" 2>"$WORK/err.txt") || fail "bench fabric: $(tail -5 "$WORK/err.txt")"
echo "$out" | jq -c '.shapes[] | {name, sockets, veth_pairs, mean_hops, capacity_gbps, raw_1core_gbps, limit_gbps,
	ratio_to_raw, ratio_to_limit, up_s, down_s, mem_topo_mib, mem_engine_mib, engine_fds, raw_lost}'
shape() { jq -c --arg n "$1" '.shapes[] | select(.name == $n)' <<<"$out"; }
s8=$(shape star-8)
k4=$(shape fattree-k4)
[ -n "$s8" ] && [ -n "$k4" ] || fail "a shape is missing from the JSON: $out"
holds "$(jq '.hosts == 8 and .switches == 1 and .cables == 0 and .sockets == 8 and .veth_pairs == 8 and .mean_hops == 1' <<<"$s8")" ||
	fail "star-8's shape: $s8"
holds "$(jq '.hosts == 16 and .switches == 20 and .cables == 32 and .sockets == 80 and .veth_pairs == 80 and .mean_hops == 2.5' <<<"$k4")" ||
	fail "fattree-k4's shape: $k4"
for j in "$s8" "$k4"; do
	n=$(jq -r .name <<<"$j")
	holds "$(jq '.capacity_gbps > 0 and .raw_1core_gbps > 0 and .limit_gbps > 0' <<<"$j")" ||
		fail "$n: a figure was not measured: $j"
	holds "$(jq '((.ratio_to_raw - .capacity_gbps / .raw_1core_gbps) | fabs) < 0.01 and
		((.ratio_to_limit - .capacity_gbps / .limit_gbps) | fabs) < 0.01' <<<"$j")" || fail "$n: ratios are not the quotients: $j"
	holds "$(jq '.mem_engine_mib >= 0.5 * .sockets * .frames_per_port * 4096 / 1048576 and .engine_fds >= .sockets' <<<"$j")" ||
		fail "$n: the engine's UMEM or sockets are missing from its memory or descriptors: $j"
	holds "$(jq '.raw_lost == 0 and .raw_other == 0 and .left_behind == 0' <<<"$j")" ||
		fail "$n: raw frames lost or strays, or namespaces left: $j"
done
left=$( (ip netns list | awk '{print $1}' | grep -c "^qn-$TOPO_NAME") || true)
[ "$left" -eq 0 ] || fail "bench fabric left $left namespaces"
[ -z "$("$QUENCH" topo show 2>/dev/null | grep "^topology $TOPO_NAME" || true)" ] || fail "bench fabric left a topology up"
# bad input
if "$QUENCH" bench fabric --shapes star-9 --prefix "$TOPO_NAME" >/dev/null 2>"$WORK/bad.txt"; then
	fail "an unknown shape was accepted"
fi
grep -q "unknown shape 'star-9'.*fattree-k4" "$WORK/bad.txt" || fail "unknown shape: $(cat "$WORK/bad.txt")"
if "$QUENCH" bench fabric --shapes star-8 --prefix "Bad_" >/dev/null 2>"$WORK/bad.txt"; then
	fail "a bad prefix was accepted"
fi
grep -q "field 'name': 'Bad_s8'" "$WORK/bad.txt" || fail "bad prefix: $(cat "$WORK/bad.txt")"
pass "star-8 and fattree-k4 measured (capacity $(jq .capacity_gbps <<<"$s8") and $(jq .capacity_gbps <<<"$k4") Gbit/s, raw_1core $(jq .raw_1core_gbps <<<"$s8") and $(jq .raw_1core_gbps <<<"$k4")); shapes, ratios, memory and descriptors consistent; no raw frame lost; nothing left behind; bad input refused"
