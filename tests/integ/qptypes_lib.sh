# What the qptypes_*.test.sh integration tests (UC, UD, multicast, SRQ,
# XRC, async events, memory windows, CQ details) share beyond lib.sh's
# harness (ur_*), which this sources: their two topologies, the runs of
# their test programs (tests/integ/qptypes/qpt_*, found by name in
# $UROCE_BUILD/bin) and the checks of those runs.
#
#   qt_topologies [MTU]         the namespaces and devices of both topologies
#   qt_prog_pair NAME SNS CNS DEV GIDX SERVER_IP PROG ARGS...
#                               a test program as server and client
#   qt_prog_both NAME PROG ARGS...   qt_prog_pair in both topologies
#   qt_netns_solo               a namespace QT_NS_S with only lo
#   qt_expect_prog NAME [WHAT]  a test program passed all its own checks
#   qt_expect_pair NAME [WHAT]  both sides of ur_pair NAME exited 0
#   qt_wait_output NAME ERE [SECONDS]   until run NAME prints ERE
#
# The last three count a sanitizer report in the output as a failure.

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The devices of the namespaces the test makes, never those a user's
# configuration file names.
export UROCE_DEVICES_FILE=/dev/null

# qt_sanitizer_report NAME: run NAME printed an ASan/UBSan/TSan report.
qt_sanitizer_report() { grep -Eq "$UR_SANITIZER_ERE" "$(ur_out "$1")" 2>/dev/null; }

# qt_expect_pair NAME [WHAT]: ur_expect_pair_ok, and no sanitizer report
# from either side.
qt_expect_pair() {
	local side
	for side in server client; do
		qt_sanitizer_report "$1.$side" || continue
		ur_fail "${2:-$1}: a sanitizer report from the $side"
		ur_show "$1.$side"
		return 1
	done
	ur_expect_pair_ok "$@"
}

# qt_expect_prog NAME [WHAT]: a test program of ours exited 0 with no
# sanitizer report; its own "ok:"/"FAIL:" lines are folded into one check
# (at least one "ok:", no "FAIL:", which are shown).
qt_expect_prog() {
	local rc=${UR_RC[$1]:-none} f nok nfail
	f=$(ur_out "$1")
	nok=$(grep -c '^ok: ' "$f" 2>/dev/null)
	nfail=$(grep -c '^FAIL: ' "$f" 2>/dev/null)
	grep '^FAIL: ' "$f" 2>/dev/null | sed "s/^/    [$1] /"
	if [ "$rc" = 0 ] && [ "${nfail:-0}" = 0 ] && [ "${nok:-0}" -gt 0 ] && ! qt_sanitizer_report "$1"; then
		ur_pass "${2:-$1}: $nok checks passed (${UR_ELAPSED[$1]}s)"
		return 0
	fi
	ur_fail "${2:-$1}: exit $rc$([ "$rc" = 124 ] && echo ' (a hang, killed by the timeout)'), $nok checks passed, $nfail failed"
	ur_show "$1" 40
	return 1
}

# qt_wait_output NAME ERE [SECONDS]: until run NAME prints a line matching
# ERE (default 60 s); fails early if it exits without.
qt_wait_output() {
	local i limit=$((${3:-60} * 10)) f
	f=$(ur_out "$1")
	for ((i = 0; i < limit; i++)); do
		grep -Eq -- "$2" "$f" 2>/dev/null && return 0
		[ -n "${UR_PID[$1]:-}" ] && kill -0 "${UR_PID[$1]}" 2>/dev/null || {
			grep -Eq -- "$2" "$f" 2>/dev/null
			return
		}
		sleep 0.1
	done
	return 1
}

# qt_netns_solo: QT_NS_S, a namespace with only lo (127.0.0.1, ::1).
qt_netns_solo() {
	ur_need_netns
	ur_netns_new QT_NS_S s || ur_skip "$UR_NETNS_WHY"
}

# qt_topologies [MTU]: "host", one namespace of its own with only lo (two
# processes on one host, with the device counters to themselves, and no
# other uroce process of the machine taking part), and "netns", two
# namespaces joined by a veth (ur_netns_pair MTU).  Sets QT_HOST_DEV,
# QT_HOST_GID, QT_HOST_IP, and QT_NET_DEV, QT_NET_GID (the same in A and
# B) and QT_NET_IP (A's).
qt_topologies() {
	local dev_b gid_b
	qt_netns_solo
	QT_HOST_IP=127.0.0.1
	QT_HOST_DEV=$(UR_NS=$QT_NS_S ur_dev_of "$QT_HOST_IP")
	QT_HOST_GID=$(UR_NS=$QT_NS_S ur_gid_index "$QT_HOST_DEV" "::ffff:$QT_HOST_IP")
	ur_netns_pair "${1:-1500}" || ur_fail "netns pair setup"
	QT_NET_IP=$UR_IP_A
	QT_NET_DEV=$(UR_NS=$UR_NS_A ur_dev_of "$UR_IP_A")
	QT_NET_GID=$(UR_NS=$UR_NS_A ur_gid_index "$QT_NET_DEV" "::ffff:$UR_IP_A")
	dev_b=$(UR_NS=$UR_NS_B ur_dev_of "$UR_IP_B")
	gid_b=$(UR_NS=$UR_NS_B ur_gid_index "$dev_b" "::ffff:$UR_IP_B")
	if [ -z "$QT_HOST_GID" ] || [ -z "$QT_NET_GID" ] || [ "$dev_b" != "$QT_NET_DEV" ] ||
	   [ "$gid_b" != "$QT_NET_GID" ]; then
		ur_fail "topologies: devices/GIDs not found or different (host $QT_HOST_DEV/$QT_HOST_GID, A $QT_NET_DEV/$QT_NET_GID, B $dev_b/$gid_b)"
		ur_done
	fi
	ur_log "topologies: host = $QT_NS_S ($QT_HOST_DEV, GID $QT_HOST_GID); netns = $UR_NS_A <-> $UR_NS_B ($QT_NET_DEV, GID $QT_NET_GID)"
}

# qt_prog_pair NAME SNS CNS DEV GIDX SERVER_IP PROG [ARGS...]: test program
# PROG as server (in SNS) and client (in CNS) with the same ARGS; both must
# pass every check.
qt_prog_pair() {
	local name=$1 sns=$2 cns=$3 dev=$4 gidx=$5 ip=$6 prog=$7 p
	shift 7
	p=$(ur_port)
	UR_SNS=$sns UR_CNS=$cns ur_pair "$name" "$p" \
		"$prog" -d "$dev" -g "$gidx" -p "$p" "$@" -- "$prog" -d "$dev" -g "$gidx" -p "$p" "$@" "$ip"
	qt_expect_prog "$name.server" "$name: server side"
	qt_expect_prog "$name.client" "$name: client side"
}

# qt_prog_both NAME PROG [ARGS...]: qt_prog_pair on one host, then across
# the two namespaces (after qt_topologies).
qt_prog_both() {
	local name=$1
	shift
	qt_prog_pair "host.$name" "$QT_NS_S" "$QT_NS_S" "$QT_HOST_DEV" "$QT_HOST_GID" "$QT_HOST_IP" "$@"
	qt_prog_pair "netns.$name" "$UR_NS_A" "$UR_NS_B" "$QT_NET_DEV" "$QT_NET_GID" "$QT_NET_IP" "$@"
}
