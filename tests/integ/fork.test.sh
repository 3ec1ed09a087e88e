#!/usr/bin/env bash
# ctest-timeout: 120
# A child of fork() that opens the device anew works (progs/fork_child.c):
# its own context, RC pair, SEND and RDMA WRITE checked byte for byte, the
# parent's pair unharmed; its own rdma_cm channel and id resolving an
# address; an XRC domain of its own where its parent has one on the same
# file (it was handed the parent's, on the parent's context).  Before, the child found its parent's stack with no engine thread
# behind it: nothing completed (pyverbs' rdma_cm tests, which fork their two
# sides, timed out).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/progs_lib.sh"

g4=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
prog_run fork fork_child uroce0 "${g4:-1}"
ur_done
