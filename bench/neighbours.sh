#!/usr/bin/env bash
# What busy-polling uroce programs leave to the rest of the machine: a
# thread in another session that sleeps 1 ms at a time (bench_sleeper, as
# a shell, an editor or a peer process would) beside PAIRS unmodified
# ib_send_lat pairs on lo polling for SECS seconds, for this build and a
# baseline build, one after the other, ROUNDS times; and the sleeper alone.
# On kernels that group each session's threads (autogroup), a session
# whose threads sleep and wake thousands of times a second beside busy
# ones kept the other sessions off the CPU for seconds (docs/reliability.md).
#
#   bench/neighbours.sh [BUILD_DIR [BASELINE_BUILD_DIR]]
#   environment: PAIRS (2), SECS (30), ROUNDS (2)
#
# Prints markdown rows (what | figure | how).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
base=${2:-}
pairs=${PAIRS:-2} secs=${SECS:-30} rounds=${ROUNDS:-2}
sleeper=$build/bin/bench_sleeper
command -v ib_send_lat >/dev/null || { echo "missing ib_send_lat: apt-get install perftest" >&2; exit 1; }
[ -x "$sleeper" ] || { echo "missing $sleeper: build uroce first (scripts/build.sh)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

row() { printf '| %-52s | %-44s | %s |\n' "$1" "$2" "$3"; }

# busy LIB: PAIRS ib_send_lat pairs with LIB's library, in a session of
# their own, for SECS seconds (started now, in the background).
busy() {
	setsid bash -c '
		lib=$1 pairs=$2 secs=$3
		for i in $(seq "$pairs"); do
			port=$((21000 + RANDOM % 20000))
			LD_LIBRARY_PATH=$lib timeout $((secs + 30)) ib_send_lat -d uroce0 -x 1 -D "$secs" -p "$port" >/dev/null 2>&1 &
			sleep 0.3
			LD_LIBRARY_PATH=$lib timeout $((secs + 30)) ib_send_lat -d uroce0 -x 1 -D "$secs" -p "$port" 127.0.0.1 >/dev/null 2>&1 &
		done
		wait' _ "$1" "$pairs" "$secs" </dev/null >/dev/null 2>&1 &
	busy_pid=$!
}

# sleeper: bench_sleeper in a session of its own, for SECS seconds.
sleeper() {
	sleep 2   # the pairs connected and polling
	setsid "$sleeper" "$secs" </dev/null
}

row "what" "1 ms sleeper in another session" "how"
row "---" "---" "---"
row "sleeper alone" "$(sleeper)" "nothing else running (the machine's own noise)"
for r in $(seq "$rounds"); do
	for b in "$build" ${base:+"$base"}; do
		busy "$b/lib"
		out=$(sleeper)
		wait "$busy_pid" 2>/dev/null || true
		name=this; [ "$b" = "$build" ] || name=baseline
		row "beside $pairs ib_send_lat pairs, $name build (round $r)" "$out" "ib_send_lat -D $secs on lo, busy polling"
	done
done
