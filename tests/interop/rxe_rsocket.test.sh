#!/bin/bash
# Interop of rsockets: uroce's (src/rsocket, in its librdmacm.so.1) on the
# host, rdma-core's (Debian's librdmacm over the kernel's rdma_cm and
# rdma_rxe) in the qemu guest, on the private tap link.  The two share only
# the protocol (the connection data in the CM's private data, WRITE_WITH_IMM
# data into the peer's buffer halves, credits and target SGL updates, the
# DISCONNECT message, riomap's iomap entries):
#  - rstream -T v (every byte checked) at 1 MB and at 100 kB, 64 B, and 4 KiB
#    non-blocking (-T n), few transfers each (the guest's rxe runs under
#    TCG: about a second a megabyte), server in the guest and client on the
#    host, then the reverse: both exit 0 and print their result.  Not -T a:
#    rdma-core's rpoll answers POLLHUP once the peer's DISCONNECT is in, even
#    with data still to read, and rstream -T a takes POLLHUP for a failure;
#    in the slow guest the server's DISCONNECT often beats the client's
#    last poll (uroce's rpoll hangs up only once the data is read);
#  - riostream -T v (riomap/riowrite into the peer's mapped buffer), both ways.
set -euo pipefail

src=${UROCE_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
. "$src/tests/interop/lib/interop.sh"
port=18800

# rows OUT: rstream's result lines in OUT.
rows() {
	{ grep -cE '^[0-9a-z_]+ +[0-9.]+[kmg]? +[0-9.]+[kmg]? +[0-9]+[kmg]? +[0-9.]+[kmg]? +[0-9.]+s ' <<<"$1" ||
		true; }
}

# judge OK BAD: rstream's verdict on a run that guest_serves or host_serves
# made: both exit 0 and print the same number of results, at least one (ok
# "OK: ...", else bad BAD).
judge() {
	if [ "$rc" = 0 ] && [ "$srv_rc" = 0 ] && [ "$(rows "$out")" -ge 1 ] &&
	   [ "$(rows "$out")" = "$(rows "$srv")" ]; then
		ok "$1: both exit 0, $(rows "$out") results"
	else
		bad "$2"
		show_both "$out" "$srv"
	fi
}

# both_ways NAME PROG ARGS...: PROG's server in the guest and its client on
# the host, then the reverse.
both_ways() {
	local name=$1 prog=$2
	shift 2
	port=$((port + 1))
	guest_serves "$name-srv" 180 120 "$prog" -p "$port" "$@" -- \
		"$prog" -s "$VM_GUEST_IP" -p "$port" "$@"
	judge "$name $*: rdma-core's server in the guest, uroce's client" \
		"$name $*: guest server exit $srv_rc, host client exit $rc"

	port=$((port + 1))
	host_serves "$name-host-srv" 180 "$prog server" "$prog" -p "$port" "$@" -- \
		"$prog" -s "$VM_HOST_IP" -p "$port" "$@"
	judge "$name $*: uroce's server on the host, rdma-core's client" \
		"$name $*: host server exit $srv_rc, guest client exit $rc"
}

vm_boot
both_ways rstream rstream -T v -S 1000000 -C 10
both_ways rstream rstream -T v -S 100000 -C 50
both_ways rstream rstream -S 64 -C 200
both_ways rstream rstream -T n -S 4096 -C 200
both_ways riostream riostream -T v -S 100000 -C 10

[ "$fails" = 0 ] || { echo "$fails rsocket interop check(s) failed" >&2; exit 1; }
echo "all rsocket interop checks passed"
