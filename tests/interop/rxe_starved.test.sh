#!/bin/bash
# The kernel's rxe in a guest kept off the CPU: an ib_write_bw pair, the
# server in the guest and uroce's client on the host (pinned to CPU 0),
# qemu's threads pinned to CPU 1, where a real-time thread then spins for
# 1.5 s (integ_cpu_hog), three times the client's 7 x 67 ms.  On a host of
# NICs no scheduler holds the responder up; here the guest's rxe cannot
# answer while its emulator waits for a CPU, and uroce's client does not
# count those retries (rel/starved.c: the peer behind the device's tap is
# judged by the process that holds the tap, host/tap_owner.c).  Both sides
# must end well, and the client must have said so ("waits for a CPU").
# Before, the client ended in RETRY_EXC_ERR (status 12).  A bandwidth pair,
# not a ping-pong: the client always has writes in flight, so the guest's
# silence is always one its timer sees; a ping-pong stalled while the
# guest held the turn (the ping acknowledged, the pong not yet sent) has
# nothing outstanding, and 3 of 8 runs here never looked.  Needs two CPUs
# and SCHED_FIFO (root).
set -euo pipefail

src=${UROCE_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
. "$src/tests/interop/lib/interop.sh"

if [ "$(nproc)" -lt 2 ]; then
	echo "SKIP: needs two CPUs ($(nproc) here)"
	exit 77
fi
# qemu's threads back on every CPU they had, whatever ends the test (set
# before vm_boot, whose EXIT trap runs it after its own)
qpid='' mask=''
restore() { [ -z "$mask" ] || taskset -a -p "$mask" "$qpid" >/dev/null 2>&1 || true; }
trap restore EXIT
vm_boot
host_dev

secs=6   # the hog comes 2 s in
port=18700
qpid=$VM_QEMU_PID
mask=$(taskset -p "$qpid" | sed 's/.*: //')
taskset -a -p 2 "$qpid" >/dev/null

vm_bg srv ib_write_bw -x "$VM_GID_INDEX" -s 4096 -D "$secs" -F -p "$port"
vm_wait_port "$port"
UROCE_LOG=debug timeout 120 taskset -c 0 "$uroce" run -- ib_write_bw -d "$dev" -x "$hidx" \
	-s 4096 -D "$secs" -F -p "$port" "$VM_GUEST_IP" >"$VM_DIR/client.out" 2>&1 &
cpid=$!
# qemu's CPU time in ms, all its threads (schedstat's first field, ns)
qemu_ms() { cat /proc/"$qpid"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d", s / 1e6 }'; }
sleep 2
hog_rc=0
q0=$(qemu_ms)
hog=$("$build/bin/integ_cpu_hog" 1 1.5 2>&1) || hog_rc=$?
qran=$(($(qemu_ms) - q0))
if [ "$hog_rc" = 3 ]; then
	wait "$cpid" || true
	vm_wait srv 60 >/dev/null 2>&1 || true
	echo "SKIP: $hog"
	exit 77
fi
[ "$hog_rc" = 0 ] && ok "the real-time thread spun its 1.5 s on qemu's CPU: qemu ran $qran ms of it" ||
	bad "integ_cpu_hog: exit $hog_rc: $hog"
rc=0
wait "$cpid" || rc=$?
restore
srv_rc=0
srv=$(vm_wait srv 120 2>&1) || srv_rc=$?
out=$(grep -v 'uroce debug' "$VM_DIR/client.out" || true)
if [ "$rc" = 0 ] && [ "$srv_rc" = 0 ]; then
	ok "a guest kept off the CPU for 1.5 s, its pair ends well: $(grep -A1 '#bytes' <<<"$out" | tail -n1 | sed 's/uroce .*//' | tr -s ' \t' ' ')"
else
	bad "client exit $rc, guest server exit $srv_rc"
	show_both "$(tail -n 40 "$VM_DIR/client.out")" "$srv"
fi
if grep -q 'the peer waits for a CPU' "$VM_DIR/client.out"; then
	ok "the client counted no retry while the guest's emulator waited: $(grep -c 'the peer waits for a CPU' "$VM_DIR/client.out") looks"
else
	bad "the client never saw its peer wait for a CPU (no 'the peer waits for a CPU')"
fi
[ "$fails" = 0 ] && echo "rxe_starved: PASS" || echo "rxe_starved: FAIL ($fails)"
[ "$fails" = 0 ]
