#!/usr/bin/env bash
# rsockets over uroce next to kernel TCP, on one host (127.0.0.1), in one run:
#   rstream over uroce (rsockets)  against  rstream -T s (kernel TCP sockets):
#     its full table, 64 B to 1 MB, latency (usec/xfer) and bandwidth (Gb/sec)
#   iperf3 with LD_PRELOAD=librspreload.so under `uroce run`  against  plain
#     iperf3: Mbit/s of a 5 s stream, default and 512 KiB windows (-w)
#
#   bench/rsocket.sh [BUILD_DIR]    (default: build)
#
# Needs rdmacm-utils (rstream) and iperf3; librspreload.so is Debian's
# (/usr/lib/x86_64-linux-gnu/rsocket).  RSOCKET_OUT=FILE also writes
# "key value" lines.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
preload=/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so
uroce=$build/bin/uroce
port=$((20000 + RANDOM % 20000))
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
for tool in rstream iperf3; do
	command -v "$tool" >/dev/null ||
		{ echo "missing $tool: apt-get install rdmacm-utils iperf3" >&2; exit 1; }
done
[ -f "$preload" ] || { echo "missing $preload: apt-get install librdmacm1" >&2; exit 1; }

# rstream_table NAME [ARGS...]: rstream's full table, server and client on
# 127.0.0.1 (uroce unless ARGS has -T s); the client's rows in $tmp/NAME.
rstream_table() {
	local name=$1
	shift
	port=$((port + 1))
	"$uroce" run -- rstream -p "$port" "$@" > "$tmp/$name.server" 2>&1 &
	pids+=($!)
	sleep 1
	"$uroce" run -- rstream -s 127.0.0.1 -p "$port" "$@" > "$tmp/$name" 2>&1 || true
	wait "${pids[-1]}" || true
}

# iperf_mbps NAME [ARGS...]: Mbit/s the receiver of a 5 s iperf3 stream saw;
# NAME uroce runs both ends through the preload under uroce run.
iperf_mbps() {
	local name=$1 run=()
	shift
	[ "$name" = uroce ] && run=("$uroce" run -- env LD_PRELOAD="$preload")
	port=$((port + 1))
	"${run[@]}" iperf3 -s -1 -p "$port" > /dev/null 2>&1 &
	pids+=($!)
	sleep 1
	"${run[@]}" iperf3 -c 127.0.0.1 -p "$port" -t 5 -f m "$@" 2>/dev/null |
		awk '/receiver/ { for (i = 1; i < NF; i++) if ($(i + 1) == "Mbits/sec") v = $i } END { print v ? v : "?" }'
	wait "${pids[-1]}" || true
}

echo "rstream, one host: rsockets over uroce vs kernel TCP sockets (rstream -T s)"
rstream_table uroce
rstream_table tcp -T s
printf '%-10s %14s %14s %12s %12s\n' test "uroce usec" "tcp usec" "uroce Gb/s" "tcp Gb/s"
awk 'NR == FNR { if ($1 ~ /^[0-9]+[kmg]?_(lat|bw)$/) { g[$1] = $(NF - 1); u[$1] = $NF }; next }
     $1 ~ /^[0-9]+[kmg]?_(lat|bw)$/ { print $1, $NF, u[$1], $(NF - 1), g[$1] }' \
	"$tmp/tcp" "$tmp/uroce" |
	while read -r t uu tu ug tg; do
		printf '%-10s %14s %14s %12s %12s\n' "$t" "$uu" "$tu" "$ug" "$tg"
		if [ -n "${RSOCKET_OUT:-}" ]; then
			printf 'rstream_%s_usec %s\nrstream_tcp_%s_usec %s\n' \
				"$t" "$uu" "$t" "$tu" >> "$RSOCKET_OUT"
		fi
	done

echo
echo "iperf3, one host, 5 s: through librspreload over uroce vs kernel TCP (Mbit/s)"
printf '%-14s %12s %12s\n' window uroce tcp
for w in default 512K; do
	args=()
	[ "$w" = default ] || args=(-w "$w")
	u=$(iperf_mbps uroce "${args[@]}")
	t=$(iperf_mbps tcp "${args[@]}")
	printf '%-14s %12s %12s\n' "$w" "$u" "$t"
	if [ -n "${RSOCKET_OUT:-}" ]; then
		printf 'iperf3_%s_uroce_mbps %s\niperf3_%s_tcp_mbps %s\n' \
			"$w" "$u" "$w" "$t" >> "$RSOCKET_OUT"
	fi
done
