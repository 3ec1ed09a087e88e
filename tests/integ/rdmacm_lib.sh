# Shared by the rdmacm_*.test.sh: a server and client that meet through
# uroce's librdmacm.so.1 (rdma_cm's own port space, no TCP listener to wait
# for).  Sourced after lib.sh.

# cm_pair NAME SERVER_PROG ARGS... -- CLIENT_PROG ARGS...
# Starts NAME.server, waits until it listens when its arguments name the
# port (-p PORT), then runs NAME.client until it is not turned away for
# want of a listener (the server is still starting: REJECTED, reason 8,
# invalid service ID), for at most 30 s; waits for both.  Returns 0 when
# both exit 0.  UR_SNS / UR_CNS: the server's / client's namespaces.
# CM_STOP_SERVER=1: the server runs until stopped; it is, once the client
# is done, and only the client's exit counts.
cm_pair() {
	local name=$1 a seen=0 s=() c=() try
	shift
	for a in "$@"; do
		if [ $seen = 0 ] && [ "$a" = "--" ]; then seen=1; continue; fi
		if [ $seen = 0 ]; then s+=("$a"); else c+=("$a"); fi
	done
	UR_NS=${UR_SNS-$UR_NS} ur_start "$name.server" "${s[@]}" || return 1
	# With the server's -p PORT known, the client starts once the server
	# listens (as ur_wait_listen waits for a TCP listener): a client turned
	# away sends perftest 4.5 into a retry path that reuses what it freed.
	# (CM_PORT names it for programs without -p: udaddy's is fixed, 7174.)
	local lport=${CM_PORT:-}
	if [ -z "$lport" ]; then
		for ((a = 0; a < ${#s[@]} - 1; a++)); do
			[ "${s[a]}" = -p ] || continue
			lport=${s[a + 1]}
			break
		done
	fi
	if [ -n "$lport" ]; then
		UR_NS=${UR_SNS-$UR_NS} ur_run "$name.listening" \
			"$UR_BUILD/bin/integ_cm_listening" "$lport" 30 ||
			ur_fail "$name: the server does not listen on rdma_cm port $lport"
	fi
	for try in $(seq 100); do
		UR_NS=${UR_CNS-$UR_NS} ur_run "$name.client" "${c[@]}"
		[ "${UR_RC[$name.client]}" = 0 ] && break
		grep -Eq 'REJECTED(,|;) error:? 8|CM event bl blka 8|Connection refused' \
			"$(ur_out "$name.client")" || break
		kill -0 "${UR_PID[$name.server]}" 2>/dev/null || break
		cp "$(ur_out "$name.client")" "$UR_TMP/$name.client.try$try.out"
		sleep 0.3
	done
	if [ -n "${CM_STOP_SERVER:-}" ]; then
		ur_stop "$name.server"   # a server that serves until stopped (cmtime)
		[ "${UR_RC[$name.client]}" = 0 ]
		return
	fi
	ur_wait "$name.server"
	[ "${UR_RC[$name.client]}" = 0 ] && [ "${UR_RC[$name.server]}" = 0 ]
}

# cm_expect_refused NAME [WHAT]: run NAME failed on its own (any non-zero
# exit but the timeout's or a signal's: rping exits 255) within 10 s.
cm_expect_refused() {
	local rc=${UR_RC[$1]:-none} t=${UR_ELAPSED[$1]:-99}
	if [ "$rc" != 0 ] && [ "$rc" != none ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] &&
	   [ "$rc" != 139 ] && [ "$rc" != 134 ] && awk "BEGIN { exit !($t < 10) }"; then
		ur_pass "${2:-$1}: refused, exit $rc in ${t}s"
		return 0
	fi
	ur_fail "${2:-$1}: expected a refusal within 10 s, saw exit $rc after ${t}s"
	ur_show "$1"
	return 1
}

# cm_check_rping OUT PREFIX COUNT: OUT has COUNT lines "PREFIXping data:
# rdma-ping-N: ..." for N = 0..COUNT-1, each with rping's rotating
# pattern (characters 'A'..'z' from 'A' + N mod 58), as the peer sent it
# (rping's stderr lines may land inside any one).
cm_check_rping() {
	python3 - "$1" "$2" "$3" <<'PY'
import re, sys
out, prefix, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
seen = {}
# rping's lines on unbuffered stderr (its event thread's DISCONNECT, the
# server's "wait for RDMA_READ_ADV state 10" as it ends) land wherever the
# buffered stdout was last flushed (every 4 KiB): inside a ping's line.
text = re.sub(r"(server|client) DISCONNECT EVENT\.\.\.\n?|wait for \w+ state \d+\n",
              "", open(out, errors="replace").read())
for line in text.splitlines():
    m = re.match(re.escape(prefix) + r"ping data: rdma-ping-(\d+): (.*)$", line)
    if m:
        seen[int(m.group(1))] = m.group(2)
bad = []
for n in range(count):
    data = seen.get(n)
    if data is None:
        bad.append(f"ping {n} missing")
        continue
    c = 65 + n % 58
    for i, ch in enumerate(data):
        if ord(ch) != c:
            bad.append(f"ping {n}: byte {i} is {ch!r}, expected {chr(c)!r}")
            break
        c = 65 if c == 122 else c + 1
    if len(data) < 10:
        bad.append(f"ping {n}: only {len(data)} bytes")
if len(seen) != count:
    bad.append(f"{len(seen)} pings, expected {count}")
print("FAIL: " + "; ".join(bad[:5]) if bad else f"ok: {count} pings, each with its pattern")
PY
}

# cm_mckey NAME GROUP RECV_BIND SEND_BIND COUNT: mckey's receiver (in
# UR_SNS, bound to RECV_BIND) joins GROUP; once it says so, mckey's sender
# (in UR_CNS, bound to SEND_BIND, a send-only member) sends COUNT datagrams
# to the group.  The receiver waits for all COUNT; both must exit 0.
cm_mckey() {
	local name=$1 grp=$2 rb=$3 sb=$4 n=$5 i
	# Line-buffered, or "joined" shows only at exit and the wait below
	# always runs its full 10 s.
	UR_NS=${UR_SNS-$UR_NS} ur_start "$name.recv" stdbuf -oL mckey -m "$grp" -b "$rb" -C "$n" || return 1
	for i in $(seq 100); do
		grep -q '^mckey: joined' "$(ur_out "$name.recv")" && break
		sleep 0.1
	done
	UR_NS=${UR_CNS-$UR_NS} ur_run "$name.send" mckey -m "$grp" -b "$sb" -s -C "$n"
	ur_wait "$name.recv"
	if [ "${UR_RC[$name.send]}" = 0 ] && [ "${UR_RC[$name.recv]}" = 0 ] &&
	   grep -q '^data transfers complete' "$(ur_out "$name.recv")"; then
		ur_pass "$name: mckey's $n datagrams to $grp all received"
	else
		ur_fail "$name: mckey sender exit ${UR_RC[$name.send]}, receiver exit ${UR_RC[$name.recv]}"
		ur_show "$name.send"
		ur_show "$name.recv"
	fi
}
