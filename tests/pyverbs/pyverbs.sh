#!/usr/bin/env bash
# pyverbs.sh RUN: rdma-core's test suite (Debian's python3-pyverbs ships it,
# partly gzipped, under /usr/share/doc/rdma-core/tests/) copied and unpacked
# into the build tree, run unmodified with /usr/bin/python3 under
# `uroce run`, in a private network namespace when it can make one (port
# 4791 and the host registry then belong to this run alone), and compared
# with expected.txt (the same for both runs).  RUN is noargs (as a user runs it) or gid1
# (--dev uroce0 --gid 1).
set -u
run=$1
build=${UROCE_BUILD:?UROCE_BUILD must point at the build directory}
here=$(cd "$(dirname "$0")" && pwd)
shipped=/usr/share/doc/rdma-core/tests
out=$build/pyverbs-out
suite=$out/suite/tests

[ -f "$shipped/run_tests.py" ] ||
	{ echo "SKIP: rdma-core's tests are not installed (apt-get install python3-pyverbs)"; exit 77; }
/usr/bin/python3 -c 'import pyverbs' 2>/dev/null ||
	{ echo "SKIP: /usr/bin/python3 has no pyverbs (apt-get install python3-pyverbs)"; exit 77; }

mkdir -p "$out"
# Both runs may start at once: each unpacks its own copy, then renames it.
tmp=$(mktemp -d "$out/.suite.XXXXXX")
cp -r "$shipped" "$tmp/tests" && gunzip -f "$tmp"/tests/*.gz || exit 1
rm -rf "$out/suite.$run" && mv "$tmp" "$out/suite.$run"
suite=$out/suite.$run/tests

case $run in
noargs) args=() ;;
gid1) args=(--dev uroce0 --gid 1) ;;
*) echo "unknown run $run" >&2; exit 2 ;;
esac

# rdma-core's huge page tests (test_odp_rc_huge_traffic,
# test_odp_rc_huge_user_addr_traffic, test_huge_page_traffic) skip unless
# the kernel has 2 MiB pages reserved; each maps one or two.  As root the
# run reserves HUGE_PAGES of its own while the suite runs: the pool grows
# by that many and shrinks by as many at the end, under a lock on the
# pool's file, so that both runs of the label may go at once and the
# machine's own setting comes back (a run killed outright leaves its pages
# reserved).  Without root, or if the kernel has not the memory, nothing
# changes and those tests may skip with the suite's reason.
hp=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
HUGE_PAGES=8
huge_added=0
huge_reserve() {
	local fd cur now
	if [ "$(id -u)" != 0 ] || [ ! -w "$hp" ]; then
		echo "pyverbs.sh: no 2 MiB huge pages reserved (needs root and a writable $hp): the huge page tests may skip"
		return 1
	fi
	exec {fd}<"$hp"
	flock "$fd"
	cur=$(cat "$hp")
	echo $((cur + HUGE_PAGES)) > "$hp" 2>/dev/null
	now=$(cat "$hp")
	if [ "$now" -ge $((cur + HUGE_PAGES)) ]; then
		huge_added=$((now - cur))
		echo "pyverbs.sh: $huge_added huge pages of 2 MiB reserved for the run ($now in the pool)"
	else
		echo "$cur" > "$hp" 2>/dev/null   # too few: give them back
		echo "pyverbs.sh: the kernel gave $((now - cur)) of $HUGE_PAGES huge pages of 2 MiB: none kept, the huge page tests may skip"
	fi
	exec {fd}<&-
	[ "$huge_added" -gt 0 ]
}
huge_release() {
	local fd cur
	[ "$huge_added" -gt 0 ] || return 0
	exec {fd}<"$hp" && flock "$fd"
	cur=$(cat "$hp")
	echo $((cur > huge_added ? cur - huge_added : 0)) > "$hp" 2>/dev/null
	exec {fd}<&-
	huge_added=0
}
trap huge_release EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
compare_args=()
huge_reserve || compare_args=(--may-skip "no huge pages of size 2M allocated")

# A namespace of its own (network and mount): as root with unshare, else as
# a user with an unprivileged user namespace; or the current ones when
# neither works.
ns=()
if unshare -n -m --propagation private true 2>/dev/null; then
	ns=(unshare -n -m --propagation private)
elif unshare -Urnm true 2>/dev/null; then
	ns=(unshare -Urnm)
fi
# rdma-core's rdma_cm tests find a device's IP address under
# /sys/class/infiniband/DEV/device/net/IFNAME: `uroce run` gives the suite a
# /sys/class view with uroce's devices in it, so those tests run rather than
# skip (integ.sysfs_view checks that they skip without it).
log=$out/$run.log
(cd "$suite" && timeout -k 5 240 "${ns[@]}" bash -c 'ip link set lo up 2>/dev/null; exec "$@"' sh \
	"$build/bin/uroce" run -- /usr/bin/python3 run_tests.py -v "${args[@]}") > "$log" 2>&1
echo "run_tests.py ${args[*]} exited $? (output: $log)"
huge_release
/usr/bin/python3 "$here/compare.py" "$log" "$here/expected.txt" "${compare_args[@]}"
