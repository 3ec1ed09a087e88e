#!/usr/bin/env bash
# The progress issue's table, every row in one run, on whatever machine
# this is (the table says how many cores: its many-core rows mean 16):
#   two namespaces over a veth, MTU 1500 and 9000 (bench/veth.sh):
#     ib_write_bw 64 KiB with 1 and 4 QPs against iperf3 with 1 and 4
#     streams, and 4 QPs against 1 QP;
#   one host: ib_write_bw 64 KiB, PAIRS pairs at once against one pair
#     (bench/pairs.sh);
#   programs that wait on channels (bench/events.sh): rping -C 5000 -S 64
#     against ibv_rc_pingpong -e -s 64, fio's rdma engine (64 KiB,
#     iodepth 16) against ib_write_bw 64 KiB;
#   Open MPI's MPI_Alltoall over uroce against UCX's tcp on the same links
#     (bench/mpi_alltoall.sh, PROGRESS_MPI=1: minutes, and a build with
#     libopenmpi-dev);
#   the CPU of an idle process holding a device, a QP and a CQ; busy
#     latency on one host and over the veth.
# Then one table: figure, uroce, the peer of the same run, ratio, target,
# met.  Needs root (namespaces).  Runs from the build tree here, or from a
# folder bench/bundle.sh made, on a machine without Debian's packages.
#
#   bench/progress.sh [BUILD_DIR]
#       PROGRESS_SECS=5 PROGRESS_PAIRS=8 PROGRESS_RPING_N=5000 PROGRESS_MPI=0
#       PROGRESS_MTUS="1500 9000" PROGRESS_IDLE_SECS=10
#
# PROGRESS_OUT=FILE also writes every raw figure as "key value" lines.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
secs=${PROGRESS_SECS:-5}
pairs=${PROGRESS_PAIRS:-8}
[ "$(id -u)" = 0 ] || { echo "bench/progress.sh needs root (network namespaces)" >&2; exit 1; }
tmp=$(mktemp -d)
idle_pid=
cleanup() {
	[ -n "$idle_pid" ] && kill "$idle_pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

declare -A fig=()
# collect FILE: read a part's "key value" lines into fig.
collect() { [ -f "$1" ] && while read -r k v; do fig[$k]=$v; done < "$1"; return 0; }
say() { echo "progress: $*" >&2; }

mtus=${PROGRESS_MTUS:-1500 9000}
idle_secs=${PROGRESS_IDLE_SECS:-10}
say "veth rows (MTU $mtus; 1 and 4 QPs, $secs s each)"
VETH_OUT=$tmp/veth VETH_SECS=$secs VETH_STREAMS="1 4" MTUS=$mtus "$src/bench/veth.sh" "$build" >&2 || true
collect "$tmp/veth"

say "one host, 1 and $pairs pairs at once"
PAIRS_OUT=$tmp/pairs PAIRS_SECS=$secs PAIRS="1 $pairs" "$src/bench/pairs.sh" "$build" >&2 || true
collect "$tmp/pairs"

say "programs that wait on completion channels"
EVENTS_OUT=$tmp/events EVENTS_RPING_N=${PROGRESS_RPING_N:-5000} "$src/bench/events.sh" "$build" >&2 || true
collect "$tmp/events"

if [ "${PROGRESS_MPI:-0}" != 0 ]; then
	say "MPI_Alltoall, 8 namespaces x 2 ranks"
	ROUNDS=${PROGRESS_MPI_ROUNDS:-20} "$src/bench/mpi_alltoall.sh" "$build" > "$tmp/mpi" 2>&1 || true
	cat "$tmp/mpi" >&2
	fig[mpi_ratio]=$(sed -n 's/^ratio: uroce \/ UCX tcp aggregate = \([0-9.]*\).*/\1/p' "$tmp/mpi")
fi

say "an idle process, $idle_secs s"
gid=$(LD_LIBRARY_PATH=$build/lib ibv_devinfo -v -d uroce0 |
	sed -n 's/.*GID\[ *\([0-9]*\)\]:.*::ffff:.*/\1/p' | head -n 1)
LD_LIBRARY_PATH=$build/lib timeout 30 ibv_rc_pingpong -d uroce0 -g "$gid" -p $((20000 + RANDOM % 20000)) \
	>/dev/null 2>&1 &
idle_pid=$!
sleep 1
t0=$(awk '{ print $14 + $15 }' "/proc/$idle_pid/stat")
sleep "$idle_secs"
t1=$(awk '{ print $14 + $15 }' "/proc/$idle_pid/stat")
kill "$idle_pid" 2>/dev/null || true
idle_pid=
fig[idle_ticks]=$((t1 - t0))

# The table.  ratio A B: A / B ("?" when either is missing); met R OP T.
ratio() { awk -v a="${1:-}" -v b="${2:-}" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "?" }'; }
met() {
	[ "$1" = "?" ] && { echo "?"; return; }
	awk -v r="$1" -v op="$2" -v t="$3" 'BEGIN { ok = op == ">=" ? r >= t : r <= t; print ok ? "yes" : "no" }'
}
row() { printf '| %s | %s | %s | %s | %s | %s |\n' "$@"; }
# target_row WHAT A A_UNIT B B_UNIT OP TARGET
target_row() {
	local r
	r=$(ratio "$2" "$4")
	row "$1" "${2:-?} $3" "${4:-?} $5" "$r" "$6 $7" "$(met "$r" "$6" "$7")"
}
f() { echo "${fig[$1]:-}"; }

echo "## The progress issue's table, $(date -u '+%F %H:%M') UTC, $(nproc) cores, $(uname -r)"
echo
row "figure" "uroce" "peer, same run" "ratio" "target" "met"
row "---" "---" "---" "---" "---" "---"
target_row "veth MTU 1500, \`ib_write_bw\` 64 KiB 1 QP / iperf3 1 stream" \
	"$(f veth1500_write64k_gbps)" Gb/s "$(f veth1500_tcp_gbps)" Gb/s ">=" 1.0
target_row "veth MTU 1500, \`-q 4\` / \`iperf3 -P 4\`" \
	"$(f veth1500_write64k_q4_gbps)" Gb/s "$(f veth1500_tcp_q4_gbps)" Gb/s ">=" 1.0
target_row "veth MTU 9000, 1 QP / iperf3 1 stream" \
	"$(f veth9000_write64k_gbps)" Gb/s "$(f veth9000_tcp_gbps)" Gb/s ">=" 1.5
target_row "veth MTU 1500, 4 QPs / 1 QP aggregate" \
	"$(f veth1500_write64k_q4_gbps)" Gb/s "$(f veth1500_write64k_gbps)" Gb/s ">=" 3.0
target_row "one host, $pairs pairs / 1 pair aggregate (\`ib_write_bw\` 64 KiB)" \
	"$(f "pairs${pairs}_write64k_mbps")" MB/s "$(f pairs1_write64k_mbps)" MB/s ">=" 7
target_row "\`rping -C ${PROGRESS_RPING_N:-5000} -S 64\` a ping / \`ibv_rc_pingpong -e -s 64\` round trip" \
	"$(f events_rping_us)" us "$(f events_pp_event_us)" us "<=" 5
target_row "fio rdma 64 KiB iodepth 16 / \`ib_write_bw\` 64 KiB" \
	"$(f events_fio_mbps)" MB/s "$(f events_write_mbps)" MB/s ">=" 0.5
if [ -n "$(f mpi_ratio)" ]; then
	row "8 namespaces x 2 ranks, \`MPI_Alltoall\` 64 KiB, uroce / UCX tcp" "(above)" "(above)" \
		"$(f mpi_ratio)" ">= 1.5" "$(met "$(f mpi_ratio)" ">=" 1.5)"
else
	row "8 namespaces x 2 ranks, \`MPI_Alltoall\` 64 KiB, uroce / UCX tcp" "-" "-" "-" ">= 1.5" \
		"not run (PROGRESS_MPI=1)"
fi
hz=$(getconf CLK_TCK)
idle_pct=$(awk -v t="$(f idle_ticks)" -v hz="$hz" -v s="$idle_secs" 'BEGIN { printf "%.2f", t * 100 / hz / s }')
row "idle process with device, QP and CQ, $idle_secs s" "$(f idle_ticks) ticks" "-" "$idle_pct % of a core" \
	"< 1 %" "$(awk -v p="$idle_pct" 'BEGIN { print p < 1 ? "yes" : "no" }')"
row "one host, \`ib_send_lat\` 8 B busy, typical" "$(f events_lat_busy_us) us" "-" "-" \
	"no regression (0.9 us on 2 cores)" "compare with a baseline"
row "veth MTU 1500, \`ib_send_lat\` 8 B busy, typical" "$(f veth1500_sendlat_us) us" \
	"qperf udp_lat $(f veth1500_udplat_us) us" "$(ratio "$(f veth1500_sendlat_us)" "$(f veth1500_udplat_us)")" \
	"no regression (5.1 us on 2 cores)" "compare with a baseline"

if [ -n "${PROGRESS_OUT:-}" ]; then
	for k in "${!fig[@]}"; do echo "$k ${fig[$k]}"; done | sort > "$PROGRESS_OUT"
fi
