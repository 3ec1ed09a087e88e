#!/usr/bin/env bash
# DC against RC, side by side in one run: unmodified ib_write_bw,
# ib_read_bw and ib_send_bw (64 KiB, 5 s) and ib_write_lat (8 B), with -c DC
# and with RC, on one host (uroce0, lo) and between two network namespaces
# joined by a veth pair (MTU 1500).  RC runs twice on one host: as it goes
# by default (shared memory, single copy) and with UROCE_SHM=0, the local
# socket path DC takes.  perftest posts through ibv_wr_* for both (it
# does for uroce's part id, docs/dc.md).  Needs root (namespaces).
#
#   bench/dc.sh [BUILD_DIR]
#
# Prints a markdown table: MB/s (bandwidth) or typical usec (latency), and
# DC against RC on the same path.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
uroce=$build/bin/uroce
for tool in ib_write_bw ib_read_bw ib_send_bw ib_write_lat ip; do
	command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install perftest iproute2" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "bench/dc.sh needs root (namespaces)" >&2; exit 1; }
NET=10.97.0
. "$(dirname "$0")/netns_pair.sh"
unset UROCE_VENDOR_PART_ID

# run WHERE TOOL ENV... -- ARGS...: TOOL's server and client (WHERE: lo or
# veth) with ENV and ARGS; the figure its client reports.
run() {
	local where=$1 tool=$2 env=() args sns=() cns=() s c addr port=$((20000 + RANDOM % 10000))
	shift 2
	while [ "$1" != -- ]; do env+=("$1"); shift; done
	shift
	args=("$@")
	if [ "$where" = lo ]; then
		s="-d uroce0 -x 1" c=$s addr=127.0.0.1
	else
		sns=(ip netns exec "$nsb") cns=(ip netns exec "$nsa")
		s=$(dev_gid_of "$nsb" "$NET.2") c=$(dev_gid_of "$nsa" "$NET.1") addr=$NET.2
	fi
	# shellcheck disable=SC2086
	"${sns[@]}" env "${env[@]}" timeout 60 "$uroce" run -- "$tool" $s \
		-p "$port" "${args[@]}" >"$tmp/srv" 2>&1 &
	pids+=($!)
	sleep 1
	# shellcheck disable=SC2086
	if "${cns[@]}" env "${env[@]}" timeout 60 "$uroce" run -- "$tool" \
		$c -p "$port" "${args[@]}" "$addr" >"$tmp/cli" 2>&1; then
		case $tool in
		*_lat) awk '$1 == 8 { print $5 }' "$tmp/cli" | tail -n 1 ;;
		*) awk '$1 == 65536 { print $4 }' "$tmp/cli" | tail -n 1 ;;
		esac
	else
		echo "failed"
	fi
	wait "${pids[-1]}" 2>/dev/null || true
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }

printf '## DC and RC, %s, %s cores, %s\n\n' "$(date -u +%F)" "$(nproc)" "$(uname -r)"
printf '| path | test | DC | RC, same path | DC/RC | RC, default path |\n|---|---|---|---|---|---|\n'
for where in lo veth; do
	for t in "ib_write_bw -s 65536 -D 5" "ib_read_bw -s 65536 -D 5" "ib_send_bw -s 65536 -D 5" \
		 "ib_write_lat -s 8 -n 5000"; do
		read -r tool args <<<"$t"
		# shellcheck disable=SC2086
		dc=$(run "$where" "$tool" -- -c DC $args)
		# shellcheck disable=SC2086
		rc_same=$(run "$where" "$tool" UROCE_SHM=0 -- $args)
		rc_def=-
		# shellcheck disable=SC2086
		[ "$where" = lo ] && rc_def=$(run "$where" "$tool" -- $args)
		printf '| %s | %s | %s | %s | %s | %s |\n' "$where" "$tool" "$dc" "$rc_same" \
			"$(ratio "$dc" "$rc_same")" "$rc_def"
	done
done
printf '\nBandwidth in MB/s (64 KiB messages, 5 s), latency the typical usec of 8 B.\n'
