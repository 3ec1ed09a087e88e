#!/usr/bin/env bash
# Many QPs between two processes of one host, in one run: unmodified
# ib_write_bw (64 KiB, 5 s) over one QP pair, then over 500 pairs (two
# ib_write_bw pairs of -q 250 at once: perftest puts all of a run's QPs on
# one CQ of 128 entries each, and the device allows 32767 entries, as rxe
# does), and their ratio; then bench_qps: resident memory per QP and QPs
# brought to RTS per second for 1000 QPs.
#
#   bench/qps.sh [BUILD_DIR]        (default: build)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
uroce=$build/bin/uroce
# shellcheck source=bench/lib.sh
. "$src/bench/lib.sh"
bench_scratch
bench_need ib_write_bw -- perftest

# bw TAG QPS PORT: starts an ib_write_bw pair on lo in the background.
bw() {
	"$uroce" run -- timeout 90 ib_write_bw -d uroce0 -x 1 -q "$2" -s 65536 -D 5 -p "$3" \
		--report_gbits >"$tmp/$1.srv" 2>&1 &
	pids+=($!)
	sleep 1
	"$uroce" run -- timeout 90 ib_write_bw -d uroce0 -x 1 -q "$2" -s 65536 -D 5 -p "$3" \
		--report_gbits 127.0.0.1 >"$tmp/$1.cli" 2>&1 &
	pids+=($!)
}
gbps() { awk '$1 == 65536 { print $4 }' "$tmp/$1.cli" | tail -n 1; }

port=$((20000 + RANDOM % 10000))
bw one 1 "$port"
wait
one=$(gbps one)
bw many1 250 $((port + 1))
bw many2 250 $((port + 2))
wait
m1=$(gbps many1) m2=$(gbps many2)
many=$(awk -v a="$m1" -v b="$m2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a + b; else print "failed" }')
ratio=$(awk -v m="$many" -v o="$one" 'BEGIN { if (m + 0 > 0 && o + 0 > 0) printf "%.2f", m / o; else print "-" }')
printf '| ib_write_bw 64 KiB, one host | Gb/s |\n|---|---|\n'
printf '| 1 QP pair | %s |\n| 500 QP pairs (2 x -q 250, at once) | %s (%s + %s) |\n' "$one" "$many" "$m1" "$m2"
printf '| 500 pairs / 1 pair | %s |\n\n' "$ratio"
"$uroce" run -- "$build/bin/bench_qps" uroce0 1 1000
