#!/usr/bin/env bash
# fetch-kernel.sh NAME [CACHE]: make sure kernel NAME from kernels.conf is unpacked in the cache
# and print its directory. The directory holds boot/vmlinuz-VER and lib/modules/VER (with
# modules.dep), extracted with `apt-get download` + `dpkg-deb -x`: nothing is installed, no
# post-install script runs. Apt sources are derived at run time from this machine's own
# configuration (the Debian archive entry, with the suite replaced).
set -euo pipefail
NAME=${1:?usage: fetch-kernel.sh NAME [CACHE]}
CACHE=${2:-${QN_KERNEL_CACHE:-/var/cache/quench/kernels}}
HERE=$(cd "$(dirname "$0")" && pwd)

codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$codename" ] || { echo "fetch-kernel: no VERSION_CODENAME in /etc/os-release" >&2; exit 1; }
line=$(awk -v n="$NAME" '$1 == n {print; exit}' "$HERE/kernels.conf")
[ -n "$line" ] || { echo "fetch-kernel: unknown kernel '$NAME' (see scripts/vm/kernels.conf)" >&2; exit 1; }
suite=$(echo "$line" | awk '{print $2}' | sed "s/@CODENAME@/$codename/")
meta=$(echo "$line" | awk '{print $3}')

dir="$CACHE/$NAME"
if [ -f "$dir/.complete" ]; then
	echo "$dir"
	exit 0
fi

# --- the machine's Debian archive: URI and keyring of the entry that serves $codename/main
debian_source() {
	local f uri="" key="" suites="" comps=""
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		# deb822 stanzas separated by blank lines
		awk -v RS= -v cn="$codename" '
			{ uri=""; su=""; co=""; key=""; n=split($0, L, "\n")
			  for (i = 1; i <= n; i++) {
			    if (L[i] ~ /^#/) continue
			    if (L[i] ~ /^URIs:/) { sub(/^URIs:[ \t]*/, "", L[i]); split(L[i], U, " "); uri=U[1] }
			    if (L[i] ~ /^Suites:/) { su=" " L[i] " " }
			    if (L[i] ~ /^Components:/) { co=" " L[i] " " }
			    if (L[i] ~ /^Signed-By:/) { sub(/^Signed-By:[ \t]*/, "", L[i]); key=L[i] } }
			  if (uri != "" && su ~ (" " cn " ") && co ~ / main / && key ~ /debian-archive/) { print uri, key; exit } }' "$f"
	done
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk -v cn="$codename" '$1 == "deb" {
			opts = ""; i = 2
			if ($2 ~ /^\[/) { while ($i !~ /\]$/) { opts = opts " " $i; i++ } opts = opts " " $i; i++ }
			if ($(i+1) == cn) { for (j = i + 2; j <= NF; j++) if ($j == "main") { k = "/usr/share/keyrings/debian-archive-keyring.gpg"
				if (match(opts, /signed-by=[^] ]+/)) k = substr(opts, RSTART + 10, RLENGTH - 10)
				print $i, k; exit } } }' "$f"
	done
}
read -r uri keyring < <(debian_source | head -1) || true
[ -n "${uri:-}" ] || { echo "fetch-kernel: no Debian archive for '$codename' main in the apt sources" >&2; exit 1; }
[ -f "${keyring:-}" ] || keyring=/usr/share/keyrings/debian-archive-keyring.gpg

apt_dir="$CACHE/.apt-$suite"
mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/debs"
echo "deb [signed-by=$keyring] $uri $suite main" >"$apt_dir/sources.list"
APT=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
	-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache::Archives=$apt_dir/archives"
	-o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=" -o "APT::Get::List-Cleanup=0"
	-o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
echo "fetch-kernel: $NAME from suite $suite ($meta)" >&2
apt-get "${APT[@]}" -qq update >&2

# metapackage -> linux-image-VER (-> linux-modules-VER on newer releases)
pkgs=()
img=$(apt-cache "${APT[@]}" depends "$meta" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
[ -n "$img" ] || { echo "fetch-kernel: $meta in $suite depends on no linux-image-VER" >&2; exit 1; }
pkgs+=("$img")
# Newer releases split the kernel: linux-image-VER is a shell that depends on
# linux-binary-VER (vmlinuz), linux-base-VER (module metadata) and linux-modules-VER.
while read -r dep; do pkgs+=("$dep"); done < <(apt-cache "${APT[@]}" depends "$img" 2>/dev/null |
	awk '/Depends: linux-(modules|base|binary)-[0-9]/ {print $2}' | sort -u)
echo "fetch-kernel: downloading ${pkgs[*]}" >&2
(cd "$apt_dir/debs" && rm -f ./*.deb && apt-get "${APT[@]}" -qq download "${pkgs[@]}" >&2)

tmp="$dir.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
for d in "$apt_dir"/debs/*.deb; do
	dpkg-deb -x "$d" "$tmp"
done
# merged /usr: packages may ship under lib/ or usr/lib/
if [ -d "$tmp/usr/lib/modules" ] && [ ! -d "$tmp/lib/modules" ]; then
	mkdir -p "$tmp/lib"
	mv "$tmp/usr/lib/modules" "$tmp/lib/modules"
fi
ver=$(ls "$tmp/lib/modules" | head -1)
# Older packages ship boot/vmlinuz-VER, newer ones lib/modules/VER/vmlinuz.
if [ -n "$ver" ] && [ ! -f "$tmp/boot/vmlinuz-$ver" ] && [ -f "$tmp/lib/modules/$ver/vmlinuz" ]; then
	mkdir -p "$tmp/boot"
	mv "$tmp/lib/modules/$ver/vmlinuz" "$tmp/boot/vmlinuz-$ver"
fi
[ -n "$ver" ] && [ -f "$tmp/boot/vmlinuz-$ver" ] || { echo "fetch-kernel: no vmlinuz/modules in ${pkgs[*]}" >&2; exit 1; }
depmod -b "$tmp" "$ver"
echo "$ver" >"$tmp/version"
rm -rf "$dir"
mv "$tmp" "$dir"
touch "$dir/.complete"
echo "$dir"
