#!/usr/bin/env bash
# docs/switch.md lists every switch setting and every port counter: the key table
# (`quench switch keys`) and QN_PORT_COUNTERS (bpf/include/qn_abi.h) are the source; a key or a
# counter missing from the docs fails here; so do the switch gauges of QN_SW_GAUGES.
set -u
QUENCH=$1
DOC=docs/switch.md
rc=0
keys=$("$QUENCH" switch keys | awk 'NR > 1 { print $1 }')
[ -n "$keys" ] || { echo "FAIL: quench switch keys printed no key"; exit 1; }
for k in $keys; do
	grep -q "| [a-z]* | \`$k\`\|, \`$k\` |\|\`$k\`, " "$DOC" || { echo "FAIL: setting '$k' is not in $DOC's settings table"; rc=1; }
done
counters=$(sed -n '/^#define QN_PORT_COUNTERS/,/^$/p' bpf/include/qn_abi.h | sed -n 's/.*X(\([a-z_]*\),.*/\1/p')
[ -n "$counters" ] || { echo "FAIL: no counter found in QN_PORT_COUNTERS"; exit 1; }
for c in $counters; do
	grep -q "^| \`$c\`\|^| \`[a-z_]*\`, \`$c\`\|^| \`[a-z_]*\`, \`[a-z_]*\`, \`$c\`" "$DOC" || { echo "FAIL: counter '$c' is not in $DOC's counters table"; rc=1; }
done
gauges=$(sed -n '/^#define QN_SW_GAUGES/,/^$/p' bpf/include/qn_abi.h | sed -n 's/.*X(\([a-z_]*\),.*/\1/p')
[ -n "$gauges" ] || { echo "FAIL: no gauge found in QN_SW_GAUGES"; exit 1; }
for g in $gauges; do
	grep -q "^| \`$g\`" "$DOC" || { echo "FAIL: gauge '$g' is not in $DOC's gauges table"; rc=1; }
done
[ $rc -eq 0 ] && echo "ok: $(echo "$keys" | wc -w) settings, $(echo "$counters" | wc -w) counters and $(echo "$gauges" | wc -w) gauges documented"
exit $rc
