#!/usr/bin/env bash
# ctest-timeout: 300
# ctest-labels: reliability
# Another Unix user of the host cannot reach a uroce process except over the
# network, as with a RoCE NIC (docs/reliability.md, "Access control").  The
# first user (root here) runs creds_victim: an RC QP waiting for requests and
# a region open to remote writes.  As user nobody (setpriv), intruder:
#  - sends a valid RDMA WRITE (right QPN, PSN, rkey, address, ICRC) the way
#    a process of the host hands packets to another, on the victim's unix
#    socket: refused, not a byte of the region (or its guard bytes) changes;
#    the same datagram sent by the first user lands (the control);
#  - opens the host registry, the router lock file and the capture switch
#    in /dev/shm for reading and for writing: refused (all 0600, owned by
#    the first user);
#  - creates, in a fresh network namespace, the registry and lock files the
#    first user's processes would use there, readable and writable by all:
#    the first user's process refuses to use them and says why.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/progs_lib.sh"

ur_need_root
command -v setpriv >/dev/null || ur_skip "needs setpriv (util-linux) to run as a second user"
getent passwd nobody >/dev/null && getent group nogroup >/dev/null ||
	ur_skip "needs the user nobody and the group nogroup as the second user"
as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
intruder=$UR_BUILD/bin/integ_intruder
victim=$UR_BUILD/bin/integ_creds_victim

g4=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
dir=$UR_TMP/creds
mkdir -p "$dir"
UR_ENV=("CREDS_DIR=$dir")
ur_start victim "$victim" uroce0 "${g4:-1}" serve
UR_ENV=()
ur_on_exit "touch $dir/quit"
for _ in $(seq 200); do
	[ -s "$dir/info" ] && break
	sleep 0.05
done
if [ ! -s "$dir/info" ]; then
	ur_fail "the victim did not start"
	ur_stop victim
	ur_show victim
	ur_done
fi
read -r vpid qpn psn rkey va < "$dir/info"
ur_log "victim: pid $vpid, QP $qpn expecting PSN $psn, rkey $rkey, region at $va"

asks=0
# changed: sets CHANGED to how many bytes of the victim's region and guard
# bytes differ now.
changed() {
	touch "$dir/ask.$asks"
	for _ in $(seq 200); do
		[ -s "$dir/told.$asks" ] && break
		sleep 0.05
	done
	CHANGED=$(cat "$dir/told.$asks" 2>/dev/null || echo "no answer")
	asks=$((asks + 1))
}

# 1. The host registry, the router lock file and the capture switch.
ino=$(stat -L -c %i /proc/self/ns/net)
for f in /dev/shm/uroce-0-net$ino-v* /dev/shm/uroce-0-net$ino.router /dev/shm/uroce-0-net$ino.capture; do
	[ -e "$f" ] || continue
	ur_expect_eq "$(basename "$f"): owner and mode" "0 600" "$(stat -c '%u %a' "$f")"
	ur_run open.$(basename "$f") "${as_nobody[@]}" "$intruder" open "$f"
	ur_expect_rc open.$(basename "$f") 0 "nobody cannot open $(basename "$f") to read or write it"
	ur_show open.$(basename "$f") 2
done

# 2. A packet on the victim's unix socket, from nobody, then from its own user.
ur_run pkt.nobody "${as_nobody[@]}" "$intruder" packet 0 "$vpid" "$qpn" "$psn" "$rkey" "$va"
ur_expect_rc pkt.nobody 0 "nobody's datagram reached the victim's socket (the kernel took it)"
changed
ur_expect_eq "bytes changed in the victim's region after nobody's WRITE" 0 "$CHANGED"
ur_run pkt.root "$intruder" packet 0 "$vpid" "$qpn" "$psn" "$rkey" "$va"
ur_expect_rc pkt.root 0 "the same datagram from the victim's own user was sent"
changed
ur_expect_eq "bytes changed after the same WRITE from the victim's own user (the control)" 64 \
	"$CHANGED"
touch "$dir/quit"
ur_wait victim
ur_expect_rc victim 0 "the victim ran to the end"
ur_expect_grep victim "refused a datagram from another user's process" \
	"the victim says it refused a datagram from another user"

# 3. Files squatted in /dev/shm before the first user's process starts.
ns=uroce-creds-$$
ip netns add "$ns" || ur_skip "cannot create a network namespace"
ur_on_exit "ip netns del $ns"
ip -n "$ns" link set lo up
# A namespace's number can be one a deleted namespace had: what its
# processes left under that number goes first.
nsino=$(ip netns exec "$ns" stat -L -c %i /proc/self/ns/net)
rm -f /dev/shm/uroce-0-net$nsino-v* /dev/shm/uroce-0-net$nsino.router
UR_NS=$ns ur_run squat "${as_nobody[@]}" "$intruder" squat 0
ur_expect_rc squat 0 "nobody created the registry and lock files the first user would use"
for f in $(sed -n 's/^created \([^,]*\),.*/\1/p' "$(ur_out squat)"); do
	ur_on_exit "rm -f $f"
done
dir2=$UR_TMP/creds2
mkdir -p "$dir2"
touch "$dir2/quit"
UR_ENV=("CREDS_DIR=$dir2")
UR_NS=$ns ur_run victim2 "$victim" uroce0 "${g4:-1}" serve
UR_ENV=()
if [ "${UR_RC[victim2]}" != 0 ] &&
	grep -q "is not this user's alone" "$(ur_out victim2)"; then
	ur_pass "the first user's process refused the squatted registry (exit ${UR_RC[victim2]})"
else
	ur_fail "the first user's process ran on a registry another user created (exit ${UR_RC[victim2]})"
	ur_show victim2
fi
ur_done
