#!/bin/bash
# Interop of the connection manager: uroce's librdmacm on the host, the Linux
# kernel's rdma_cm (ib_cm over rdma_rxe) in the qemu guest, on the private
# tap link.  Unmodified rping connects in both directions (server in the
# guest and client on the host, then the reverse), sends 20 pings with
# every byte checked on both sides (-V) and disconnects; each side exits 0
# and the client prints every ping's data.  Then a host client to a guest
# port nobody listens on is REJECTED by the kernel's CM, promptly.
set -euo pipefail

src=${UROCE_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${UROCE_BUILD:-$src/build}
export UROCE_BUILD=$build
. "$src/tests/interop/lib/vm.sh"

uroce=$build/bin/uroce
count=20
fails=0
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# pings OUT: how many of rping's "ping data: rdma-ping-N: ..." lines, N = 0..count-1, OUT has.
pings() {
	{ grep -Eo 'ping data: rdma-ping-[0-9]+' <<<"$1" || true; } | sort -u | wc -l
}

# check NAME RC_CLIENT RC_SERVER CLIENT_OUT SERVER_OUT
check() {
	local n
	n=$(pings "$4")
	if [ "$2" = 0 ] && [ "$3" = 0 ] && [ "$n" = "$count" ]; then
		ok "$1: both exit 0, $n of $count pings' data printed by the client"
	else
		bad "$1: client exit $2, server exit $3, $n of $count pings printed"
		echo "--- client:"; echo "$4"; echo "--- server:"; echo "$5"
	fi
}

vm_boot
vm_capture_start "$build/interop-artifacts/rxe_rdmacm.pcap"
port=18700

# The kernel's rdma_cm listens in the guest; uroce's connects from the host.
port=$((port + 1))
vm_bg rping-srv rping -s -a "$VM_GUEST_IP" -p "$port" -C "$count" -V
sleep 1
rc=0
out=$(timeout 120 "$uroce" run -- rping -c -a "$VM_GUEST_IP" -p "$port" -C "$count" -v -V 2>&1) || rc=$?
srv_rc=0
srv=$(vm_wait rping-srv 60 2>&1) || srv_rc=$?
check "rping, kernel rdma_cm server, uroce client" "$rc" "${srv_rc:-0}" "$out" "$srv"

# uroce's listens on the host; the kernel's connects from the guest.
port=$((port + 1))
timeout 120 "$uroce" run -- rping -s -a "$VM_HOST_IP" -p "$port" -C "$count" -V \
	> "$VM_DIR/rping-host-srv" 2>&1 &
spid=$!
"$uroce" run -- "$build/bin/integ_cm_listening" "$port" 30 >/dev/null 2>&1 ||
	bad "the host's rping server does not listen on rdma_cm port $port"
rc=0
out=$(vm_run -t 120 rping -c -a "$VM_HOST_IP" -p "$port" -C "$count" -v -V 2>&1) || rc=$?
srv_rc=0
wait "$spid" || srv_rc=$?
check "rping, uroce server, kernel rdma_cm client" "$rc" "$srv_rc" "$out" "$(cat "$VM_DIR/rping-host-srv")"

# Nobody listens on the guest's port: the kernel's CM rejects (invalid service ID).
port=$((port + 1))
t0=$(date +%s%N)
rc=0
out=$(timeout 60 "$uroce" run -- rping -c -a "$VM_GUEST_IP" -p "$port" -C 1 -v 2>&1) || rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -qiE 'REJECTED|reject|error 8|status 8' <<<"$out" &&
   [ "$ms" -lt 10000 ]; then
	ok "no listener in the guest: refused by the kernel's CM after $ms ms"
else
	bad "no listener in the guest: expected a rejection within 10 s, saw exit $rc after $ms ms"
	echo "$out"
fi

vm_capture_stop
[ "$fails" = 0 ] || { echo "$fails rdma_cm interop check(s) failed" >&2; exit 1; }
echo "all rdma_cm interop checks passed"
