#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build (CC=clang, -DUROCE_BUILD_FUZZ=ON)
# on a copy of its corpus, for SECONDS each, JOBS at a time, and fails if
# any finds a crash, a leak or a hang (an input that takes over 25 s).
#
#   scripts/fuzz.sh [FUZZ_BUILD] [SECONDS] [JOBS]
#                    (defaults: build-fuzz, $UROCE_FUZZ_SECONDS or 20, 1;
#                     scripts/test gives each 40 s)
#
# Each target prints how many inputs it ran; its findings stay in
# FUZZ_BUILD/TARGET-crash-* (-leak-, -timeout-).  scripts/test runs it at the
# lowest priority beside the tests, one target at a time.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$src/build-fuzz}
secs=${2:-${UROCE_FUZZ_SECONDS:-20}}
jobs=${3:-1}
targets=(fuzz_pkt_parse fuzz_rx fuzz_mad fuzz_local fuzz_registry fuzz_shm_ring fuzz_rs_dgram)
rm -f "$dir"/*-crash-* "$dir"/*-leak-* "$dir"/*-timeout-*

# fuzz_one TARGET: one target on a copy of its corpus.
fuzz_one() {
	local target=$1 corpus work t=$secs
	case $target in
	fuzz_mad) corpus=mad ;;
	fuzz_local) corpus=local ;;
	fuzz_registry) corpus=registry ;;
	fuzz_shm_ring) corpus=shm_ring ;;
	fuzz_rs_dgram) corpus=rs_dgram; t=$((secs / 3)) ;;   # two small readers
	*) corpus=pkt_parse ;;   # fuzz_rx reads a selector byte first: the plain packets serve as seeds either way
	esac
	work=$(mktemp -d)
	cp "$src"/tests/fuzz/corpus/$corpus/* "$work/"
	(cd "$dir" && UROCE_LOG=error "./bin/$target" \
		-max_total_time="$t" -timeout=25 -print_final_stats=1 \
		-artifact_prefix="$dir/$target-" "$work" 2>&1 |
		grep -E '^(stat::number_of_executed_units|==.*ERROR|SUMMARY)' | sed "s/^/$target: /") || true
	rm -rf "$work"
}

for target in "${targets[@]}"; do
	while [ "$(jobs -pr | wc -l)" -ge "$jobs" ]; do
		wait -n || true
	done
	fuzz_one "$target" &
done
wait
findings=$(compgen -G "$dir/*-crash-*"; compgen -G "$dir/*-leak-*"; compgen -G "$dir/*-timeout-*") || true
if [ -n "$findings" ]; then
	echo "a fuzzer found a crash or a hang: see $dir/" >&2
	echo "$findings" >&2
	exit 1
fi
echo "fuzz: ${#targets[@]} targets, no finding"
