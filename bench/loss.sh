#!/usr/bin/env bash
# Goodput under random loss, uroce RC next to kernel TCP, on the same link
# in one run: two network namespaces joined by a veth pair (MTU 1500), and
# nftables in the receiving namespace dropping each packet of the flow at
# random (numgen) in both directions: uroce's UDP (port 4791 and its own
# ports) and iperf3's TCP port.  uroce: unmodified ib_write_bw (64 KiB
# messages, 5 s) with selective retransmission (the default) and with
# go-back-N only (UROCE_SELECTIVE_RETRANSMIT=0); TCP: iperf3 (5 s).  Needs root
# (namespaces, nftables).
#
#   bench/loss.sh [BUILD_DIR] [LOSS_PERCENT...]      (default: build, 0 1 5)
#
# Prints a markdown table and writes loss.json in the current directory.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
shift || true
losses=("$@")
[ ${#losses[@]} -gt 0 ] || losses=(0 1 5)
uroce=$build/bin/uroce
for tool in ib_write_bw iperf3 nft ip; do
	command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install perftest iperf3 nftables iproute2" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "bench/loss.sh needs root (namespaces, nftables)" >&2; exit 1; }
NET=10.97.0
. "$(dirname "$0")/netns_pair.sh"

# set_loss PCT: drop PCT % of UDP and of iperf3's TCP, both ways, in B.
set_loss() {
	ip netns exec "$nsb" nft flush ruleset
	[ "$1" = 0 ] && return
	ip netns exec "$nsb" nft -f - <<EOF
table inet loss {
	chain in { type filter hook input priority 0; meta l4proto udp numgen random mod 1000 < $(( $1 * 10 )) drop; tcp dport 5201 numgen random mod 1000 < $(( $1 * 10 )) drop; }
	chain out { type filter hook output priority 0; meta l4proto udp numgen random mod 1000 < $(( $1 * 10 )) drop; tcp sport 5201 numgen random mod 1000 < $(( $1 * 10 )) drop; }
}
EOF
}

# uroce_bw SELECTIVE: ib_write_bw 64 KiB for 5 s, B serving, selective
# retransmission on (1, the default) or off (0); prints Gb/s (average).
uroce_bw() {
	local gb ga port=$((20000 + RANDOM % 10000))
	export UROCE_SELECTIVE_RETRANSMIT=$1
	gb=$(dev_gid_of "$nsb" 10.97.0.2)
	ga=$(dev_gid_of "$nsa" 10.97.0.1)
	# shellcheck disable=SC2086
	ip netns exec "$nsb" timeout 60 "$uroce" run -- ib_write_bw $gb -s 65536 -D 5 \
		-p "$port" --report_gbits >"$tmp/srv" 2>&1 &
	pids+=($!)
	sleep 1
	# shellcheck disable=SC2086
	if ip netns exec "$nsa" timeout 60 "$uroce" run -- ib_write_bw $ga -s 65536 -D 5 \
		-p "$port" --report_gbits 10.97.0.2 >"$tmp/cli" 2>&1; then
		awk '$1 == 65536 { print $4 }' "$tmp/cli" | tail -n 1
	else
		echo "failed"
	fi
	wait "${pids[-1]}" 2>/dev/null || true
	unset UROCE_SELECTIVE_RETRANSMIT
}

# counter NS IP NAME: a counter of the device holding IP in NS (counters
# outlive the processes).
counter() {
	local d
	d=$(dev_gid_of "$1" "$2" | awk '{ print $2 }')
	ip netns exec "$1" "$uroce" devinfo -c -d "$d" 2>/dev/null |
		awk -v n="$3" '$1 == n { print $2; f = 1 } END { if (!f) print 0 }'
}

# retries NS IP: the requester's go-backs so far (completer_retry_err of
# the device holding IP in NS; counters outlive the processes).
retries() {
	local d
	d=$(dev_gid_of "$1" "$2" | awk '{ print $2 }')
	ip netns exec "$1" "$uroce" devinfo -c -d "$d" 2>/dev/null |
		awk '$1 == "completer_retry_err" { print $2; f = 1 } END { if (!f) print 0 }'
}

tcp_bw() {
	ip netns exec "$nsb" iperf3 -s -1 >/dev/null 2>&1 &
	pids+=($!)
	sleep 0.5
	ip netns exec "$nsa" iperf3 -c 10.97.0.2 -t 5 -J 2>/dev/null |
		python3 -c 'import json,sys; print("%.3f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9))' ||
		echo "failed"
	wait "${pids[-1]}" 2>/dev/null || true
}

printf '| loss | uroce, selective | resent alone / go-backs / timer-driven | uroce, go-back-N only | go-backs | kernel TCP (iperf3) | selective / TCP | selective / go-back-N |\n|---|---|---|---|---|---|---|---|\n'
json="["
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }
for l in "${losses[@]}"; do
	set_loss "$l"
	r0=$(retries "$nsa" 10.97.0.1)
	s0=$(counter "$nsa" 10.97.0.1 selective_resends)
	t0=$(counter "$nsa" 10.97.0.1 timer_resends)
	u=$(uroce_bw 1)
	g=$(( $(retries "$nsa" 10.97.0.1) - r0 ))
	sr=$(( $(counter "$nsa" 10.97.0.1 selective_resends) - s0 ))
	tr=$(( $(counter "$nsa" 10.97.0.1 timer_resends) - t0 ))
	r0=$(retries "$nsa" 10.97.0.1)
	ub=$(uroce_bw 0)
	gb=$(( $(retries "$nsa" 10.97.0.1) - r0 ))
	t=$(tcp_bw)
	printf '| %s %% | %s Gb/s | %s / %s / %s | %s Gb/s | %s | %s Gb/s | %s | %s |\n' "$l" "$u" "$sr" "$g" "$tr" \
		"$ub" "$gb" "$t" "$(ratio "$u" "$t")" "$(ratio "$u" "$ub")"
	json+="{\"loss_pct\": $l, \"uroce_gbps\": \"$u\", \"uroce_selective_resends\": $sr, \"uroce_go_backs\": $g, \"uroce_timer_resends\": $tr, \"uroce_go_back_only_gbps\": \"$ub\", \"go_back_only_go_backs\": $gb, \"tcp_gbps\": \"$t\"},"
done
echo "${json%,}]" >loss.json
