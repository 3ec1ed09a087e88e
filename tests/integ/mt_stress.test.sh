#!/usr/bin/env bash
# ctest-timeout: 300
# ctest-labels: tsan
# Many application threads of one process on the device at once, beside the
# engine thread (tests/integ/progs/mt_stress.c): four RC pairs on two
# contexts with senders busy-polling a shared send CQ, an ibv_cq_ex and a
# completion channel, receivers waiting on completion channels (one CQ
# with event moderation), a thread posting every receive, QP and CQ churn,
# and UC writers on moderated CQs sharing a channel; every completion,
# length, payload, READ-back and atomic result is checked.  On uroce0 (lo)
# with its IPv4 and IPv6 GIDs.  scripts/test runs it again in the
# ThreadSanitizer build (label tsan), with fewer batches.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/progs_lib.sh"
UR_TIMEOUT=180

g4=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
g6=$(ur_gid_index uroce0 ::1)
ur_expect_eq "uroce0: GID index of ::ffff:127.0.0.1" 1 "$g4"
ur_expect_eq "uroce0: GID index of ::1" 2 "$g6"

# Batches per sender (2 cores): about 2 + 1 s in RelWithDebInfo, 8 + 3 s
# under TSan; the time limit only bounds a hang.
if ur_is_tsan; then
	b4=400 b6=150 limit=90
else
	b4=1000 b6=400 limit=30
fi
prog_run lo.mt_stress mt_stress uroce0 "${g4:-1}" "$b4" "$limit"
prog_run lo6.mt_stress mt_stress uroce0 "${g6:-2}" "$b6" "$limit"

ur_done
