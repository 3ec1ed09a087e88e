#!/bin/bash
# ctest-labels: tsan light
# UC with qpt_uc (tests/integ/qptypes/qpt_uc.c), two processes on one host
# and across namespaces: SEND, SEND_WITH_IMM, RDMA_WRITE(_WITH_IMM) over
# several packets arrive intact with the right completions; the responder
# sends no packet at all (device counters: exactly the requests went by);
# READ, atomics and SEND_WITH_INV fail at post with EINVAL; a message with
# no receive posted is dropped and the QP carries on; sends to a destroyed
# peer still complete.
. "$(dirname "$0")/qptypes_lib.sh"

qt_topologies
qt_prog_both uc qpt_uc
ur_done
