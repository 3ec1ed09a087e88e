#!/bin/bash
# ctest-labels: reliability long
# The same RC exchange with the kernel's rxe many times in a row, each way:
# `ibv_rc_pingpong -s 65536 -n 50` (64 packets a message at MTU 1024, a
# 2-slot send queue) RUNS times (default 20) with rxe serving and uroce as
# client, then RUNS times the other way.  Every run must finish within
# RUN_TIMEOUT seconds: a hang is the failure this looks for (docs/interop.md,
# "rxe's requester stalls after a repeated ACK"), which one run in 10-20 hit
# when uroce acknowledged every duplicate.  On a hang the guest's view of
# its QPs (`rdma res show qp`) is printed, and the run's packets are kept
# (build/interop-artifacts/rxe_rc_repeat-SIDE-RUN.pcap).  Takes a few minutes: label
# `long`, outside the default run (docs/testing.md).  SIDES="1" runs only
# the rxe-server half, SIDES="0" only the uroce-server half.
set -euo pipefail

src=${UROCE_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
. "$src/tests/interop/lib/interop.sh"

runs=${RUNS:-20}
run_timeout=${RUN_TIMEOUT:-60}

vm_boot
gidx=$VM_GID_INDEX

host_dev

args=(-s 65536 -n 50)
port=18700
# one GUEST_SERVER(0|1) I: one run; sets RC, OUT, SRV, SECS.
one() {
	local gs=$1 i=$2 t0 rc=0 out srv
	port=$((port + 1))
	vm_capture_start "$VM_DIR/run.pcap"
	t0=$(date +%s%N)
	if [ "$gs" = 1 ]; then
		vm_bg "srv$i" ibv_rc_pingpong -g "$gidx" "${args[@]}" -p "$port"
		vm_wait_port "$port" 60
		out=$(timeout "$run_timeout" "$uroce" run -- ibv_rc_pingpong -d "$dev" -g "$hidx" \
			"${args[@]}" -p "$port" "$VM_GUEST_IP" 2>&1) || rc=$?
		if [ "$rc" = 124 ]; then
			echo "--- guest's QPs while the client hangs:"
			vm_run -t 20 "rdma res show qp" 2>&1 || true
		fi
		if [ "$rc" = 0 ] && ! vm_bg_done "srv$i" "$run_timeout"; then
			echo "--- guest's QPs while its server hangs:"
			vm_run -t 20 "rdma res show qp" 2>&1 || true
		fi
		srv=$(vm_wait "srv$i" $((rc ? 5 : run_timeout)) 2>&1) || rc=$((rc ? rc : $?))
	else
		timeout "$run_timeout" "$uroce" run -- ibv_rc_pingpong -d "$dev" -g "$hidx" "${args[@]}" \
			-p "$port" > "$VM_DIR/srv$i.host" 2>&1 &
		local spid=$!
		host_wait_tcp "$port"
		# The client in the background, so that its QP can be seen while
		# it hangs (killed, it takes the QP with it).
		vm_bg "cli$i" ibv_rc_pingpong -g "$gidx" "${args[@]}" -p "$port" "$VM_HOST_IP"
		if ! vm_bg_done "cli$i" "$run_timeout"; then
			echo "--- guest's QPs while its client hangs:"
			vm_run -t 20 "rdma res show qp" 2>&1 || true
		fi
		out=$(vm_wait "cli$i" 5 2>&1) || rc=$?
		wait "$spid" || rc=$((rc ? rc : $?))
		srv=$(cat "$VM_DIR/srv$i.host")
	fi
	SECS=$(( ($(date +%s%N) - t0) / 1000000 ))
	vm_capture_stop 2>/dev/null
	if [ "$rc" != 0 ]; then
		mkdir -p "$build/interop-artifacts"
		cp "$VM_DIR/run.pcap" "$build/interop-artifacts/rxe_rc_repeat-$gs-$i.pcap" &&
			echo "--- the run's packets: $build/interop-artifacts/rxe_rc_repeat-$gs-$i.pcap"
	fi
	RC=$rc OUT=$out SRV=$srv
}

dup0=$(vm_counter duplicate_request 2>/dev/null || echo 0)
total=0
for gs in ${SIDES:-1 0}; do
	side=$([ $gs = 1 ] && echo "rxe-server" || echo "uroce-server")
	passed=0
	worst=0
	for i in $(seq "$runs"); do
		one "$gs" "$i"
		total=$((total + 1))
		[ "$SECS" -gt "$worst" ] && worst=$SECS
		if [ "$RC" = 0 ]; then
			passed=$((passed + 1))
		else
			bad "$side run $i of $runs: exit $RC after $SECS ms"
			show_both "$OUT" "$SRV"
		fi
	done
	if [ "$passed" = "$runs" ]; then
		ok "$side: $passed of $runs runs of ibv_rc_pingpong ${args[*]} completed (slowest $worst ms)"
	fi
done
echo "guest rxe0 counters:"
vm_counters | grep -E 'sent|rcvd|seq|retry|dup|err' | sed 's/^/  /' || true
echo "duplicate requests the guest saw in these runs: $(( $(vm_counter duplicate_request 2>/dev/null || echo 0) - dup0 ))"
echo "uroce's $dev counters (all runs on this link):"
"$uroce" devinfo -c -d "$dev" 2>/dev/null | grep -E 'seq|retry|nak|selective|held' | sed 's/^/  /' || true

[ "$fails" = 0 ] || { echo "$fails run(s) failed" >&2; exit 1; }
echo "all $total runs completed"
