# rxe_lib.sh - helpers the Soft-RoCE VM tests share (sourced).

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
