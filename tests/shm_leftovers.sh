#!/usr/bin/env bash
# Whether a test run left uroce's files in /dev/shm behind (scripts/test
# runs it around each ctest run; docs/testing.md).
#
#   shm_leftovers.sh snapshot > FILE     the user's uroce files there now
#   shm_leftovers.sh check FILE BUILD    fails, listing them, if files that
#                                        appeared since FILE and whose owner
#                                        is gone outlive a uroce program run
#                                        after them (BUILD's library)
#
# Only the user's files of uroce's naming count, and only those whose owner
# is gone: a ring file or doorbell (uroce-UID-shm-PID-vN, -bell-) whose
# process has ended, a registry or router lock file (uroce-UID-netINODE-vN,
# .router) whose network namespace no process is in and no mount holds.
# Other tests running meanwhile (other checkouts, other users) hold theirs
# legitimately.  A file whose owner ended just before the check is not a
# leak until a uroce process has started after it: the check runs
# ibv_devinfo on BUILD's library (whose start removes what dead processes
# and namespaces left) and reports what was orphaned before it ran and is
# still there after.
set -u

mine() {
	find /dev/shm -maxdepth 1 -user "$(id -u)" -name 'uroce-*' -printf '%f\n' 2>/dev/null | sort
}

# live_netns: the inodes of the namespaces that live, as far as we can see.
live_netns() {
	local p
	for p in /proc/[0-9]*; do
		readlink "$p/ns/net" 2>/dev/null
	done | sed -n 's/^net:\[\([0-9]*\)\]$/\1/p'
	sed -n 's/^[^ ]* [^ ]* [^ ]* net:\[\([0-9]*\)\] .*/\1/p' /proc/self/mountinfo
}

# orphans BEFORE: files not in BEFORE whose owner is gone.
orphans() {
	local f pid ino live
	live=" $(live_netns | sort -u | tr '\n' ' ') "
	comm -13 "$1" <(mine) | while IFS= read -r f; do
		case $f in
		uroce-*-shm-*-v* | uroce-*-bell-*-v*)
			pid=${f#uroce-*-*-}
			pid=${pid%%-v*}
			[ -d "/proc/$pid" ] || echo "$f (process $pid ended)"
			;;
		uroce-*-net*-v* | uroce-*-net*.router)
			ino=${f#uroce-*-net}
			ino=${ino%%[-.]*}
			case $live in *" $ino "*) ;; *) echo "$f (network namespace $ino gone)" ;; esac
			;;
		esac
	done
}

case ${1:-} in
snapshot)
	mine
	;;
check)
	before=$2 build=$3
	first=$(orphans "$before")
	[ -n "$first" ] || exit 0
	LD_LIBRARY_PATH=$build/lib UROCE_LOG=error ibv_devinfo -d uroce0 >/dev/null 2>&1 ||
		echo "shm_leftovers: ibv_devinfo on $build/lib failed" >&2
	left=$(comm -12 <(echo "$first") <(orphans "$before"))
	if [ -n "$left" ]; then
		echo "FAIL: the run left these files in /dev/shm, their owners gone, and a uroce" \
			"program started after them did not remove them:"
		sed 's|^|  /dev/shm/|' <<<"$left"
		exit 1
	fi
	;;
*)
	echo "usage: $0 snapshot > FILE | check FILE BUILD" >&2
	exit 2
	;;
esac
