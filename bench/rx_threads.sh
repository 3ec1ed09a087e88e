#!/usr/bin/env bash
# Receive contexts (UROCE_RX_THREADS) between two network namespaces over a
# veth: unmodified ib_write_bw with QPS QPs (default 4), 64 KiB messages,
# 5 s, both sides with the same number of contexts, each count in COUNTS
# (default "1 2") taken in turn, RUNS times (default 3), so that a drift
# of the machine's load falls on every count alike.  Needs root.
#
#   bench/rx_threads.sh [BUILD_DIR]        QPS=4 COUNTS="1 2" RUNS=3
#
# Prints one line per run and, per count, the median (Gb/s).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
uroce=$build/bin/uroce
qps=${QPS:-4}
counts=${COUNTS:-1 2}
runs=${RUNS:-3}
command -v ib_write_bw >/dev/null || { echo "missing ib_write_bw: apt-get install perftest" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench/rx_threads.sh needs root (network namespaces)" >&2; exit 1; }
NET=10.95.$((RANDOM % 200))
# shellcheck source=bench/netns_pair.sh
. "$src/bench/netns_pair.sh"
gb=$(dev_gid_of "$nsb" "$NET.2")
ga=$(dev_gid_of "$nsa" "$NET.1")

# One ib_write_bw pair with $1 receive contexts on both sides: its Gb/s.
bw() {
	local n=$1 port=$((20000 + RANDOM % 10000))
	# shellcheck disable=SC2086
	ip netns exec "$nsb" env LD_LIBRARY_PATH="$build/lib" UROCE_RX_THREADS="$n" timeout 60 \
		ib_write_bw $gb -p "$port" -q "$qps" -s 65536 -D 5 --report_gbits >"$tmp/srv" 2>&1 &
	pids+=($!)
	sleep 1
	# shellcheck disable=SC2086
	ip netns exec "$nsa" env LD_LIBRARY_PATH="$build/lib" UROCE_RX_THREADS="$n" timeout 60 \
		ib_write_bw $ga -p "$port" -q "$qps" -s 65536 -D 5 --report_gbits "$NET.2" \
		>"$tmp/cli" 2>&1 || true
	wait "${pids[-1]}" 2>/dev/null || true
	grep -E '^ +[0-9]+ +[0-9]+ ' "$tmp/cli" | tail -n 1 | awk '{ print $4 }'
}

declare -A all=()
for r in $(seq "$runs"); do
	for n in $counts; do
		g=$(bw "$n")
		echo "run $r: $n receive context(s), ib_write_bw -q $qps: ${g:-?} Gb/s"
		all[$n]="${all[$n]:-} ${g:-}"
	done
done
for n in $counts; do
	# shellcheck disable=SC2086
	printf '%s\n' ${all[$n]} | sort -n |
		awk -v n="$n" -v q="$qps" '{ v[NR] = $1 } END {
			if (NR) printf "%s receive context(s), ib_write_bw -q %s: median %.2f Gb/s of %d runs (min %.2f, max %.2f)\n",
				n, q, v[int((NR + 1) / 2)], NR, v[1], v[NR] }'
done
