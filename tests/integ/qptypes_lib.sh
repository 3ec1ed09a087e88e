# Helpers for the qptypes_*.test.sh integration tests (UC, UD, multicast,
# SRQ, XRC, async events, memory windows, CQ details), sourced by each.
#
# Programs run on uroce as separate processes, each under timeout(1), in
# the current network namespace or in namespaces made here:
#
#   qt_start NAME PROG ARGS...    start PROG in the background (in QT_NS);
#                                 output in $(qt_out NAME)
#   qt_wait NAME                  wait; exit code in ${QT_RC[NAME]} (124: hung)
#   qt_run NAME PROG ARGS...      both
#   qt_pair NAME PORT SERVER... -- CLIENT...
#                                 server (in QT_SNS) until it listens on TCP
#                                 PORT, then the client (in QT_CNS); both awaited
#   qt_netns_pair                 namespaces QT_NS_A/QT_NS_B joined by a veth
#   qt_netns_solo                 a namespace QT_NS_S with only lo: one host,
#                                 with counters and port 4791 to itself
#   qt_ok / qt_fail / qt_expect_* / qt_done   checks and the verdict
#
# Programs from the build tree (tests/integ/qptypes/*) are found by name in
# $UROCE_BUILD/bin.  Under an ASan build the third-party clients get gcc's
# ASan runtime preloaded (the library needs it first), leak checks off;
# under a TSan build, gcc's TSan runtime.

set -u
set -o pipefail

QT_BUILD=${UROCE_BUILD:?UROCE_BUILD must point at the build directory}
QT_SRC=${UROCE_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
QT_NAME=$(basename "$0" .test.sh)
QT_TMP=$QT_BUILD/integ-out/$QT_NAME
QT_TIMEOUT=${QT_TIMEOUT:-120}
QT_NS=${QT_NS:-}
QT_ENV=()
QT_FAILS=0
QT_PASSES=0
QT_T0=$SECONDS
declare -A QT_PID=() QT_RC=() QT_START=() QT_SECS=()
QT_CLEANUP=()

rm -rf "$QT_TMP" && mkdir -p "$QT_TMP" || exit 1

# --- cleanup: every program started here is stopped by its pid -------------

qt_on_exit() { QT_CLEANUP+=("$1"); }

qt_cleanup() {
	local i n
	trap - EXIT INT TERM
	for n in "${!QT_PID[@]}"; do
		qt_stop "$n"
	done
	for ((i = ${#QT_CLEANUP[@]} - 1; i >= 0; i--)); do
		eval "${QT_CLEANUP[$i]}" >/dev/null 2>&1
	done
}
trap 'qt_cleanup' EXIT
trap 'qt_cleanup; exit 130' INT
trap 'qt_cleanup; exit 143' TERM

# --- verdict ---------------------------------------------------------------

qt_log() { printf '%s\n' "$*"; }
qt_ok() { QT_PASSES=$((QT_PASSES + 1)); printf 'ok: %s\n' "$*"; }
qt_fail() { QT_FAILS=$((QT_FAILS + 1)); printf 'FAIL: %s\n' "$*"; }
qt_skip() { printf 'SKIP: %s\n' "$*"; exit 77; }

qt_done() {
	local t=$((SECONDS - QT_T0))
	if [ "$QT_FAILS" -gt 0 ]; then
		printf '=== %s: FAILED (%d failed, %d passed, %ds); outputs in %s\n' \
			"$QT_NAME" "$QT_FAILS" "$QT_PASSES" "$t" "$QT_TMP"
		exit 1
	fi
	if [ "$QT_PASSES" -eq 0 ]; then
		printf '=== %s: FAILED (nothing was checked)\n' "$QT_NAME"
		exit 1
	fi
	printf '=== %s: OK (%d checks, %ds)\n' "$QT_NAME" "$QT_PASSES" "$t"
	exit 0
}

qt_out() { printf '%s' "$QT_TMP/$1.out"; }

# qt_show NAME [LINES]: the end of a run's output, indented.
qt_show() {
	local f=$QT_TMP/$1.out
	[ -f "$f" ] || return 0
	printf '    --- %s (exit %s, %ss): %s\n' "$1" "${QT_RC[$1]:-?}" "${QT_SECS[$1]:-?}" \
		"$(cat "$QT_TMP/$1.cmd" 2>/dev/null)"
	tail -n "${2:-25}" "$f" | sed 's/^/    | /'
}

# qt_expect_rc NAME CODE [WHAT]
qt_expect_rc() {
	local rc=${QT_RC[$1]:-none}
	if [ "$rc" = "$2" ]; then
		qt_ok "${3:-$1}: exit $rc (${QT_SECS[$1]:-?}s)"
		return 0
	fi
	qt_fail "${3:-$1}: expected exit $2, saw $rc$([ "$rc" = 124 ] && echo ' (killed by the timeout: a hang)')"
	qt_show "$1"
	return 1
}

# qt_expect_grep NAME ERE [WHAT]
qt_expect_grep() {
	if grep -Eq -- "$2" "$QT_TMP/$1.out"; then
		qt_ok "${3:-$1 prints /$2/}: $(grep -Em1 -- "$2" "$QT_TMP/$1.out" | sed 's/^[[:space:]]*//' | cut -c1-150)"
		return 0
	fi
	qt_fail "${3:-$1}: expected output matching /$2/, not found"
	qt_show "$1"
	return 1
}

# qt_expect_no_grep NAME ERE [WHAT]
qt_expect_no_grep() {
	if ! grep -Eq -- "$2" "$QT_TMP/$1.out"; then
		qt_ok "${3:-$1 does not print /$2/}"
		return 0
	fi
	qt_fail "${3:-$1}: unexpected output: $(grep -Em1 -- "$2" "$QT_TMP/$1.out" | cut -c1-200)"
	qt_show "$1"
	return 1
}

# qt_expect_pair NAME [WHAT]: both sides of qt_pair NAME exited 0, and
# neither printed a sanitizer report.
qt_expect_pair() {
	local what=${2:-$1} s=${QT_RC[$1.server]:-none} c=${QT_RC[$1.client]:-none}
	if [ "$s" = 0 ] && [ "$c" = 0 ] && ! qt_sanitizer_report "$1.server" && ! qt_sanitizer_report "$1.client"; then
		qt_ok "$what (server ${QT_SECS[$1.server]}s, client ${QT_SECS[$1.client]}s)"
		return 0
	fi
	qt_fail "$what: server exit $s, client exit $c$( { [ "$s" = 124 ] || [ "$c" = 124 ]; } && echo ' (a hang, killed by the timeout)')"
	qt_show "$1.server"
	qt_show "$1.client"
	return 1
}

qt_sanitizer_report() {
	grep -Eq 'ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|ERROR: ThreadSanitizer|FATAL: ThreadSanitizer' \
		"$QT_TMP/$1.out" 2>/dev/null
}

# qt_expect_prog NAME [WHAT]: a test program of ours exited 0; its own
# "ok:"/"FAIL:" lines are folded into this test's tally and shown.
qt_expect_prog() {
	local rc=${QT_RC[$1]:-none} f=$QT_TMP/$1.out nok nfail
	nok=$(grep -c '^ok: ' "$f" 2>/dev/null)
	nfail=$(grep -c '^FAIL: ' "$f" 2>/dev/null)
	grep -E '^(FAIL): ' "$f" 2>/dev/null | sed "s/^/    [$1] /"
	if [ "$rc" = 0 ] && [ "${nfail:-0}" = 0 ] && [ "${nok:-0}" -gt 0 ] && ! qt_sanitizer_report "$1"; then
		qt_ok "${2:-$1}: $nok checks passed (${QT_SECS[$1]}s)"
		return 0
	fi
	qt_fail "${2:-$1}: exit $rc$([ "$rc" = 124 ] && echo ' (a hang, killed by the timeout)'), $nok checks passed, $nfail failed"
	qt_show "$1" 40
	return 1
}

# --- running programs -------------------------------------------------------

qt_is_asan() { grep -q '^CMAKE_BUILD_TYPE:STRING=ASan$' "$QT_BUILD/CMakeCache.txt" 2>/dev/null; }
qt_is_tsan() { grep -q '^CMAKE_BUILD_TYPE:STRING=TSan$' "$QT_BUILD/CMakeCache.txt" 2>/dev/null; }

# qt_cmd PROG ARGS...: QT_CMD is the command line running PROG on uroce in
# QT_NS, with QT_ENV.
qt_cmd() {
	local prog=$1 path env=("LD_LIBRARY_PATH=$QT_BUILD/lib" "UROCE_DEVICES_FILE=/dev/null")
	if [ -x "$QT_BUILD/bin/$prog" ]; then
		path=$QT_BUILD/bin/$prog
	else
		path=$(command -v "$prog" 2>/dev/null || echo "$prog")
	fi
	if qt_is_asan; then
		case $path in
		"$QT_BUILD"/*) ;;      # ours: built with the sanitizers, leaks count
		*) env+=("LD_PRELOAD=$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)"
			 "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0") ;;
		esac
		env+=("UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
	elif qt_is_tsan; then
		case $path in
		"$QT_BUILD"/*) ;;      # ours: linked with the TSan runtime
		*) env+=("LD_PRELOAD=$(gcc -print-file-name=libtsan.so)") ;;
		esac
	fi
	QT_CMD=()
	ur_ns_prefix "$QT_NS"
	QT_CMD+=("${UR_NS_PREFIX[@]}")
	QT_CMD+=(env "${env[@]}" "${QT_ENV[@]}" "$path")
	shift
	QT_CMD+=("$@")
}

qt_start() {
	local name=$1
	shift
	[ -z "${QT_PID[$name]:-}" ] || { qt_fail "harness: $name started twice"; return 1; }
	qt_cmd "$@"
	printf '%s\n' "${QT_NS:+[netns $QT_NS] }${QT_ENV[*]:+${QT_ENV[*]} }$*" > "$QT_TMP/$name.cmd"
	timeout -k 5 "$QT_TIMEOUT" "${QT_CMD[@]}" > "$QT_TMP/$name.out" 2>&1 < /dev/null &
	QT_PID[$name]=$!
	QT_START[$name]=$(date +%s.%N)
	unset "QT_RC[$name]"
}

qt_wait() {
	local name=$1 pid=${QT_PID[$1]:-} rc
	[ -n "$pid" ] || return "${QT_RC[$name]:-127}"
	wait "$pid"
	rc=$?
	QT_RC[$name]=$rc
	QT_SECS[$name]=$(echo "$(date +%s.%N) ${QT_START[$name]}" | awk '{printf "%.1f", $1 - $2}')
	unset "QT_PID[$name]"
	return "$rc"
}

# qt_stop NAME: ends a program still running, by the pid of its timeout(1)
# (which passes TERM on), then KILL for it and its direct child.
qt_stop() {
	local pid=${QT_PID[$1]:-} child
	[ -n "$pid" ] || return 0
	child=$(pgrep -P "$pid" 2>/dev/null)
	kill -TERM "$pid" 2>/dev/null
	for _ in $(seq 25); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	[ -n "$child" ] && kill -KILL $child 2>/dev/null
	kill -KILL "$pid" 2>/dev/null
	qt_wait "$1"
}

qt_run() {
	qt_start "$@" || return 1
	qt_wait "$1"
}

# qt_wait_listen PORT PID: until something in QT_NS listens on TCP PORT;
# fails if PID exits first or after 60 s.
qt_wait_listen() {
	local port=$1 pid=$2 i ss=(ss)
	[ -n "$QT_NS" ] && ss=(ur_nsexec "$QT_NS" ss)
	for ((i = 0; i < 600; i++)); do
		"${ss[@]}" -Htln "sport = :$port" 2>/dev/null | grep -q . && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# qt_wait_output NAME ERE [SECONDS]: until run NAME prints a line matching
# ERE (default 60 s); fails early if it exits.
qt_wait_output() {
	local i limit=$((${3:-60} * 10))
	for ((i = 0; i < limit; i++)); do
		grep -Eq -- "$2" "$QT_TMP/$1.out" 2>/dev/null && return 0
		[ -n "${QT_PID[$1]:-}" ] && kill -0 "${QT_PID[$1]}" 2>/dev/null || {
			grep -Eq -- "$2" "$QT_TMP/$1.out" 2>/dev/null
			return
		}
		sleep 0.1
	done
	return 1
}

# qt_port: a TCP port for one exchange, free now.
QT_NEXT_PORT=$((21000 + ($$ * 53) % 19000))
qt_port() {
	while :; do
		QT_NEXT_PORT=$((QT_NEXT_PORT + 1))
		[ $QT_NEXT_PORT -lt 60000 ] || QT_NEXT_PORT=21000
		ss -Htan "sport = :$QT_NEXT_PORT" 2>/dev/null | grep -q . && continue
		echo "$QT_NEXT_PORT"
		return
	done
}

# qt_pair NAME PORT SERVER_PROG ARGS... -- CLIENT_PROG ARGS...
qt_pair() {
	local name=$1 port=$2 a seen=0 s=() c=() sns cns
	shift 2
	for a in "$@"; do
		if [ $seen = 0 ] && [ "$a" = "--" ]; then seen=1; continue; fi
		if [ $seen = 0 ]; then s+=("$a"); else c+=("$a"); fi
	done
	sns=${QT_SNS-$QT_NS}
	cns=${QT_CNS-$QT_NS}
	QT_NS=$sns qt_start "$name.server" "${s[@]}" || return 1
	if ! QT_NS=$sns qt_wait_listen "$port" "${QT_PID[$name.server]}"; then
		qt_stop "$name.server"
		echo "(harness: the server never listened on TCP port $port)" >> "$QT_TMP/$name.server.out"
		QT_RC[$name.client]=none
		return 1
	fi
	QT_NS=$cns qt_start "$name.client" "${c[@]}"
	qt_wait "$name.client"
	qt_wait "$name.server"
	[ "${QT_RC[$name.client]}" = 0 ] && [ "${QT_RC[$name.server]}" = 0 ]
}

# --- devices and GIDs -------------------------------------------------------

# qt_dev_of IPV4: the uroce device (in QT_NS) whose GID table holds
# ::ffff:IPV4; qt_gid_of DEV IPV4: its GID index.  Both from ibv_devinfo -v.
qt_dev_of() {
	local n=devinfo.$RANDOM$RANDOM
	qt_run "$n" ibv_devinfo -v >/dev/null
	awk -v want="::ffff:$1," '/^hca_id:/ { dev = $2 } /GID\[/ && $3 == want { print dev; exit }' "$QT_TMP/$n.out"
}
qt_gid_of() {
	local n=devinfo.$RANDOM$RANDOM
	qt_run "$n" ibv_devinfo -v -d "$1" >/dev/null
	sed -n "s/.*GID\[ *\([0-9]*\)\]:[[:space:]]*$2, RoCE v2.*/\1/p" "$QT_TMP/$n.out" | head -n1
}

# --- network namespaces -----------------------------------------------------

# As root, "ip netns"; as a user, namespaces of a user namespace of the
# user's own (netns_lib.sh), so that these tests run without root too.
UR_TMP=$QT_TMP
ur_on_exit() { qt_on_exit "$1"; }
. "$QT_SRC/tests/integ/netns_lib.sh"

qt_need_netns() {
	command -v ip >/dev/null || qt_skip "needs iproute2"
	[ "$(id -u)" = 0 ] || ur_userns_holder || qt_skip "$UR_NETNS_WHY"
}

QT_SEQ=0

# qt_netns_new VAR: a namespace with lo up, its name in VAR, deleted at exit
# together with the uroce host-registry files made for it
# (/dev/shm/uroce-UID-netINODE*: nobody else can use them once the namespace
# is gone; UID is the user's as the machine sees it, also in a user namespace).
qt_netns_new() {
	local ino uid path
	ur_netns_new "$1" || qt_skip "$UR_NETNS_WHY"
	case ${!1} in
	userns:*) path=/proc/${!1#userns:}/ns/net ;;
	*) path=/run/netns/${!1} ;;
	esac
	uid=$(id -u)
	ino=$(stat -L -c %i "$path" 2>/dev/null)
	[ -n "$ino" ] && qt_on_exit "rm -f /dev/shm/uroce-$uid-net$ino /dev/shm/uroce-$uid-net$ino-v* /dev/shm/uroce-$uid-net$ino.router"
}

# qt_netns_pair [MTU]: QT_NS_A and QT_NS_B joined by a veth (QT_IF_A/B, MTU
# default 1500), with QT_IP_A/B = 10.83.N.1/.2 and QT_IP6_A/B = fd83:0:0:N::1/2.
qt_netns_pair() {
	local mtu=${1:-1500} n peer
	qt_need_netns
	QT_SEQ=$((QT_SEQ + 1))
	n=$(( ($$ + QT_SEQ * 7) % 250 + 1 ))
	QT_IF_A=qtv$$${QT_SEQ}a
	QT_IF_B=qtv$$${QT_SEQ}b
	QT_IP_A=10.83.$n.1
	QT_IP_B=10.83.$n.2
	QT_IP6_A=fd83:0:0:$n::1
	QT_IP6_B=fd83:0:0:$n::2
	qt_netns_new QT_NS_A
	qt_netns_new QT_NS_B
	# "netns" takes a name of ip netns, or a pid whose namespace it is.
	peer=$QT_NS_B
	case $peer in userns:*) peer=${peer#userns:} ;; esac
	ur_ip "$QT_NS_A" link add "$QT_IF_A" mtu "$mtu" type veth \
		peer name "$QT_IF_B" netns "$peer" mtu "$mtu" || return 1
	ur_ip "$QT_NS_A" addr add "$QT_IP_A/24" dev "$QT_IF_A" &&
	ur_ip "$QT_NS_B" addr add "$QT_IP_B/24" dev "$QT_IF_B" &&
	ur_ip "$QT_NS_A" addr add "$QT_IP6_A/64" dev "$QT_IF_A" nodad &&
	ur_ip "$QT_NS_B" addr add "$QT_IP6_B/64" dev "$QT_IF_B" nodad &&
	ur_ip "$QT_NS_A" link set "$QT_IF_A" up &&
	ur_ip "$QT_NS_B" link set "$QT_IF_B" up || return 1
	qt_link_wait "$QT_NS_A" "$QT_IF_A" up && qt_link_wait "$QT_NS_B" "$QT_IF_B" up
}

# qt_link_wait NS IF STATE: until IF's operstate in NS is STATE (10 s).
qt_link_wait() {
	for _ in $(seq 100); do
		[ "$(ur_operstate "$1" "$2")" = "$3" ] && return 0
		sleep 0.1
	done
	echo "link $2 in $1 did not become $3" >&2
	return 1
}

# qt_netns_solo: QT_NS_S, a namespace with only lo (127.0.0.1, ::1).
qt_netns_solo() {
	qt_need_netns
	qt_netns_new QT_NS_S
}

# --- the two topologies of the test programs ---------------------------------

# qt_topologies: "host", one network namespace of its own with only lo
# (two processes on one host, with the device counters to themselves), and
# "netns", two namespaces joined by a veth.  Sets QT_HOST_DEV/QT_HOST_GID/
# QT_HOST_IP and QT_NET_DEV/QT_NET_GID (the same in A and B) /QT_NET_IP (A's).
qt_topologies() {
	local dev_b gid_b
	qt_netns_solo
	QT_HOST_IP=127.0.0.1
	QT_HOST_DEV=$(QT_NS=$QT_NS_S qt_dev_of "$QT_HOST_IP")
	QT_HOST_GID=$(QT_NS=$QT_NS_S qt_gid_of "$QT_HOST_DEV" "::ffff:$QT_HOST_IP")
	qt_netns_pair "${1:-1500}" || qt_fail "netns pair setup"
	QT_NET_IP=$QT_IP_A
	QT_NET_DEV=$(QT_NS=$QT_NS_A qt_dev_of "$QT_IP_A")
	QT_NET_GID=$(QT_NS=$QT_NS_A qt_gid_of "$QT_NET_DEV" "::ffff:$QT_IP_A")
	dev_b=$(QT_NS=$QT_NS_B qt_dev_of "$QT_IP_B")
	gid_b=$(QT_NS=$QT_NS_B qt_gid_of "$dev_b" "::ffff:$QT_IP_B")
	if [ -z "$QT_HOST_GID" ] || [ -z "$QT_NET_GID" ] || [ "$dev_b" != "$QT_NET_DEV" ] ||
	   [ "$gid_b" != "$QT_NET_GID" ]; then
		qt_fail "topologies: devices/GIDs not found or different (host $QT_HOST_DEV/$QT_HOST_GID, A $QT_NET_DEV/$QT_NET_GID, B $dev_b/$gid_b)"
		qt_done
	fi
	qt_log "topologies: host = $QT_NS_S ($QT_HOST_DEV, GID $QT_HOST_GID); netns = $QT_NS_A <-> $QT_NS_B ($QT_NET_DEV, GID $QT_NET_GID)"
}

# qt_prog_pair NAME SNS CNS DEV GIDX SERVER_IP PROG [ARGS...]: test program
# PROG as server (in SNS) and client (in CNS) with the same ARGS; both must
# pass every check.
qt_prog_pair() {
	local name=$1 sns=$2 cns=$3 dev=$4 gidx=$5 ip=$6 prog=$7 p
	shift 7
	p=$(qt_port)
	QT_SNS=$sns QT_CNS=$cns qt_pair "$name" "$p" \
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
	qt_prog_pair "netns.$name" "$QT_NS_A" "$QT_NS_B" "$QT_NET_DEV" "$QT_NET_GID" "$QT_NET_IP" "$@"
}
