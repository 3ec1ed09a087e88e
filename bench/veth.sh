#!/usr/bin/env bash
# Between two network namespaces over a veth pair: unmodified ib_write_bw
# (64 KiB, 5 s) with 1 and with 4 QPs next to kernel TCP with as many
# streams (iperf3 -P), and ib_send_lat (8 B) next to UDP latency (qperf
# udp_lat, one way, where qperf is installed), at each veth MTU given
# (default 1500 and 9000: uroce's path MTU follows the link's, 1024 and
# 4096 bytes).  Needs root (namespaces).
#
#   bench/veth.sh [BUILD_DIR [BASELINE_BUILD_DIR]]
#       MTUS="1500 9000" VETH_STREAMS="1 4" VETH_SECS=5
#
# With a baseline build, its uroce figures are taken right after this
# build's.  Prints markdown rows (what | figure | how), and "key value"
# lines of the raw figures to $VETH_OUT if set (bench/compare.sh reads
# them).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
base=${2:-}
uroce=$build/bin/uroce
for tool in ib_write_bw ib_send_lat iperf3 ip; do
	command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install perftest iperf3 iproute2" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "bench/veth.sh needs root (network namespaces)" >&2; exit 1; }
out=${VETH_OUT:-/dev/null}
secs=${VETH_SECS:-5}
streams=${VETH_STREAMS:-1 4}
: > "$out"

row() { printf '| %-44s | %14s | %s |\n' "$1" "$2" "$3"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "?" }'; }

# iperf3_gbps NS_SERVER NS_CLIENT ADDR STREAMS: kernel TCP's received Gb/s
# over SECS seconds (text output: no python on a bare machine).
iperf3_gbps() {
	local p=$((15200 + RANDOM % 1000))
	ip netns exec "$1" iperf3 -s -1 -p "$p" >/dev/null 2>&1 &
	pids+=($!)
	sleep 0.5
	ip netns exec "$2" iperf3 -c "$3" -p "$p" -t "$secs" -P "$4" -f g 2>/dev/null |
		awk '/receiver/ { r = $(NF - 2) } END { print (r == "" ? "?" : r) }'
	wait "${pids[-1]}" 2>/dev/null || true
}

# Each MTU on its own pair of namespaces (netns_pair.sh cleans up on exit).
one_mtu() {
	local m=$1 q bw bbw lat blat tcp udp
	NET=10.94.$((m % 200))
	MTU=$m
	# shellcheck source=bench/netns_pair.sh
	. "$src/bench/netns_pair.sh"
	gb=$(dev_gid_of "$nsb" "$NET.2")
	ga=$(dev_gid_of "$nsa" "$NET.1")
	# QPs against as many TCP streams: one, then several (receive spread).
	for q in $streams; do
		bw=$(perftest_pair "$build" ib_write_bw -s 65536 -q "$q" -D "$secs" --report_gbits | awk '{ print $4 }')
		[ -n "$base" ] && bbw=$(perftest_pair "$base" ib_write_bw -s 65536 -q "$q" -D "$secs" --report_gbits |
			awk '{ print $4 }')
		tcp=$(iperf3_gbps "$nsb" "$nsa" "$NET.2" "$q")
		sfx=$([ "$q" = 1 ] || echo "_q$q")
		row "uroce WRITE 64 KiB, $q QP, veth MTU $m" "${bw:-?} Gb/s" \
			"ib_write_bw -q $q -D $secs, two namespaces; / TCP $(ratio "$bw" "$tcp")"
		[ -n "$base" ] && row "  baseline build" "${bbw:-?} Gb/s" "ratio this/that $(ratio "$bw" "$bbw")"
		row "kernel TCP, $q stream(s), veth MTU $m" "$tcp Gb/s" "iperf3 -P $q -t $secs"
		printf 'veth%s_write64k%s_gbps %s\nveth%s_tcp%s_gbps %s\n' "$m" "$sfx" "$bw" "$m" "$sfx" "$tcp" >> "$out"
	done
	lat=$(perftest_pair "$build" ib_send_lat -s 8 -n 20000 | awk '{ print $5 }')
	[ -n "$base" ] && blat=$(perftest_pair "$base" ib_send_lat -s 8 -n 20000 | awk '{ print $5 }')
	udp='?'
	if command -v qperf >/dev/null; then
		ip netns exec "$nsb" qperf >/dev/null 2>&1 &
		pids+=($!)
		sleep 0.5
		udp=$(ip netns exec "$nsa" qperf -t 3 -m 8 "$NET.2" udp_lat |
			awk '$1 == "latency" { v = $3; u = $4; m = u ~ /^ms/ ? 1000 : u ~ /^ns/ ? 0.001 : 1; printf "%.1f", v * m }')
		kill "${pids[-1]}" 2>/dev/null || true
	fi
	row "uroce SEND latency 8 B, veth MTU $m" "${lat:-?} us" "ib_send_lat, typical; / UDP $(ratio "$lat" "$udp") (lower is better)"
	[ -n "$base" ] && row "  baseline build" "${blat:-?} us" "ratio this/that $(ratio "$lat" "$blat")"
	row "kernel UDP latency 8 B, veth MTU $m" "$udp us" "qperf udp_lat, one way"
	printf 'veth%s_sendlat_us %s\nveth%s_udplat_us %s\n' "$m" "$lat" "$m" "$udp" >> "$out"
	cleanup
	trap - EXIT
}

for m in ${MTUS:-1500 9000}; do
	( one_mtu "$m" )
done
