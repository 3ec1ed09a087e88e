#!/usr/bin/env bash
# Side-by-side figures on this machine, in one run (shared machines drift:
# compare ratios, not absolutes): uroce (unmodified perftest on the software
# device) next to kernel TCP/UDP (qperf), UCX (ucx_perftest) and memcpy.
#
#   bench/compare.sh [BUILD_DIR]        (default: build)
#
# Everything runs on loopback.  Prints a markdown table.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
uroce=$build/bin/uroce
port=$((30000 + RANDOM % 20000))
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

for tool in qperf ucx_perftest ib_write_bw; do
	command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install qperf ucx-utils perftest" >&2; exit 1; }
done

row() { printf '| %-44s | %14s | %s |\n' "$1" "$2" "$3"; }

gid=$("$uroce" run -- ibv_devinfo -v -d uroce0 | sed -n 's/.*GID\[ *\([0-9]*\)\]:.*::ffff:.*/\1/p' | head -n 1)

# perftest pair on uroce0; prints the client's result line.
perf_pair() {
	local prog=$1
	shift
	port=$((port + 1))
	timeout 120 "$uroce" run -- "$prog" -d uroce0 -x "$gid" -p "$port" "$@" >"$tmp/srv" 2>&1 &
	local spid=$!
	for _ in $(seq 100); do
		ss -ltn "sport = :$port" | grep -q LISTEN && break
		sleep 0.1
	done
	timeout 120 "$uroce" run -- "$prog" -d uroce0 -x "$gid" -p "$port" "$@" 127.0.0.1 >"$tmp/cli" 2>&1 || true
	wait "$spid" || true
	grep -E '^ +[0-9]+ +[0-9]+ ' "$tmp/cli" | tail -n 1
}

echo "## Side-by-side, $(date -u +%F), $(nproc) cores, $(uname -r)"
echo
printf '| %-44s | %14s | %s |\n' "what" "figure" "how"
printf '|%s|%s|%s|\n' "----------------------------------------------" "----------------" "---"

# memcpy
"$build/bin/bench_memcpy" 0.3 >"$tmp/memcpy"
row "memcpy, 64 KiB (in cache)" "$(awk '$1==65536{print $2}' "$tmp/memcpy") GB/s" "bench_memcpy (glibc)"
row "ur_memcpy, 64 KiB (uroce's data-path copy)" "$(awk '$1==65536{print $3}' "$tmp/memcpy") GB/s" "bench_memcpy"
row "memcpy, 64 MiB (out of cache)" "$(awk '$1==67108864{print $2}' "$tmp/memcpy") GB/s" "bench_memcpy"

# kernel TCP/UDP
qperf --listen_port "$((port + 500))" >/dev/null 2>&1 &
pids+=($!)
sleep 0.5
qperf -lp "$((port + 500))" -t 3 127.0.0.1 tcp_bw udp_bw tcp_lat udp_lat >"$tmp/qperf" 2>&1 || true
q() { awk -v t="$1" -v k="$2" '$1==t":"{f=1;next} f&&$1==k{print $3, $4; f=0}' "$tmp/qperf"; }
row "kernel TCP bandwidth (qperf tcp_bw)" "$(q tcp_bw bw)" "loopback"
row "kernel UDP bandwidth (qperf udp_bw, recv)" "$(q udp_bw recv_bw)" "loopback"
row "kernel TCP latency (qperf tcp_lat, one way)" "$(q tcp_lat latency)" "loopback"
row "kernel UDP latency (qperf udp_lat, one way)" "$(q udp_lat latency)" "loopback"

# UCX
ucx() {
	local tls=$1 test=$2 size=$3 p=$((port + 600 + RANDOM % 100))
	UCX_TLS=$tls timeout 60 ucx_perftest -p "$p" >/dev/null 2>&1 &
	local spid=$!
	sleep 1
	UCX_TLS=$tls timeout 60 ucx_perftest 127.0.0.1 -p "$p" -t "$test" -s "$size" -n 20000 2>/dev/null |
		awk '/Final:/{print}' | tail -n 1
	wait "$spid" 2>/dev/null || true
}
u_lat=$(ucx sm,self tag_lat 8 | awk '{print $3}')
u_bw=$(ucx sm,self ucp_put_bw 65536 | awk '{print $(NF-2)}')
ut_lat=$(ucx tcp,self tag_lat 8 | awk '{print $3}')
row "UCX shared memory latency, 8 B (one way)" "${u_lat:-?} us" "ucx_perftest -t tag_lat, UCX_TLS=sm,self"
row "UCX shared memory put bandwidth, 64 KiB" "${u_bw:-?} MB/s" "ucx_perftest -t ucp_put_bw"
row "UCX TCP latency, 8 B (one way)" "${ut_lat:-?} us" "ucx_perftest -t tag_lat, UCX_TLS=tcp,self"

# uroce
w64=$(perf_pair ib_write_bw -s 65536 -n 5000)
w1m=$(perf_pair ib_write_bw -s 1048576 -n 500)
r64=$(perf_pair ib_read_bw -s 65536 -n 5000)
s64=$(perf_pair ib_send_bw -s 65536 -n 5000)
lat=$(perf_pair ib_send_lat -s 2 -n 5000)
wlat=$(perf_pair ib_write_lat -s 2 -n 5000)
row "uroce RDMA WRITE bandwidth, 64 KiB" "$(awk '{print $4}' <<<"$w64") MB/s" "ib_write_bw, two processes"
row "uroce RDMA WRITE bandwidth, 1 MiB" "$(awk '{print $4}' <<<"$w1m") MB/s" "ib_write_bw"
row "uroce RDMA READ bandwidth, 64 KiB" "$(awk '{print $4}' <<<"$r64") MB/s" "ib_read_bw"
row "uroce SEND bandwidth, 64 KiB" "$(awk '{print $4}' <<<"$s64") MB/s" "ib_send_bw"
row "uroce SEND latency, 2 B (one way, typical)" "$(awk '{print $5}' <<<"$lat") us" "ib_send_lat"
row "uroce WRITE latency, 2 B (one way, typical)" "$(awk '{print $5}' <<<"$wlat") us" "ib_write_lat"
