#!/usr/bin/env bash
# rsockets (src/rsocket) with unmodified Debian programs: rdmacm-utils'
# rstream and rcopy, and iperf3 through Debian's librspreload.so, all over
# uroce's librdmacm.so.1.
#  - rstream on one host (127.0.0.1, uroce0 on lo): the full run (latency and
#    bandwidth, 64 B to 1 MB), then -T a (rpoll), -T n (non-blocking), -T a -T n
#    -T v (both, every byte checked), -k 1 (SO_KEEPALIVE, TCP_KEEPIDLE 1, a
#    keepalive write a second), -B 65536 (SO_SNDBUF/SO_RCVBUF), -b 127.0.0.1
#    (both ends bound first) and -b ::1 over IPv6: client and server exit 0
#    and print their table;
#  - riostream (riomap/riowrite: the data placed straight into the peer's
#    mapped buffer, the receiver spinning on its last byte) -S 1000000 -C 50
#    -T v, and -T a -T n: both exit 0 and print their table (a short run: both
#    programs spin on memory, and on a 2-core machine their spinning starves
#    uroce's engine threads, so its latency tests take milliseconds a round);
#  - rcopy of a 20 MB random file on one host: cmp finds it the same;
#  - the same rstream -T v and rcopy between two namespaces joined by a veth
#    (two hosts' stand-in);
#  - a forking server (progs/fork_echo.c: a child per connection) and its
#    clients under the preload with RDMAV_FORK_SAFE=1: each child reads 1 MiB
#    over rsockets (uroce0 counts the receives);
#  - iperf3 -c/-s with LD_PRELOAD=librspreload.so under `uroce run` (the first
#    case through `uroce run --rsockets`, which preloads it itself), one host
#    (one stream, -P 4, -R: the server sends, and -u: UDP, over datagram
#    rsockets) and between the namespaces: both exit 0, the receiver reports the bytes,
#    no TCP connection on the port is ever established (the preload did not
#    fall back to kernel TCP), and the server's device counted (uroce devinfo
#    -c, rdma_recvs) a receive per data message at least: bytes / 64 KiB;
#  - udpong (datagram rsockets: UD QPs, the UDP side channel until a peer's
#    QP is known) on one host: echo (latency) runs spinning (-T n), polling
#    (-T a) and blocking (-T b), a stream of datagrams (bandwidth), the
#    largest datagram (2032 B) echoed; and between the namespaces, echo at
#    512 B and at 1400 B (over the veth's UD MTU of 1024: by UDP): the
#    client exits 0 with its result line, and the server's device took a
#    UD receive for half the client's datagrams at least (a tenth for the
#    stream, which has no flow control);
#  - progs/rsocket_api.c: the socket contract's corners and every error path
#    (ECONNREFUSED, EPIPE on a closed peer, EAGAIN, 0 at the peer's close,
#    ENOTCONN, EBADF, EPROTONOSUPPORT), riomap/riowrite;
#  - progs/rsocket_dgram.c: datagram sockets' contract (sizes, sources,
#    rconnect, EAGAIN, rpoll, MSG_PEEK/MSG_TRUNC, the UDP side channel's
#    bytes by hand, malformed headers dropped, ::1, the error paths).
# ctest-timeout: 420
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdmacm_lib.sh"
. "$(dirname "$0")/progs_lib.sh"
UR_TIMEOUT=90

command -v rstream > /dev/null || ur_skip "rstream (rdmacm-utils) is not installed"
PRELOAD=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
UROCE=$UR_BUILD/bin/uroce

# rstream_rows NAME ROWS: the output of NAME has ROWS result lines (a name,
# the size, ..., Gb/sec and usec/xfer columns).
rstream_rows() {
	local n
	n=$(grep -cE '^[0-9a-z_]+ +[0-9.]+[kmg]? +[0-9.]+[kmg]? +[0-9]+[kmg]? +[0-9.]+[kmg]? +[0-9.]+s +[0-9.]+ +[0-9.]+$' \
		"$(ur_out "$1")")
	ur_expect_eq "$1 result lines" "$2" "$n"
}

# rstream_case NAME ROWS ARGS...: rstream server and client (127.0.0.1, or
# RS_HOST) with ARGS on a port of their own.
rstream_case() {
	local name=$1 rows=$2 port
	shift 2
	port=$(ur_port)
	cm_pair "$name" rstream -p "$port" "$@" -- rstream -s "${RS_HOST:-127.0.0.1}" -p "$port" "$@"
	ur_expect_pair_ok "$name" "rstream $*"
	rstream_rows "$name.client" "$rows"
	rstream_rows "$name.server" "$rows"
}

# riostream_case NAME ARGS...: riostream server and client on 127.0.0.1.
riostream_case() {
	local name=$1 port
	shift
	port=$(ur_port)
	cm_pair "$name" riostream -p "$port" "$@" -- riostream -s 127.0.0.1 -p "$port" "$@"
	ur_expect_pair_ok "$name" "riostream $*"
	rstream_rows "$name.client" 1
	rstream_rows "$name.server" 1
}

# rcopy_case NAME HOST: a 20 MB file through rcopy, compared.
rcopy_case() {
	local name=$1 host=$2 port dst=$UR_TMP/$1.copy
	port=$(ur_port)
	rm -f "$dst"
	CM_STOP_SERVER=1 cm_pair "$name" rcopy -p "$port" \
		-- rcopy "$UR_TMP/rcopy.src" "$host:$dst" -p "$port"
	ur_expect_rc "$name.client" 0 "rcopy of 20 MB to $host"
	if cmp -s "$UR_TMP/rcopy.src" "$dst"; then
		ur_pass "$name: the copy is the same 20 MB"
	else
		ur_fail "$name: the copy differs from the source ($(stat -c %s "$dst" 2>/dev/null) bytes)"
	fi
	rm -f "$dst"
}

# rdma_recvs NS DEV: DEV's rdma_recvs counter (receives consumed) as seen in
# namespace NS.
rdma_recvs() {
	ur_nsexec "$1" "$UROCE" devinfo -d "$2" -c 2>/dev/null | awk '$1 == "rdma_recvs" { print $2 }'
}

# How iperf_case starts iperf3 under uroce run: the preload by hand, as
# rdma-core documents it, or uroce run's --rsockets, which finds it.
IPERF_RUN=(run -- env LD_PRELOAD="$PRELOAD")

# iperf_case NAME HOST DEV [ARGS...]: iperf3 -t 3 through the preload, server in
# UR_SNS and client in UR_CNS; DEV is the server's device.  Every rsocket
# data message is a WRITE_WITH_IMM of at most 64 KiB that consumes a receive
# at the server: its device's rdma_recvs grows by bytes / 65536 at least.
# IPERF_PER=N: bytes a receive stands for at most (iperf3 -u -l 1400, over
# datagram rsockets: a UD receive per datagram the receiver counts; 2800
# leaves room for those that went by UDP before the peer's QP was known).
iperf_case() {
	local name=$1 host=$2 dev=$3 port before after bytes tcp=0 i per=${IPERF_PER:-65536}
	shift 3
	port=$(ur_port)
	before=$(rdma_recvs "${UR_SNS:-}" "$dev")
	UR_NS=${UR_SNS:-} ur_start "$name.server" \
		"$UROCE" "${IPERF_RUN[@]}" iperf3 -s -1 -p "$port"
	if ! UR_NS=${UR_SNS:-} ur_run "$name.listening" "$UR_BUILD/bin/integ_cm_listening" "$port" 30; then
		ur_fail "$name: iperf3 -s does not listen through rsockets on port $port"
		ur_show "$name.server"
		ur_stop "$name.server"
		return 1
	fi
	UR_NS=${UR_CNS:-} ur_start "$name.client" \
		"$UROCE" "${IPERF_RUN[@]}" iperf3 -c "$host" -p "$port" -t 3 -f m "$@"
	for ((i = 0; i < 40; i++)); do
		ur_nsexec "${UR_CNS:-}" ss -Htn state established "( sport = :$port or dport = :$port )" |
			grep -q . && tcp=1
		kill -0 "${UR_PID[$name.client]}" 2>/dev/null || break
		sleep 0.1
	done
	ur_wait "$name.client"
	ur_wait "$name.server"
	ur_expect_rc "$name.client" 0 "iperf3 -c through librspreload"
	ur_expect_rc "$name.server" 0 "iperf3 -s through librspreload"
	ur_expect_grep "$name.client" '[KMG]Bytes .* receiver' "$name: the receiver's total"
	[ $tcp = 0 ] && ur_pass "$name: no TCP connection on port $port (no fallback to kernel TCP)" ||
		ur_fail "$name: a TCP connection on port $port: the preload fell back to kernel TCP"
	after=$(rdma_recvs "${UR_SNS:-}" "$dev")
	# printf %.0f: mawk prints an integer over 2^31 as 2.8e+09, which
	# the shell's arithmetic below would stop at.
	bytes=$(awk '/receiver/ { for (i = 1; i < NF; i++) {
			u = $(i + 1)
			if (u == "KBytes") printf "%.0f\n", $i * 1024
			if (u == "MBytes") printf "%.0f\n", $i * 1048576
			if (u == "GBytes") printf "%.0f\n", $i * 1073741824 } }' \
		"$(ur_out "$name.client")" | tail -n1)
	if [ -n "$before" ] && [ -n "$after" ] && [ -n "$bytes" ] &&
	   [ $((after - before)) -ge $((bytes / per)) ] && [ "$bytes" -gt 0 ]; then
		ur_pass "$name: $dev took $((after - before)) receives for $bytes bytes (>= bytes / $per)"
	else
		ur_fail "$name: $dev's rdma_recvs went ${before:-?} -> ${after:-?} for ${bytes:-?} bytes"
	fi
}

# udpong_case NAME HOST DEV ARGS...: udpong's server bound to HOST (in UR_SNS)
# and its client (in UR_CNS) with ARGS (-C N among them) on a port of their
# own; DEV is the server's device.  The server serves until stopped.  With
# UDPONG_OVER_MTU=1 the datagrams are larger than the path's UD MTU: the
# client says (at info level) that they go by UDP, and the count of UD
# receives is not checked.  The server's device must take a UD receive for
# 1 in UDPONG_PER of the client's datagrams (2: an echo waits for each; a
# stream without flow control loses what finds the receive queue empty, 10).
#
# udpong's echo (-T e) resends after 1 ms without an answer, into the buffer
# it resends from (rdma-core's udpong.c, client_send_recv): an answer to an
# earlier resend that comes after the next message went out puts that
# earlier sequence number in the buffer, and the client resends it for ever,
# each answer again the wrong one, over kernel UDP as over rsockets.  On a
# loaded host an answer takes over 1 ms often enough.  So an echo client
# killed by its timeout while the server took many times the count's
# datagrams (UD receives, or the kernel's UDP datagrams where they go over
# the UD MTU) met that loop (said, and run once more), not a stall.
udpong_case() {
	udpong_once "$@" && return
	ur_log "$1: udpong's client resent a stale sequence number for ever (its own loop, above); once more"
	UDPONG_LAST=1 udpong_once "$1.again" "${@:2}"
}

# udp_in NS: the UDP datagrams NS's kernel received (what datagrams over the
# UD MTU, which go by UDP, move instead of the UD receive counter).
udp_in() {
	ur_nsexec "$1" awk '/^Udp:/ && n++ { print $2 }' /proc/net/snmp
}

# udpong_once: one run of udpong_case; 1 when it met udpong's own loop.
udpong_once() {
	local name=$1 host=$2 dev=$3 port before after n i per=${UDPONG_PER:-2} echo= ubefore uafter
	shift 3
	port=$(ur_port)
	n=$(printf '%s\n' "$@" | awk 'p { print; exit } $0 == "-C" { p = 1 }')
	printf '%s\n' "$@" | grep -qx e && echo=1
	before=$(rdma_recvs "${UR_SNS:-}" "$dev")
	ubefore=$(udp_in "${UR_SNS:-}")
	UR_NS=${UR_SNS:-} ur_start "$name.server" udpong -b "$host" -p "$port" "$@"
	for ((i = 0; i < 100; i++)); do
		ur_nsexec "${UR_SNS:-}" ss -Hunl "( sport = :$port )" | grep -q . && break
		sleep 0.1
	done
	local UR_TIMEOUT=$UR_TIMEOUT
	[ -n "$echo" ] && UR_TIMEOUT=${UDPONG_ECHO_TIMEOUT:-45}   # thousands take seconds
	UR_NS=${UR_CNS:-} ur_run "$name.client" env UROCE_LOG="${UDPONG_OVER_MTU:+info}" \
		udpong -s "$host" -p "$port" "$@"
	if [ -n "$echo" ] && [ -z "${UDPONG_LAST:-}" ] && [ "${UR_RC[$name.client]}" = 124 ]; then
		after=$(rdma_recvs "${UR_SNS:-}" "$dev")
		uafter=$(udp_in "${UR_SNS:-}")
		ur_stop "$name.server"
		if [ -n "$before" ] && [ -n "$after" ] && [ $((after - before)) -gt $((50 * n)) ]; then
			ur_log "$name: the client hung while $dev took $((after - before)) receives for $n datagrams"
			return 1
		fi
		if [ -n "$ubefore" ] && [ -n "$uafter" ] && [ $((uafter - ubefore)) -gt $((50 * n)) ]; then
			ur_log "$name: the client hung while the server's kernel took $((uafter - ubefore)) UDP datagrams for $n"
			return 1
		fi
	fi
	ur_expect_rc "$name.client" 0 "udpong $*"
	udpong_rows "$name.client"
	if [ -n "${UDPONG_OVER_MTU:-}" ]; then
		ur_stop "$name.server"
		ur_expect_grep "$name.client" 'datagrams of over [0-9]+ bytes go by UDP: the path MTU is' \
			"$name: the client says its datagrams over the MTU go by UDP"
		return 0
	fi
	# The server's process publishes its counters a few times a second.
	for ((i = 0; i < 30; i++)); do
		after=$(rdma_recvs "${UR_SNS:-}" "$dev")
		[ -n "$before" ] && [ -n "$after" ] && [ $((after - before)) -ge $((n / per)) ] && break
		sleep 0.1
	done
	ur_stop "$name.server"
	if [ -n "$before" ] && [ -n "$after" ] && [ $((after - before)) -ge $((n / per)) ]; then
		ur_pass "$name: $dev took $((after - before)) receives for $n datagrams (over UD, 1 in $per at least)"
	else
		ur_fail "$name: $dev's rdma_recvs went ${before:-?} -> ${after:-?} for $n datagrams"
	fi
}

# udpong_rows NAME: udpong's output has its one result line (a name, the
# size, transfers, total, seconds, Gb/sec and usec/xfer).
udpong_rows() {
	local n
	n=$(grep -cE '^[0-9a-z_]+ +[0-9.]+[kmg]? +[0-9.]+[kmg]? +[0-9.]+[kmg]? +[0-9.]+s +[0-9.]+ +[0-9.]+$' \
		"$(ur_out "$1")")
	ur_expect_eq "$1 result lines" 1 "$n"
}

# --- one host -----------------------------------------------------------------

rstream_case rs_full 8
rstream_case rs_async 1 -T a -S 65536 -C 2000
rstream_case rs_nonblock 1 -T n -S 65536 -C 2000
rstream_case rs_async_nb_verify 1 -T a -T n -T v -S 100000 -C 500
rstream_case rs_keepalive 1 -k 1 -S 1000000 -C 2000
rstream_case rs_bufsize 1 -B 65536 -S 1000000 -C 200
rstream_case rs_bind 1 -b 127.0.0.1 -S 65536 -C 500
RS_HOST=::1 rstream_case rs_ipv6 1 -b ::1 -T v -S 65536 -C 500
ur_expect_grep rs_keepalive.client 'Keepalive: ON' "rstream -k 1: SO_KEEPALIVE read back on"
riostream_case rio_verify -S 1000000 -C 50 -T v
riostream_case rio_async_nb -S 100000 -C 100 -T a -T n

head -c 20000000 /dev/urandom > "$UR_TMP/rcopy.src"
rcopy_case rcopy_lo 127.0.0.1

if [ -f "$PRELOAD" ] && command -v iperf3 > /dev/null && ! ur_is_asan && ! ur_is_tsan; then
	IPERF_RUN=(run --rsockets --)
	iperf_case iperf_lo 127.0.0.1 uroce0
	IPERF_RUN=(run -- env LD_PRELOAD="$PRELOAD")
	iperf_case iperf_lo_p4 127.0.0.1 uroce0 -P 4
	iperf_case iperf_lo_reverse 127.0.0.1 uroce0 -R
	IPERF_PER=2800 iperf_case iperf_lo_udp 127.0.0.1 uroce0 -u -b 200M -l 1400
	# Nobody listening: the preload falls back to a TCP socket once the
	# rsocket's connect fails, asking rgetsockname(fd, NULL, &0) for the
	# family first; that question was EFAULT, and iperf3 said "Bad
	# address" where a socket says ECONNREFUSED.
	ur_run iperf_refused "$UROCE" run -- env LD_PRELOAD="$PRELOAD" iperf3 -c 127.0.0.1 \
		-p "$(ur_port)" -t 1
	ur_expect_grep iperf_refused "unable to connect to server: Connection refused" \
		"iperf_refused: nobody listening: ECONNREFUSED through the preload"
	# fork(): a server forking a child per connection, RDMAV_FORK_SAFE=1 on
	# both sides (rsocket(7)): the preload hands each accepted connection
	# to rsockets in the child; the bytes go over uroce.
	port=$(ur_port)
	before=$(rdma_recvs "" uroce0)
	UR_ENV=(RDMAV_FORK_SAFE=1)
	ur_start fork.server "$UROCE" run -- env LD_PRELOAD="$PRELOAD" \
		"$UR_BUILD/bin/integ_fork_echo" -s "$port" 2
	if ur_wait_listen "$port" "${UR_PID[fork.server]}"; then
		for i in 1 2; do
			ur_run "fork.client$i" "$UROCE" run -- env LD_PRELOAD="$PRELOAD" \
				"$UR_BUILD/bin/integ_fork_echo" -c 127.0.0.1 "$port"
			ur_expect_rc "fork.client$i" 0 "fork.client$i: 1 MiB to a forked child, its sum back"
		done
		ur_wait fork.server
		ur_expect_rc fork.server 0 "fork.server: both children ended well"
		after=$(rdma_recvs "" uroce0)
		if [ $(( ${after:-0} - ${before:-0} )) -ge 32 ]; then
			ur_pass "fork: $(( after - before )) RDMA receives on uroce0: the children's connections went over rsockets"
		else
			ur_fail "fork: $before -> $after RDMA receives on uroce0: the connections went by TCP"
		fi
	else
		ur_stop fork.server
		ur_fail "fork: the forking server did not listen"
	fi
	UR_ENV=()
else
	ur_log "skipped: iperf3 through librspreload (not installed, or a sanitizer build)"
fi

prog_run api rsocket_api uroce0 0
# The defaults an administrator sets (rsocket(7)): /etc/rdma/rsocket on a
# tmpfs of a mount namespace of the program's own, the machine's untouched.
RS_CONFIG='mkdir -p /etc/rdma && mount -t tmpfs tmpfs /etc/rdma && mkdir /etc/rdma/rsocket &&
cd /etc/rdma/rsocket && echo 300000 > mem_default && echo 200000 > wmem_default &&
echo 100 > sqsize_default && echo 120 > rqsize_default && echo 96 > inline_default &&
echo 8 > iomap_size && echo 5 > polling_time && echo 20 > wake_up_interval && exec "$@"'
if [ "$(id -u)" = 0 ] && unshare -m --propagation private true 2>/dev/null; then
	ur_run api_config unshare -m --propagation private sh -c "$RS_CONFIG" sh \
		"$UR_BUILD/bin/integ_rsocket_api" uroce0 0 config
	ur_report api_config grep -E '^(ok|FAIL): ' "$(ur_out api_config)"
	ur_expect_rc api_config 0 "api_config: integ_rsocket_api config, /etc/rdma/rsocket set"
	ur_sanitizer_clean api_config
else
	ur_log "note: api_config not run (needs root and a mount namespace)"
fi
prog_run dgram rsocket_dgram uroce0 0

udpong_case udp_echo 127.0.0.1 uroce0 -C 2000 -S 64 -T e
udpong_case udp_echo_poll 127.0.0.1 uroce0 -C 1000 -S 1000 -T a -T e
udpong_case udp_echo_block 127.0.0.1 uroce0 -C 1000 -S 64 -T b -T e
udpong_case udp_echo_max 127.0.0.1 uroce0 -C 500 -S 2032 -T e
UDPONG_PER=10 udpong_case udp_stream 127.0.0.1 uroce0 -C 5000 -S 1024
# udpong's own loop made certain (every datagram received twice a time in
# three): the check above must tell it from a stall.
UR_ENV=(UROCE_FAULTS=dup=0.3)
if UDPONG_ECHO_TIMEOUT=5 udpong_once udp_echo_dup 127.0.0.1 uroce0 -C 2000 -S 64 -T e; then
	ur_fail "udp_echo_dup: udpong's loop on a stale sequence number (duplicated answers) not told"
else
	ur_pass "udp_echo_dup: udpong's loop on a stale sequence number (duplicated answers) told from a stall"
fi
UR_ENV=()

# --- two namespaces -----------------------------------------------------------

ur_netns_pair 1500
export UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A
RS_HOST=$UR_IP_B rstream_case ns_rstream 1 -T v -S 1000000 -C 200
rcopy_case rcopy_ns "$UR_IP_B"
ns_dev=$(ur_nsexec "$UR_NS_B" "$UROCE" netdev | awk -v i="$UR_IF_B" '$5 == i { print $1 }')
udpong_case ns_udp_echo "$UR_IP_B" "${ns_dev:-uroce0}" -C 1000 -S 512 -T e
UDPONG_OVER_MTU=1 udpong_case ns_udp_over_mtu "$UR_IP_B" "${ns_dev:-uroce0}" -C 200 -S 1400 -T e
if [ -f "$PRELOAD" ] && command -v iperf3 > /dev/null && ! ur_is_asan && ! ur_is_tsan; then
	dev=$(ur_nsexec "$UR_NS_B" "$UROCE" netdev | awk -v i="$UR_IF_B" '$5 == i { print $1 }')
	iperf_case iperf_ns "$UR_IP_B" "${dev:-uroce0}"
fi

ur_done
