# shellcheck shell=bash
# Interop peer: a qemu guest running the Linux kernel's Soft-RoCE (rdma_rxe) on a private tap link.
#
#   . tests/interop/lib/vm.sh
#   vm_boot                                 # tap + qemu (TCG) + wait for rxe0; cleanup registered on EXIT
#   vm_run ibv_devinfo -v                   # run a shell command in the guest: its stdout, stderr, status
#   vm_bg srv ibv_rc_pingpong -g "$VM_GID_INDEX"
#   vm_wait_port 18515
#   vm_run ibv_rc_pingpong -g "$VM_GID_INDEX" "$VM_GUEST_IP"
#   vm_wait srv 30                          # the job's stdout, stderr and exit status
#   vm_shutdown                             # also done by the EXIT trap
#
# One guest for a whole ctest run: the fixture interop.vm_up (tests/interop/shared-guest.sh up)
# boots it for the ctest process and records it in $UROCE_BUILD/interop-vm/guest.<ctest pid>.env;
# vm_boot in a test that ctest started attaches to it instead of booting (a test run any other way
# boots its own), and at the test's exit puts the guest back as it found it (lib/guest-state.sh)
# instead of shutting it down; interop.vm_down shuts it down.  See docs/interop.md.
#
# Needs root (tap device; vm_need_root skips a test run by another user) and Debian packages it
# installs when missing (qemu-system-x86, iproute2, and for captures tshark).  See docs/interop.md.
#
# Settings (environment, read by vm_boot):
#   UROCE_BUILD      build directory; the guest is built/cached in $UROCE_BUILD/interop-cache
#   VM_CACHE_DIR     cache directory (default ${UROCE_BUILD:-build}/interop-cache)
#   VM_BOOT_TIMEOUT  seconds to wait for the guest (default 120)
#   VM_RUN_TIMEOUT   default timeout of vm_run (default 120)
#   VM_MEM, VM_SMP   guest memory in MiB (1024) and vCPUs (2)
#   VM_KEEP          1: keep $VM_DIR (console log, qemu log) after shutdown; either way the last
#                    guest's logs are copied to ${UROCE_BUILD:-build}/interop-artifacts/vm-{console,qemu}.log
#
# Set by vm_boot (exported, so child processes can source this file and call vm_run & co.):
#   VM_TAP VM_HOST_IP VM_GUEST_IP VM_PREFIX VM_CMD_PORT VM_GID_INDEX VM_DIR VM_CONSOLE VM_QEMU_PID
#
# Guest command channel: busybox "nc -ll -p $VM_CMD_PORT -e /bin/sh" on the private link (test-only,
# unauthenticated).  Each vm_run is one TCP connection carrying a small script that runs the command
# in its own session with stdout/stderr to guest files, then sends back a header line
# "<marker> <status> <stdout bytes> <stderr bytes>" and both outputs; so status and output survive
# any content, and several vm_run calls can run at once.

VM__LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=deps.sh
. "$VM__LIB_DIR/deps.sh"

VM__STATE_DIR=/run/uroce-vm # namespace ownership records, to reap leftovers of killed runs

vm__err() { echo "vm: error: $*" >&2; }
vm__log() { [ "${VM_QUIET:-0}" = 1 ] || echo "vm: $*" >&2; }

# quote one word for the guest's sh
vm__q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

vm__now_ms() { date +%s%3N; }

vm__need_vm() {
	if [ -z "${VM_GUEST_IP:-}" ] || [ -z "${VM_DIR:-}" ] || [ ! -d "$VM_DIR" ]; then
		vm__err "no guest: call vm_boot first"
		return 1
	fi
}

# vm_need_root: a test that boots the guest, run by another user, is skipped (exit 77, which
# CTest reports as skipped) with the reason: the tap device and qemu on it need root.  Call it
# first, before anything installs packages.
vm_need_root() {
	[ "$(id -u)" = 0 ] && return 0
	echo "SKIP: needs root: the guest's link is a tap device, which only root may create, and" \
		"qemu runs on it (docs/interop.md); run as root"
	exit 77
}

# ------------------------------------------------------------------ boot and teardown

# vm__reap_stale: remove the namespaces (and what runs in them: qemu, a test's programs) left by
# runs that were killed before cleaning up
vm__reap_stale() {
	local f ns owner
	[ -d "$VM__STATE_DIR" ] || return 0
	for f in "$VM__STATE_DIR"/uroce-vm*.owner; do
		[ -e "$f" ] || continue
		ns=$(basename "$f" .owner)
		owner=$(cat "$f" 2>/dev/null) || true
		if vm__owner_alive "$owner" "$(cat "$VM__STATE_DIR/$ns.owner_start" 2>/dev/null)"; then
			continue
		fi
		vm__log "removing leftover namespace $ns (owner $owner gone)"
		vm__drop_netns "$ns"
	done
}

# vm__start_time PID: the process's start time (clock ticks since boot, /proc/PID/stat field 22),
# which tells it from a later process given the same pid
vm__start_time() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	# shellcheck disable=SC2086 # the fields after the command name
	set -- $s
	echo "${20}"
}

# vm__owner_alive PID [START]: PID runs (and, with START, is the process that started then)
vm__owner_alive() {
	[ -n "$1" ] && kill -0 "$1" 2>/dev/null || return 1
	[ -z "${2:-}" ] || [ "$(vm__start_time "$1")" = "$2" ]
}

# vm__claim_tap: create the guest's tap in this shell's namespace, uroce-vmN (vm_enter): uroce-tapN
# with the 10.77.N.0/24 addresses (the namespace is private: N only tells runs apart in logs)
vm__claim_tap() {
	local n=${VM_NETNS#uroce-vm}
	if ! ip tuntap add dev "uroce-tap$n" mode tap; then
		vm__err "cannot create tap uroce-tap$n in namespace $VM_NETNS"
		return 1
	fi
	VM_TAP=uroce-tap$n
	VM_HOST_IP=10.77.$n.1
	VM_GUEST_IP=10.77.$n.2
	VM_PREFIX=24
	VM__MAC=$(printf '52:54:00:4d:%02x:02' "$n")
}

# ------------------------------------------------------------------ the guest's network namespace

# vm_enter [ARGS...]: run the rest of the test in the guest's network namespace, uroce-vmN: the
# tap, the host's side of the link and every host program of the test live there, so its uroce
# processes have the namespace's UDP port 4791 and registry to themselves (a test of the host's
# namespace running beside it cannot take the port from them, nor they from it).  Re-executes the
# test script ($0, with ARGS) there; returns in the re-executed script.  A test that ctest started
# after interop.vm_up enters the run's namespace; any other makes its own, deleted at its exit.
# Call it right after vm_need_root: what comes before it runs twice.
vm_enter() {
	vm__enter "$$" "$@"
}

# vm_enter_run [ARGS...]: vm_enter for interop.vm_up: the namespace is the ctest run's (this
# shell's parent's), which interop.vm_down deletes
vm_enter_run() {
	vm__enter "$PPID" "$@"
}

# vm__enter OWNER [ARGS...]: vm_enter, a namespace made for OWNER
vm__enter() {
	local owner=$1 ns
	shift
	if [ -n "${VM__ENTERED:-}" ]; then
		if ! vm__netns_here "$VM__ENTERED"; then
			vm__err "vm_enter: not in namespace $VM__ENTERED, which this test was started in"
			exit 1
		fi
		VM_NETNS=$VM__ENTERED
		export VM_NETNS
		unset VM__ENTERED
		if [ "${VM__NETNS_OWNER:-}" = $$ ]; then # ours: deleted at exit (vm_shutdown)
			VM__OWNER=$$
			vm__install_traps
		fi
		return 0
	fi
	vm__boot_checks || exit 1
	# What needs the network (Debian's packages, the guest's kernel) comes
	# now: the namespace has none but the tap.
	uroce_require dumpcap tshark || exit 1
	if ns=$(vm__run_netns "$PPID"); then
		VM__NETNS_OWNER=
	else
		vm__guest_image >/dev/null || exit 1
		vm__reap_stale
		vm__claim_netns "$owner" || exit 1
		ns=$VM_NETNS
		VM__NETNS_OWNER=$owner
	fi
	export VM__NETNS_OWNER
	exec ip netns exec "$ns" env VM__ENTERED="$ns" bash "$0" "$@"
}

# vm__netns_here NS: this shell runs in namespace NS
vm__netns_here() {
	[ -e "/run/netns/$1" ] &&
		[ "$(stat -L -c %i "/run/netns/$1")" = "$(stat -L -c %i /proc/self/ns/net)" ]
}

# vm__claim_netns OWNER: create the first free namespace uroce-vmN (N 0..63), lo up, recorded as
# OWNER's (/run/uroce-vm/uroce-vmN.owner and the owner's start time); sets VM_NETNS
vm__claim_netns() {
	local owner=$1 n
	mkdir -p "$VM__STATE_DIR"
	for n in $(seq 0 63); do
		[ -e "/run/netns/uroce-vm$n" ] && continue
		ip netns add "uroce-vm$n" 2>/dev/null || continue # another run took it first
		VM_NETNS=uroce-vm$n
		echo "$owner" >"$VM__STATE_DIR/$VM_NETNS.owner"
		vm__start_time "$owner" >"$VM__STATE_DIR/$VM_NETNS.owner_start"
		ip -n "$VM_NETNS" link set lo up
		return 0
	done
	vm__err "no free network namespace uroce-vm0..63"
	return 1
}

# vm__run_netns RUN: prints the namespace of the guest recorded for the ctest run RUN, if the run
# lives and the namespace exists
vm__run_netns() {
	local f
	f=$(vm__shared_file "$1")
	[ -e "$f" ] || return 1
	(
		# shellcheck disable=SC1090 # the record
		. "$f"
		vm__owner_alive "$VM__RUN_OWNER" "$VM__RUN_START" && [ -n "${VM_NETNS:-}" ] &&
			[ -e "/run/netns/$VM_NETNS" ] && echo "$VM_NETNS"
	)
}

# vm__drop_netns NS: kill what still runs in NS (not this shell), delete it, its record and the
# registry, router lock and capture switch uroce keeps in /dev/shm for it (nothing sweeps those:
# the next namespace to get the same inode would find them)
vm__drop_netns() {
	local ns=$1 ino pid
	[ -n "$ns" ] || return 0
	if [ -e "/run/netns/$ns" ]; then
		ino=$(stat -L -c %i "/run/netns/$ns")
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			[ "$pid" = "$BASHPID" ] || kill -KILL "$pid" 2>/dev/null || true
		done
		ip netns del "$ns" 2>/dev/null || true
		rm -f /dev/shm/uroce-[0-9]*-net"$ino"-v* /dev/shm/uroce-[0-9]*-net"$ino".router \
			/dev/shm/uroce-[0-9]*-net"$ino".capture 2>/dev/null
	fi
	rm -f "$VM__STATE_DIR/$ns".*
}

# vm__drop_netns_of OWNER: vm__drop_netns of every namespace recorded as OWNER's
vm__drop_netns_of() {
	local f
	for f in "$VM__STATE_DIR"/uroce-vm*.owner; do
		[ -e "$f" ] && [ "$(cat "$f" 2>/dev/null)" = "$1" ] || continue
		vm__drop_netns "$(basename "$f" .owner)"
	done
}

vm__boot_checks() {
	if [ -n "${VM_QEMU_PID:-}" ]; then
		vm__err "vm_boot: a guest is already running (qemu pid $VM_QEMU_PID)"
		return 1
	fi
	if [ "$BASHPID" != "$$" ]; then
		vm__err "vm_boot must run in the test's main shell (not in a subshell or \$(...))"
		return 1
	fi
	if [ "$(id -u)" != 0 ]; then
		vm__err "vm_boot needs root (it creates a tap device and boots qemu on it)"
		return 1
	fi
	uroce_require qemu-system-x86_64 qemu-system-x86 ip iproute2 timeout coreutils \
		flock util-linux setsid util-linux
}

# vm__entered: this shell runs in the namespace vm_enter chose
vm__entered() {
	[ -n "${VM_NETNS:-}" ] && vm__netns_here "$VM_NETNS" && return 0
	vm__err "not in the guest's network namespace: call vm_enter \"\$@\" first (after vm_need_root)"
	return 1
}

# vm_boot: build (cached) and boot the guest; returns when rxe0 is ACTIVE and the channel answers.
# Started by a ctest run that booted a guest for its tests (interop.vm_up), attaches to that
# guest instead (VM_ATTACHED=1): vm_shutdown and the exit trap then make it fresh, not stop it.
vm_boot() {
	vm__boot_checks || return 1
	vm__entered || return 1
	# started by ctest, where interop.vm_up booted the run's guest: use that one
	local rc=0
	vm__attach "$PPID" || rc=$?
	[ $rc = 1 ] || return $rc
	vm__boot_guest "$$"
}

# vm__boot_guest OWNER: vm_boot's boot, for a guest that lives while the process OWNER does
# (the test's shell, or the ctest run sharing it); in the calling shell, which the traps make
# shut the guest down if it fails or is interrupted.  Each step below says what went wrong and,
# once the tap is claimed, shuts the guest down before it returns 1.
vm__boot_guest() {
	local owner=$1 t0 guest
	t0=$(vm__now_ms)
	guest=$(vm__guest_image) || return 1
	vm__host_link || return 1
	vm__start_qemu "$guest" || return 1
	vm__start_watchdog "$owner"
	vm__wait_ready || return 1
	vm__check_peer || return 1
	VM_BOOT_MS=$(($(vm__now_ms) - t0))
	vm__log "guest up in $((VM_BOOT_MS / 1000)).$(printf %03d $((VM_BOOT_MS % 1000))) s: $VM_GUEST_IP on $VM_TAP" \
		"(host $VM_HOST_IP), rxe0 GID index $VM_GID_INDEX, qemu pid $VM_QEMU_PID, console $VM_CONSOLE"
}

# vm__guest_image: builds the guest (cached) and prints the folder of its kernel and initramfs
vm__guest_image() {
	local cache guest
	cache=${VM_CACHE_DIR:-${UROCE_BUILD:-build}/interop-cache}
	guest=$(bash "$VM__LIB_DIR/../vm/build-guest.sh" "$cache" | tail -n1) || {
		vm__err "building the guest failed"
		return 1
	}
	[ -f "$guest/vmlinuz" ] && [ -f "$guest/initramfs.cpio" ] || {
		vm__err "no guest image in '$guest'"
		return 1
	}
	echo "$guest"
}

# vm__host_link: the guest's folder and variables, the traps, and the host's side of the link:
# a tap in the namespace, addressed and up
vm__host_link() {
	VM_DIR=$(mktemp -d /tmp/uroce-vm.XXXXXX) || return 1
	VM_CONSOLE=$VM_DIR/console.log
	VM_LOG_DIR=$(realpath -m "${UROCE_BUILD:-build}/interop-artifacts")
	VM_CMD_PORT=7070
	VM__OWNER=$$
	vm__install_traps
	vm__claim_tap || {
		vm_shutdown
		return 1
	}
	export VM_TAP VM_HOST_IP VM_GUEST_IP VM_PREFIX VM_CMD_PORT VM_DIR VM_CONSOLE

	sysctl -q -w "net.ipv6.conf.$VM_TAP.disable_ipv6=1" 2>/dev/null || true # no ND noise on the link
	if ! ip addr add "$VM_HOST_IP/$VM_PREFIX" dev "$VM_TAP" || ! ip link set "$VM_TAP" up; then
		vm__err "configuring $VM_TAP failed"
		vm_shutdown
		return 1
	fi
}

# vm__start_qemu GUEST: starts qemu on GUEST's kernel and initramfs, on the tap; sets and exports
# VM_QEMU_PID and records it in the state folder
vm__start_qemu() {
	local guest=$1
	# qemu is double-forked (not a job of this shell: a plain 'wait' in a test must not wait for
	# it), its output goes to files (it must not hold the test runner's pipes open)
	local qpidfile=$VM_DIR/qemu.pid
	(
		exec qemu-system-x86_64 \
			-accel tcg,thread=multi -smp "${VM_SMP:-2}" -m "${VM_MEM:-1024}" \
			-nodefaults -no-user-config -display none -no-reboot \
			-kernel "$guest/vmlinuz" -initrd "$guest/initramfs.cpio" \
			-append "console=ttyS0 panic=-1 uroce_ip=$VM_GUEST_IP/$VM_PREFIX uroce_port=$VM_CMD_PORT" \
			-chardev "file,id=ser0,path=$VM_CONSOLE" -serial chardev:ser0 \
			-netdev "tap,id=net0,ifname=$VM_TAP,script=no,downscript=no" \
			-device "virtio-net-pci,netdev=net0,mac=$VM__MAC,romfile=" \
			-pidfile "$qpidfile" \
			</dev/null >"$VM_DIR/qemu.log" 2>&1 &
	)
	local i
	for i in $(seq 1 100); do
		[ -s "$qpidfile" ] && break
		sleep 0.1
	done
	VM_QEMU_PID=$(cat "$qpidfile" 2>/dev/null) || true
	if [ -z "$VM_QEMU_PID" ]; then
		vm__err "qemu did not start:"
		cat "$VM_DIR/qemu.log" >&2
		vm_shutdown
		return 1
	fi
	export VM_QEMU_PID
}

# vm__wait_ready: waits for the ready marker on the serial console; on a failure marker, qemu's
# exit or the boot timeout, shows the console's last lines and shuts the guest down
vm__wait_ready() {
	local deadline=$(($(date +%s) + ${VM_BOOT_TIMEOUT:-120}))
	while :; do
		if grep -q '^UROCE-GUEST-READY' "$VM_CONSOLE" 2>/dev/null; then
			break
		fi
		local why=
		if grep -q '^UROCE-GUEST-FAILED' "$VM_CONSOLE" 2>/dev/null; then
			why="the guest reported a failure"
		elif ! kill -0 "$VM_QEMU_PID" 2>/dev/null; then
			why="qemu exited ($(tail -n 3 "$VM_DIR/qemu.log" | tr '\n' ' '))"
		elif [ "$(date +%s)" -ge "$deadline" ]; then
			why="no ready marker after ${VM_BOOT_TIMEOUT:-120} s"
		fi
		if [ -n "$why" ]; then
			vm__err "guest boot failed: $why; console (saved to $VM_LOG_DIR/vm-console.log), last lines:"
			if [ -s "$VM_CONSOLE" ]; then
				tail -n 40 "$VM_CONSOLE" | sed 's/^/  | /' >&2
			else
				echo "  | (empty: qemu has not started the kernel yet; slow TCG? raise VM_BOOT_TIMEOUT)" >&2
			fi
			vm_shutdown
			return 1
		fi
		sleep 0.1
	done
}

# vm__check_peer: the peer must be real: rxe0 ACTIVE on eth0, and the GID index of our IPv4
# address (exported as VM_GID_INDEX); otherwise the guest is shut down
vm__check_peer() {
	local check
	check=$(vm_run -t 30 'cat /sys/class/infiniband/rxe0/ports/1/state; rdma link show rxe0/1') || {
		vm__err "rxe0 check failed: $check"
		vm_shutdown
		return 1
	}
	case $check in *ACTIVE*"netdev eth0"*) ;; *)
		vm__err "rxe0 is not active on eth0: $check"
		vm_shutdown
		return 1
		;;
	esac
	VM_GID_INDEX=$(vm_gid_index) || {
		vm__err "no RoCE v2 GID for $VM_GUEST_IP in the guest"
		vm_shutdown
		return 1
	}
	export VM_GID_INDEX
}

# vm__start_watchdog OWNER: if OWNER dies without running its traps (SIGKILL), stop qemu and
# delete OWNER's namespace (the tap with it) anyway.  Double-forked like qemu, output to /dev/null.
vm__start_watchdog() {
	local owner=$1 qpid=$VM_QEMU_PID dir=$VM_DIR
	(
		(
			trap '' INT HUP
			trap 'exit 0' TERM
			while kill -0 "$owner" 2>/dev/null && kill -0 "$qpid" 2>/dev/null; do
				sleep 1
			done
			if ! kill -0 "$owner" 2>/dev/null; then
				kill -KILL "$qpid" 2>/dev/null || true
				vm__drop_netns_of "$owner"
				rm -rf "$dir"
			fi
		) </dev/null >/dev/null 2>&1 &
		echo $! >"$VM_DIR/watchdog.pid"
	)
}

vm__install_traps() {
	if [ -z "${VM__TRAPS:-}" ]; then
		VM__PREV_EXIT=$(trap -p EXIT)
		trap 'vm__on_exit' EXIT
		trap 'vm__on_signal INT 130' INT
		trap 'vm__on_signal TERM 143' TERM
		trap 'vm__on_signal HUP 129' HUP
		VM__TRAPS=1
	fi
}

vm__on_signal() {
	trap - "$1"
	echo "vm: caught SIG$1, cleaning up" >&2
	exit "$2" # runs the EXIT trap
}

vm__on_exit() {
	local rc=$?
	set +e # the shell is exiting: clean up everything even if a step fails
	[ "$BASHPID" = "${VM__OWNER:-}" ] && vm_shutdown
	if [ -n "${VM__PREV_EXIT:-}" ]; then
		eval "set -- ${VM__PREV_EXIT#trap }"
		# "$@" is now: -- 'command' EXIT
		eval "$2"
	fi
	return $rc
}

# vm_shutdown: stop the capture, qemu (by its pid), the watchdog; delete the tap, $VM_DIR and the
# namespace vm_enter made for this test.  Idempotent; only acts in the shell that booted the guest.
vm_shutdown() {
	[ -n "${VM__OWNER:-}" ] && [ "$BASHPID" = "$VM__OWNER" ] || return 0
	[ -n "${VM__CAP_PID:-}" ] && vm_capture_stop
	if [ "${VM_ATTACHED:-0}" = 1 ]; then
		vm__detach
		return 0
	fi
	vm__stop_guest "${VM_QEMU_PID:-}" "${VM_TAP:-}" "${VM_DIR:-}"
	[ "${VM__NETNS_OWNER:-}" != $$ ] || vm__drop_netns "${VM_NETNS:-}"
	unset VM_QEMU_PID VM_TAP VM_DIR VM__OWNER VM_GID_INDEX
}

# vm__stop_guest QEMU_PID TAP DIR: stop qemu (TERM, then KILL) and its watchdog, delete the tap
# (where this shell sees it), keep the logs in the build tree and remove DIR
vm__stop_guest() {
	local qpid=$1 tap=$2 dir=$3 i wd
	# a pid on its own could be another process's by now: only qemu on our tap is ours
	if [ -n "$qpid" ] && [ -n "$tap" ] &&
		! tr '\0' ' ' 2>/dev/null <"/proc/$qpid/cmdline" | grep -q "ifname=$tap,"; then
		qpid=
	fi
	if [ -n "$qpid" ]; then
		kill -TERM "$qpid" 2>/dev/null || true
		for i in $(seq 1 50); do
			kill -0 "$qpid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$qpid" 2>/dev/null || true
	fi
	wd=$(cat "${dir:-/nonexistent}/watchdog.pid" 2>/dev/null) || true
	[ -z "$wd" ] || kill -TERM "$wd" 2>/dev/null || true
	[ -z "$tap" ] || ip link del "$tap" 2>/dev/null || true
	if [ -n "$dir" ] && [ -d "$dir" ]; then
		# the last guest's console and qemu logs stay in the build tree, for post-mortems
		vm__save_logs "$dir"
		if [ "${VM_KEEP:-0}" = 1 ]; then
			vm__log "kept $dir (console.log, qemu.log)"
		else
			rm -rf "$dir"
		fi
	fi
}

vm__save_logs() {
	local log_dir=${VM_LOG_DIR:-$(realpath -m "${UROCE_BUILD:-build}/interop-artifacts")}
	mkdir -p "$log_dir" 2>/dev/null || return 0
	cp "$1/console.log" "$log_dir/vm-console.log" 2>/dev/null || true
	cp "$1/qemu.log" "$log_dir/vm-qemu.log" 2>/dev/null || true
}

# ------------------------------------------------------------------ one guest for a ctest run

# vm__shared_file OWNER: the record of the guest shared by the tests of the process OWNER (the
# ctest run); in the build tree, so another checkout's run never finds it
vm__shared_file() {
	echo "$(realpath -m "${UROCE_BUILD:-build}")/interop-vm/guest.$1.env"
}

# vm__forget_dead_runs: remove the records of runs that are gone (killed ctest runs: their
# watchdogs stopped the guests, vm__reap_stale deletes what is left of them)
vm__forget_dead_runs() {
	local f owner start
	for f in "$(realpath -m "${UROCE_BUILD:-build}")"/interop-vm/guest.*.env; do
		[ -e "$f" ] || continue
		owner=$(sed -n 's/^VM__RUN_OWNER=//p' "$f")
		start=$(sed -n 's/^VM__RUN_START=//p' "$f")
		vm__owner_alive "$owner" "$start" && continue
		vm__log "forgetting the guest of run $owner, which is gone"
		rm -f "$f"
	done
}

# vm__guest_state MODE [TIMEOUT]: lib/guest-state.sh in the guest (record: copied there first,
# as /tmp/uroce/fresh.sh; reset)
vm__guest_state() {
	local copy=
	[ "$1" != record ] || copy="cat >/tmp/uroce/fresh.sh <<'@@UROCE-GUEST-STATE@@'
$(cat "$VM__LIB_DIR/guest-state.sh")
@@UROCE-GUEST-STATE@@
"
	vm_run -t "${2:-60}" "${copy}sh /tmp/uroce/fresh.sh $1 \"\$0\""
}

# vm_boot_shared: boot the guest the tests of this shell's parent (the ctest run) share, record it
# in vm__shared_file, and leave it running when this shell exits: its watchdog stops it when the
# run ends without vm_shutdown_shared.  A live guest already recorded for the run is kept.
vm_boot_shared() {
	local run=$PPID rc=0
	vm__boot_checks || return 1
	vm__entered || return 1
	vm__forget_dead_runs
	vm__attach "$run" || rc=$?
	case $rc in
	0)
		vm__log "the run's guest is up (qemu pid $VM_QEMU_PID)"
		vm__detach
		;;
	1)
		vm__boot_shared_guest "$run" || return 1
		unset VM__OWNER # this shell's exit leaves the guest to the run
		;;
	*) return 1 ;;
	esac
}

# vm__boot_shared_guest RUN: boot a guest owned by the process RUN, note its fresh state in the
# guest, write the record
vm__boot_shared_guest() {
	local run=$1 f tmp
	f=$(vm__shared_file "$run")
	vm__boot_guest "$run" || return 1
	if ! vm__guest_state record 60; then
		vm__err "could not record the fresh guest's state"
		vm_shutdown
		return 1
	fi
	mkdir -p "$(dirname "$f")" || return 1
	tmp=$f.tmp.$$
	{
		printf 'VM__RUN_OWNER=%s\n' "$run"
		printf 'VM__RUN_START=%s\n' "$(vm__start_time "$run")"
		local v
		for v in VM_NETNS VM_TAP VM_HOST_IP VM_GUEST_IP VM_PREFIX VM_CMD_PORT VM_GID_INDEX \
			VM_QEMU_PID VM_CONSOLE VM_BOOT_MS; do
			printf '%s=%q\n' "$v" "${!v}"
		done
		printf 'VM__GUEST_DIR=%q\n' "$VM_DIR"
	} >"$tmp" && mv "$tmp" "$f"
	vm__log "guest shared by run $run: $f"
}

# vm__attach RUN: use the guest recorded for the ctest run RUN, made fresh (lib/guest-state.sh
# reset: a test killed before its exit trap leaves its jobs behind).  A recorded guest that is
# dead, does not answer or cannot be made fresh is replaced by a new one for the run.
# Status 1 when RUN has no guest recorded in this shell's namespace (the caller boots its own),
# 2 on failure.
vm__attach() {
	local run=$1 f t0 why='' here=${VM_NETNS:-}
	f=$(vm__shared_file "$run")
	[ -e "$f" ] || return 1
	t0=$(vm__now_ms)
	(
		# shellcheck disable=SC1090 # the record
		. "$f"
		vm__owner_alive "$VM__RUN_OWNER" "$VM__RUN_START" && [ "${VM_NETNS:-}" = "$here" ]
	) || {
		rm -f "$f"
		return 1
	}
	vm__install_traps
	VM__OWNER=$$
	VM_LOG_DIR=$(realpath -m "${UROCE_BUILD:-build}/interop-artifacts")
	# shellcheck disable=SC1090 # the record
	. "$f"
	VM_DIR=$(mktemp -d /tmp/uroce-vm.XXXXXX) || return 2
	VM_ATTACHED=1
	export VM_TAP VM_HOST_IP VM_GUEST_IP VM_PREFIX VM_CMD_PORT VM_GID_INDEX VM_QEMU_PID VM_CONSOLE \
		VM_DIR VM_ATTACHED
	if ! tr '\0' ' ' 2>/dev/null <"/proc/$VM_QEMU_PID/cmdline" | grep -q "ifname=$VM_TAP,"; then
		why="its qemu (pid $VM_QEMU_PID) is gone"
	elif ! vm__guest_state reset 90 >&2; then
		why="it does not answer within 90 s or could not be made fresh (above)"
	fi
	if [ -n "$why" ]; then
		vm__err "the run's shared guest is unusable: $why; booting a new one for the run"
		vm__save_logs "$VM__GUEST_DIR"
		vm__stop_guest "$VM_QEMU_PID" "$VM_TAP" "$VM__GUEST_DIR"
		rm -rf "$VM_DIR"
		rm -f "$f"
		unset VM_ATTACHED VM_QEMU_PID VM_TAP VM_DIR
		vm__boot_shared_guest "$run" || return 2
		# now attached to the new one, as above
		# shellcheck disable=SC1090 # the record
		. "$f"
		VM_DIR=$(mktemp -d /tmp/uroce-vm.XXXXXX) || return 2
		VM_ATTACHED=1
		VM__OWNER=$$
		export VM_DIR VM_ATTACHED
	fi
	VM_BOOT_MS=$(($(vm__now_ms) - t0))
	vm__log "attached to the run's guest in $((VM_BOOT_MS / 1000)).$(printf %03d $((VM_BOOT_MS % 1000))) s:" \
		"$VM_GUEST_IP on $VM_TAP (host $VM_HOST_IP), rxe0 GID index $VM_GID_INDEX, qemu pid $VM_QEMU_PID," \
		"console $VM_CONSOLE"
}

# vm__detach: an attached test's end: the guest goes back to its fresh state for the next test;
# if that fails the guest is stopped (the next test boots a new one for the run)
vm__detach() {
	if ! vm__guest_state reset 90 >&2; then
		vm__err "could not bring the shared guest back to its fresh state (above): stopping it"
		vm__stop_guest "$VM_QEMU_PID" "$VM_TAP" "$VM__GUEST_DIR"
	else
		vm__save_logs "$VM__GUEST_DIR"
	fi
	rm -rf "$VM_DIR"
	unset VM_QEMU_PID VM_TAP VM_DIR VM__OWNER VM_GID_INDEX VM_ATTACHED VM__GUEST_DIR
}

# vm_shutdown_shared: stop the guest of this shell's parent's run (interop.vm_down) and delete
# the run's namespace
vm_shutdown_shared() {
	local f
	f=$(vm__shared_file "$PPID")
	if [ ! -e "$f" ]; then
		vm__log "no guest recorded for run $PPID"
		vm__drop_netns_of "$PPID"
		vm__forget_dead_runs
		return 0
	fi
	# shellcheck disable=SC1090 # the record
	. "$f"
	vm__stop_guest "$VM_QEMU_PID" "$VM_TAP" "$VM__GUEST_DIR"
	rm -f "$f"
	vm__drop_netns_of "$PPID"
	vm__log "stopped the run's guest (qemu pid $VM_QEMU_PID, $VM_TAP in $VM_NETNS)"
	unset VM_QEMU_PID VM_TAP VM_DIR VM_GID_INDEX VM__GUEST_DIR
	vm__forget_dead_runs
}

# ------------------------------------------------------------------ commands in the guest

# vm__channel SCRIPT TIMEOUT OUTFILE: send SCRIPT to the guest's sh, its whole reply into OUTFILE.
# --foreground keeps the client in our process group, so Ctrl-C reaches it at once.
vm__channel() {
	timeout --foreground -k 2 "$2" bash -c 'exec 3<>"/dev/tcp/$1/$2" || exit 111; printf "%s" "$3" >&3; exec cat <&3' \
		_ "$VM_GUEST_IP" "$VM_CMD_PORT" "$1" >"$3" 2>/dev/null
}

# vm_run [-t SECONDS] CMD...: run CMD (words joined by spaces, as ssh does) with the guest's sh,
# stdin /dev/null, cwd /root.  Its stdout and stderr come back on ours, its exit status is ours.
# On timeout (default $VM_RUN_TIMEOUT or 120 s) the command's process group is killed: status 124.
# Channel failure: status 255.  Safe to call concurrently (e.g. "vm_run a & vm_run b & wait").
vm_run() {
	local t=${VM_RUN_TIMEOUT:-120}
	if [ "${1:-}" = -t ]; then
		t=$2
		shift 2
	fi
	if [ $# -eq 0 ]; then
		vm__err "usage: vm_run [-t SECONDS] CMD..."
		return 2
	fi
	vm__need_vm || return 255
	local cmd="$*" tmp id mark g
	tmp=$(mktemp "$VM_DIR/run.XXXXXXXX") || return 255
	id=${tmp##*.}
	mark="@@UROCE-$id-$RANDOM@@"
	g=/tmp/uroce/run/$id
	local script
	script="cat >$g.sh <<'$mark'
$cmd
$mark
cd /root
setsid sh $g.sh </dev/null >$g.out 2>$g.err &
echo \$! >$g.pid
wait \$!
rc=\$?
echo \"$mark \$rc \$(stat -c %s $g.out) \$(stat -c %s $g.err)\"
cat $g.out $g.err
rm -f $g.sh $g.out $g.err $g.pid
exit
"
	local crc=0 header m rc olen elen hl
	vm__channel "$script" "$t" "$tmp" || crc=$?
	if [ $crc -eq 130 ]; then
		# Ctrl-C: timeout(1) caught the SIGINT and exited normally, so bash would assume it was
		# handled and carry on.  Re-raise: in the booting shell run its handler; in a subshell
		# die of SIGINT, so the parent shell runs its trap.
		rm -f "$tmp"
		if [ "$BASHPID" = "${VM__OWNER:-}" ]; then
			vm__on_signal INT 130
		fi
		trap - INT
		kill -INT "$BASHPID"
		return 130
	fi
	IFS= read -r header <"$tmp" || header=
	read -r m rc olen elen <<<"$header"
	if [ "$m" != "$mark" ]; then
		if [ $crc -eq 124 ] || [ $crc -eq 137 ]; then
			vm__err "vm_run: timed out after $t s: $cmd"
			vm__channel "kill -KILL -\$(cat $g.pid) 2>/dev/null; rm -f $g.sh $g.out $g.err $g.pid; exit
" 10 /dev/null || true
			rc=124
		else
			vm__err "vm_run: no reply from the guest (channel status $crc): $cmd"
			rc=255
		fi
		rm -f "$tmp"
		return $rc
	fi
	hl=$((${#header} + 1))
	dd if="$tmp" iflag=skip_bytes,count_bytes skip="$hl" count="$olen" bs=64k status=none
	dd if="$tmp" iflag=skip_bytes,count_bytes skip=$((hl + olen)) count="$elen" bs=64k status=none >&2
	rm -f "$tmp"
	return "$rc"
}

# ------------------------------------------------------------------ background jobs in the guest

vm__job_name_ok() {
	case $1 in
	'' | *[!A-Za-z0-9_.-]*)
		vm__err "bad job name '$1' (letters, digits, _ . - only)"
		return 1
		;;
	esac
}

# vm_bg NAME CMD...: start CMD in the guest in the background (own session, stdin /dev/null,
# stdout line-buffered through coreutils' libstdbuf for dynamically linked programs).
# Collect it with vm_wait or vm_kill; peek with vm_bg_log / vm_bg_expect.
vm_bg() {
	local name=$1
	shift || true
	vm__job_name_ok "$name" || return 2
	if [ $# -eq 0 ]; then
		vm__err "usage: vm_bg NAME CMD..."
		return 2
	fi
	local d=/tmp/uroce/bg/$name mark="@@UROCE-BG-$RANDOM$RANDOM@@"
	vm_run -t 30 "if [ -e $d.pid ]; then echo 'vm_bg: job $name already exists (vm_wait or vm_kill it first)' >&2; exit 1; fi
rm -f $d.rc $d.out $d.err
cat >$d.sh <<'$mark'
$*
$mark
( setsid env LD_PRELOAD=/usr/libexec/coreutils/libstdbuf.so _STDBUF_O=L sh $d.sh </dev/null >$d.out 2>$d.err &
  echo \$! >$d.pid.tmp && mv $d.pid.tmp $d.pid
  wait \$!
  echo \$? >$d.rc.tmp && mv $d.rc.tmp $d.rc ) </dev/null >/dev/null 2>&1 &
i=0
while [ ! -s $d.pid ] && [ \$i -lt 100 ]; do sleep 0.05; i=\$((i + 1)); done
[ -s $d.pid ]"
}

# vm__collect NAME TIMEOUT SIGNAL: wait up to TIMEOUT s for the job (after sending SIGNAL to its
# process group when SIGNAL is not empty); on timeout TERM then KILL it and report status 124.
# Prints the job's stdout/stderr on ours, returns its status, forgets the job.
vm__collect() {
	local name=$1 t=$2 sig=$3 d=/tmp/uroce/bg/$1
	vm_run -t $((t + 20)) "[ -e $d.pid ] || { echo 'vm: no background job $name' >&2; exit 255; }
pg=\$(cat $d.pid)
sig=$sig
[ -n \"\$sig\" ] && kill -\$sig -\$pg 2>/dev/null
n=0
while [ ! -e $d.rc ] && [ \$n -lt $((t * 10)) ]; do sleep 0.1; n=\$((n + 1)); done
if [ -e $d.rc ]; then
	rc=\$(cat $d.rc)
else
	[ -n \"\$sig\" ] || echo 'vm_wait: job $name still running after $t s: killing it' >&2
	kill -TERM -\$pg 2>/dev/null
	n=0
	while [ ! -e $d.rc ] && [ \$n -lt 20 ]; do sleep 0.1; n=\$((n + 1)); done
	kill -KILL -\$pg 2>/dev/null
	while [ ! -e $d.rc ] && [ \$n -lt 40 ]; do sleep 0.1; n=\$((n + 1)); done
	rc=\$(cat $d.rc 2>/dev/null)
	[ -n \"\$sig\" ] || rc=124
fi
cat $d.out
cat $d.err >&2
rm -f $d.sh $d.pid $d.rc $d.out $d.err
exit \${rc:-255}"
}

# vm_bg_done NAME [TIMEOUT]: true once the vm_bg job has ended (waits up to TIMEOUT s, default
# 60); false if it still runs.  Leaves it running and uncollected (vm_wait collects it), so that
# the guest's state can be looked at while it hangs.
vm_bg_done() {
	vm__job_name_ok "${1:-}" || return 2
	local d=/tmp/uroce/bg/$1 t=${2:-60}
	vm_run -t $((t + 20)) "n=0
while [ ! -e $d.rc ] && [ \$n -lt $((t * 10)) ]; do sleep 0.1; n=\$((n + 1)); done
[ -e $d.rc ]"
}

# vm_wait NAME [TIMEOUT]: wait for a vm_bg job (default 60 s); its stdout, stderr and exit status.
# A job still running at the timeout is killed (TERM, then KILL) and vm_wait returns 124.
vm_wait() {
	vm__job_name_ok "${1:-}" || return 2
	vm__collect "$1" "${2:-60}" ""
}

# vm_kill NAME [SIGNAL]: signal a vm_bg job's process group (default TERM; KILL after 2 s), then
# report like vm_wait (status is typically 128+signal).
vm_kill() {
	vm__job_name_ok "${1:-}" || return 2
	vm__collect "$1" 2 "${2:-TERM}"
}

# vm_bg_log NAME: the job's output so far (stdout then stderr), on our stdout.
vm_bg_log() {
	vm__job_name_ok "${1:-}" || return 2
	vm_run -t 30 "cat /tmp/uroce/bg/$1.out /tmp/uroce/bg/$1.err"
}

# vm_bg_expect NAME REGEX [TIMEOUT]: wait (default 30 s) until the job's output has a line matching
# the extended regex; prints the matching lines.  Fails at once if the job ended without it.
vm_bg_expect() {
	vm__job_name_ok "${1:-}" || return 2
	local d=/tmp/uroce/bg/$1 t=${3:-30}
	vm_run -t $((t + 10)) "re=$(vm__q "$2")
n=0
while :; do
	grep -E -h -e \"\$re\" $d.out $d.err 2>/dev/null && exit 0
	if [ -e $d.rc ]; then
		grep -E -h -e \"\$re\" $d.out $d.err 2>/dev/null && exit 0
		echo \"vm_bg_expect: job $1 ended (status \$(cat $d.rc)) without output matching: \$re\" >&2
		cat $d.out $d.err >&2
		exit 1
	fi
	[ \$n -lt $((t * 10)) ] || { echo \"vm_bg_expect: no output of $1 matching '\$re' after $t s\" >&2; exit 1; }
	sleep 0.1
	n=\$((n + 1))
done"
}

# vm_wait_port PORT [TIMEOUT]: wait (default 30 s) until something in the guest listens on TCP PORT.
vm_wait_port() {
	local p=${1:?usage: vm_wait_port PORT [TIMEOUT]} t=${2:-30}
	vm_run -t $((t + 10)) "n=0
while ! netstat -ltn 2>/dev/null | grep -q ':$p '; do
	[ \$n -lt $((t * 10)) ] || { echo 'vm_wait_port: nothing listens on TCP port $p after $t s' >&2; exit 1; }
	sleep 0.1
	n=\$((n + 1))
done"
}

# ------------------------------------------------------------------ guest facts

# vm_gid_index: the guest's GID index of its IPv4 address (RoCE v2 GID ::ffff:a.b.c.d)
vm_gid_index() {
	vm__need_vm || return 1
	local want
	# shellcheck disable=SC2086 # one printf argument per octet
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${VM_GUEST_IP//./ })
	vm_run -t 30 "cd /sys/class/infiniband/rxe0/ports/1 || exit 1
for g in gids/*; do
	i=\${g#gids/}
	if [ \"\$(cat \$g 2>/dev/null)\" = $want ] && [ \"\$(cat gid_attrs/types/\$i 2>/dev/null)\" = 'RoCE v2' ]; then
		echo \$i
		exit 0
	fi
done
exit 1"
}

# vm_counters [NAME...]: the guest's rxe0 hw counters as "name value" lines (all, or those named)
vm_counters() {
	local names="$*"
	vm_run -t 30 "cd /sys/class/infiniband/rxe0/ports/1/hw_counters || exit 1
names=$(vm__q "$names")
[ -n \"\$names\" ] || names=\$(ls)
for f in \$names; do
	[ \"\$f\" = lifespan ] && continue
	echo \"\$f \$(cat \$f)\"
done"
}

# vm_counter NAME: one counter's value
vm_counter() {
	local out
	out=$(vm_counters "${1:?usage: vm_counter NAME}") || return 1
	echo "${out#* }"
}

# ------------------------------------------------------------------ packet capture on the tap

# vm_capture_start FILE [FILTER]: capture the tap link into FILE (pcap) with dumpcap
# (default filter "udp port 4791"); returns once the capture is running.
vm_capture_start() {
	local file=${1:?usage: vm_capture_start FILE [FILTER]} filter=${2:-udp port 4791}
	vm__need_vm || return 1
	if [ -n "${VM__CAP_PID:-}" ]; then
		vm__err "a capture is already running (pid $VM__CAP_PID)"
		return 1
	fi
	uroce_require dumpcap tshark || return 1
	local err=$VM_DIR/capture.err i
	mkdir -p "$(dirname "$file")" || return 1
	rm -f "$file"
	: >"$err"
	(
		dumpcap -q -P -i "$VM_TAP" -f "$filter" -w "$file" </dev/null >/dev/null 2>"$err" &
		echo $! >"$VM_DIR/capture.pid"
	)
	VM__CAP_PID=$(cat "$VM_DIR/capture.pid")
	VM__CAP_FILE=$file
	for i in $(seq 1 100); do
		grep -q 'Capturing on' "$err" && [ -s "$file" ] && return 0
		kill -0 "$VM__CAP_PID" 2>/dev/null || break
		sleep 0.1
	done
	vm__err "capture did not start: $(cat "$err")"
	kill -TERM "$VM__CAP_PID" 2>/dev/null || true
	unset VM__CAP_PID
	return 1
}

# vm_capture_stop: stop the capture (packets in flight are let in first); FILE is complete on return.
vm_capture_stop() {
	[ -n "${VM__CAP_PID:-}" ] || return 0
	local i
	sleep 0.3
	kill -INT "$VM__CAP_PID" 2>/dev/null || true
	for _ in $(seq 1 50); do
		kill -0 "$VM__CAP_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$VM__CAP_PID" 2>/dev/null || true
	unset VM__CAP_PID
	vm__log "capture: $VM__CAP_FILE"
}
