#!/usr/bin/env bash
# Large WRITEs and READs between two processes of one host (uroce0 on lo),
# a build against another (the one before shared regions, or one where
# private memory stayed private by default), alternating, next to memcpy
# of 1 MiB on the same machine:
#   ib_write_bw -s 1048576 and 65536, ib_read_bw -s 1048576 and 65536
#
#   bench/shared_mr.sh BUILD_DIR BASELINE_BUILD_DIR [ROUNDS]   (default 3 rounds)
#
# Both builds run with the caller's environment: private memory moves into
# a memfd by default as root, elsewhere with UROCE_SHM_SHARE_MR=1
# (docs/design.md, "Shared regions").
# Prints each run's BW average (MB/s), then the median of each figure for
# both builds, their ratio, and each as a fraction of memcpy's 1 MiB
# figure (bench_memcpy, the median of ROUNDS runs).
set -euo pipefail
build=$(cd "$1" && pwd)
base=$(cd "$2" && pwd)
rounds=${3:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# bw BUILD PROG SIZE [ENV...]: the client's BW average in MB/s.
bw() {
	local port=$((20000 + RANDOM % 20000)) spid
	env "${@:4}" "$1/bin/uroce" run -- "$2" -d uroce0 -x 1 -p "$port" -s "$3" -D 3 >"$tmp/s" 2>&1 &
	spid=$!
	sleep 1
	env "${@:4}" "$1/bin/uroce" run -- "$2" -d uroce0 -x 1 -p "$port" -s "$3" -D 3 127.0.0.1 \
		>"$tmp/c" 2>&1 || true
	wait "$spid" || true
	awk -v s="$3" '$1 == s && NF >= 4 { print $4; exit }' "$tmp/c"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

figs=("ib_write_bw 1048576" "ib_write_bw 65536" "ib_read_bw 1048576" "ib_read_bw 65536")
for ((r = 0; r < rounds; r++)); do
	"$build/bin/bench_memcpy" | awk '$1 == 1048576 { print $2 * 1000; exit }' >>"$tmp/memcpy"
	for fig in "${figs[@]}"; do
		for which in base new; do
			dir=$base
			[ "$which" = new ] && dir=$build
			v=$(bw "$dir" $fig)
			echo "round $r $which $fig: ${v:-none} MB/s"
			echo "${v:-0}" >>"$tmp/${fig// /_}.$which"
		done
	done
done
mc=$(median <"$tmp/memcpy")
echo "memcpy 1 MiB: $mc MB/s (median of $rounds)"
for fig in "${figs[@]}"; do
	b=$(median <"$tmp/${fig// /_}.base")
	n=$(median <"$tmp/${fig// /_}.new")
	awk -v f="$fig" -v b="$b" -v n="$n" -v m="$mc" 'BEGIN {
		printf "%-22s base %8.0f MB/s (%.2f of memcpy)  new %8.0f MB/s (%.2f of memcpy)  new/base %.2f\n",
		       f, b, b / m, n, n / m, (b > 0 ? n / b : 0) }'
done
