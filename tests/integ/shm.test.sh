#!/usr/bin/env bash
# ctest-timeout: 300
# The shared-memory transport between processes of one host (uroce0 on lo):
#  - unmodified ibv_rc_pingpong -c (data checked) from 1 B to 8 MiB, and
#    ibv_uc_pingpong -c: both sides say (UROCE_LOG=info) that they reached
#    each other by shared memory, and the data arrives intact;
#  - the fallback: a server with UROCE_SHM=0 has no file, so the client says
#    it is not reached by shared memory and both sides go by UDP, data
#    checked; the same with the client off;
#  - an idle process holding a device, a QP and a CQ (a server waiting for
#    its client) uses no CPU: at most 2 clock ticks in 3 s, its engine
#    thread asleep until a packet or a timer (issue: < 1 % of a core);
#  - the files: a running process's ring file and doorbell are mode 0600,
#    the user's; both are gone after a clean exit; a process killed by
#    SIGKILL leaves them, and the next process to open a device removes
#    them;
#  - a peer killed in the middle of 8 MiB RDMA WRITEs (ib_write_bw, copied
#    straight into it): the survivor ends with an error completion and a
#    non-zero exit within seconds, not a hang;
#  - single copy (integ_single_copy): WRITEs and WRITEs with immediate of
#    1 B .. 8 MiB at odd offsets from 1 or 3 SGEs, the responder checking
#    its whole region and guard bytes after each, and a WRITE past the
#    region's end (remote access error, nothing changed); the requester
#    says it copied straight into the responder; the WRITEs on UC too; the same with
#    UROCE_SHM_SINGLE_COPY=0 (through the rings, and it says so);
#    ibv_dereg_mr under a stream of 8 MiB WRITEs (nothing lands after it
#    returns, the requester gets a remote access error); a requester killed
#    mid-stream (the responder deregisters at once, guards intact).
#  - shared regions (the responder's region moved into a memfd that the
#    requester maps; or a memfd of the responder's own, MAP_SHARED, mapped
#    as it is): the sizes, the dereg stream and UC copy with memcpy
#    (the requester says so); the sizes with UROCE_SHM_SHARE_MR=0 by the
#    kernel; compare-and-swap and fetch-and-add into a region moved when
#    registered (every result and word checked); fork after registration
#    (the child has its own copy; parent and requester unaffected), with
#    and without ibv_fork_init();
#    `uroce devinfo -c` counts regions shared and copies by each path; by default heap memory moves where the
#    kernel's writes can be held too (root), else stays private and says
#    why; integ_shared_mr: a thread writing a buffer while it is registered
#    and deregistered 20 times loses no write (also with a SIGSEGV handler
#    of the program's own that kills, and under the SIGSEGV hold with
#    userfaultfd refused by seccomp), nor does a thread filling it by
#    pread(2) (as nobody: those reads may fail, EFAULT), a deregistered
#    region is private memory again (bytes kept, MADV_DONTNEED zeroes), a
#    sparse region stays sparse, and regions that cannot move (the stack,
#    mlocked, file mappings) are registered all the same, kept private,
#    said at info; a range advised MADV_HUGEPAGE (transparent huge pages)
#    moves to small pages, or stays private under the SIGSEGV hold, its
#    bytes kept, and a hugetlb mapping stays private (two pages reserved
#    for it, as root).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rc_pingpong_cases.sh"

g4=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
[ -n "$g4" ] || { ur_fail "uroce0 has no GID for 127.0.0.1"; ur_done; }
uid=$(id -u)
shm_file() { echo "/dev/shm/uroce-$uid-shm-$1-v3"; }
bell_file() { echo "/dev/shm/uroce-$uid-bell-$1-v3"; }

# shm_pp TAG PROG ARGS...: a pair over shared memory, both sides saying so.
shm_pp() {
	local tag=$1 prog=$2 port
	shift 2
	port=$(ur_port)
	UR_ENV=(UROCE_LOG=info)   # (an array cannot prefix a call)
	ur_pair "$tag" "$port" "$prog" -d uroce0 -g "$g4" -p "$port" "$@" \
		-- "$prog" -d uroce0 -g "$g4" -p "$port" "$@" 127.0.0.1
	UR_ENV=()
	ur_expect_pair_ok "$tag" "$prog $*" || return
	ur_expect_grep "$tag.server" "reached by shared memory" "$tag: the server reaches the client by shared memory"
	ur_expect_grep "$tag.client" "reached by shared memory" "$tag: the client reaches the server by shared memory"
	ur_expect_no_grep "$tag.client" "invalid data|Failed status|parse WC failed" "$tag: client saw no bad completion or data"
	ur_expect_no_grep "$tag.server" "invalid data|Failed status|parse WC failed" "$tag: server saw no bad completion or data"
	ur_sanitizer_clean "$tag.server"
	ur_sanitizer_clean "$tag.client"
}

shm_pp rc.s1 ibv_rc_pingpong -s 1 -c -n 2000
shm_pp rc.s4095 ibv_rc_pingpong -s 4095 -c -n 1000
shm_pp rc.s64k ibv_rc_pingpong -s 65536 -c -n 500
shm_pp rc.s1m ibv_rc_pingpong -s 1048576 -c -n 50
shm_pp rc.s8m ibv_rc_pingpong -s 8388608 -c -n 10
shm_pp rc.events ibv_rc_pingpong -s 4096 -c -e -n 1000
shm_pp uc.s4k ibv_uc_pingpong -s 4096 -c -n 1000

# The fallback: one side without the transport; both go by UDP.
shm_off() {
	local tag=$1 side=$2 port senv=(UROCE_LOG=info) cenv=(UROCE_LOG=info)
	port=$(ur_port)
	if [ "$side" = server ]; then senv+=(UROCE_SHM=0); else cenv+=(UROCE_SHM=0); fi
	UR_ENV=("${senv[@]}")
	ur_start "$tag.server" ibv_rc_pingpong -d uroce0 -g "$g4" -p "$port" \
		-s 1048576 -c -n 50
	if ! ur_wait_listen "$port" "${UR_PID[$tag.server]}"; then
		ur_stop "$tag.server"
		ur_fail "$tag: the server did not listen"
		return
	fi
	UR_ENV=("${cenv[@]}")
	ur_start "$tag.client" ibv_rc_pingpong -d uroce0 -g "$g4" -p "$port" \
		-s 1048576 -c -n 50 127.0.0.1
	UR_ENV=()
	ur_wait "$tag.client"
	ur_wait "$tag.server"
	ur_expect_pair_ok "$tag" "$tag: ibv_rc_pingpong -s 1048576 -c with UROCE_SHM=0 on the $side" || return
	ur_expect_grep "$tag.$side" "shared-memory transport off \(UROCE_SHM=0\)" \
		"$tag: the $side says its transport is off"
	local other=client
	[ "$side" = client ] && other=server
	ur_expect_no_grep "$tag.server" "reached by shared memory \(ring" "$tag: the server does not use shared memory"
	ur_expect_no_grep "$tag.client" "reached by shared memory \(ring" "$tag: the client does not use shared memory"
	[ "$side" = server ] && ur_expect_grep "$tag.client" "not reached by shared memory \(it has no shared-memory file\): UDP" \
		"$tag: the client falls back to UDP and says why"
}
shm_off fallback.server-off server
shm_off fallback.client-off client

# The files of a running process, then after it ends.
port=$(ur_port)
ur_start files.server ibv_rc_pingpong -d uroce0 -g "$g4" -p "$port" -n 10
if ur_wait_listen "$port" "${UR_PID[files.server]}"; then
	pid=$(ur_prog_pid files.server)
	ur_expect_eq "files: the ring file is the user's, mode 0600" "600 $uid" \
		"$(stat -c '%a %u' "$(shm_file "$pid")" 2>&1)"
	ur_expect_eq "files: the doorbell is a FIFO, the user's, mode 0600" "fifo 600 $uid" \
		"$(stat -c '%F %a %u' "$(bell_file "$pid")" 2>&1 | sed 's/^named pipe/fifo/')"
	t0=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	sleep 3
	t1=$(awk '{print $14 + $15}' "/proc/$pid/stat")
	if [ $((t1 - t0)) -le 2 ]; then
		ur_pass "idle: a waiting server used $((t1 - t0)) clock ticks in 3 s"
	else
		ur_fail "idle: a waiting server used $((t1 - t0)) clock ticks in 3 s (expected at most 2)"
	fi
	ur_start files.client ibv_rc_pingpong -d uroce0 -g "$g4" -p "$port" -n 10 127.0.0.1
	ur_wait files.client
	ur_wait files.server
	ur_expect_pair_ok files "files: a pair ran"
	ur_expect_eq "files: gone after a clean exit" "" \
		"$(ls "$(shm_file "$pid")" "$(bell_file "$pid")" 2>/dev/null)"
else
	ur_stop files.server
	ur_fail "files: the server did not listen"
fi

# SIGKILL leaves the files; the next process that opens a device sweeps them.
# As root in a network namespace whose programs have a /dev/shm of their
# own: a uroce process started anywhere else on the host meanwhile sweeps
# the dead one's files too, before the first check (seen with test loops
# running beside the suite).  Elsewhere (as a user), on the host's.
KNS= kg4=$g4
in_kns() { "$@"; }
if [ "$(id -u)" = 0 ] && ur_netns_new KNS k; then
	ip netns exec "$KNS" unshare -m --propagation private sh -c \
		"mount -t tmpfs -o mode=1777 uroce-test /dev/shm && : > '$UR_TMP/.kns.ready' && exec sleep infinity" &
	kpid=$!
	ur_on_exit "kill $kpid"
	if ur_wait_file "$UR_TMP/.kns.ready" "$kpid"; then
		UR_NS_HOLDER[$KNS]=$kpid
		in_kns() { nsenter -m -t "$kpid" -- "$@"; }
		kg4=$(UR_NS=$KNS ur_gid_index uroce0 ::ffff:127.0.0.1)
	else
		ur_fail "killed: no mount namespace with a /dev/shm of its own"
	fi
fi
port=$(ur_port)
UR_NS=$KNS ur_start killed.server ibv_rc_pingpong -d uroce0 -g "$kg4" -p "$port" -n 10
if UR_NS=$KNS ur_wait_listen "$port" "${UR_PID[killed.server]}"; then
	pid=$(ur_prog_pid killed.server)
	kill -KILL "$pid"
	ur_wait killed.server
	ur_expect_eq "killed: SIGKILL leaves the ring file" "$(shm_file "$pid")" \
		"$(in_kns ls "$(shm_file "$pid")" 2>/dev/null)"
	UR_NS=$KNS ur_run killed.next ibv_devinfo -d uroce0
	ur_expect_rc killed.next 0 "killed: ibv_devinfo runs"
	ur_expect_eq "killed: the next process removed the dead one's files" "" \
		"$(in_kns ls "$(shm_file "$pid")" "$(bell_file "$pid")" 2>/dev/null)"
else
	ur_stop killed.server
	ur_fail "killed: the server did not listen"
fi

# A peer killed in the middle of large WRITEs: the survivor errs, promptly.
port=$(ur_port)
UR_ENV=(UROCE_LOG=info)
ur_start midwrite.server ib_write_bw -d uroce0 -x "$g4" -p "$port" \
	-s 8388608 -D 30
if ur_wait_listen "$port" "${UR_PID[midwrite.server]}"; then
	UR_TIMEOUT=60 ur_start midwrite.client ib_write_bw -d uroce0 \
		-x "$g4" -p "$port" -s 8388608 -D 30 127.0.0.1
	for _ in $(seq 100); do
		grep -q "reached by shared memory (ring" "$(ur_out midwrite.client)" && break
		sleep 0.1
	done
	sleep 1
	UR_ENV=()
	spid=$(ur_prog_pid midwrite.server)
	kill -KILL "$spid"
	ur_wait midwrite.server
	ur_wait midwrite.client
	ur_expect_grep midwrite.client "reached by shared memory \(ring" \
		"midwrite: the client was writing by shared memory"
	ur_expect_grep midwrite.client "copied straight into and out of its memory \(single copy\)|copied with memcpy through its shared regions" \
		"midwrite: the client was copying straight into the server"
	ur_expect_fail_fast midwrite.client "midwrite: the client, its server killed mid-WRITE"
	ur_expect_grep midwrite.client "[Cc]ompletion with error|Failed status|status" \
		"midwrite: the client saw an error completion"
	ur_sanitizer_clean midwrite.client
else
	UR_ENV=()
	ur_stop midwrite.server
	ur_fail "midwrite: the server did not listen"
fi

# Single copy: sizes and alignments, then the same through the rings.
SC=$UR_BUILD/bin/integ_single_copy
sc_pair() {
	local tag=$1 mode=$2 port
	port=$(ur_port)
	ur_pair "$tag" "$port" "$SC" uroce0 "$g4" -s "$port" "$mode" \
		-- "$SC" uroce0 "$g4" -c 127.0.0.1 "$port" "$mode"
	ur_report "$tag.server" grep -E '^(ok|FAIL): ' "$(ur_out "$tag.server")"
	ur_report "$tag.client" grep -E '^(ok|FAIL): ' "$(ur_out "$tag.client")"
	ur_expect_pair_ok "$tag" "$tag: integ_single_copy $mode" || return 1
	ur_sanitizer_clean "$tag.server"
	ur_sanitizer_clean "$tag.client"
}
MAPPED="copied with memcpy through its shared regions"
# Private memory moves into a memfd by default where userfaultfd may hold
# the kernel's writes too (root, CAP_SYS_PTRACE), else only when asked
# (UROCE_SHM_SHARE_MR=1; src/core/mr.c says why); a memfd the program maps
# itself is shared as it is.
MOVE=UROCE_SHM_SHARE_MR=1
HELD=$("$UR_BUILD/bin/integ_shared_mr" - 0 probe)
KERNEL="copied straight into and out of its memory \(single copy\)"
counter() { "$UR_BUILD/bin/uroce" devinfo -d uroce0 -c | awk -v n="$1" '$1 == n { print $2 }'; }
shared0=$(counter mr_shared) mapped0=$(counter copies_mapped) kernel0=$(counter copies_kernel)
UR_ENV=(UROCE_LOG=info "$MOVE")
sc_pair sc.sizes sizes && {
	ur_expect_grep sc.sizes.client "$MAPPED" "sc.sizes: the requester copied with memcpy into the responder's shared region"
	ur_expect_no_grep sc.sizes.server "stays private" "sc.sizes: the responder's region moved"
}
shared1=$(counter mr_shared) mapped1=$(counter copies_mapped) kernel1=$(counter copies_kernel)
if [ "${shared1:-0}" -gt "${shared0:-0}" ] && [ "${mapped1:-0}" -ge $(( ${mapped0:-0} + 20 )) ]; then
	ur_pass "devinfo -c: regions shared +$(( shared1 - shared0 )), copies by memcpy +$(( mapped1 - mapped0 )), by the kernel +$(( kernel1 - kernel0 ))"
else
	ur_fail "devinfo -c: regions shared $shared0 -> $shared1, copies by memcpy $mapped0 -> $mapped1"
fi
sc_pair sc.uc uc && ur_expect_grep sc.uc.client "$MAPPED" "sc.uc: the requester copied with memcpy into the responder"
sc_pair sc.fork fork && ur_expect_grep sc.fork.client "$MAPPED" "sc.fork: the requester copied with memcpy into the responder, after its fork"
sc_pair sc.forkinit forkinit && ur_expect_grep sc.forkinit.client "$MAPPED" \
	"sc.forkinit: the same after ibv_fork_init(): the requester copied with memcpy into the responder"
# By default: a memfd the responder maps itself is shared as it is; heap
# memory moves once the requester has copied into it, where the kernel's
# writes can be held too, else it stays private, says why, and the kernel
# copies into it.
UR_ENV=(UROCE_LOG=info)
sc_pair sc.memfd memfd && {
	ur_expect_grep sc.memfd.client "$MAPPED" "sc.memfd: the requester copied with memcpy into the responder's own memfd"
	ur_expect_no_grep sc.memfd.server "stays private" "sc.memfd: the responder's region is shared as it is"
}
sc_pair sc.default sizes && if [ "$HELD" = "kernel faults held: yes" ]; then
	ur_expect_grep sc.default.server "moved into a memfd after peers copied [0-9]+ bytes" \
		"sc.default: heap memory moves by default once the requester copied into it ($HELD)"
	ur_expect_no_grep sc.default.server "stays private" "sc.default: and nothing stays private"
	ur_expect_grep sc.default.client "$KERNEL" "sc.default: the kernel copies into it first"
	ur_expect_grep sc.default.client "$MAPPED" "sc.default: then the requester copies into it with memcpy"
else
	ur_expect_grep sc.default.server "stays private \(without CAP_SYS_PTRACE userfaultfd holds only user-mode writes" \
		"sc.default: heap memory stays private unless asked ($HELD), and says why"
	ur_expect_grep sc.default.client "$KERNEL" "sc.default: the kernel copies into it"
fi
# Regions that share pages (unaligned neighbours, as fio's buffers are)
# move together, where heap memory moves by default: the responder waits
# until its maps show them moved (its mover thread's work, which a loaded
# host may run late), the requester WRITEing until it hears so.
[ "$HELD" = "kernel faults held: yes" ] && UR_ENV+=(SC_WAIT_MOVE=1)
sc_pair sc.neighbours neighbours && if [ "$HELD" = "kernel faults held: yes" ]; then
	ur_expect_grep sc.neighbours.server "moved into a memfd .*\(with the regions it shares pages with\)" \
		"sc.neighbours: the regions sharing pages moved together"
	ur_expect_no_grep sc.neighbours.server "stays private" "sc.neighbours: none of them stays private"
	ur_expect_grep sc.neighbours.client "$MAPPED" "sc.neighbours: the requester copies into them with memcpy"
fi
UR_ENV=(UROCE_LOG=info UROCE_SHM_SHARE_MR=0)
sc_pair sc.kernel sizes && {
	ur_expect_grep sc.kernel.client "$KERNEL" "sc.kernel: with UROCE_SHM_SHARE_MR=0 the kernel copies"
	ur_expect_no_grep sc.kernel.client "$MAPPED" "sc.kernel: and nothing is copied with memcpy"
}
kernel2=$(counter copies_kernel)
if [ "${kernel2:-0}" -ge $(( ${kernel1:-0} + 20 )) ]; then
	ur_pass "devinfo -c: copies by the kernel +$(( kernel2 - kernel1 )) by default and with UROCE_SHM_SHARE_MR=0"
else
	ur_fail "devinfo -c: copies by the kernel $kernel1 -> $kernel2 with UROCE_SHM_SHARE_MR=0"
fi
UR_ENV=(UROCE_LOG=info UROCE_SHM_SINGLE_COPY=0)
sc_pair sc.ring sizes && {
	ur_expect_grep sc.ring.client "single copy off \(UROCE_SHM_SINGLE_COPY=0\)" "sc.ring: the requester says single copy is off"
	ur_expect_no_grep sc.ring.client "copied straight" "sc.ring: and copies nothing straight"
	ur_expect_grep sc.ring.client "reached by shared memory \(ring" "sc.ring: the rings carry the bytes"
}
# Atomics into a region that moved when registered, after the requester
# copied into it with memcpy: each returns the value before it, and the
# words end as the swaps left them.
UR_ENV=(UROCE_LOG=info "$MOVE")
sc_pair sc.atomics atomics && {
	ur_expect_grep sc.atomics.client "$MAPPED" "sc.atomics: the requester copied with memcpy into the responder's shared region"
	ur_expect_no_grep sc.atomics.server "stays private" "sc.atomics: the responder's region moved"
}
UR_ENV=(UROCE_LOG=info "$MOVE")
sc_pair sc.dereg dereg && ur_expect_grep sc.dereg.client "$MAPPED" \
	"sc.dereg: the requester was copying with memcpy into the responder"
UR_ENV=(UROCE_LOG=info UROCE_SHM_SHARE_MR=0)
sc_pair sc.dereg-kernel dereg && ur_expect_grep sc.dereg-kernel.client "$KERNEL" \
	"sc.dereg-kernel: the requester was copying straight into the responder"
UR_ENV=()

# Shared regions in one process, moved when registered
# (UROCE_SHM_SHARE_MR=1): writers during the move (a thread's stores, with
# the program's own SIGSEGV handler, a system call's reads; with
# userfaultfd refused by seccomp, under the SIGSEGV hold), back to private
# memory, a sparse region, the regions that cannot move.
smr() {   # smr TAG CASE [ENV...]
	local t=$1 c=$2
	shift 2
	UR_ENV=(UROCE_LOG=info "$@")
	ur_run "$t" "$UR_BUILD/bin/integ_shared_mr" uroce0 "$g4" "$c"
	UR_ENV=()
	ur_expect_rc "$t" 0 "$t: integ_shared_mr $c"
	ur_report "$t" grep -E '^(ok|FAIL): ' "$(ur_out "$t")"
	ur_sanitizer_clean "$t"
}
for c in writer handler syscall sigwriter back sparse fallback; do
	smr "smr.$c" "$c" "$MOVE"
done
# Huge pages: a hugetlb mapping needs pages reserved, which this host has
# none of unless asked; as root two are reserved for the case and the
# setting put back after.
hp_set=
if [ -w /proc/sys/vm/nr_hugepages ] && [ "$(cat /proc/sys/vm/nr_hugepages)" = 0 ] &&
   echo 2 2>/dev/null > /proc/sys/vm/nr_hugepages && [ "$(cat /proc/sys/vm/nr_hugepages)" -gt 0 ]; then
	hp_set=1
fi
for c in huge hugesig; do
	smr "smr.$c" "$c" "$MOVE"
	if [ -n "$hp_set" ]; then
		ur_expect_grep "smr.$c" "ok: huge: a hugetlb mapping: its pages stayed where they were" \
			"smr.$c: a hugetlb mapping (two pages reserved for it) stays private"
	else
		ur_log "smr.$c: no hugetlb pages could be reserved here (not root): that mapping not tried"
	fi
done
[ -n "$hp_set" ] && echo 0 > /proc/sys/vm/nr_hugepages
# By default nothing moves when registered (only once peers copy into it).
smr smr.lazy writer
# Where only user-mode writes can be held (not root): a system call's
# write into pages that move fails (EFAULT), as docs/design.md says.
as_nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null &&
	"${as_nobody[@]}" test -x "$UR_BUILD/bin/integ_shared_mr"; then
	ur_run smr.user "${as_nobody[@]}" \
		env UROCE_SHM_SHARE_MR=1 "$UR_BUILD/bin/integ_shared_mr" uroce0 "$g4" syscall
	ur_expect_rc smr.user 0 "smr.user: integ_shared_mr syscall, as nobody"
	ur_report smr.user grep -E '^(ok|FAIL): ' "$(ur_out smr.user)"
	ur_expect_grep smr.user "only user-mode faults held here" "smr.user: as nobody, only user-mode writes are held"
else
	ur_log "note: smr.user not run (needs root, setpriv, and a build nobody can run)"
fi
# AddressSanitizer's mlock locks nothing (progs/shared_mr.c): no locked case.
locked=locked
ur_is_asan && locked=
for why in "the stack" $locked \
	"a private file mapping" "a shared mapping"; do
	ur_expect_grep smr.fallback "stays private \($why\): peers copy into it with the kernel" \
		"smr.fallback: a region that cannot move says so ($why)"
done

# A requester killed while it copies, left a zombie (its parent, a shell
# that became `sleep`, never reaps it): the responder is not held up.
port=$(ur_port)
ur_start sc.killed.server "$SC" uroce0 "$g4" -s "$port" killed
if ur_wait_listen "$port" "${UR_PID[sc.killed.server]}"; then
	rm -f "$UR_TMP/sc.killed.pid"
	ur_start sc.killed.client sh -c 'f=$1; shift; "$@" & echo $! > "$f"; exec sleep 60' sh \
		"$UR_TMP/sc.killed.pid" "$SC" uroce0 "$g4" -c 127.0.0.1 "$port" killed
	for _ in $(seq 100); do
		grep -q "^streaming" "$(ur_out sc.killed.client)" && break
		sleep 0.1
	done
	sleep 1
	cpid=$(cat "$UR_TMP/sc.killed.pid")
	kill -KILL "$cpid"
	ur_wait sc.killed.server
	ur_expect_eq "sc.killed: the killed requester is a zombie while the responder deregisters" Z \
		"$(ps -o stat= -p "$cpid" | cut -c1)"
	ur_stop sc.killed.client
	ur_expect_rc sc.killed.server 0 "sc.killed: the responder ends well"
	ur_report sc.killed.server grep -E '^(ok|FAIL): ' "$(ur_out sc.killed.server)"
	ur_sanitizer_clean sc.killed.server
else
	ur_stop sc.killed.server
	ur_fail "sc.killed: the responder did not listen"
fi

ur_done
