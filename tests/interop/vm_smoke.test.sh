#!/bin/bash
# Interop smoke test: the kernel Soft-RoCE peer in the guest is real and usable.
#  1. ibv_devinfo -v in the guest: rxe0 PORT_ACTIVE, link layer Ethernet, RoCE v2 GID ::ffff:<guest ip>
#  2. ibv_rc_pingpong server and client inside the guest (rxe loopback)
#  3. perftest ib_write_bw server and client inside the guest
#  4. raw RoCEv2 probe from the host (no RDMA on the host, no uroce code): RC SEND_ONLY with a
#     corrupted ICRC is ignored (no response, counters unchanged); with the correct ICRC it is ACKed
#     (MSN 1) and the unmodified ibv_rc_pingpong server completes; every ICRC in the capture checks.
# Artifacts (capture, probe report): $UROCE_BUILD/interop-artifacts/vm_smoke/
set -euo pipefail

src=${UROCE_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${UROCE_BUILD:-$src/build}
export UROCE_BUILD=$build
lib=$src/tests/interop/lib
probe=$src/tests/interop/tools/roce_probe.py
art=$build/interop-artifacts/vm_smoke
# shellcheck source=lib/vm.sh
. "$lib/vm.sh"
vm_need_root
uroce_require_scapy
vm_enter "$@"

fails=0
step() { echo "=== $*"; }
ok() { echo "ok: $*"; }
bad() {
	echo "FAIL: $*" >&2
	fails=$((fails + 1))
}
# expect TEXT REGEX WHAT
expect() {
	if grep -Eq -- "$2" <<<"$1"; then ok "$3"; else bad "$3 (no match for /$2/)"; fi
}
ms() { date +%s%3N; }
secs() { printf '%d.%01d s' $(($1 / 1000)) $(($1 % 1000 / 100)); }

t_start=$(ms)
rm -rf "$art"
mkdir -p "$art"

step "boot"
vm_boot
t_booted=$(ms)
booted=boot
[ "${VM_ATTACHED:-0}" = 1 ] && booted="attach to the run's guest"
idx=$VM_GID_INDEX

step "ibv_devinfo -v in the guest"
info=$(vm_run ibv_devinfo -v)
echo "$info" | grep -E 'hca_id|state:|link_layer|active_mtu|GID\[' || true
expect "$info" 'hca_id:[[:space:]]+rxe0' "device rxe0"
expect "$info" 'state:[[:space:]]+PORT_ACTIVE' "port PORT_ACTIVE"
expect "$info" 'link_layer:[[:space:]]+Ethernet' "link layer Ethernet"
expect "$info" "GID\\[ *$idx\\]:[[:space:]]+::ffff:${VM_GUEST_IP//./\\.}, RoCE v2" \
	"GID[$idx] ::ffff:$VM_GUEST_IP (RoCE v2)"

step "ibv_rc_pingpong, server and client in the guest"
t=$(ms)
vm_bg pp_srv ibv_rc_pingpong -g "$idx" -n 200 -p 18515
vm_wait_port 18515
cli=$(vm_run -t 60 ibv_rc_pingpong -g "$idx" -n 200 -p 18515 "$VM_GUEST_IP" 2>&1) || bad "rc_pingpong client exit status $?"
srv=$(vm_wait pp_srv 60 2>&1) || bad "rc_pingpong server exit status $?"
echo "$cli" | sed 's/^/  client| /'
echo "$srv" | sed 's/^/  server| /'
expect "$cli" '^200 iters in' "rc_pingpong client completed 200 iterations"
expect "$srv" '^200 iters in' "rc_pingpong server completed 200 iterations"
echo "  ($(secs $(($(ms) - t))))"

# -F: a clock perftest cannot calibrate in the emulated guest prints zeros, not exit 1
step "perftest ib_write_bw, server and client in the guest"
t=$(ms)
vm_bg bw_srv ib_write_bw -d rxe0 -x "$idx" -F -p 18516 -s 65536 -n 500 --report_gbits
vm_wait_port 18516
cli=$(vm_run -t 120 ib_write_bw -d rxe0 -x "$idx" -F -p 18516 -s 65536 -n 500 --report_gbits "$VM_GUEST_IP" 2>&1) ||
	bad "ib_write_bw client exit status $?"
srv=$(vm_wait bw_srv 120 2>&1) || bad "ib_write_bw server exit status $?"
echo "$cli" | sed 's/^/  client| /'
# the result row: bytes, iterations, BW peak, BW average, MsgRate
expect "$cli" '^[[:space:]]*65536[[:space:]]+500[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+' "ib_write_bw client result row (65536 B x 500)"
expect "$srv" '^[[:space:]]*65536[[:space:]]+500[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+[[:space:]]+[0-9.]+' "ib_write_bw server result row"
echo "  ($(secs $(($(ms) - t))))"

step "raw RoCEv2 probe from the host against ibv_rc_pingpong in the guest"
t=$(ms)
vm_capture_start "$art/probe.pcap"
vm_bg probe_srv ibv_rc_pingpong -g "$idx" -s 64 -n 1 -p 18517
vm_wait_port 18517
if /usr/bin/python3 "$probe" rc-send --host-ip "$VM_HOST_IP" --guest-ip "$VM_GUEST_IP" --tcp-port 18517 \
	--size 64 --counters-cmd "bash -c '. \"$lib/vm.sh\" && vm_counters'" --json "$art/probe.json"; then
	ok "probe: corrupted ICRC ignored, SEND_ONLY ACKed with MSN 1, server SEND_ONLY received"
else
	bad "probe"
fi
srv=$(vm_wait probe_srv 30 2>&1) || bad "probed ibv_rc_pingpong server exit status $?"
echo "$srv" | sed 's/^/  server| /'
expect "$srv" "remote address: .*GID ::ffff:${VM_HOST_IP//./\\.}" "server saw the probe's GID"
expect "$srv" '^128 bytes in' "server completed its exchange with the probe"
vm_capture_stop
if /usr/bin/python3 "$probe" verify-pcap "$art/probe.pcap" --expect-bad 1 | tee "$art/verify.txt"; then
	ok "capture: every ICRC verifies except the deliberately corrupted one"
else
	bad "ICRC verification of the capture"
fi
expect "$(cat "$art/verify.txt")" '10\.77\.[0-9]+\.2:[0-9]+ -> .* RC ACKNOWLEDGE .* OK' "guest->host ACK in the capture"
echo "  ($(secs $(($(ms) - t))))"
vm_counters >"$art/counters.txt"

vm_shutdown
t_end=$(ms)
echo "timings: $booted $(secs $((t_booted - t_start))) (guest: $(secs "${VM_BOOT_MS:-0}")), tests $(secs $((t_end - t_booted))), total $(secs $((t_end - t_start)))"
if [ "$fails" -ne 0 ]; then
	echo "vm_smoke: $fails check(s) failed" >&2
	exit 1
fi
echo "vm_smoke: PASS"
