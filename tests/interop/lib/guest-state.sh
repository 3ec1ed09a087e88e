# shellcheck shell=sh
# Runs in the guest (busybox sh): vm.sh copies it to /tmp/uroce/fresh.sh there when the shared
# guest is up, and runs "sh /tmp/uroce/fresh.sh MODE VM_RUN_SCRIPT" through vm_run (the second
# argument: vm_run's own script, whose files it leaves).  It keeps a shared guest fresh between
# the tests that attach to it.
#
#   record   note what the freshly booted guest has, in /tmp/uroce/fresh.*: its processes,
#            network links, IPv4 addresses and routes, rdma devices and resources
#            (`rdma res`), and files under /tmp /root /dev/shm /run
#   reset    bring the guest back to that: kill every process started since, delete the files,
#            rdma links, network links, addresses and routes made since; wait (10 s at most) until
#            the kernel has freed the dead processes' QPs, CQs, MRs and rdma_cm ids; then compare.
#            Status 1, with the differences on stderr, when the guest is not as it was.
#
# Left alone (no test changes them, and a reset could not put them back): sysctls, neighbour
# entries, counters (tests compare counters before and after).  The guest has no nft.  IPv6 is
# left out too: no test uses it, and eth0's link-local address is not settled when the guest is
# recorded (DAD sometimes drops it, with its route and neighbour-discovery multicast, later on).
# So are eth0's multicast MACs: rxe (kernel 6.1) adds a group's MAC when a QP attaches and keeps it
# after the last member is gone (mckey's 239.1.2.5 leaves 33:33:ef:01:02:05), busybox's ip cannot
# take that back, and an extra MAC only lets eth0 take in frames rxe then drops (no member).
# Every program started costs a lot under TCG on a busy host: the usual case (nothing to undo but
# processes and files) starts four, the rest reads /proc and /sys with the shell's builtins.

mode=$1
fresh=/tmp/uroce/fresh
now=/tmp/uroce/now
# the calling vm_run's files in /tmp/uroce/run ($g.sh, .out, .err, .pid)
self=${2%.sh}

# proc_stat PID: sets st_state and st_ppid from /proc/PID/stat
proc_stat() {
	read -r st 2>/dev/null <"/proc/$1/stat" || return 1
	st=${st##*) }
	# shellcheck disable=SC2086 # the fields after the command name
	set -- $st
	st_state=$1 st_ppid=$2
}

# user_pids: the user processes (not kthreadd's kernel threads, not zombies), in USER_PIDS
user_pids() {
	USER_PIDS=
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		[ "$p" != 2 ] && proc_stat "$p" && [ "$st_ppid" != 2 ] && [ "$st_state" != Z ] &&
			USER_PIDS="$USER_PIDS $p"
	done
}

# keep_pids: this shell and its ancestors, never killed, in KEEP_PIDS
keep_pids() {
	KEEP_PIDS=
	p=$$
	while [ -n "$p" ] && [ "$p" != 0 ]; do
		KEEP_PIDS="$KEEP_PIDS $p"
		[ "$p" = 1 ] && break
		proc_stat "$p" || break
		p=$st_ppid
	done
}

# snap FILE: the state compared between fresh and now, one section per kind
snap() {
	{
		echo "# links"
		for l in /sys/class/net/*; do echo "${l##*/}"; done
		echo "# addrs"
		ip -o -4 addr show
		echo "# routes"
		while read -r l; do echo "$l"; done </proc/net/route
		echo "# rdma"
		for l in /sys/class/infiniband/*; do echo "${l##*/}"; done
		rdma res show
		echo "# files"
		find /tmp /root /dev/shm /run -xdev \( -path /tmp/uroce/run -o -path "$fresh.*" \
			-o -path "$now.*" \) -prune -o -print
	} >"$1" 2>&1
}

# iproutes: ip's routes as "read" gives them back (ip ends its lines with a space)
iproutes() {
	ip route show | while read -r r; do echo "$r"; done
}

# section NAME FILE: the lines of one section of a snap
section() {
	sect=
	while read -r l; do
		case $l in "# "*) sect=${l#\# } && continue ;; esac
		[ "$sect" = "$1" ] && echo "$l"
	done <"$2"
}

# extra NAME: the lines of now's section NAME that fresh's lacks
extra() {
	section "$1" "$now.state" >"$now.a"
	section "$1" "$fresh.state" >"$now.b"
	grep -vxF -f "$now.b" "$now.a"
	rm -f "$now.a" "$now.b"
}

case $mode in
record)
	keep_pids
	user_pids
	: >"$fresh.pids"
	for p in $USER_PIDS; do
		case " $KEEP_PIDS " in *" $p "*) ;; *) echo "$p" >>"$fresh.pids" ;; esac
	done
	snap "$fresh.state"
	iproutes >"$fresh.iproutes"
	exit 0
	;;
reset) ;;
*)
	echo "guest-state: unknown mode '$mode'" >&2
	exit 2
	;;
esac

[ -e "$fresh.state" ] || {
	echo "guest-state: no record of the fresh guest ($fresh.state)" >&2
	exit 1
}

# 1. processes: SIGKILL every user process the fresh guest did not have (jobs of vm_bg, vm_run
#    commands of a test that was killed, whatever they started), until none is left
keep_pids
while read -r p; do KEEP_PIDS="$KEEP_PIDS $p"; done <"$fresh.pids"
n=0
while :; do
	user_pids
	left=
	for p in $USER_PIDS; do
		case " $KEEP_PIDS " in *" $p "*) ;; *) left="$left $p" ;; esac
	done
	[ -z "$left" ] && break
	if [ $n -ge 50 ]; then
		echo "guest-state: processes still alive after SIGKILL:" >&2
		for p in $left; do
			read -r c 2>/dev/null <"/proc/$p/cmdline"
			echo "  $p $c" >&2
		done
		exit 1
	fi
	# shellcheck disable=SC2086 # one pid a word
	kill -KILL $left 2>/dev/null
	sleep 0.1
	n=$((n + 1))
done

# 2. vm_run's files of other runs
for f in /tmp/uroce/run/*; do
	[ -e "$f" ] || continue
	case $f in "$self".*) continue ;; esac
	rm -rf "$f"
done

# 3. as fresh?  The usual case: nothing else to undo
snap "$now.state"
cmp -s "$fresh.state" "$now.state" && exit 0

# 4. undo what was made since: files (deepest first), rdma links, links, addresses, routes
extra files | sort -r | while read -r f; do rm -rf "$f"; done
for d in /sys/class/infiniband/*; do
	d=${d##*/}
	grep -qxF "$d" "$fresh.state" || rdma link delete "$d"
done
extra links | while read -r l; do ip link del "$l" 2>/dev/null; done
extra addrs | while read -r _ dev _ a _; do ip addr del "$a" dev "$dev" 2>/dev/null; done
# routes: /proc's form is not ip's; delete what ip lists that a fresh guest's table did not have
iproutes >"$now.routes"
while read -r r; do
	# shellcheck disable=SC2086 # the route's words
	grep -qxF "$r" "$fresh.iproutes" || ip route del $r 2>/dev/null
done <"$now.routes"
rm -f "$now.routes"

# 5. the kernel frees a dead process's QPs, MRs and rdma_cm ids asynchronously: look again for
#    about 10 s
n=0
while :; do
	snap "$now.state"
	cmp -s "$fresh.state" "$now.state" && exit 0
	[ $n -lt 10 ] || break
	sleep 1
	n=$((n + 1))
done
echo "guest-state: the guest differs from its fresh state (- fresh, + now):" >&2
diff "$fresh.state" "$now.state" >&2
exit 1
