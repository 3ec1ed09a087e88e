# Harness for the integration tests: sourced by the tests/integ/*.test.sh,
# by themselves or through their family's library on top of it (as
# qptypes_lib.sh sources it for the qptypes_*.test.sh).
#
# Runs programs on uroce as separate processes with timeouts, in the current
# network namespace or in namespaces it creates, and checks what they did.
#
#   ur_start NAME PROG ARGS...   start PROG on uroce in the background; its
#                                stdout+stderr go to $(ur_out NAME); a bare
#                                PROG of the build (qpt_ud, uroce) is found
#                                in $UROCE_BUILD/bin, others in PATH
#   ur_wait NAME                 wait for it; its exit code is ${UR_RC[NAME]}
#                                (124: killed by the timeout)
#   ur_run NAME PROG ARGS...     both; returns the exit code
#   ur_pair NAME PORT SERVER... -- CLIENT...
#                                a server, started and awaited until it
#                                listens on TCP PORT, then its client
#   ur_netns_pair [MTU]          two namespaces joined by a veth (root)
#   ur_netns_private             a namespace with lo alone (root, or a user
#                                namespace of the user's own)
#   ur_nsexec NS CMD...          CMD in namespace NS
#   ur_expect_* / ur_report / ur_pass / ur_fail / ur_done
#                                assertions and the verdict
#
# Variables read by the functions (set them for one call: UR_NS=x ur_run ...):
#   UR_NS       network namespace to run in (empty: the current one): a name
#               of "ip netns", or userns:PID (ur_netns_private's without root)
#   UR_TIMEOUT  seconds before a program is killed (default 120)
#   UR_SNS / UR_CNS   namespaces of ur_pair's server / client (default UR_NS)
#   UR_ENV      extra VAR=value words for the program's environment (array)
#
# Under an ASan build of uroce ($UROCE_BUILD/CMakeCache.txt says so) the
# uninstrumented clients get gcc's ASan and UBSan runtimes preloaded, since
# the library needs them first in the process.  Leak checking is off for
# third-party programs (their leaks are not ours) and left as the caller set
# it for the test programs built here.  Under a TSan build they get gcc's
# TSan runtime preloaded the same way, and TSAN_OPTIONS is the caller's.

set -u
set -o pipefail

UR_BUILD=${UROCE_BUILD:?UROCE_BUILD must point at the build directory}
UR_SRC=${UROCE_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
UR_TEST=$(basename "$0" .test.sh)
UR_TMP=$UR_BUILD/integ-out/$UR_TEST
UR_TIMEOUT=${UR_TIMEOUT:-120}
UR_NS=${UR_NS:-}
UR_ENV=()
UR_FAILS=0
UR_PASSES=0
UR_SECONDS0=$SECONDS
declare -A UR_PID=() UR_RC=() UR_T0=() UR_ELAPSED=()
UR_CLEANUP=()

rm -rf "$UR_TMP" && mkdir -p "$UR_TMP" || exit 1

# --- cleanup ---------------------------------------------------------------

# ur_on_exit CMD: run CMD (a string for eval) at exit, last registered first.
ur_on_exit() { UR_CLEANUP+=("$1"); }

ur_cleanup() {
	local i name
	trap - EXIT INT TERM
	for name in "${!UR_PID[@]}"; do
		ur_stop "$name"
	done
	for ((i = ${#UR_CLEANUP[@]} - 1; i >= 0; i--)); do
		eval "${UR_CLEANUP[$i]}" >/dev/null 2>&1
	done
}
trap 'ur_cleanup' EXIT
trap 'ur_cleanup; exit 130' INT
trap 'ur_cleanup; exit 143' TERM

# --- verdict ---------------------------------------------------------------

ur_log() { printf '%s\n' "$*"; }
ur_pass() { UR_PASSES=$((UR_PASSES + 1)); printf 'ok: %s\n' "$*"; }
ur_fail() { UR_FAILS=$((UR_FAILS + 1)); printf 'FAIL: %s\n' "$*"; }

# ur_skip REASON: the test cannot run here at all (exit 77).
ur_skip() {
	printf 'SKIP: %s\n' "$*"
	exit 77
}

ur_done() {
	local t=$((SECONDS - UR_SECONDS0))
	if [ "$UR_FAILS" -gt 0 ]; then
		printf '=== %s: FAILED (%d failed, %d passed, %ds); outputs in %s\n' \
			"$UR_TEST" "$UR_FAILS" "$UR_PASSES" "$t" "$UR_TMP"
		exit 1
	fi
	if [ "$UR_PASSES" -eq 0 ]; then
		printf '=== %s: FAILED (nothing was checked)\n' "$UR_TEST"
		exit 1
	fi
	printf '=== %s: OK (%d checks, %ds)\n' "$UR_TEST" "$UR_PASSES" "$t"
	exit 0
}

# ur_show NAME [LINES]: the last LINES (default 30) of a run's output, indented,
# after the error lines above them.
ur_show() {
	local f=$UR_TMP/$1.out
	[ -f "$f" ] || return 0
	printf '    --- %s (exit %s, %ss): %s\n' "$1" "${UR_RC[$1]:-?}" \
		"${UR_ELAPSED[$1]:-?}" "$(ur_cmdline_of "$1")"
	# A program's stderr lands in the file before its buffered stdout, so
	# error lines above the tail are shown too.
	local n=${2:-30} total
	total=$(wc -l < "$f")
	if [ "$total" -gt "$n" ]; then
		head -n $((total - n)) "$f" | grep -iE 'err|fail|couldn|unable|uroce|sanitizer|abort' |
			head -n 20 | sed 's/^/    | /'
		echo "    | [...]"
	fi
	tail -n "$n" "$f" | sed 's/^/    | /'
	if [ -s "$UR_TMP/$1.uroce.log" ]; then
		printf '    --- %s: uroce log (info level), last 40 lines\n' "$1"
		tail -n 40 "$UR_TMP/$1.uroce.log" | sed 's/^/    | /'
	fi
}

ur_out() { printf '%s' "$UR_TMP/$1.out"; }
ur_cmdline_of() { cat "$UR_TMP/$1.cmd" 2>/dev/null; }

# ur_expect_eq WHAT EXPECTED SEEN
ur_expect_eq() {
	if [ "$2" = "$3" ]; then
		ur_pass "$1: $3"
	else
		ur_fail "$1: expected '$2', saw '$3'"
	fi
}

# ur_expect_rc NAME EXPECTED [WHAT]: the exit code of run NAME.
ur_expect_rc() {
	local rc=${UR_RC[$1]:-none}
	if [ "$rc" = "$2" ]; then
		ur_pass "${3:-$1}: exit $rc (${UR_ELAPSED[$1]:-?}s)"
		return 0
	fi
	ur_fail "${3:-$1}: expected exit $2, saw $rc$([ "$rc" = 124 ] && echo ' (killed by the timeout: a hang)')"
	ur_show "$1"
	return 1
}

# ur_expect_fail_fast NAME [WHAT]: run NAME exited non-zero on its own
# (within its timeout, not killed by it).
ur_expect_fail_fast() {
	local rc=${UR_RC[$1]:-none}
	if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != none ] && [ "$rc" -lt 128 ]; then
		ur_pass "${2:-$1}: failed with exit $rc in ${UR_ELAPSED[$1]}s"
		return 0
	fi
	case $rc in
	0) ur_fail "${2:-$1}: expected a failure, but it succeeded" ;;
	124) ur_fail "${2:-$1}: expected a quick failure, but it hung until the timeout" ;;
	*) ur_fail "${2:-$1}: expected a clean non-zero exit, saw $rc" ;;
	esac
	ur_show "$1"
	return 1
}

# ur_expect_grep NAME ERE [WHAT]: the output of run NAME matches ERE.
ur_expect_grep() {
	if grep -Eq -- "$2" "$UR_TMP/$1.out"; then
		ur_pass "${3:-$1 prints /$2/}: $(grep -Em1 -- "$2" "$UR_TMP/$1.out" | sed 's/^[[:space:]]*//' | cut -c1-160)"
		return 0
	fi
	ur_fail "${3:-$1}: expected output matching /$2/, not found"
	ur_show "$1"
	return 1
}

# ur_expect_no_grep NAME ERE [WHAT]: the output of run NAME does not match ERE.
ur_expect_no_grep() {
	if ! grep -Eq -- "$2" "$UR_TMP/$1.out"; then
		ur_pass "${3:-$1 does not print /$2/}"
		return 0
	fi
	ur_fail "${3:-$1}: unexpected output matching /$2/: $(grep -Em1 -- "$2" "$UR_TMP/$1.out")"
	ur_show "$1"
	return 1
}

# ur_report PREFIX CMD...: runs a checker that prints "ok: ..." and "FAIL:
# ..." lines and counts each as a pass or a failure; "note: ..." lines are
# logged (anything else it prints is a failure: a checker that breaks must
# not pass).
ur_report() {
	local prefix=$1 line n=0
	shift
	while IFS= read -r line; do
		n=$((n + 1))
		case $line in
		ok:*) ur_pass "$prefix: ${line#ok: }" ;;
		FAIL:*) ur_fail "$prefix: ${line#FAIL: }" ;;
		note:*) ur_log "note: $prefix: ${line#note: }" ;;
		*) ur_fail "$prefix: $1: $line" ;;
		esac
	done < <("$@" 2>&1)
	[ $n -gt 0 ] || ur_fail "$prefix: $1 checked nothing"
}

# ur_sanitizer_clean NAME: no ASan/UBSan/TSan report in the output of run NAME.
UR_SANITIZER_ERE='ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|ERROR: ThreadSanitizer|FATAL: ThreadSanitizer'
ur_sanitizer_clean() {
	ur_expect_no_grep "$1" "$UR_SANITIZER_ERE" "${2:-$1}: no sanitizer report"
}

# --- running programs -------------------------------------------------------

ur_is_asan() { grep -q '^CMAKE_BUILD_TYPE:STRING=ASan$' "$UR_BUILD/CMakeCache.txt" 2>/dev/null; }
ur_is_tsan() { grep -q '^CMAKE_BUILD_TYPE:STRING=TSan$' "$UR_BUILD/CMakeCache.txt" 2>/dev/null; }

# ur_cmd PROG ARGS...: fills UR_CMD with the command line that runs PROG on
# uroce in UR_NS with UR_ENV.  A bare PROG that the build made (a test
# program, uroce) is the build's ($UR_BUILD/bin/PROG; their names take no
# system program's), any other is looked up in PATH.
ur_cmd() {
	local prog=$1 path env=("LD_LIBRARY_PATH=$UR_BUILD/lib")
	if [[ $prog != */* && -x $UR_BUILD/bin/$prog ]]; then
		path=$UR_BUILD/bin/$prog
	else
		path=$(command -v "$prog" 2>/dev/null || echo "$prog")
	fi
	if ur_is_asan; then
		local asan ubsan asan_opts=${ASAN_OPTIONS:-}
		asan=$(gcc -print-file-name=libasan.so)
		ubsan=$(gcc -print-file-name=libubsan.so)
		case $path in
		"$UR_BUILD"/*) ;;                                  # ours: leaks count
		*) asan_opts=${asan_opts:+$asan_opts:}detect_leaks=0 ;;
		esac
		env+=("LD_PRELOAD=$asan $ubsan" "ASAN_OPTIONS=$asan_opts"
		      "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
	elif ur_is_tsan; then
		# The library needs the TSan runtime loaded first: programs
		# built here link it, third-party ones get it preloaded.
		# TSAN_OPTIONS come from the caller (scripts/test).
		case $path in
		"$UR_BUILD"/*) ;;
		*) env+=("LD_PRELOAD=$(gcc -print-file-name=libtsan.so)") ;;
		esac
	fi
	# integ.lockorder: the lock-order recorder in every program it runs.
	if [ -n "${UROCE_LOCKORDER_LIB:-}" ] && ! ur_is_asan && ! ur_is_tsan; then
		env+=("LD_PRELOAD=$UROCE_LOCKORDER_LIB" "UROCE_LOCKORDER_DIR=$UROCE_LOCKORDER_DIR"
		      "UROCE_LOCKORDER_LIBDIR=$UR_BUILD/lib")
	fi
	ur_ns_prefix "$UR_NS"
	UR_CMD=("${UR_NS_PREFIX[@]}")
	UR_CMD+=(env "${env[@]}" "${UR_ENV[@]}" "$path")
	shift
	UR_CMD+=("$@")
}

# ur_log_env NAME PROG ARGS...: UR_LOG_ENV, what keeps uroce's log of
# NAME's run at the info level in NAME.uroce.log (UROCE_LOG_FILE: stderr,
# the output tests read, keeps only warnings and errors, as by default), so
# that a failure seen once explains itself (a QP that gives up says why:
# ur_show prints the log's tail).  Not where the test chose a log level
# itself (in the environment, UR_ENV or the command line: "env
# UROCE_LOG=info prog").
ur_log_env() {
	local name=$1
	shift
	UR_LOG_ENV=()
	[[ -z ${UROCE_LOG:-} && -z ${UROCE_LOG_FILE:-} ]] || return 0
	[[ " ${UR_ENV[*]:-} $* " != *UROCE_LOG* ]] || return 0
	# made here, writable by all: a program the test runs as another
	# user (setpriv, runuser) logs to it too, rather than warning
	: > "$UR_TMP/$name.uroce.log" && chmod 666 "$UR_TMP/$name.uroce.log" || return 0
	UR_LOG_ENV=("UROCE_LOG=info" "UROCE_LOG_FILE=$UR_TMP/$name.uroce.log")
}

# ur_start NAME PROG ARGS...: starts PROG in the background under timeout(1),
# which ends it (TERM, then KILL UR_KILL_AFTER seconds later, 5 unless set)
# after UR_TIMEOUT seconds, or when it is sent TERM itself.
ur_start() {
	local name=$1
	shift
	[ -z "${UR_PID[$name]:-}" ] || { ur_fail "harness: $name started twice"; return 1; }
	ur_cmd "$@"
	printf '%s\n' "${UR_NS:+[netns $UR_NS] }${UR_ENV[*]:+${UR_ENV[*]} }$*" > "$UR_TMP/$name.cmd"
	ur_log_env "$name" "$@"
	timeout -k "${UR_KILL_AFTER:-5}" "$UR_TIMEOUT" env "${UR_LOG_ENV[@]}" "${UR_CMD[@]}" \
		> "$UR_TMP/$name.out" 2>&1 < /dev/null &
	UR_PID[$name]=$!
	UR_T0[$name]=$(date +%s.%N)
	unset "UR_RC[$name]"
}

# ur_prog_pid NAME: the pid of the program itself (timeout's child; ip netns
# exec or nsenter and env exec in turn, so it is the program once started).
ur_prog_pid() {
	local p
	for _ in $(seq 100); do
		p=$(pgrep -P "${UR_PID[$1]}" 2>/dev/null | head -n1)
		[ -n "$p" ] && { echo "$p"; return 0; }
		sleep 0.05
	done
	return 1
}

# ur_prog_signal NAME SIG [VERB]: SIG to the program of run NAME (not its
# timeout wrapper); a FAIL: line "NAME: no process to VERB" (default
# signal) when there is none.
ur_prog_signal() {
	local p
	p=$(ur_prog_pid "$1") || { ur_fail "$1: no process to ${3:-signal}"; return 1; }
	kill "-$2" "$p"
}

# ur_ends_within NAME SECONDS: true once run NAME has ended (not reaped:
# ur_wait does), false if it still runs SECONDS from now.
ur_ends_within() {
	for _ in $(seq $(($2 * 10))); do
		kill -0 "${UR_PID[$1]}" 2>/dev/null || return 0
		sleep 0.1
	done
	! kill -0 "${UR_PID[$1]}" 2>/dev/null
}

# ur_wait NAME: waits for the program; sets UR_RC[NAME] (124: killed by the
# timeout) and UR_ELAPSED[NAME]; returns the exit code.
ur_wait() {
	local name=$1 pid=${UR_PID[$1]:-} rc
	[ -n "$pid" ] || return "${UR_RC[$name]:-127}"
	wait "$pid"
	rc=$?
	UR_RC[$name]=$rc
	UR_ELAPSED[$name]=$(echo "$(date +%s.%N) ${UR_T0[$name]}" | awk '{printf "%.1f", $1 - $2}')
	unset "UR_PID[$name]"
	return "$rc"
}

# ur_stop NAME: ends a program still running (TERM, then KILL UR_KILL_AFTER
# seconds later) and reaps it.
ur_stop() {
	local pid=${UR_PID[$1]:-}
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null    # timeout(1) passes it on
	for _ in $(seq $(( ${UR_KILL_AFTER:-5} * 5 ))); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	kill -KILL $(pgrep -P "$pid") 2>/dev/null
	kill -KILL "$pid" 2>/dev/null
	ur_wait "$1"
}

# ur_run NAME PROG ARGS...: runs PROG to completion; returns its exit code.
ur_run() {
	ur_start "$@" || return 1
	ur_wait "$1"
}

# ur_wait_listen PORT PID [SECONDS]: until something in UR_NS listens on TCP
# PORT; fails early if PID exits first.
ur_wait_listen() {
	local port=$1 pid=$2 limit=${3:-60} i
	for ((i = 0; i < limit * 10; i++)); do
		ur_nsexec "$UR_NS" ss -Htln "sport = :$port" 2>/dev/null | grep -q . && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# ur_port: a TCP port for one exchange, not used before by this test (the
# counter lives in a file, as ur_port runs in $(...) subshells), free in
# UR_NS and here, and unlikely to be taken by a concurrent test.
UR_PORT_FILE=$UR_TMP/.next-port
echo $((20000 + ($$ * 37) % 20000)) > "$UR_PORT_FILE"
ur_port() {
	local p
	p=$(cat "$UR_PORT_FILE")
	while :; do
		p=$((p + 1))
		[ $p -lt 60000 ] || p=20000
		ss -Htan "sport = :$p" 2>/dev/null | grep -q . && continue
		[ -n "$UR_NS" ] && ur_nsexec "$UR_NS" ss -Htan "sport = :$p" 2>/dev/null | grep -q . && continue
		break
	done
	echo "$p" > "$UR_PORT_FILE"
	echo "$p"
}

# ur_pair NAME PORT SERVER_PROG ARGS... -- CLIENT_PROG ARGS...
# Runs NAME.server (in UR_SNS) until it listens on TCP PORT, then NAME.client
# (in UR_CNS), and waits for both.  Returns 0 when both exit 0.
ur_pair() {
	local name=$1 port=$2 a seen=0 s=() c=() sns cns
	shift 2
	for a in "$@"; do
		if [ $seen = 0 ] && [ "$a" = "--" ]; then seen=1; continue; fi
		if [ $seen = 0 ]; then s+=("$a"); else c+=("$a"); fi
	done
	sns=${UR_SNS-$UR_NS}
	cns=${UR_CNS-$UR_NS}
	UR_NS=$sns ur_start "$name.server" "${s[@]}" || return 1
	if ! UR_NS=$sns ur_wait_listen "$port" "${UR_PID[$name.server]}"; then
		ur_stop "$name.server"
		echo "server $name did not listen on port $port" >> "$UR_TMP/$name.server.out"
		UR_RC[$name.client]=none
		return 1
	fi
	UR_NS=$cns ur_start "$name.client" "${c[@]}"
	ur_wait "$name.client"
	ur_wait "$name.server"
	[ "${UR_RC[$name.client]}" = 0 ] && [ "${UR_RC[$name.server]}" = 0 ]
}

# ur_expect_pair_ok NAME [WHAT]: both sides of ur_pair NAME exited 0.
ur_expect_pair_ok() {
	local what=${2:-$1} s=${UR_RC[$1.server]:-none} c=${UR_RC[$1.client]:-none}
	if [ "$s" = 0 ] && [ "$c" = 0 ]; then
		ur_pass "$what (client ${UR_ELAPSED[$1.client]}s)"
		return 0
	fi
	ur_fail "$what: server exit $s, client exit $c$( { [ "$s" = 124 ] || [ "$c" = 124 ]; } && echo ' (a hang, killed by the timeout)')"
	ur_show "$1.server"
	ur_show "$1.client"
	return 1
}

# --- devices and GIDs -------------------------------------------------------

# ur_gid_index DEV GID: the index of GID (as ibv_devinfo prints it, e.g.
# ::ffff:127.0.0.1 or ::1) in DEV's table (in UR_NS); empty if absent.  The
# last one listed: GID 0 of lo is a copy of ::1, which keeps its place.
ur_gid_index() {
	local n=devinfo.$1.$RANDOM
	ur_run "$n" ibv_devinfo -v -d "$1" >/dev/null
	awk -v want="$2," '/GID\[/ { for (i = 1; i <= NF; i++) if ($i == want) {
		sub(/.*GID\[ */, ""); sub(/\].*/, ""); idx = $0 } } END { print idx }' "$UR_TMP/$n.out"
}

# ur_clock_spoiled NAME TRY: whether perftest's pair NAME could not time
# itself: it calibrates the TSC by a regression that a busy machine can
# spoil ("Correlation coefficient r^2 ... Can't produce a report"), which is
# perftest's own clock, not the device, so such a run is made again.  A
# latency row whose minimum is "inf" is the same failure where perftest
# went on with a clock rate of 0 (every sample divided by it; no finite
# number of cycles gives an infinite minimum).  If so, says it and moves
# the outputs aside (NAME.server.out.tryTRY) and pauses a second, so that
# the next try's calibration does not fall in the same busy moment; the
# caller runs the pair again, UR_CLOCK_TRIES times in all at most.  Its
# calibration times 200 spins of 0.1-2 ms against the TSC and wants a fit
# of r^2 0.9: a loop of two suites at once (load average 20 on 2 cores)
# spoiled 3 tries in a row of one pair in 20 runs of integ.dc.
UR_CLOCK_TRIES=5
ur_clock_spoiled() {
	local side
	grep -q "Can't produce a report" "$(ur_out "$1.server")" "$(ur_out "$1.client")" 2>/dev/null ||
		grep -Eq '^ *[0-9]+ +[0-9]+ +inf ' "$(ur_out "$1.server")" "$(ur_out "$1.client")" \
			2>/dev/null || return 1
	ur_log "note: $1: perftest could not calibrate its clock (busy machine); run again"
	for side in server client; do
		mv "$(ur_out "$1.$side")" "$(ur_out "$1.$side").try$2"
	done
	sleep 1
}

# ur_dev_of IPV4 [NAME]: the uroce device (in UR_NS) whose GID table holds
# ::ffff:IPV4.
ur_dev_of() {
	local n=${2:-devinfo.all.$RANDOM}
	ur_run "$n" ibv_devinfo -v >/dev/null
	awk -v want="::ffff:$1," '
		/^hca_id:/ { dev = $2 }
		/GID\[/ { for (i = 1; i <= NF; i++) if ($i == want) { print dev; exit } }' "$UR_TMP/$n.out"
}

# --- network namespaces -----------------------------------------------------

. "$UR_SRC/tests/integ/netns_lib.sh"

ur_need_root() {
	[ "$(id -u)" = 0 ] || ur_skip "needs root for network namespaces (run as root or with CAP_NET_ADMIN+CAP_SYS_ADMIN)"
	command -v ip >/dev/null || ur_skip "needs iproute2 (apt-get install iproute2)"
}

# ur_need_netns: skips the test unless it can make network namespaces: as
# root, or as a user where the kernel lets users make user namespaces
# (unshare -Urn), which netns_lib.sh's functions then use.
ur_need_netns() {
	command -v ip >/dev/null || ur_skip "needs iproute2 (apt-get install iproute2)"
	[ "$(id -u)" = 0 ] && return 0
	ur_userns_holder || ur_skip "$UR_NETNS_WHY"
}

# ur_netns_pair [MTU]: two fresh namespaces UR_NS_A and UR_NS_B, each with lo
# up and one end of a veth (UR_IF_A, UR_IF_B, MTU default 1500) carrying
# UR_IP_A/UR_IP_B (10.79.N.1-2/24) and UR_IP6_A/UR_IP6_B (fd79:0:0:N::1-2/64).
# Removed at exit.  Skips the test if namespaces cannot be made (as a user,
# they are made in a user namespace of the user's own: ur_netns_new).
ur_netns_pair() {
	local mtu=${1:-1500} n peer
	ur_need_netns
	ur_netns_new UR_NS_A a || ur_skip "$UR_NETNS_WHY"
	n=$UR_NETNS_SEQ
	ur_netns_new UR_NS_B b || return 1
	UR_IF_A=urv$$${n}a
	UR_IF_B=urv$$${n}b
	UR_IP_A=10.79.$n.1
	UR_IP_B=10.79.$n.2
	UR_IP6_A=fd79:0:0:$n::1
	UR_IP6_B=fd79:0:0:$n::2
	# "netns" takes a name of ip netns, or a pid whose namespace it is.
	peer=$UR_NS_B
	case $peer in userns:*) peer=${peer#userns:} ;; esac
	ur_ip "$UR_NS_A" link add "$UR_IF_A" mtu "$mtu" type veth \
		peer name "$UR_IF_B" netns "$peer" mtu "$mtu" || return 1
	ur_ip "$UR_NS_A" addr add "$UR_IP_A/24" dev "$UR_IF_A" &&
	ur_ip "$UR_NS_B" addr add "$UR_IP_B/24" dev "$UR_IF_B" &&
	ur_ip "$UR_NS_A" addr add "$UR_IP6_A/64" dev "$UR_IF_A" nodad &&
	ur_ip "$UR_NS_B" addr add "$UR_IP6_B/64" dev "$UR_IF_B" nodad &&
	# The link-local addresses (GID 0) too: a tentative address (the
	# second of duplicate detection) is refused as a source with EINVAL,
	# which a test started at once would meet; a host's are long valid.
	ur_nsexec "$UR_NS_A" sysctl -qw "net.ipv6.conf.$UR_IF_A.accept_dad=0" &&
	ur_nsexec "$UR_NS_B" sysctl -qw "net.ipv6.conf.$UR_IF_B.accept_dad=0" &&
	ur_ip "$UR_NS_A" link set "$UR_IF_A" up &&
	ur_ip "$UR_NS_B" link set "$UR_IF_B" up || return 1
	# Usable once both ends report carrier (operstate up).
	for _ in $(seq 100); do
		[ "$(ur_operstate "$UR_NS_A" "$UR_IF_A")" = up ] &&
		[ "$(ur_operstate "$UR_NS_B" "$UR_IF_B")" = up ] &&
			return 0
		sleep 0.1
	done
	echo "netns pair: $UR_IF_A/$UR_IF_B did not come up" >&2
	return 1
}

# ur_netns_server_client MTU: ur_netns_pair MTU with the server in UR_NS_B
# and the client in UR_NS_A (UR_SNS, UR_CNS, exported); sdev and cdev, each
# side's uroce device of its veth, and gs and gc, its GID index of its IPv4
# address, each expected (uroce1, index 1).  Ends the test (ur_done) when a
# device is missing; the caller checks the indexes it needs.
ur_netns_server_client() {
	ur_netns_pair "$1"
	export UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A
	sdev=$(UR_NS=$UR_NS_B ur_dev_of "$UR_IP_B")
	cdev=$(UR_NS=$UR_NS_A ur_dev_of "$UR_IP_A")
	ur_expect_eq "device of the server's veth" uroce1 "$sdev"
	ur_expect_eq "device of the client's veth" uroce1 "$cdev"
	[ -n "$sdev" ] && [ -n "$cdev" ] || ur_done
	gs=$(UR_NS=$UR_NS_B ur_gid_index "$sdev" "::ffff:$UR_IP_B")
	gc=$(UR_NS=$UR_NS_A ur_gid_index "$cdev" "::ffff:$UR_IP_A")
}

# ur_fresh_pair TAG SDEV CDEV ADDR GID WHAT: a new ibv_rc_pingpong pair
# (500 iterations, server on SDEV in UR_SNS, client on CDEV in UR_CNS to
# ADDR) works; WHAT names the check.
ur_fresh_pair() {
	local port
	port=$(ur_port)
	ur_pair "$1" "$port" ibv_rc_pingpong -d "$2" -p "$port" -g "$5" -n 500 \
		-- ibv_rc_pingpong -d "$3" -p "$port" -g "$5" -n 500 "$4"
	ur_expect_pair_ok "$1" "$6"
}
