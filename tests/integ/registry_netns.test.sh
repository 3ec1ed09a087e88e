#!/usr/bin/env bash
# ctest-timeout: 120
# The host registry of a network namespace that is gone does not stay in
# /dev/shm (src/host/registry_sweep.c), and one that lives is
# never taken away:
#  - gone: ibv_devinfo runs in namespace A (its registry and router lock
#    file appear), A is deleted, ibv_devinfo runs here: both files are gone;
#  - kept, held by a mount: namespace B ("ip netns add", no process in it
#    once ibv_devinfo has run there) keeps its files through the same run;
#  - kept, held by a process: an ibv_rc_pingpong server waits in namespace
#    C, C's name is deleted (the server still holds it): its files stay
#    while the server lives and go with the next run once it has ended;
#  - the names B and C deleted, the last run here leaves none of the
#    three namespaces' files.
. "$(dirname "$0")/lib.sh"

ur_need_root
UR_TIMEOUT=30
uid=$(id -u)

# ns_add NAME: a namespace with lo up, removed at exit.
ns_add() {
	ip netns add "$1" || return 1
	ur_on_exit "ip netns del $1"
	ip -n "$1" link set lo up
}
ns_ino() { ip netns exec "$1" stat -L -c %i /proc/self/ns/net; }
reg_files() { ls /dev/shm/uroce-"$uid"-net"$1"-v* /dev/shm/uroce-"$uid"-net"$1".router 2>/dev/null | wc -l; }

ns_a=uroce-t$$-reg-a
ns_b=uroce-t$$-reg-b
ns_c=uroce-t$$-reg-c
ns_add "$ns_a" && ns_add "$ns_b" && ns_add "$ns_c" || { ur_fail "cannot make namespaces"; ur_done; }
ino_a=$(ns_ino "$ns_a")
ino_b=$(ns_ino "$ns_b")
ino_c=$(ns_ino "$ns_c")

UR_NS=$ns_a ur_run devinfo.a ibv_devinfo -d uroce0
ur_expect_rc devinfo.a 0 "ibv_devinfo in namespace A"
UR_NS=$ns_b ur_run devinfo.b ibv_devinfo -d uroce0
ur_expect_rc devinfo.b 0 "ibv_devinfo in namespace B"
ur_expect_eq "namespace A's registry and router lock file, once used" 2 "$(reg_files "$ino_a")"
ur_expect_eq "namespace B's registry and router lock file, once used" 2 "$(reg_files "$ino_b")"

port=$(UR_NS=$ns_c ur_port)
UR_NS=$ns_c ur_start server.c ibv_rc_pingpong -d uroce0 -g 1 -p "$port"
if UR_NS=$ns_c ur_wait_listen "$port" "${UR_PID[server.c]}" 20; then
	ur_pass "an ibv_rc_pingpong server waits in namespace C"
else
	ur_fail "the ibv_rc_pingpong server in namespace C did not start"
	ur_show server.c
fi
ur_expect_eq "namespace C's registry (and router lock file), in use" 2 "$(reg_files "$ino_c")"

ip netns del "$ns_a"
ip netns del "$ns_c"
ur_run devinfo.here ibv_devinfo -d uroce0
ur_expect_rc devinfo.here 0 "ibv_devinfo here, after A and C's names are deleted"
ur_expect_eq "namespace A (gone): files left" 0 "$(reg_files "$ino_a")"
ur_expect_eq "namespace B (held by its mount): files kept" 2 "$(reg_files "$ino_b")"
ur_expect_eq "namespace C (held by its server): files kept" 2 "$(reg_files "$ino_c")"

ur_stop server.c
ip netns del "$ns_b"
ur_run devinfo.last ibv_devinfo -d uroce0
ur_expect_rc devinfo.last 0 "ibv_devinfo here, after the server ended and B's name is deleted"
ur_expect_eq "namespace B (gone): files left" 0 "$(reg_files "$ino_b")"
ur_expect_eq "namespace C (gone): files left" 0 "$(reg_files "$ino_c")"
ur_done
