#!/usr/bin/env bash
# rsockets over uroce next to kernel TCP, side by side in one run, on one
# host (127.0.0.1, "lo") and between two network namespaces joined by a
# veth (MTU 1500, "ns": the server in one, the client in the other; made
# and removed here, needs root):
#   rstream -T b over uroce (rsockets)  against  rstream -T s -T b (kernel
#     TCP sockets): its table, 64 B to 1 MB, latency (usec/xfer, half a
#     round trip) and bandwidth (Gb/sec), both ends blocking in recv/send;
#   the same 64 B round trip in rstream's default mode (both ends spinning
#     on non-blocking calls), uroce against TCP;
#   qperf tcp_lat 64 B: kernel TCP's latency (half a round trip) from
#     another program, blocking;
#   iperf3 with LD_PRELOAD=librspreload.so under `uroce run`  against  plain
#     iperf3: Mbit/s of a 5 s stream, default and 512 KiB windows (-w);
#   udpong -T b -T e (blocking echo) 64 B and 1000 B over uroce's datagram
#     rsockets  against  udpong -T s (kernel UDP sockets): usec/xfer, half a
#     round trip; iperf3 -u -b 0 -l 1400 through the preload against plain
#     iperf3 -u: Mbit/s received;
#   a summary line a place: rsockets / TCP at 64 B latency (blocking rows),
#     at 1 MB bandwidth, and iperf3 preload / plain (the target: latency
#     0.5 or less, the others 1 or more).
#
# Why rstream runs blocking here: by default rstream sends and receives
# with MSG_DONTWAIT on O_NONBLOCK sockets and loops on EAGAIN, in both
# modes (-T s included; it does set TCP_NODELAY, and times the whole
# ping-pong with gettimeofday, usec/xfer being half a round trip).  On a
# busy 2-core machine two processes spinning in recv() system calls wait
# for a time slice before they see the peer's bytes: rstream -T s took
# mostly 0.36-3.9 ms a 64 B transfer where blocking TCP takes 10-17 us.
# The spinning row stays for comparison with earlier runs.
#
#   bench/rsocket.sh [BUILD_DIR]    (default: build)
#   RSOCKET_PLACES="lo ns"          where to measure (ns needs root)
#
# Needs rdmacm-utils (rstream), iperf3, qperf, iproute2; librspreload.so is
# Debian's (/usr/lib/x86_64-linux-gnu/rsocket).  RSOCKET_OUT=FILE also
# writes "key value" lines.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
preload=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
uroce=$build/bin/uroce
places=${RSOCKET_PLACES:-lo ns}
port=$((20000 + RANDOM % 20000))
for tool in rstream udpong iperf3 qperf ip; do
	command -v "$tool" >/dev/null ||
		{ echo "missing $tool: apt-get install rdmacm-utils iperf3 qperf iproute2" >&2; exit 1; }
done
[ -f "$preload" ] || { echo "missing $preload: apt-get install librdmacm1" >&2; exit 1; }
case " $places " in
*" ns "*)
	[ "$(id -u)" = 0 ] || { echo "RSOCKET_PLACES ns needs root (network namespaces)" >&2; exit 1; }
	# Sets nsa (client, NET.1), nsb (server, NET.2), tmp and pids, and
	# removes them all at exit.
	NET=10.93.$((RANDOM % 200))
	# shellcheck source=bench/netns_pair.sh
	. "$src/bench/netns_pair.sh"
	;;
*)
	tmp=$(mktemp -d)
	pids=()
	cleanup() {
		for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
		rm -rf "$tmp"
	}
	trap cleanup EXIT INT TERM
	;;
esac
out=${RSOCKET_OUT:-/dev/null}

# server CMD... & / client CMD...: CMD at the server's or the client's end
# of the place being measured ($place: lo, both here; ns, nsb and nsa).
# server runs in the background and execs, so that its pid is the one
# to kill (timeout passes the signal on).
server() {
	if [ "$place" = ns ]; then exec ip netns exec "$nsb" timeout 120 "$@"; else exec timeout 120 "$@"; fi
}
client() {
	if [ "$place" = ns ]; then ip netns exec "$nsa" timeout 120 "$@"; else timeout 120 "$@"; fi
}

# rstream_run NAME [ARGS...]: an rstream pair (over uroce unless ARGS has
# -T s), the client's output in $tmp/NAME.
rstream_run() {
	local name=$1
	shift
	port=$((port + 1))
	server "$uroce" run -- rstream -p "$port" "$@" > "$tmp/$name.server" 2>&1 &
	pids+=($!)
	sleep 1
	client "$uroce" run -- rstream -s "$host" -p "$port" "$@" > "$tmp/$name" 2>&1 || true
	wait "${pids[-1]}" || true
}

# usec_of FILE / gbps_of FILE ROW: a column of rstream's row ROW (custom:
# the only row).
usec_of() { awk -v r="$2" '$1 == r { v = $NF } END { print v ? v : "?" }' "$1"; }
gbps_of() { awk -v r="$2" '$1 == r { v = $(NF - 1) } END { print v ? v : "?" }' "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "?" }'; }

# iperf_mbps NAME [ARGS...]: Mbit/s the receiver of a 5 s iperf3 stream on
# $port saw; NAME uroce runs both ends through the preload under uroce run.
# (It and qperf_lat run in $(...): the caller moves $port on.)
iperf_mbps() {
	local name=$1 run=()
	shift
	[ "$name" = uroce ] && run=("$uroce" run -- env LD_PRELOAD="$preload")
	server "${run[@]}" iperf3 -s -1 -p "$port" > /dev/null 2>&1 &
	pids+=($!)
	sleep 1
	client "${run[@]}" iperf3 -c "$host" -p "$port" -t 5 -f m "$@" 2>/dev/null |
		awk '/receiver/ { for (i = 1; i < NF; i++) if ($(i + 1) == "Mbits/sec") v = $i } END { print v ? v : "?" }'
	wait "${pids[-1]}" || true
}

# udpong_run NAME [ARGS...]: a udpong pair (over uroce unless ARGS has -T s),
# the server bound to $host, stopped once the client is done; the
# client's output in $tmp/NAME.
udpong_run() {
	local name=$1
	shift
	port=$((port + 1))
	server "$uroce" run -- udpong -b "$host" -p "$port" "$@" > "$tmp/$name.server" 2>&1 &
	pids+=($!)
	sleep 1
	client "$uroce" run -- udpong -s "$host" -p "$port" "$@" > "$tmp/$name" 2>&1 || true
	kill "${pids[-1]}" 2>/dev/null || true
	wait "${pids[-1]}" 2>/dev/null || true
}

# qperf_lat: kernel TCP's 64 B latency in usec on $port (qperf: half a
# round trip).
qperf_lat() {
	server qperf -lp "$port" > /dev/null 2>&1 &
	pids+=($!)
	sleep 1
	client qperf "$host" -lp "$port" -t 3 -m 64 -vu tcp_lat 2>/dev/null |
		awk '$1 == "latency" { v = $3; if ($4 == "ms") v *= 1000; if ($4 == "ns") v /= 1000; print v }'
	kill "${pids[-1]}" 2>/dev/null || true
	wait "${pids[-1]}" 2>/dev/null || true
}

measure() {
	local where u t lat bw ip1 ip2 w args size dg dgbw
	if [ "$place" = ns ]; then
		host=$NET.2
		where="two namespaces over a veth (MTU 1500)"
	else
		host=127.0.0.1
		where="one host (127.0.0.1)"
	fi
	echo "== $where"
	echo "rstream -T b (blocking): rsockets over uroce vs kernel TCP sockets (-T s)"
	rstream_run uroce -T b
	rstream_run tcp -T s -T b
	printf '%-10s %14s %14s %12s %12s\n' test "uroce usec" "tcp usec" "uroce Gb/s" "tcp Gb/s"
	for r in $(awk '$1 ~ /^[0-9]+[kmg]?_(lat|bw)$/ { print $1 }' "$tmp/uroce"); do
		printf '%-10s %14s %14s %12s %12s\n' "$r" "$(usec_of "$tmp/uroce" "$r")" \
			"$(usec_of "$tmp/tcp" "$r")" "$(gbps_of "$tmp/uroce" "$r")" "$(gbps_of "$tmp/tcp" "$r")"
		printf '%s_rstream_%s_usec %s\n%s_rstream_tcp_%s_usec %s\n' "$place" "$r" \
			"$(usec_of "$tmp/uroce" "$r")" "$place" "$r" "$(usec_of "$tmp/tcp" "$r")" >> "$out"
	done

	rstream_run spin_uroce -S 64 -C 1 -I 2000
	rstream_run spin_tcp -T s -S 64 -C 1 -I 2000
	u=$(usec_of "$tmp/spin_uroce" custom)
	t=$(usec_of "$tmp/spin_tcp" custom)
	printf '%-10s %14s %14s   (rstream default: both ends spin on non-blocking calls)\n' 64_spin "$u" "$t"
	printf '%s_rstream_64_spin_usec %s\n%s_rstream_tcp_64_spin_usec %s\n' "$place" "$u" "$place" "$t" >> "$out"
	port=$((port + 1))
	t=$(qperf_lat)
	printf '%-10s %14s %14s   (qperf tcp_lat, blocking)\n' 64_qperf - "${t:-?}"
	printf '%s_qperf_tcp_64_usec %s\n' "$place" "${t:-?}" >> "$out"

	echo "udpong -T b -T e (blocking echo, usec/xfer: half a round trip): datagram rsockets vs kernel UDP (-T s)"
	printf '%-10s %14s %14s\n' test "uroce usec" "udp usec"
	for size in 64 1000; do
		udpong_run "dg_uroce_$size" -T b -T e -S "$size" -C 5000
		udpong_run "dg_udp_$size" -T s -T b -T e -S "$size" -C 5000
		u=$(usec_of "$tmp/dg_uroce_$size" custom)
		t=$(usec_of "$tmp/dg_udp_$size" custom)
		printf '%-10s %14s %14s\n' "${size}_echo" "$u" "$t"
		printf '%s_udpong_%s_usec %s\n%s_udpong_udp_%s_usec %s\n' "$place" "$size" "$u" \
			"$place" "$size" "$t" >> "$out"
		[ "$size" = 64 ] && dg=$(ratio "$u" "$t")
	done
	port=$((port + 1))
	u=$(iperf_mbps uroce -u -b 0 -l 1400)
	port=$((port + 1))
	t=$(iperf_mbps tcp -u -b 0 -l 1400)
	printf '%-10s %14s %14s   (iperf3 -u -b 0 -l 1400, 5 s: Mbit/s received)\n' udp_iperf "$u" "$t"
	printf '%s_iperf3_udp_uroce_mbps %s\n%s_iperf3_udp_mbps %s\n' "$place" "$u" "$place" "$t" >> "$out"
	dgbw=$(ratio "$u" "$t")

	echo "iperf3, 5 s: through librspreload over uroce vs kernel TCP (Mbit/s)"
	printf '%-14s %12s %12s\n' window uroce tcp
	for w in default 512K; do
		args=()
		[ "$w" = default ] || args=(-w "$w")
		port=$((port + 1))
		u=$(iperf_mbps uroce "${args[@]}")
		port=$((port + 1))
		t=$(iperf_mbps tcp "${args[@]}")
		printf '%-14s %12s %12s\n' "$w" "$u" "$t"
		printf '%s_iperf3_%s_uroce_mbps %s\n%s_iperf3_%s_tcp_mbps %s\n' \
			"$place" "$w" "$u" "$place" "$w" "$t" >> "$out"
		if [ "$w" = default ]; then ip1=$(ratio "$u" "$t"); else ip2=$(ratio "$u" "$t"); fi
	done
	lat=$(ratio "$(usec_of "$tmp/uroce" 64_lat)" "$(usec_of "$tmp/tcp" 64_lat)")
	bw=$(ratio "$(gbps_of "$tmp/uroce" 1m_bw)" "$(gbps_of "$tmp/tcp" 1m_bw)")
	echo "summary $place: rsocket/tcp latency 64 B $lat (target <= 0.5), bandwidth 1 MB $bw" \
		"(target >= 1), iperf3 preload/plain $ip1 default, $ip2 -w 512K (target >= 1);" \
		"datagrams: rsocket/udp echo 64 B $dg, iperf3 -u $dgbw"
	printf '%s_ratio_lat_64 %s\n%s_ratio_bw_1m %s\n%s_ratio_iperf3_default %s\n%s_ratio_iperf3_512K %s\n' \
		"$place" "$lat" "$place" "$bw" "$place" "$ip1" "$place" "$ip2" >> "$out"
	echo
}

echo "bench/rsocket.sh $(date -u '+%F %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores"
for place in $places; do
	measure
done
