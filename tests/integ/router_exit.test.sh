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
ur_start old integ_router_exit uroce0 4
for _ in $(seq 100); do
	grep -q '^lingering' "$(ur_out old)" && break
	kill -0 "${UR_PID[old]}" 2>/dev/null || break
	sleep 0.1
done
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
ur_done
