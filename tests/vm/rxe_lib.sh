# rxe_lib.sh - helpers the Soft-RoCE VM tests share (sourced). The topology helpers need
# tests/netns/lib.sh sourced first (QUENCH, TOPO_NAME, WORK, ns, fail).

# gid_index DEV IPV4: the index of DEV's RoCE v2 GID that carries IPV4 (::ffff:a.b.c.d), or nothing.
gid_index() {
	local dev=$1 ip=$2 g i hex
	hex=$(printf '%02x%02x:%02x%02x' ${ip//./ })
	for g in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
		i=$(basename "$g")
		if grep -q "0000:0000:0000:0000:0000:ffff:$hex" "$g" 2>/dev/null &&
			grep -q "RoCE v2" "/sys/class/infiniband/$dev/ports/1/gid_attrs/types/$i" 2>/dev/null; then
			echo "$i"
			return
		fi
	done
}

# rxe_require TOOL...: skip unless the tools are there and the kernel has rdma_rxe; load the
# modules rxe hosts use (a VM has no udev; QN_VM_MODPROBE is the VM's modprobe)
rxe_require() {
	local t m modprobe=${QN_VM_MODPROBE:-modprobe}
	for t in "$@"; do command -v "$t" >/dev/null || skip "missing $t"; done
	$modprobe rdma_rxe 2>/dev/null || skip "kernel has no rdma_rxe module (rxe hosts need a VM kernel: make vmtest)"
	for m in ib_uverbs sch_fq sch_htb cls_bpf; do $modprobe $m 2>/dev/null || true; done
}

# hns HOST: the rxe host's namespace, or "" when topo up put it in the initial namespace (a
# kernel whose rxe works only there: docs/agent.md "Layout per kernel")
hns() { "$QUENCH" topo show "$TOPO_NAME" | awk -v h="$1" '$1 == "host" && $2 == h {print ($4 == "(initial)") ? "" : $4}'; }
# hif HOST: the name of the host's interface
hif() { "$QUENCH" topo show "$TOPO_NAME" | awk -v h="$1" '$1 == "host" || $1 == "switch" {cur = $2; next} cur == h && /->/ {print $1; exit}'; }
# hx HOST CMD...: run CMD where the host's interface is (after rxe_up)
hx() {
	local n
	case $1 in h1) n=$NS1 ;; h2) n=$NS2 ;; *) n=$(hns "$1") ;; esac
	shift
	if [ -n "$n" ]; then ip netns exec "$n" "$@"; else "$@"; fi
}

# hxe HOST CMD...: the same, replacing the shell (for `hxe h1 cmd &`: $! is then CMD's pid)
hxe() {
	local n
	case $1 in h1) n=$NS1 ;; h2) n=$NS2 ;; *) n=$(hns "$1") ;; esac
	shift
	if [ -n "$n" ]; then exec ip netns exec "$n" "$@"; else exec "$@"; fi
}

# rxe_up TOPO_FILE: bring up a topology whose rxe hosts h1 and h2 sit on switch tor; set D1/D2
# (their rxe devices), NS1/NS2 and IF1/IF2 (their namespaces and interfaces), IP1/IP2 and g1/g2
# (their RoCE v2 GID indexes).
rxe_up() {
	"$QUENCH" topo up "$1" >/dev/null || fail "topo up with rxe hosts"
	D1="qnr-$TOPO_NAME-h1" D2="qnr-$TOPO_NAME-h2"
	NS1=$(hns h1) NS2=$(hns h2) IF1=$(hif h1) IF2=$(hif h2)
	IP1=$(hx h1 ip -4 -o addr show dev "$IF1" | awk '{print $4}' | cut -d/ -f1)
	IP2=$(hx h2 ip -4 -o addr show dev "$IF2" | awk '{print $4}' | cut -d/ -f1)
	echo "rxe hosts: h1 $IF1 ${NS1:-(initial namespace)} $IP1, h2 $IF2 ${NS2:-(initial namespace)} $IP2"
	g1="" g2=""
	for _ in $(seq 1 50); do # GIDs appear asynchronously; bounded wait (5 s)
		g1=$(gid_index "$D1" "$IP1") g2=$(gid_index "$D2" "$IP2")
		[ -n "$g1" ] && [ -n "$g2" ] && break
		sleep 0.1
	done
	[ -n "$g1" ] && [ -n "$g2" ] || fail "no RoCE v2 IPv4 GID on $D1/$D2"
}

# sw COUNTER: a port counter of switch tor, summed over its ports (switch stats JSON)
sw() { "$QUENCH" switch stats "$TOPO_NAME/tor" --format json | jq "[.switches[].ports[].counters.$1] | add"; }

# rxe_stat HOST INDEX: a qn_rxe_stats counter of the host (enum qn_rxe_counter), summed over CPUs
rxe_stat() {
	bpftool -j map lookup pinned "/sys/fs/bpf/quench/$TOPO_NAME/$1/qn_rxe_stats" key "$2" 0 0 0 |
		jq '[(.formatted.values // .values)[] | .value] | add'
}

# hw_counter DEV NAME: one of rxe's own counters (ports/1/hw_counters)
hw_counter() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2"; }

# write_bw TAG [extra client options]: ib_write_bw h1 -> h2 with $BW_OPTS on both sides, QP
# timeout 2^20 x 4 us (a TCG-slow queue never makes rxe retry)
write_bw() {
	local tag=$1
	shift
	# shellcheck disable=SC2086 # BW_OPTS is a list of options
	hx h2 timeout 120 ib_write_bw -F -d "$D2" -x "$g2" $BW_OPTS -u 20 >"$WORK/$tag.server" 2>&1 &
	local spid=$!
	sleep 1.5 # perftest clients do not retry their TCP connect
	# shellcheck disable=SC2086
	hx h1 timeout 120 ib_write_bw -F -d "$D1" -x "$g1" $BW_OPTS -u 20 "$@" "$IP2" >"$WORK/$tag.client" 2>&1 ||
		fail "ib_write_bw ($tag): $(tail -5 "$WORK/$tag.client")"
	wait "$spid" || fail "ib_write_bw server ($tag): $(tail -5 "$WORK/$tag.server")"
	echo "ib_write_bw ($tag): $(grep -A1 '#bytes' "$WORK/$tag.client" | tail -1)"
}
