#!/usr/bin/env bash
# Side-by-side figures on this machine, in one run (shared machines drift:
# compare ratios, not absolutes): uroce (unmodified perftest on the software
# device) next to kernel TCP/UDP (qperf), UCX (ucx_perftest) and memcpy.
#
#   bench/compare.sh [BUILD_DIR [BASELINE_BUILD_DIR]]    (default: build)
#
# With a baseline (another build of uroce, say the last release's), every
# uroce figure is taken for both, alternately, and their ratio printed.
# Everything runs on loopback.  Prints a markdown table.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
base=${2:-}
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

# perftest pair on uroce0 with the library of build dir $1; prints the
# client's result line.
perf_pair() {
	local lib=$1/lib prog=$2
	shift 2
	port=$((port + 1))
	LD_LIBRARY_PATH=$lib timeout 120 "$prog" -d uroce0 -x "$gid" -p "$port" "$@" >"$tmp/srv" 2>&1 &
	local spid=$!
	for _ in $(seq 100); do
		ss -ltn "sport = :$port" | grep -q LISTEN && break
		sleep 0.1
	done
	LD_LIBRARY_PATH=$lib timeout 120 "$prog" -d uroce0 -x "$gid" -p "$port" "$@" 127.0.0.1 \
		>"$tmp/cli" 2>&1 || true
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

# uroce: each figure of this build, and of the baseline right after it.
# field: the perftest column (4 = average bandwidth, 5 = typical latency).
uroce_row() {
	local what=$1 unit=$2 how=$3 field=$4 prog=$5 a b
	shift 5
	a=$(perf_pair "$build" "$prog" "$@" | awk -v f="$field" '{print $f}')
	if [ -z "$base" ]; then
		row "uroce $what" "$a $unit" "$how"
		return
	fi
	b=$(perf_pair "$base" "$prog" "$@" | awk -v f="$field" '{print $f}')
	row "uroce $what" "$a $unit" "$how"
	row "  baseline build" "$b $unit" "ratio this/baseline $(awk -v a="$a" -v b="$b" \
		'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "?" }')"
}

uroce_row "RDMA WRITE bandwidth, 64 KiB" MB/s "ib_write_bw, two processes" 4 ib_write_bw -s 65536 -n 5000
uroce_row "RDMA WRITE bandwidth, 1 MiB" MB/s "ib_write_bw" 4 ib_write_bw -s 1048576 -n 500
uroce_row "RDMA READ bandwidth, 64 KiB" MB/s "ib_read_bw" 4 ib_read_bw -s 65536 -n 5000
uroce_row "SEND bandwidth, 64 KiB" MB/s "ib_send_bw" 4 ib_send_bw -s 65536 -n 5000
uroce_row "SEND message rate, 8 B" Mpps "ib_send_bw -s 8" 5 ib_send_bw -s 8 -n 20000
uroce_row "SEND latency, 2 B (one way, typical)" us "ib_send_lat" 5 ib_send_lat -s 2 -n 5000
uroce_row "WRITE latency, 2 B (one way, typical)" us "ib_write_lat" 5 ib_write_lat -s 2 -n 5000
