#!/usr/bin/env bash
# build: every command and flag documented in docs/cli.md parses (QN_CLI_DRY=1: parse only, no
# root, nothing brought up), and bad values are rejected naming the option. The examples below
# must use every flag of docs/cli.md's synopsis: a flag documented without an example fails the
# test (so does a documented form that stops parsing).
# usage: test_cli_examples.sh QUENCH_BIN
set -uo pipefail
Q=$1
DOC="$(dirname "$0")/../../docs/cli.md"
fail() { echo "FAIL build_cli_examples: $*"; exit 1; }
export QN_CLI_DRY=1
good=(
	"topo check netns/star.topo --param N=4 --name abc"
	"topo check netns/star.topo --preset long-10g"
	"topo check netns/star.topo --detail"
	"topo up netns/star.topo --preset netns/presets/long-10g.preset"
	"topo up netns/star.topo --param N=4 --param X=1 --name abc --dilation 200 --no-steering --no-cables --rps"
	"topo down netns/star.topo --name abc"
	"topo down abc"
	"topo down --name abc"
	"topo down --all"
	"topo show"
	"topo show abc"
	"topo show abc --detail"
	"switch stats"
	"switch stats abc/tor --watch"
	"switch stats tor --watch 0.5"
	"switch stats abc/tor --format json"
	"switch set abc/tor pfc=on kmin=5KB"
	"-v topo show"
	"topo show -v"
	"--verbose topo show abc"
	"gen abc --pattern incast --dst h1 --senders 3 --size 64KB --count 2 --sync-window 20us --interval 300us"
	"gen abc --pattern long --senders h2,h3 --dst h1 --size 1MB --interval 5ms"
	"gen abc --pattern poisson --load 0.3 --cdf netns/workloads/WebSearch_distribution.txt --duration 1ms"
	"gen abc --pattern pingpong --count 10 --size 1000 --dst h1 --senders h2"
	"gen abc --flows flows.txt"
	"gen abc --mode sr --ack-every 4 --window-bytes 64KB --qp-rate 2Gbps --rto-low 100us --rto-high 320us"
	"gen abc --icrc --nic-delay 1us --switch-delay 1us --link-credit 1 --shards 2 --base-rtt 8us --timeout 1s --seed 7"
	"gen abc --out f.csv --fct-out fct.txt --cc dcqcn --cc-params mellanox --cc-set t=300us --cc-set rai=5Mbps"
	"gen abc --cc dcqcn+w:lossy --no-np --keep-switch-pfc --trace 8 --trace-out t.csv"
	"gen abc --cc none/sfc:lossy --keep-switch-stages --test-no-rto-hold"
	"gen abc --queues all --queue-interval 5us --queue-out q.csv"
	"gen abc --queues tor:tor-p1,tor:tor-p2"
	"engine abc --timeout 1s"
	"agent abc --cc dcqcn --cc-set rai=1Mbps --paper --base-rtt 200us --duration 5s --trace-out r.csv --no-pace --no-pause"
	"run netns/experiments/incast-bg.exp --out /tmp/r --dilation 400 --schemes dcqcn,dcqcn+w --attempts 1 --link-credit 1 --shards 1 --name abc --quiet"
	"run netns/experiments/incast-bg.exp --adapt-from 100 --max-wall 600"
	"compare /tmp/a /tmp/b"
	"run netns/experiments/incast-bg.exp --format json"
	"gen abc --format json"
	"analyze trace t.csv --from 5ms --to 40ms --window 1ms --jain 0.95 --run 3 --rate-cap 10Gbps"
	"analyze trace t.csv --sum-at 120us --sum-at 170us --absent-rate 10Gbps"
	"analyze numbers n.txt"
	"analyze numbers"
	"jitter --seconds 2 --gap-us 500 --threads 2"
	"model --senders 8 --rate 100Gbps --delay 1us --mtu 2048 --size 500KB --stagger 1us --jitter 170ns --duration 10ms"
	"model --from 5ms --window 1ms --cc dcqcn --cc-params paper --cc-set g=0.0039 --derived"
	"model --kmin 5KB --kmax 200KB --pmax 0.01 --enqueue --no-np --seed 3"
	"model --dequeue --trace 8 --trace-out t.csv --queue-out q.csv --windows-out w.csv"
	"model --cc dcqcn+w/sfc:lossy --switch-set sfc_qth=100KB --switch-set kmin=4KB --switch-set sfc_phase=1us"
	"model --cc dcqcn/pbfs --delay 10us --switch-set pbfs_n=2 --switch-set pbfs_phase=3us"
	"bench switch --seconds 1 --rounds 4 --size 1024 --senders 2 --ecn-dequeue"
	"bench switch --baseline-obj CMakeLists.txt"
	"bench switch --only quench"
	"bench switch --sfc --sfc-tbf 0"
	"bench switch --sfc --sfc-cache off"
	"bench switch --sfc --sfc-est"
	"bench switch --gate-leaf"
	"bench switch --set ldcp=on --set pbfs=on --depth 100KB --tos 110"
	"switch keys"
	"bench transport --rounds 4 --seconds 1"
	"bench rxe --rounds 3"
	"bench fabric --shapes star-8,fattree-k4 --rounds 3 --seconds 0.2 --prefix qx --format json --link-credit 1 --shards 2"
	"topo fattree --k 4 --name ft4 --rate 10Gbps --fabric-rate 40Gbps --delay 1us --fabric-delay 0 --buffer 12MB --mtu 2048 -o ft4.topo"
	"topo fattree --ns3-320 -o fat.txt"
)
bad=(
	"topo up netns/star.topo --dilation 0|--dilation"
	"topo up|FILE is required"
	"switch stats --watch -1|--watch"
	"gen abc --pattern bursty|--pattern"
	"switch stats --format xml|--format"
	"bench switch --sfc --sfc-cache every|--sfc-cache"
	"gen abc --format xml|--format"
	"run x.exp --format csv|--format"
	"analyze trace t.csv --jain 2|--jain"
	"analyze trace t.csv --sum-at 5xs|--sum-at"
	"gen abc --senders 0|--senders"
	"gen abc --size big|--size"
	"gen abc --cc-set rai|--cc-set"
	"gen abc --mode tcp|--mode"
	"gen abc --load 2|--load"
	"gen abc --frobnicate|--frobnicate"
	"gen|TOPO is required"
	"run x.exp --attempts 0|--attempts"
	"run x.exp --dilation 100 --adapt-from 10|--adapt-from"
	"jitter --threads 1.5|--threads"
	"model --delay soon|--delay"
	"model --enqueue --dequeue|--dequeue"
	"compare /tmp/a|RUN_B"
	"bench switch --rounds 0|--rounds"
	"bench switch --only both|--only"
	"bench switch --tos 300|--tos"
	"bench rxe --rounds 0|--rounds"
	"bench fabric --rounds 0|--rounds"
	"bench fabric --format csv|--format"
	"topo fattree --k 4 --ns3-320|--ns3-320"
	"agent|TOPO is required"
	"agent abc --base-rtt fast|--base-rtt"
	"frob|unknown command"
)
n=0
for ex in "${good[@]}"; do
	# shellcheck disable=SC2086
	out=$("$Q" $ex 2>&1) || fail "documented form rejected: quench $ex: $out"
	grep -q "^parsed: " <<<"$out" || fail "quench $ex did not stop after parsing: $out"
	n=$((n + 1))
done
m=0
for b in "${bad[@]}"; do
	ex=${b%%|*} want=${b#*|}
	# shellcheck disable=SC2086
	if out=$("$Q" $ex 2>&1); then fail "accepted: quench $ex: $out"; fi
	grep -qF -- "$want" <<<"$out" || fail "quench $ex: the error does not name '$want': $out"
	m=$((m + 1))
done
# every flag of the documented synopsis has an example
flags=$(sed -n '/^```$/,/^```$/p' "$DOC" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
missing=""
for f in $flags; do
	case $f in --help | --version) continue ;; esac # exercised below, with their output
	printf '%s\n' "${good[@]}" | grep -qE -- "(^| )$f( |$)" || missing="$missing $f"
done
[ -z "$missing" ] || fail "documented flags without an example here:$missing"
# Help and version come from CLI11 alone (userspace/quench/cli.h's command table): `quench
# --help` lists every command, each command's own help exits 0 with its usage line, `quench`
# alone prints the same help on stderr with status 2, and --version names the commit the binary
# was built from (the source tree's HEAD, -dirty when tracked files differ).
unset QN_CLI_DRY
top=$("$Q" --help) || fail "quench --help exited $?"
cmds=(topo switch bench gen engine run compare analyze model agent jitter schemes)
for c in "${cmds[@]}"; do
	grep -qE "^  $c +[a-z]" <<<"$top" || fail "quench --help does not list '$c': $top"
	h=$("$Q" "$c" --help) || fail "quench $c --help exited $?"
	grep -q "^Usage: quench $c " <<<"$h" || fail "quench $c --help has no usage line of its own: $h"
done
for c in "topo up" "topo check" "switch stats" "switch set" "bench switch" "analyze trace"; do
	# shellcheck disable=SC2086 # two words
	h=$("$Q" $c --help) || fail "quench $c --help exited $?"
	grep -q "^Usage: quench $c " <<<"$h" || fail "quench $c --help has no usage line of its own: $h"
done
"$Q" >/dev/null 2>&1 && fail "quench with no command exited 0"
[ "$("$Q" 2>&1 >/dev/null)" = "$top" ] || fail "quench with no command does not print the help on stderr"
out=$("$Q" nosuchcommand 2>&1) && fail "an unknown command was accepted"
grep -qF "unknown command 'nosuchcommand'" <<<"$out" || fail "an unknown command is not named: $out"
ver=$("$Q" --version) || fail "quench --version exited $?"
head=$(git -c safe.directory='*' rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
grep -qE "^quench [0-9]+\.[0-9]+\.[0-9]+ \(commit $head(-dirty)?\)$" <<<"$ver" || fail "quench --version: '$ver' does not name the commit $head"
# `topo check` states what an engine serving the topology takes from this machine and rejects a
# topology over a hard limit, naming it: a k=4 fat-tree with 1 us fabric links (cables) needs 16 +
# 2 x 32 sockets and 144 descriptors; under an open-files hard limit of 100 it is refused.
tmp=$(mktemp -d /tmp/quench-cli-examples.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$Q" topo fattree --k 4 -o "$tmp/ft4.topo" || fail "topo fattree --k 4 failed"
out=$("$Q" topo check "$tmp/ft4.topo") || fail "topo check of a k=4 fat-tree failed: $out"
grep -qE "^engine: 80 AF_XDP sockets \(16 hosts \+ 2 x 32 cables\), 144 file descriptors, UMEM 2\.50 GiB" <<<"$out" ||
	fail "topo check does not state the engine's needs: $(grep '^engine' <<<"$out")"
out=$(prlimit --nofile=100:100 "$Q" topo check "$tmp/ft4.topo" 2>&1) && fail "topo check accepted 144 descriptors under a hard limit of 100"
grep -qF "144 file descriptors" <<<"$out" && grep -qF "hard limit 100" <<<"$out" ||
	fail "topo check's refusal does not name the need and the limit: $(tail -1 <<<"$out")"
# Beyond 40 nodes `topo check` summarises: a k=8 fat-tree (208 nodes) in a few lines, hosts and
# switches grouped by name, every switch's routes counted with their ECMP fan-out.
"$Q" topo fattree --k 8 -o "$tmp/ft8.topo" || fail "topo fattree --k 8 failed"
out=$("$Q" topo check "$tmp/ft8.topo") || fail "topo check of a k=8 fat-tree failed: $out"
[ "$(wc -l <<<"$out")" -le 12 ] || fail "topo check of a k=8 fat-tree printed $(wc -l <<<"$out") lines, not a summary"
grep -qF "hosts     h[1..128]" <<<"$out" && grep -qF "e#x# 32: e1x1 .. e8x4" <<<"$out" &&
	grep -qE "^routes: 10240 on 80 switches, 1 to 4 next hops each" <<<"$out" ||
	fail "topo check's summary of a k=8 fat-tree: $out"
out=$("$Q" topo check "$tmp/ft8.topo" --detail) || fail "topo check --detail of a k=8 fat-tree failed"
[ "$(grep -c '^route ' <<<"$out")" -eq 10240 ] || fail "topo check --detail printed $(grep -c '^route ' <<<"$out") routes, not 10240"
echo "PASS build_cli_examples: $n documented forms parse, $m bad ones rejected naming the option, every one of $(wc -w <<<"$flags") documented flags exercised; help of ${#cmds[@]} commands from CLI11, $ver"
