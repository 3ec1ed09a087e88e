#!/usr/bin/env bash
# ctest-timeout: 180
# The lock-order check (tests/lockorder/, docs/design.md "Locks") can fail:
#  - an ibv_rc_pingpong pair (events, so the waiter too) and an
#    ibv_srq_pingpong pair run with the recorder preloaded; the pairs of
#    locks they take one under another all follow docs/design.md's table;
#  - the same record against a copy of the table with a QP's row moved
#    below the CQ spinlock's fails, naming that pair as out of order;
#  - and against a copy without the CQ spinlock's row, naming its lock
#    as in no row.
# scripts/test runs the whole suite with the recorder and checks it so.
. "$(dirname "$0")/lib.sh"

if ur_is_asan || ur_is_tsan; then
	ur_skip "a sanitizer build: ThreadSanitizer checks the lock order there"
fi
lib=$UR_BUILD/testlib/liburoce_lockorder.so
check=$UR_SRC/tests/lockorder/check.py
design=$UR_SRC/docs/design.md
[ -f "$lib" ] || { ur_fail "$lib is not built"; ur_done; }

export UROCE_LOCKORDER_LIB=$lib UROCE_LOCKORDER_DIR=$UR_TMP/edges
mkdir -p "$UROCE_LOCKORDER_DIR"
port=$(ur_port)
ur_pair rc "$port" ibv_rc_pingpong -d uroce0 -g 1 -e -n 200 -p "$port" \
	-- ibv_rc_pingpong -d uroce0 -g 1 -e -n 200 -p "$port" 127.0.0.1
ur_expect_pair_ok rc "ibv_rc_pingpong -e, recorded"
port=$(ur_port)
ur_pair srq "$port" ibv_srq_pingpong -d uroce0 -g 1 -n 200 -p "$port" \
	-- ibv_srq_pingpong -d uroce0 -g 1 -n 200 -p "$port" 127.0.0.1
ur_expect_pair_ok srq "ibv_srq_pingpong, recorded"
# grep reads the files itself: `cat | grep -q` under pipefail fails when
# grep's early exit stops cat with SIGPIPE (large files; it did in CI).
ur_expect_eq "the recorder wrote pairs of locks" yes \
	"$(grep -qs . "$UROCE_LOCKORDER_DIR"/edges.* && echo yes)"

python3 "$check" "$UR_SRC" "$UROCE_LOCKORDER_DIR" > "$UR_TMP/check.out" 2>&1
rc=$?
ur_expect_eq "the recorded pairs follow docs/design.md's table ($(tail -n1 "$UR_TMP/check.out"))" \
	0 "$rc"
[ "$rc" = 0 ] || ur_show check

# A QP's row moved below the CQ spinlock's: a QP's lock under a CQ's (the
# pingpongs complete work requests with the QP locked).  (It was the QP
# table's row until a received packet stopped taking the table's lock.)
awk '/^\| a QP \|/ { held = $0; next }
     { print }
     /^\| a CQ \(spinlock\) \|/ && held { print held; held = "" }' "$design" > "$UR_TMP/swapped.md"
python3 "$check" "$UR_SRC" "$UROCE_LOCKORDER_DIR" --design "$UR_TMP/swapped.md" \
	> "$UR_TMP/swapped.out" 2>&1
rc=$?
ur_expect_eq "rows swapped: the check fails" 1 "$rc"
ur_expect_grep swapped '^FAIL: out of order: a QP .* -> a CQ \(spinlock\) ' \
	"rows swapped: a QP's lock under a CQ's named"

grep -v '^| a CQ (spinlock) |' "$design" > "$UR_TMP/dropped.md"
python3 "$check" "$UR_SRC" "$UROCE_LOCKORDER_DIR" --design "$UR_TMP/dropped.md" \
	> "$UR_TMP/dropped.out" 2>&1
rc=$?
ur_expect_eq "a row dropped: the check fails" 1 "$rc"
ur_expect_grep dropped '^FAIL: lock `cq->lock` taken at src/.* is in no row' \
	"a row dropped: its lock named"
ur_done
