#!/usr/bin/env bash
# Goodput under reordering, with and without out-of-order tolerance
# (UROCE_OOO=1), in one run: two network namespaces joined by a veth pair
# (MTU 1500), unmodified ib_write_bw and ib_read_bw (64 KiB messages, 5 s),
# uroce's fault injector in both processes holding back a share of the
# received packets behind the next one (UROCE_FAULTS=reorder=...).  Each
# configuration: no reordering, then reordering with go-back-N
# (UROCE_SELECTIVE_RETRANSMIT=0), with selective retransmission (the
# default) and with out-of-order tolerance (on top of the default).  Needs root (namespaces).
#
#   bench/reorder.sh [BUILD_DIR] [REORDER_PERCENT]     (default: build, 5)
#
# Prints a markdown table: MB/s, and each against its clean run.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
pct=${2:-5}
uroce=$build/bin/uroce
for tool in ib_write_bw ib_read_bw ip; do
	command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install perftest iproute2" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "bench/reorder.sh needs root (namespaces)" >&2; exit 1; }
NET=10.96.0
. "$(dirname "$0")/netns_pair.sh"

# bw TOOL ENV...: TOOL 64 KiB for 5 s, B serving, both with ENV; MB/s.
bw() {
	local tool=$1 gb ga port=$((20000 + RANDOM % 10000))
	shift
	gb=$(dev_gid_of "$nsb" 10.96.0.2)
	ga=$(dev_gid_of "$nsa" 10.96.0.1)
	# shellcheck disable=SC2086
	ip netns exec "$nsb" env "$@" timeout 60 "$uroce" run -- "$tool" $gb -s 65536 -D 5 \
		-p "$port" >"$tmp/srv" 2>&1 &
	pids+=($!)
	sleep 1
	# shellcheck disable=SC2086
	if ip netns exec "$nsa" env "$@" timeout 60 "$uroce" run -- "$tool" $ga -s 65536 -D 5 \
		-p "$port" 10.96.0.2 >"$tmp/cli" 2>&1; then
		awk '$1 == 65536 { print $4 }' "$tmp/cli" | tail -n 1
	else
		echo "failed"
	fi
	wait "${pids[-1]}" 2>/dev/null || true
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }

faults="UROCE_FAULTS=reorder=0.$(printf '%02d' "$pct")"
printf '## Reordering %s %% of received packets, %s, %s cores, %s\n\n' "$pct" "$(date -u +%F)" "$(nproc)" "$(uname -r)"
printf '| 64 KiB, 5 s | no reordering | go-back-N | selective | out-of-order tolerance (UROCE_OOO=1) | go-back-N / clean | selective / clean | tolerance / clean |\n|---|---|---|---|---|---|---|---|\n'
for tool in ib_write_bw ib_read_bw; do
	clean=$(bw "$tool" UROCE_OOO=0)
	gbn=$(bw "$tool" "$faults" UROCE_OOO=0 UROCE_SELECTIVE_RETRANSMIT=0)
	sel=$(bw "$tool" "$faults" UROCE_OOO=0 UROCE_SELECTIVE_RETRANSMIT=1)
	ooo=$(bw "$tool" "$faults" UROCE_OOO=1)
	printf '| %s (MB/s) | %s | %s | %s | %s | %s | %s | %s |\n' "$tool" "$clean" "$gbn" "$sel" "$ooo" \
		"$(ratio "$gbn" "$clean")" "$(ratio "$sel" "$clean")" "$(ratio "$ooo" "$clean")"
done
