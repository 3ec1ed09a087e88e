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

# A namespace of its own: as root with unshare -n, else as a user with an
# unprivileged user namespace; or the current one when neither works.
ns=()
if unshare -n true 2>/dev/null; then
	ns=(unshare -n)
elif unshare -Urn true 2>/dev/null; then
	ns=(unshare -Urn)
fi
log=$out/$run.log
(cd "$suite" && timeout -k 5 240 "${ns[@]}" bash -c 'ip link set lo up 2>/dev/null; exec "$@"' sh \
	"$build/bin/uroce" run -- /usr/bin/python3 run_tests.py -v "${args[@]}") > "$log" 2>&1
echo "run_tests.py ${args[*]} exited $? (output: $log)"
exec /usr/bin/python3 "$here/compare.py" "$log" "$here/expected.txt"
