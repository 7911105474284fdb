# tests/build/lib.sh: helpers of the build checks (sourced). Sets QN_LINK_TMP, a folder removed
# at exit (a script that sets its own EXIT trap removes it there too).
QN_LINK_TMP=$(mktemp -d /tmp/qn-link.XXXXXX)
trap 'rm -rf "$QN_LINK_TMP"' EXIT

# link_line BUILD TARGET: prints the path of a file holding TARGET's link command, with either
# generator (Ninja: the last command `ninja -t commands` lists for it, written under
# QN_LINK_TMP; Makefiles: CMake's link.txt), or nothing.
link_line() {
	if [ -f "$1/build.ninja" ]; then
		local f="$QN_LINK_TMP/$2"
		ninja -C "$1" -t commands "$2" 2>/dev/null | tail -1 >"$f"
		[ -s "$f" ] && echo "$f"
	else
		find "$1" -path "*/$2.dir/link.txt" | head -1
	fi
}
