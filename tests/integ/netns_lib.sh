# Network namespaces for the integration tests' harness (lib.sh sources
# it): as root, those of "ip netns"; as a user, where the kernel lets users
# make user namespaces (unshare -Ur), namespaces of a user namespace of the
# user's own, each held by a sleeping process and named userns:PID, so that
# a developer without root runs these tests too.
# The harness defines ur_on_exit CMD (run at exit) and UR_TMP (a scratch
# folder) before calling these.
#
#   ur_netns_new VAR         a namespace with lo up, its name in VAR; at
#                            exit it goes, with uroce's files for it
#   ur_nsexec NS CMD...      CMD in namespace NS (empty: here)
#   ur_ns_prefix NS          the words that do it, in UR_NS_PREFIX
#   ur_ip NS ARGS...         ip ARGS in NS
#   ur_operstate NS IF       IF's operational state in NS
#   ur_netns_ino NS          NS's inode number (what uroce's /dev/shm names carry)

# As root, a command runs in namespace NAME of "ip netns" by entering the
# network and mount namespaces of a process that holds them for the test
# (UR_NS_HOLDER[NAME]: "ip netns exec" made its mount namespace, with a
# /sys of NAME), not by "ip netns exec" itself, which gives every command a
# mount namespace of its own.  The kernel tears such a namespace down when
# its last process exits, before it releases that process's files: a
# process killed in one (synchronize_rcu_expedited, up to 0.7 s on a busy
# 2-core machine) keeps its sockets bound, UDP port 4791 among them, and
# its locks held that long, and its successor cannot take the port over
# within a QP's retry budget (integ.multiprocess, r2).  Programs in one
# container share its mount namespace the same way.  (Entering a mount
# namespace moves to its root: --wd=. keeps the caller's directory.)
declare -gA UR_NS_HOLDER=()

# A process that enters a namespace of the test's user namespace keeps its
# credentials: the user, who is root there (unshare -r maps the user to
# root, and "setgroups" is denied, which nsenter's default would do).
UR_NSENTER=(nsenter -U -n --preserve-credentials)

# ur_nsexec NS CMD...: CMD in network namespace NS (empty: here).
ur_nsexec() {
	local ns=$1
	shift
	case $ns in
	"") "$@" ;;
	userns:*) "${UR_NSENTER[@]}" -t "${ns#userns:}" -- "$@" ;;
	*)
		if [ -n "${UR_NS_HOLDER[$ns]:-}" ]; then
			nsenter -n -m --wd=. -t "${UR_NS_HOLDER[$ns]}" -- "$@"
		else
			ip netns exec "$ns" "$@"
		fi ;;
	esac
}

# ur_ns_prefix NS: the words that run a program in namespace NS, for a
# launcher that execs them (timeout, env), in the array UR_NS_PREFIX.
ur_ns_prefix() {
	case $1 in
	"") UR_NS_PREFIX=() ;;
	userns:*) UR_NS_PREFIX=("${UR_NSENTER[@]}" -t "${1#userns:}" --) ;;
	*)
		if [ -n "${UR_NS_HOLDER[$1]:-}" ]; then
			UR_NS_PREFIX=(nsenter -n -m --wd=. -t "${UR_NS_HOLDER[$1]}" --)
		else
			UR_NS_PREFIX=(ip netns exec "$1")
		fi ;;
	esac
}

# ur_ip NS ARGS...: "ip ARGS" in namespace NS (ip -n NS as root).
ur_ip() {
	local ns=$1
	shift
	case $ns in
	userns:*) ur_nsexec "$ns" ip "$@" ;;
	*) ip ${ns:+-n "$ns"} "$@" ;;
	esac
}

# ur_operstate NS IF: the interface's operational state in NS, lower case
# (from ip: sysfs shows the namespace it was mounted in, not the caller's).
ur_operstate() {
	ur_ip "$1" -o link show dev "$2" 2>/dev/null |
		sed -n 's/.* state \([A-Za-z]*\) .*/\1/p' | tr 'A-Z' 'a-z'
}

# ur_userns_holder: without root, a user namespace of the user's own for
# this test's namespaces, held by a sleeping process (UR_USERNS_PID), made
# once.  Returns 1, with the reason in UR_NETNS_WHY, where it cannot be made.
UR_USERNS_PID=
UR_NETNS_WHY="no network namespace made yet"
ur_userns_holder() {
	local ready=$UR_TMP/.userns.ready err=$UR_TMP/.userns.err
	[ -n "$UR_USERNS_PID" ] && return 0
	if ! command -v unshare >/dev/null || ! command -v nsenter >/dev/null; then
		UR_NETNS_WHY="needs root, or unshare and nsenter (util-linux), for network namespaces"
		return 1
	fi
	unshare -Ur sh -c ": > '$ready' && exec sleep infinity" 2> "$err" &
	UR_USERNS_PID=$!
	ur_on_exit "kill $UR_USERNS_PID"
	ur_wait_file "$ready" "$UR_USERNS_PID" && return 0
	UR_NETNS_WHY="not root, and no user namespace of the user's own (unshare -Ur): $(head -c 300 "$err")"
	return 1
}

# ur_wait_file FILE PID: until FILE exists (5 s) or PID is gone.
ur_wait_file() {
	for _ in $(seq 100); do
		[ -e "$1" ] && return 0
		kill -0 "$2" 2>/dev/null || break
		sleep 0.05
	done
	[ -e "$1" ]
}

# ur_netns_new VAR: a fresh network namespace with lo up, its name (for
# UR_NS and ur_nsexec) in VAR, removed at exit together with the host
# registry files uroce makes for it (ur_netns_registry_gone).  As root, "ip
# netns add"; otherwise one of the test's user namespace, held by a
# sleeping process (userns:PID).  Returns 1, with the reason in
# UR_NETNS_WHY, if it cannot.
UR_NETNS_SEQ=0
ur_netns_new() {
	local var=$1 name err pid ready
	UR_NETNS_SEQ=$((UR_NETNS_SEQ + 1))
	if [ "$(id -u)" = 0 ]; then
		name=uroce-t$$-${UR_NETNS_SEQ}${2:-p}
		if ! err=$(ip netns add "$name" 2>&1); then
			UR_NETNS_WHY="cannot create network namespaces here: $err"
			return 1
		fi
		ur_on_exit "ip netns del $name"
		ip -n "$name" link set lo up || return 1
		ready=$UR_TMP/.netns-$UR_NETNS_SEQ.ready
		ip netns exec "$name" sh -c ": > '$ready' && exec sleep infinity" &
		pid=$!
		ur_on_exit "kill $pid"           # before the namespace goes
		ur_wait_file "$ready" "$pid" && UR_NS_HOLDER[$name]=$pid
		printf -v "$var" '%s' "$name"
		ur_netns_registry_gone "$name"
		return 0
	fi
	ur_userns_holder || return 1
	ready=$UR_TMP/.netns-$UR_NETNS_SEQ.ready
	err=$UR_TMP/.netns-$UR_NETNS_SEQ.err
	nsenter -U --preserve-credentials -t "$UR_USERNS_PID" -- unshare -n \
		sh -c "ip link set lo up && : > '$ready' && exec sleep infinity" 2> "$err" &
	pid=$!
	ur_on_exit "kill $pid"
	if ! ur_wait_file "$ready" "$pid"; then
		UR_NETNS_WHY="no network namespace in the user's own user namespace: $(head -c 300 "$err")"
		return 1
	fi
	printf -v "$var" '%s' "userns:$pid"
	ur_netns_registry_gone "userns:$pid"
}

# ur_netns_registry_gone NS: at exit, before NS goes, remove the registry,
# router lock and capture switch uroce keeps in /dev/shm for NS
# (uroce-UID-netINODE*, UID the user's as the machine sees it, also from a
# user namespace), every user's: a test running a program as another user
# in NS (res.test.sh, as nobody) leaves that user's too.  Nothing can use
# them once NS is gone, and nothing sweeps them: the next namespace to get
# the same inode would find them.
ur_netns_registry_gone() {
	local f ino
	ino=$(ur_netns_ino "$1") && [ -n "$ino" ] || return 0
	f="/dev/shm/uroce-[0-9]*-net$ino"
	ur_on_exit "rm -f $f-v* $f.router $f.capture 2>/dev/null"
}

# ur_netns_private: a fresh network namespace with lo (up) alone, named in
# UR_NS_P (for UR_NS), removed at exit (ur_netns_new).
ur_netns_private() {
	ur_netns_new UR_NS_P
}


# ur_netns_ino NS: the inode number of namespace NS (empty: this one).
ur_netns_ino() {
	case $1 in
	"") stat -L -c %i /proc/self/ns/net ;;
	userns:*) stat -L -c %i "/proc/${1#userns:}/ns/net" ;;
	*) stat -L -c %i "/run/netns/$1" ;;
	esac
}
