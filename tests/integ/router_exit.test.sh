#!/usr/bin/env bash
# ctest-timeout: 120
# ctest-labels: reliability
# A process that served UDP port 4791 for its namespace frees it as it
# exits, not when the kernel releases its files, which can be much later
# (a process killed or exiting in a mount namespace of its own, as "ip
# netns exec" makes, waits for the namespace's teardown: 0.5 s and more
# on a busy 2-core host, longer than a QP's retry budget for every pair it
# forwarded for).  tests/integ/progs/router_exit.c serves the port in a
# fresh namespace, returns from main and then lingers in an atexit handler
# of its own, which runs after uroce's: while it lingers, the port is no
# longer its socket's, and a new process of the namespace takes it.
. "$(dirname "$0")/lib.sh"
UR_TIMEOUT=60

ur_netns_new ns || ur_skip "$UR_NETNS_WHY"
export UR_NS=$ns
UR_ENV=(UROCE_LOG=info)
# wait_for NAME PATTERN: until NAME's output has a line PATTERN starts,
# NAME ends, or 10 s have passed.
wait_for() {
	for _ in $(seq 100); do
		grep -q "^$2" "$(ur_out "$1")" && break
		kill -0 "${UR_PID[$1]}" 2>/dev/null || break
		sleep 0.1
	done
}

ur_start old integ_router_exit uroce0 4
wait_for old lingering
ur_expect_grep old 'this process serves UDP port 4791' "the first process of the namespace served the port"
ur_expect_grep old '^lingering' "it returned from main and lingers in its own atexit handler"
pid=$(ur_prog_pid old)
owners=$(ur_nsexec "$ns" ss -Hulnp 'sport = :4791' 2>/dev/null)
if [ -n "$pid" ] && [[ $owners != *"pid=$pid,"* ]]; then
	ur_pass "while it lingers, port 4791 is not its socket's any more"
else
	ur_fail "port 4791 still held by the exiting process $pid: $owners"
fi
ur_run new integ_router_exit uroce0 0
ur_expect_eq "a new process of the namespace" 0 "${UR_RC[new]}"
ur_expect_grep new 'this process serves UDP port 4791' "a new process takes the port over while the old one lingers"
kill -0 "${UR_PID[old]}" 2>/dev/null && ur_pass "the old process was still there" ||
	ur_fail "the old process ended before the check: it lingered less than the test took"
ur_wait old
ur_expect_eq "the old process, once its handler is done" 0 "${UR_RC[old]}"

# Handed on, nothing lost: between two namespaces every datagram for the
# server's namespace comes through port 4791.  A process that serves it
# there exits in the middle of a UD stream (integ_dgram, 4000 datagrams
# at 1000 a second, 1024 receives posted: a second of them) to another
# process of that namespace; it hands its sockets, still bound and with
# what they hold, and its lock to that process
# (xport/udp/udp_port_pass.c), so no datagram is lost.  Freeing the port
# instead lost what arrived until the next election, up to 200 ms of the
# stream.
ur_netns_server_client 1500
DGRAM=$UR_BUILD/bin/integ_dgram
UR_NS=$UR_SNS ur_start router integ_router_exit "$sdev" 1 "$UR_TMP/router.go"
wait_for router serving
ur_expect_grep router 'this process serves UDP port 4791' "the server's namespace: the first process serves the port"
port=$(UR_NS=$UR_SNS ur_port)
UR_NS=$UR_SNS ur_start hand.server "$DGRAM" "$sdev" "$gs" -s "$port"
if UR_NS=$UR_SNS ur_wait_listen "$port" "${UR_PID[hand.server]}"; then
	spid=$(ur_prog_pid hand.server)
	UR_NS=$UR_CNS ur_start hand.client "$DGRAM" "$cdev" "$gc" -c "$UR_IP_B" "$port" --type ud \
		--messages 4000 --rate 1000 --max-size 1024 --depth 256 --seed 41
	sleep 1.5
else
	ur_fail "the dgram server did not listen"
	spid=none
fi
touch "$UR_TMP/router.go"
ur_wait router
ur_wait hand.client
ur_wait hand.server
ur_expect_pair_ok hand "UD across namespaces while the port changes hands"
ur_expect_grep router "handed to pid $spid" "the exiting process handed the port to the dgram server"
ur_expect_grep hand.server 'handed this process UDP port 4791' "the dgram server took the port over as it was"
line=$(grep -hE '^(ok|FAIL): dgram: server: UD: ' "$(ur_out hand.server)")
read -r sent got < <(printf '%s\n' "$line" | sed -n \
	's/.* UD: \([0-9]*\) messages sent, \([0-9]*\) arrived whole and intact, .*/\1 \2/p')
ur_log "UD while the port changed hands: ${line#*: dgram: server: UD: }"
grep -h '^dgram: lost on' "$(ur_out hand.server)" || true
ur_log "the server's namespace, uroce1: $(ur_nsexec "$UR_SNS" "$UR_BUILD/bin/uroce" devinfo -d uroce1 -c |
	awk '$1 ~ /^(rcvd_pkts|rdma_recvs|send_rnr_err|host_lost|no_qp|malformed)$/ { printf "%s %s ", $1, $2 }')"
for tag in router hand.server hand.client; do
	ur_sanitizer_clean "$tag"
done
ur_expect_eq "datagrams sent" 4000 "${sent:-}"
ur_expect_eq "datagrams that arrived, none lost while the port changed hands" 4000 "${got:-}"
ur_done
