#!/usr/bin/env bash
# Pairs at once on one host: unmodified ib_write_bw (64 KiB, SECS seconds)
# between processes of this host (shared memory), one pair alone and then
# N pairs started together, each count in PAIRS in turn; the aggregate of
# each count and its ratio to one pair.  Each pair is its own two
# processes, so what this shows is whether pairs keep out of each other's
# way (no lock, thread or ring shared between processes of the host), up
# to the cores the machine has.
#
#   bench/pairs.sh [BUILD_DIR]        PAIRS="1 8" PAIRS_SECS=5
#
# Prints one markdown row per count, and "key value" lines of the raw
# figures to $PAIRS_OUT if set (bench/progress.sh reads them).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
counts=${PAIRS:-1 8}
secs=${PAIRS_SECS:-5}
out=${PAIRS_OUT:-/dev/null}
# shellcheck source=bench/lib.sh
. "$src/bench/lib.sh"
bench_scratch
bench_need ib_write_bw -- perftest
: > "$out"
export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
gid=$("$build/bin/uroce" run -- ibv_devinfo -v -d uroce0 |
	sed -n 's/.*GID\[ *\([0-9]*\)\]:.*::ffff:.*/\1/p' | head -n 1)
base_port=$((20000 + RANDOM % 20000))

# listening PORT: whether a TCP socket listens there.
listening() { ss -ltn "sport = :$1" 2>/dev/null | grep -q LISTEN; }

# aggregate N: N ib_write_bw pairs at once; the sum of their MB/s ("?" if
# any pair gave no figure: a missing pair would flatter the sum).
aggregate() {
	local n=$1 i p sum
	rm -f "$tmp"/cli.*
	for i in $(seq "$n"); do
		p=$((base_port + i))
		timeout $((secs + 60)) ib_write_bw -d uroce0 -x "$gid" -p "$p" -s 65536 -D "$secs" \
			>/dev/null 2>&1 &
		pids+=($!)
	done
	for i in $(seq "$n"); do
		for _ in $(seq 100); do listening $((base_port + i)) && break; sleep 0.1; done
	done
	for i in $(seq "$n"); do
		timeout $((secs + 60)) ib_write_bw -d uroce0 -x "$gid" -p $((base_port + i)) -s 65536 \
			-D "$secs" 127.0.0.1 >"$tmp/cli.$i" 2>&1 &
	done
	wait
	pids=()
	base_port=$((base_port + n + 1))
	sum=0
	for i in $(seq "$n"); do
		v=$(grep -E '^ +[0-9]+ +[0-9]+ ' "$tmp/cli.$i" | tail -n 1 | awk '{ print $4 }')
		[ -n "$v" ] || { echo "?"; return; }
		sum=$(awk -v a="$sum" -v b="$v" 'BEGIN { printf "%.2f", a + b }')
	done
	echo "$sum"
}

one=
for n in $counts; do
	agg=$(aggregate "$n")
	[ "$n" = 1 ] && one=$agg
	r=$(awk -v a="$agg" -v b="${one:-0}" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "?" }')
	printf '| %-44s | %14s | %s |\n' "uroce WRITE 64 KiB, $n pair(s) at once, one host" "$agg MB/s" \
		"ib_write_bw -D $secs, aggregate; / 1 pair $r"
	echo "pairs${n}_write64k_mbps $agg" >> "$out"
done
