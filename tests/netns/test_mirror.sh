#!/usr/bin/env bash
# netns: recirculation. s1 mirrors packets to UDP port 5555: the builder's copy (a trimmed echo,
# UDP 4794) reaches the sender and the original reaches the receiver with every byte intact.
source "$(dirname "$0")/lib.sh"

topo=$(write_dumbbell 10Gbps)
"$QUENCH" topo up "$topo" >/dev/null
"$QUENCH" switch set "${TOPO_NAME}/s1" mirror_dport=5555 >/dev/null
H1=$(host_ip h1); H3=$(host_ip h3); M1=$(gw_mac h1)
N=200
bg echo "$TRAFFIC" recv --netns "$(ns h1)" --dev h1-eth0 --seconds 3
bg orig "$TRAFFIC" recv --netns "$(ns h3)" --dev h3-eth0 --seconds 3 --expect $N
sleep 0.3
"$TRAFFIC" send --netns "$(ns h1)" --dev h1-eth0 --dst-mac "$M1" --src-ip "$H1" --dst-ip "$H3" \
	--count $N --size 600 --rate 20e6 --dport 5555 --stamp >/dev/null
rc=0; wait "$PID_orig" || rc=$?
wait "$PID_echo" || true
cat "$WORK/echo.out" "$WORK/orig.out"
[ $rc -eq 0 ] || fail "the receiver did not get exactly $N intact originals"
echoes=$(field "$WORK/echo.out" echo)
[ "${echoes:-0}" -eq $N ] || fail "the sender got ${echoes:-0} echoes, expected $N"
"$QUENCH" switch stats "${TOPO_NAME}/s1" | grep mirrored
pass "$N originals intact at h3, $N recirculated echoes at h1"
