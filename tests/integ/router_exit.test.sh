#!/usr/bin/env bash
# ctest-timeout: 180
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

# A child of fork() that does not exec and outlives its parent, the
# router, lets the port go: it closes its copies of the port's sockets and
# lock as it is made (xport/udp/udp_host_port.c's fork handler), so the
# next process binds the port while the child still lives.  Before, the
# child kept the sockets bound: "cannot bind UDP port 4791".
ur_start forker integ_router_exit uroce0 0 - 8
wait_for forker child
ur_wait forker
ur_expect_grep forker '^child [0-9]+' "a router forked a child that outlives it"
child=$(sed -n 's/^child //p' "$(ur_out forker)")
if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
	ur_pass "its child $child still lives"
else
	ur_fail "its child ${child:-?} ended before the check"
fi
ur_run next integ_router_exit uroce0 0
ur_expect_grep next 'this process serves UDP port 4791' "the next process of the namespace serves the port while the child lives"
if grep -q 'cannot bind UDP port' "$(ur_out next)"; then
	ur_fail "the next process could not bind the port: $(grep -m1 'cannot bind' "$(ur_out next)")"
else
	ur_pass "the next process bound the port (no \"cannot bind\")"
fi
[ -n "$child" ] && kill "$child" 2>/dev/null

# Passed on, nothing lost: between two namespaces every datagram for the
# server's namespace comes through port 4791.  A process that serves it
# there ends in the middle of a UD stream (integ_dgram, 4000 datagrams at
# 1000 a second, 1024 receives posted: a second of them), and another
# process of that namespace, the stream's server, serves the port after
# it (xport/udp/udp_port_pass.c), nothing lost:
#   exit: the router returns from main; it hands its sockets, still bound
#     and with what they hold, and its lock to the server.  Freeing the
#     port instead lost what arrived until the next election, up to 200 ms
#     of the stream (80 and 176 datagrams in two runs).
#   kill: the router is stopped (its socket fills with what it does not
#     read) and then killed; the server held a copy of its sockets and
#     lock in reserve, and serves them, with what they hold, once the
#     router's pidfd says it has ended.
ur_netns_server_client 1500
DGRAM=$UR_BUILD/bin/integ_dgram
stop_s=0.3
[ "$(id -u)" = 0 ] || stop_s=0.05    # a user's socket buffers are small (net.core.rmem_max)

# ud_through HOW: the stream, and the router's end by HOW (exit, kill).
ud_through() {
	local how=$1 t=$1 spid=none port line sent got
	UR_NS=$UR_SNS ur_start "$t.router" integ_router_exit "$sdev" 1 "$UR_TMP/$t.go"
	wait_for "$t.router" serving
	ur_expect_grep "$t.router" 'this process serves UDP port 4791' \
		"$how: the first process of the server's namespace serves the port"
	port=$(UR_NS=$UR_SNS ur_port)
	UR_NS=$UR_SNS ur_start "$t.server" "$DGRAM" "$sdev" "$gs" -s "$port"
	if UR_NS=$UR_SNS ur_wait_listen "$port" "${UR_PID[$t.server]}"; then
		spid=$(ur_prog_pid "$t.server")
		[ "$how" = kill ] && wait_for "$t.router" "uroce info: .*held in reserve by pid $spid"
		UR_NS=$UR_CNS ur_start "$t.client" "$DGRAM" "$cdev" "$gc" -c "$UR_IP_B" "$port" \
			--type ud --messages 4000 --rate 1000 --max-size 1024 --depth 256 --seed 41
		sleep 1.5
	else
		ur_fail "$how: the dgram server did not listen"
	fi
	if [ "$how" = exit ]; then
		touch "$UR_TMP/$t.go"
	else
		ur_prog_signal "$t.router" STOP stop
		sleep "$stop_s"
		ur_prog_signal "$t.router" KILL kill
	fi
	ur_wait "$t.router"
	ur_wait "$t.client"
	ur_wait "$t.server"
	ur_expect_pair_ok "$t" "$how: UD across namespaces while the port changes hands"
	if [ "$how" = exit ]; then
		ur_expect_grep "$t.router" "handed to pid $spid" "exit: the router handed the port to the dgram server"
		ur_expect_grep "$t.server" 'handed this process UDP port 4791' \
			"exit: the dgram server took the port over as it was"
	else
		ur_expect_grep "$t.router" "held in reserve by pid $spid" \
			"kill: the router kept a copy of the port with the dgram server"
		ur_expect_grep "$t.server" 'with its sockets held here in reserve' \
			"kill: the dgram server served the copy once the router was gone"
	fi
	line=$(grep -hE '^(ok|FAIL): dgram: server: UD: ' "$(ur_out "$t.server")")
	read -r sent got < <(printf '%s\n' "$line" | sed -n \
		's/.* UD: \([0-9]*\) messages sent, \([0-9]*\) arrived whole and intact, .*/\1 \2/p')
	ur_log "$how: ${line#*: dgram: server: UD: }"
	grep -h '^dgram: lost on' "$(ur_out "$t.server")" || true
	ur_log "$how: the server's namespace, uroce1, since the start: $(ur_nsexec "$UR_SNS" \
		"$UR_BUILD/bin/uroce" devinfo -d uroce1 -c | awk '$1 ~ /^(rcvd_pkts|rdma_recvs|send_rnr_err|host_lost|no_qp|malformed)$/ { printf "%s %s ", $1, $2 }')"
	ur_sanitizer_clean "$t.server"
	ur_sanitizer_clean "$t.client"
	[ "$how" = exit ] && ur_sanitizer_clean "$t.router"
	ur_expect_eq "$how: datagrams sent" 4000 "${sent:-}"
	ur_expect_eq "$how: datagrams that arrived, none lost while the port changed hands" 4000 "${got:-}"
}

# Only the process the router chose serves a copy of the port.  The first
# process to hold the router's copy in reserve is stopped, and the router
# keeps a new copy with a second process; the first runs again, with its
# copy.  When the router ends (exit, or SIGKILL), the first must not serve
# its copy too: the copies are the same sockets and the same lock (its
# flock succeeds again), and two readers would split the namespace's
# packets.  The lock file names the router's choice (xport/udp/
# udp_lock_file.c).  At exit the router tries the holder of its reserve
# first, before the first process, which the registry lists first.  Killed,
# the router is stopped first (no tick of its own moves the reserve again),
# then the second, so that the first decides alone; before, it took the
# port over ("takes the port over, with its sockets held here in reserve"),
# and the second did too once it ran.
stale_copy() {
	local how=$1 t=stale.$1 ns2 first second env=("${UR_ENV[@]}")
	ur_netns_new ns2 || { ur_fail "$how: no namespace: $UR_NETNS_WHY"; return; }
	UR_NS=$ns2 ur_start "$t.router" integ_router_exit uroce0 0 "$UR_TMP/$t.go"
	wait_for "$t.router" serving
	UR_ENV=(UROCE_LOG=debug)
	UR_NS=$ns2 ur_start "$t.first" integ_router_exit uroce0 0 "$UR_TMP/$t.end"
	UR_ENV=("${env[@]}")
	first=$(ur_prog_pid "$t.first")
	wait_for "$t.router" "uroce info: .*held in reserve by pid $first"
	wait_for "$t.first" "uroce debug: .*holding UDP port 4791 in reserve"
	ur_expect_grep "$t.first" "holding UDP port 4791 in reserve for pid" \
		"$how: the first process holds the router's copy in reserve"
	ur_prog_signal "$t.first" STOP stop
	UR_NS=$ns2 ur_start "$t.second" integ_router_exit uroce0 0 "$UR_TMP/$t.end"
	second=$(ur_prog_pid "$t.second")
	wait_for "$t.router" "uroce info: .*held in reserve by pid $second"
	ur_expect_grep "$t.router" "held in reserve by pid $second" \
		"$how: with the first stopped, the router keeps a copy with the second"
	ur_prog_signal "$t.first" CONT cont
	if [ "$how" = exit ]; then
		touch "$UR_TMP/$t.go"
		ur_wait "$t.router"
	else
		ur_prog_signal "$t.router" STOP stop
		ur_prog_signal "$t.second" STOP stop
		ur_prog_signal "$t.router" KILL kill
		ur_wait "$t.router"
	fi
	wait_for "$t.first" "uroce [a-z]*: .*\(the copy of UDP port 4791 held for pid\|takes the port over\|in reserve for pid $second\)"
	[ "$how" = exit ] || ur_prog_signal "$t.second" CONT cont
	wait_for "$t.second" "uroce info: .*\(handed this process\|held here in reserve\)"
	if [ "$how" = exit ]; then
		ur_expect_grep "$t.router" "handed to pid $second" \
			"exit: the router handed the port to its reserve's holder first"
		ur_expect_grep "$t.second" 'handed this process UDP port 4791' \
			"exit: the second took the port over"
	else
		ur_expect_grep "$t.second" 'with its sockets held here in reserve' \
			"kill: the second served its copy once the router was gone"
	fi
	# At exit the second may have taken the port before the first looks,
	# or given the first a copy of its own, which replaces the old one.
	ur_expect_grep "$t.first" "is not served: (the router chose another process|another process serves the port since)|holding UDP port 4791 in reserve for pid $second" \
		"$how: the first dropped its copy"
	ur_expect_no_grep "$t.first" "takes the port over|handed this process|serves UDP port" \
		"$how: the first does not serve the port"
	touch "$UR_TMP/$t.end"
	ur_wait "$t.first"
	ur_wait "$t.second"
	ur_expect_eq "$how: the first process" 0 "${UR_RC[$t.first]}"
	ur_expect_eq "$how: the second process" 0 "${UR_RC[$t.second]}"
}

# The exit's message taken by nobody: a router that exits and whose
# message to its reserve's holder cannot be sent, with no other process to
# take it, leaves the port to that holder, which has it all in reserve and
# serves it once it runs and sees the router gone (udp_port_pass.c,
# ur_udp_port_hand_on's last way).  The holder is frozen in a cgroup (as a
# paused container is: alive, not stopped, running nothing) and its unix
# socket's queue filled with datagrams it drops as malformed once it reads
# them, so the router's message finds no room.  Needs root and cgroup v2's
# freezer.
freezer_dir() {
	local root
	root=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$root" ] && [ -f "$root/cgroup.procs" ] && [ "$(id -u)" = 0 ] || return 1
	mkdir "$root/uroce-test-$$" 2>/dev/null && [ -f "$root/uroce-test-$$/cgroup.freeze" ] ||
		{ rmdir "$root/uroce-test-$$" 2>/dev/null; return 1; }
	echo "$root/uroce-test-$$"
}

# freeze CGROUP 1|0: freezes or thaws the cgroup and waits until it is.
freeze() {
	local i
	echo "$2" > "$1/cgroup.freeze"
	for i in $(seq 50); do
		grep -qx "frozen $2" "$1/cgroup.events" && return 0
		sleep 0.1
	done
	return 1
}

unsent() {
	local t=unsent ns3 holder n owners cg root
	if ! cg=$(freezer_dir); then
		ur_log "unsent: not run: needs root and cgroup v2's freezer (cgroup.freeze)"
		return
	fi
	root=${cg%/*}
	ur_netns_new ns3 || { ur_fail "unsent: no namespace: $UR_NETNS_WHY"; rmdir "$cg"; return; }
	UR_NS=$ns3 ur_start "$t.router" integ_router_exit uroce0 0 "$UR_TMP/$t.go"
	wait_for "$t.router" serving
	UR_NS=$ns3 ur_start "$t.holder" integ_router_exit uroce0 0 "$UR_TMP/$t.end"
	holder=$(ur_prog_pid "$t.holder")
	wait_for "$t.router" "uroce info: .*held in reserve by pid $holder"
	ur_expect_grep "$t.router" "held in reserve by pid $holder" \
		"unsent: the router keeps a copy of the port with the holder"
	echo "$holder" > "$cg/cgroup.procs"
	if freeze "$cg" 1; then
		ur_pass "unsent: the holder frozen"
	else
		ur_fail "unsent: the holder's cgroup did not freeze: $(cat "$cg/cgroup.events")"
	fi
	# The holder's socket ("@uroce-fwd-UID-PID", where processes of the
	# host hand each other packets and ports) filled while it cannot read.
	n=$(ur_nsexec "$ns3" python3 -c '
import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
addr = b"\0uroce-fwd-%d-%s" % (os.getuid(), sys.argv[1].encode())
n = 0
while n < 1000:
    try:
        s.sendto(b"not a uroce message", socket.MSG_DONTWAIT, addr)
    except BlockingIOError:
        break
    n += 1
print(n)' "$holder" 2>&1)
	if [[ $n =~ ^[0-9]+$ ]] && [ "$n" -lt 1000 ]; then
		ur_pass "unsent: the holder's socket full after $n datagrams"
	else
		ur_fail "unsent: the holder's socket did not fill: $n"
	fi
	touch "$UR_TMP/$t.go"
	ur_wait "$t.router"
	ur_expect_grep "$t.router" "stays with pid $holder, which holds it in reserve" \
		"unsent: the router, its message taken by nobody, left the port to the holder"
	ur_expect_no_grep "$t.router" "is free for the host's next process|handed to pid" \
		"unsent: the router neither freed the port nor handed it on"
	freeze "$cg" 0 || ur_fail "unsent: the holder's cgroup did not thaw"
	echo "$holder" > "$root/cgroup.procs"
	rmdir "$cg"
	wait_for "$t.holder" "uroce info: .*held here in reserve"
	ur_expect_grep "$t.holder" "with its sockets held here in reserve" \
		"unsent: the holder served its copy once it ran"
	owners=$(ur_nsexec "$ns3" ss -Hulnp 'sport = :4791' 2>/dev/null)
	if [[ $owners == *"pid=$holder,"* ]]; then
		ur_pass "unsent: port 4791 is the holder's"
	else
		ur_fail "unsent: port 4791 not held by the holder $holder: ${owners:-nobody}"
	fi
	touch "$UR_TMP/$t.end"
	ur_wait "$t.holder"
	ur_expect_eq "unsent: the holder" 0 "${UR_RC[$t.holder]}"
}

ud_through exit
ud_through kill
stale_copy exit
stale_copy kill
unsent
ur_done
