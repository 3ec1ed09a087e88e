#!/usr/bin/env bash
# The /sys/class view of `uroce run`: programs that read
# /sys/class/infiniband themselves find uroce's devices there.
#  - under `uroce run`: `ls /sys/class/infiniband` lists the devices
#    ibv_devinfo lists; their GID files (gids/N, gid_attrs/types/N,
#    gid_attrs/ndevs/N) hold ibv_devinfo -v's GIDs; DEV/device/net/ names the
#    interface `uroce netdev` names and resolves to its real directory;
#    infiniband_verbs/*/ibdev name the devices; an ibdev2netdev-style loop
#    and a show_gids-style loop over the files give the same; a real class
#    (/sys/class/net) still resolves; the view is read-only;
#  - a kernel's own RDMA devices (mocked in a namespace of the test's own):
#    kept beside uroce's, as links to the same targets, files bound back;
#  - outside, and with --no-sysfs or UROCE_SYSFS=0: /sys/class as it was;
#  - as a user (nobody): the same view inside a user namespace keeping the
#    uid, where the kernel allows one; in a chroot (where it allows none),
#    one line and a plain run;
#  - rdma-core's pyverbs rdma_cm tests (test_rdmacm, unmodified, as a user
#    runs them: no arguments) in a namespace of their own: with the view they
#    run and pass; without it they skip (they look for DEV/device/net/).
# ctest-timeout: 300
. "$(dirname "$0")/lib.sh"

U=$UR_BUILD/bin/uroce
# Under ASan the exec'd (uninstrumented) programs need the runtime first.
run_pre=()
if ur_is_asan; then
	run_pre=(env "LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
		 "ASAN_OPTIONS=detect_leaks=0")
fi
urun() { "${run_pre[@]}" "$U" run "$@"; }

outside() {   # what a program outside sees of /sys/class, on one line
	{ ls /sys/class
	  ls /sys/class/infiniband 2>&1
	  echo "mounts: $(findmnt -rn -o TARGET | grep -c '^/sys/class')"; } | xargs
}
outside > "$UR_TMP/outside.before"

# --- the view, as root here ---------------------------------------------------

# Their stdout alone: as a user, the library may warn on stderr (port 4791
# held by another user's process).
urun -- ibv_devinfo -v > "$UR_TMP/devinfo.out" 2> "$UR_TMP/devinfo.err" ||
	ur_fail "uroce run -- ibv_devinfo -v: $(head -3 "$UR_TMP/devinfo.err")"
"$U" netdev > "$UR_TMP/netdev.out" 2> "$UR_TMP/netdev.err" ||
	ur_fail "uroce netdev: $(head -3 "$UR_TMP/netdev.err")"
ur_report view urun -- /usr/bin/python3 "$UR_SRC/tests/integ/sysfs_view_check.py" \
	"$UR_TMP/devinfo.out" "$UR_TMP/netdev.out"

# ibdev2netdev reads DEV/device/net/; show_gids the GID files, their types
# and interfaces.  The same loops, over the view.
urun -- bash -c 'for d in /sys/class/infiniband/*; do
	for n in "$d"/device/net/*; do echo "${d##*/} port 1 ==> ${n##*/}"; done; done' \
	> "$UR_TMP/ibdev2netdev.out" 2>&1
ur_expect_eq "ibdev2netdev-style loop = uroce netdev" \
	"$(awk '{print $1, $2, $3, $4, $5}' "$UR_TMP/netdev.out")" "$(cat "$UR_TMP/ibdev2netdev.out")"
urun -- bash -c 'for g in /sys/class/infiniband/*/ports/*/gids/*; do
	t=${g/\/gids\//\/gid_attrs\/types\/}; n=${g/\/gids\//\/gid_attrs\/ndevs\/}
	[ -e "$t" ] || continue
	d=${g#/sys/class/infiniband/}; echo "${d%%/*} ${g##*/} $(cat "$g") $(cat "$t") $(cat "$n")"
	done' > "$UR_TMP/show_gids.out" 2>&1
ur_expect_grep show_gids '^uroce0 1 0000:0000:0000:0000:0000:ffff:7f00:0001 RoCE v2 lo$' \
	"show_gids-style loop: uroce0 GID 1 is 127.0.0.1 on lo, RoCE v2"

# A real class beside the view's, unchanged and live.
ur_expect_eq "/sys/class/net/lo resolves as outside" "$(readlink -f /sys/class/net/lo)" \
	"$(urun -- readlink -f /sys/class/net/lo 2>&1)"
ur_expect_eq "/sys/class/net/lo/mtu reads as outside" "$(cat /sys/class/net/lo/mtu)" \
	"$(urun -- cat /sys/class/net/lo/mtu 2>&1)"
ur_expect_eq "the view lists every real class, and infiniband, infiniband_verbs" \
	"$( (ls /sys/class; echo infiniband; echo infiniband_verbs) | sort -u | xargs)" \
	"$(urun -- ls /sys/class 2>&1 | sort | xargs)"
if urun -- touch /sys/class/infiniband/x 2>/dev/null; then
	ur_fail "the view is writable"
else
	ur_pass "the view is read-only"
fi

# --- a kernel with RDMA devices of its own --------------------------------------
# This kernel has none: in a mount namespace of the test's own, /sys/class
# becomes a tmpfs with the real classes bound back and an infiniband class
# as a kernel's (rxe0, a link into /sys/devices; infiniband_verbs with its
# abi_version file).  uroce run keeps the kernel's entries and adds its own.
if [ "$(id -u)" = 0 ]; then
	real=$UR_TMP/realclass
	mkdir -p "$real"
	unshare -m --propagation private bash -c '
		set -e
		mount --bind /sys/class "$1"
		mount -t tmpfs kernel-like /sys/class
		for c in "$1"/*; do mkdir "/sys/class/${c##*/}"; mount --bind "$c" "/sys/class/${c##*/}"; done
		mkdir /sys/class/infiniband /sys/class/infiniband_verbs
		ln -s ../../devices/virtual/net/lo /sys/class/infiniband/rxe0
		ln -s ../../devices/virtual/net/lo /sys/class/infiniband_verbs/uverbs0
		echo 6 > /sys/class/infiniband_verbs/abi_version
		shift
		exec "$@" sh -c "ls /sys/class/infiniband /sys/class/infiniband_verbs | xargs
			readlink /sys/class/infiniband/rxe0
			cat /sys/class/infiniband/rxe0/mtu /sys/class/infiniband_verbs/abi_version"' \
		sh "$real" "${run_pre[@]}" "$U" run -- > "$UR_TMP/kernel_rdma.out" 2>&1
	devs=$(awk '$4 == "==>" {print $1}' "$UR_TMP/netdev.out" | xargs)
	want="/sys/class/infiniband: rxe0 $devs"
	want+=" /sys/class/infiniband_verbs: abi_version $(printf 'uverbs-%s ' $devs | xargs) uverbs0"
	want+=" ../../devices/virtual/net/lo $(cat /sys/class/net/lo/mtu) 6"
	ur_expect_eq "a kernel's RDMA devices: kept, as links to the same targets, uroce's added" \
		"$want" \
		"$(xargs < "$UR_TMP/kernel_rdma.out")"
fi

# --- outside, and turned off --------------------------------------------------

outside > "$UR_TMP/outside.after"
ur_expect_eq "outside: /sys/class unchanged" "$(cat "$UR_TMP/outside.before")" \
	"$(cat "$UR_TMP/outside.after")"
ur_expect_eq "--no-sysfs: /sys/class/infiniband as outside" \
	"$(ls /sys/class/infiniband 2>&1 | sed 's/^ls: //')" \
	"$(urun --no-sysfs -- ls /sys/class/infiniband 2>&1 | sed 's/^ls: //')"
ur_expect_eq "UROCE_SYSFS=0: /sys/class/infiniband as outside" \
	"$(ls /sys/class/infiniband 2>&1 | sed 's/^ls: //')" \
	"$(UROCE_SYSFS=0 urun -- ls /sys/class/infiniband 2>&1 | sed 's/^ls: //')"

# --- as a user ------------------------------------------------------------------

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	asnobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
	"${asnobody[@]}" "${run_pre[@]}" "$U" run -- sh -c 'id -u; ls /sys/class/infiniband' \
		> "$UR_TMP/nobody.out" 2>&1
	if "${asnobody[@]}" unshare -U true 2>/dev/null; then
		ur_expect_eq "as nobody, in a user namespace: own uid, uroce's devices" \
			"$(id -u nobody) $(awk '$4 == "==>" {print $1}' "$UR_TMP/netdev.out" | xargs)" \
			"$(xargs < "$UR_TMP/nobody.out")"
	else
		ur_log "users may not make user namespaces here: the view as a user is not checked"
	fi
	# A chrooted process may make no user namespace (the kernel refuses
	# it): as nobody in a chroot of /, one line and a plain run.
	root=$UR_TMP/root
	mkdir -p "$root"
	unshare -m --propagation private sh -c 'mount --rbind / "$1" && cd / && shift && exec chroot "$@"' \
		sh "$root" "$root" "${asnobody[@]}" "${run_pre[@]}" "$U" run -- \
		sh -c 'id -u; ls /sys/class/infiniband 2>&1 | sed "s/^ls: //"' > "$UR_TMP/nouserns.out" 2>&1
	ur_expect_eq "as nobody without user namespaces: one line, then a plain run" \
		"1 $(id -u nobody) $(ls /sys/class/infiniband 2>&1 | sed 's/^ls: //' | xargs)" \
		"$(grep -c '^uroce run: no /sys/class view' "$UR_TMP/nouserns.out")\
 $(grep -v '^uroce run:' "$UR_TMP/nouserns.out" | xargs)"
else
	ur_log "not root or no nobody user: nobody's cases are not checked (as a user, the checks" \
		"above ran in the view's user namespace)"
fi

# --- rdma-core's pyverbs rdma_cm tests ----------------------------------------

shipped=/usr/share/doc/rdma-core/tests
if [ ! -f "$shipped/run_tests.py" ] || ! /usr/bin/python3 -c 'import pyverbs' 2>/dev/null; then
	ur_log "rdma-core's tests are not installed (python3-pyverbs): the rdma_cm tests are not run"
elif ! ur_netns_private; then
	ur_log "no private network namespace ($UR_NETNS_WHY): the rdma_cm tests are not run"
else
	suite=$UR_TMP/suite
	mkdir -p "$suite" && cp -r "$shipped" "$suite/" && gunzip -f "$suite"/tests/*.gz
	for run in view no-sysfs; do
		opt=()
		[ $run = no-sysfs ] && opt=(--no-sysfs)
		(cd "$suite/tests" && ur_nsexec "$UR_NS_P" timeout -k 5 120 "${run_pre[@]}" "$U" run \
			"${opt[@]}" -- /usr/bin/python3 run_tests.py -v -k tests.test_rdmacm.) \
			> "$UR_TMP/rdmacm.$run.out" 2>&1
		/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import compare
r = compare.parse(open(sys.argv[2]).read()).values()
print(" ".join(str(list(r).count(w)) for w in ("pass", "skip", "fail", "error")))' \
			"$UR_SRC/tests/pyverbs" "$UR_TMP/rdmacm.$run.out" > "$UR_TMP/rdmacm.$run.count"
		read -r pass skip fail error < "$UR_TMP/rdmacm.$run.count"
		ur_log "pyverbs test_rdmacm, $run: $pass pass, $skip skip, $fail fail, $error error"
		eval "${run//-/_}=(\$pass \$skip \$fail \$error)"
	done
	total=$((no_sysfs[0] + no_sysfs[1] + no_sysfs[2] + no_sysfs[3]))
	ur_expect_eq "pyverbs test_rdmacm without the view: all $total skip" "0 $total 0 0" \
		"${no_sysfs[*]}"
	ur_expect_eq "pyverbs test_rdmacm under uroce run: all $total run and pass" "$total 0 0 0" \
		"${view[*]}"
	[ "$total" -ge 10 ] && ur_pass "pyverbs test_rdmacm: $total tests" ||
		ur_fail "pyverbs test_rdmacm: only $total tests found"
fi

ur_done
