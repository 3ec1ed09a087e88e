#!/usr/bin/env bash
# Through the port-4791 owner: between two network namespaces over a veth,
# with another uroce process in the server's namespace started first, so
# that it serves port 4791 and hands every packet for the server on to it
# (docs/design.md, "The host's port 4791").  Unmodified ib_write_bw (64 KiB,
# 5 s) and ib_send_lat (8 B), and the same pair with nobody between (the
# server serving the port itself), for this build and a baseline build,
# taken one right after the other; and the packets the server's namespace
# counted lost between its processes (host_lost) in each build's runs.
# Needs root.
#
#   bench/handon.sh [BUILD_DIR [BASELINE_BUILD_DIR]]
#
# Prints markdown rows (what | figure | how).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
base=${2:-}
uroce=$build/bin/uroce
for tool in ib_write_bw ib_send_lat ibv_rc_pingpong ip; do
	command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install perftest ibverbs-utils iproute2" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "bench/handon.sh needs root (network namespaces)" >&2; exit 1; }

row() { printf '| %-48s | %12s | %s |\n' "$1" "$2" "$3"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "?" }'; }

NET=10.95.7
# shellcheck source=bench/netns_pair.sh
. "$src/bench/netns_pair.sh"
gb=$(dev_gid_of "$nsb" "$NET.2")
ga=$(dev_gid_of "$nsa" "$NET.1")

# host_lost of the server namespace's device, summed over its counters.
host_lost() {
	# shellcheck disable=SC2086
	ip netns exec "$nsb" "$uroce" devinfo -c ${gb%% -x*} 2>/dev/null |
		awk '$1 == "host_lost" || $1 == "host_lost:" { n += $NF } END { print n + 0 }'
}

# perftest_pair with build dir $1's library, a bystander serving port
# 4791 in the server's namespace when $2 is "via".
pair() {
	local build=$1 how=$2 by= line
	shift 2
	if [ "$how" = via ]; then
		# Opens the device at once, then waits for a client that never
		# comes: the namespace's first uroce process, its port-4791 owner.
		# shellcheck disable=SC2086
		ip netns exec "$nsb" env LD_LIBRARY_PATH="$build/lib" timeout 60 ibv_rc_pingpong \
			${gb/-x/-g} -p $((20000 + RANDOM % 10000)) >"$tmp/by" 2>&1 &
		by=$!
		pids+=("$by")
		sleep 0.5
		kill -0 "$by" 2>/dev/null || { echo "the bystander did not start:" >&2; cat "$tmp/by" >&2; exit 1; }
	fi
	line=$(perftest_pair "$build" "$@")
	if [ -n "$by" ]; then
		# Still there: it served the port the whole run.
		kill "$by" 2>/dev/null || { echo "the bystander ended before the pair:" >&2; cat "$tmp/by" >&2; exit 1; }
		wait "$by" 2>/dev/null || true
	fi
	echo "$line"
}

bw() { pair "$1" "$2" ib_write_bw -s 65536 -D 5 --report_gbits | awk '{ print $4 }'; }
lat() { pair "$1" "$2" ib_send_lat -s 8 -n 20000 | awk '{ print $5 }'; }

l0=$(host_lost)
bw_via=$(bw "$build" via)
lat_via=$(lat "$build" via)
l1=$(host_lost)
if [ -n "$base" ]; then
	bbw_via=$(bw "$base" via)
	blat_via=$(lat "$base" via)
fi
l2=$(host_lost)
bw_direct=$(bw "$build" direct)
lat_direct=$(lat "$build" direct)

row "WRITE 64 KiB, handed on by the port's owner" "${bw_via:-?} Gb/s" "ib_write_bw -D 5; / nobody between $(ratio "$bw_via" "$bw_direct")"
[ -n "$base" ] && row "  baseline build" "${bbw_via:-?} Gb/s" "ratio this/that $(ratio "$bw_via" "$bbw_via")"
row "WRITE 64 KiB, nobody between" "${bw_direct:-?} Gb/s" "the server serves port 4791 itself"
row "SEND latency 8 B, handed on" "${lat_via:-?} us" "ib_send_lat, typical; / nobody between $(ratio "$lat_via" "$lat_direct")"
[ -n "$base" ] && row "  baseline build" "${blat_via:-?} us" "ratio this/that $(ratio "$lat_via" "$blat_via")"
row "SEND latency 8 B, nobody between" "${lat_direct:-?} us" ""
row "packets lost handing on (host_lost)" "$((l1 - l0))" "server namespace, this build's two runs"
[ -n "$base" ] && row "  baseline build" "$((l2 - l1))" "its two runs"
exit 0
