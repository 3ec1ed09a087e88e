# shellcheck shell=bash
# What the interop tests that pair a program on the host with the same in the guest share
# (uroce_rxe, rxe_rc_repeat, rxe_rdmacm, rxe_rsocket):
#
#   src=${UROCE_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
#   . "$src/tests/interop/lib/interop.sh"
#
# sets build (exported as UROCE_BUILD), uroce and fails, defines ok and bad (a FAIL: line, counted
# in fails), sources vm.sh and skips (exit 77) unless root; the rest of the test runs in the
# guest's network namespace (vm_enter).

build=${UROCE_BUILD:-$src/build}
export UROCE_BUILD=$build
# shellcheck source=vm.sh
. "$src/tests/interop/lib/vm.sh"
vm_need_root
vm_enter "$@"

uroce=$build/bin/uroce
fails=0
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# show_both CLIENT_OUT SERVER_OUT: both sides' output, after a failure.
show_both() {
	echo "--- client:"; echo "$1"; echo "--- server:"; echo "$2"
}

# host_dev: sets dev and hidx, the uroce device on the tap and its GID index of the host's IPv4
# address ($VM_HOST_IP); exits 1 (a FAIL: line) when no device has it.  Call after vm_boot.
host_dev() {
	local info cur="" line
	dev=""
	hidx=""
	info=$("$uroce" run -- ibv_devinfo -v)
	while IFS= read -r line; do
		case "$line" in
		hca_id:*) cur=$(awk '{print $2}' <<<"$line") ;;
		*"::ffff:$VM_HOST_IP,"*)
			dev=$cur
			hidx=$(sed -n 's/.*GID\[ *\([0-9]*\)\].*/\1/p' <<<"$line")
			;;
		esac
	done <<<"$info"
	if [ -z "$dev" ]; then
		echo "$info" >&2
		echo "FAIL: no uroce device has the GID ::ffff:$VM_HOST_IP of $VM_TAP" >&2
		exit 1
	fi
	echo "host: $dev GID index $hidx ($VM_HOST_IP); guest: rxe0 GID index $VM_GID_INDEX ($VM_GUEST_IP)"
}

# host_wait_tcp PORT: waits up to 10 s for a listener on the host's TCP PORT.
host_wait_tcp() {
	for _ in $(seq 100); do
		ss -ltn "sport = :$1" | grep -q LISTEN && break
		sleep 0.1
	done
}

# host_cm_listening PORT WHAT: waits up to 30 s for uroce's rdma_cm to listen on PORT on the
# host; a FAIL: line naming WHAT ("the host's WHAT does not listen ...") when it does not.
host_cm_listening() {
	"$uroce" run -- "$build/bin/integ_cm_listening" "$1" 30 >/dev/null 2>&1 ||
		bad "the host's $2 does not listen on rdma_cm port $1"
}

# guest_serves JOB CLIENT_TIMEOUT SERVER_TIMEOUT SERVER... -- CLIENT...: the server in the guest
# (vm_bg job JOB), a second for it to start, then the client on the host under uroce for at
# most CLIENT_TIMEOUT s, then the server collected (at most SERVER_TIMEOUT s more).  Sets rc and
# out (the client's exit status and output), srv_rc and srv (the server's).
guest_serves() {
	local job=$1 ct=$2 st=$3 s=()
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do s+=("$1"); shift; done
	shift
	vm_bg "$job" "${s[@]}"
	sleep 1
	rc=0
	out=$(timeout "$ct" "$uroce" run -- "$@" 2>&1) || rc=$?
	srv_rc=0
	srv=$(vm_wait "$job" "$st" 2>&1) || srv_rc=$?
}

# host_serves FILE TIMEOUT WHAT SERVER... -- CLIENT...: the server on the host under uroce for at
# most TIMEOUT s, its output in $VM_DIR/FILE; once it listens on rdma_cm (host_cm_listening on
# $port, WHAT naming it) or, WHAT empty, after a second, the client in the guest (at most
# TIMEOUT s).  Sets rc, out, srv_rc and srv as guest_serves.
host_serves() {
	local file=$VM_DIR/$1 t=$2 what=$3 s=() spid
	shift 3
	while [ $# -gt 0 ] && [ "$1" != -- ]; do s+=("$1"); shift; done
	shift
	timeout "$t" "$uroce" run -- "${s[@]}" > "$file" 2>&1 &
	spid=$!
	if [ -n "$what" ]; then
		host_cm_listening "$port" "$what"
	else
		sleep 1
	fi
	rc=0
	out=$(vm_run -t "$t" "$@" 2>&1) || rc=$?
	srv_rc=0
	wait "$spid" || srv_rc=$?
	srv=$(cat "$file")
}
