#!/usr/bin/env bash
# ctest-timeout: 600
# ctest-labels: tsan
# Protocol errors end the way IBA and rxe say, through the public verbs API
# (tests/integ/progs, two QPs of one process connected through the device):
#  - remote_access: RDMA WRITE/READ/atomics with a bad or stale rkey, out of
#    range (either end, multi-packet), without the MR's or the QP's access
#    flag, misaligned atomics: IBV_WC_REM_ACCESS_ERR (misaligned:
#    IBV_WC_REM_INV_REQ_ERR) and not one byte of the target or its guard
#    bytes changed; both QPs in error, the rest flushed; in-bounds controls;
#  - send_errors: SEND longer than the receive (LOC_LEN_ERR at the receiver,
#    REM_INV_REQ_ERR at the sender), RNR with rnr_retry 0, 2 and 7, retry
#    exceeded towards a destroyed peer or one in error, flush on ERR;
#    RTR towards a GID with no route (::ffff:192.0.2.1, 2001:db8::1, in a
#    namespace without a default route): ibv_modify_qp fails at once with
#    ENETUNREACH, as the kernel's route resolution does, and no packet is
#    sent; a UD QP reaches RTS there;
#  - none of those failed work requests is printed by the library (no
#    "uroce ..." line on the program's stderr); the hw counter
#    completion_errors counts them.
# On uroce0 (lo, path MTU 4096, IPv4 GID), on uroce0 with its IPv6 GID (::1),
# and in a namespace on a 1500-byte veth (uroce1, path MTU 1024).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/progs_lib.sh"
UR_TIMEOUT=240

prog_lo_gids

# completion_errors of uroce0, summed over the host's processes.
cerrs() {
	local n=cerrs.$RANDOM
	ur_run "$n" "$UR_BUILD/bin/uroce" devinfo -c -d uroce0 >/dev/null
	awk '$1 == "completion_errors" { print $2 }' "$(ur_out "$n")"
}
c0=$(cerrs)
prog_run lo.remote_access remote_access uroce0 "${g4:-1}"
prog_run lo.send_errors send_errors uroce0 "${g4:-1}"
# Every one of those errors is a completion the program asked for and got:
# the library prints none of them, it counts them.
for t in lo.remote_access lo.send_errors; do
	ur_expect_no_grep "$t" '^uroce ' "$t: the library wrote nothing on stderr"
done
c1=$(cerrs)
if [ -n "$c0" ] && [ -n "$c1" ] && [ "$c1" -ge $((c0 + 40)) ]; then
	ur_pass "completion_errors counted them: $c0 -> $c1"
else
	ur_fail "completion_errors did not count them: '$c0' -> '$c1'"
fi
prog_run lo6.remote_access remote_access uroce0 "${g6:-2}" bad_rkey out_of_range
prog_run lo6.send_errors send_errors uroce0 "${g6:-2}"

ur_netns_pair 1500
UR_NS=$UR_NS_A prog_run veth.remote_access remote_access uroce1 1
UR_NS=$UR_NS_A prog_run veth.send_errors send_errors uroce1 1
UR_NS=$UR_NS_A prog_run veth.rtr_no_route send_errors uroce1 1 rtr_no_route
g6a=$(UR_NS=$UR_NS_A ur_gid_index uroce1 "$UR_IP6_A")
UR_NS=$UR_NS_A prog_run veth6.rtr_no_route send_errors uroce1 "${g6a:-2}" rtr_no_route

ur_done
