#!/bin/bash
# ctest-labels: light
# SRQ with qpt_srq (tests/integ/qptypes/qpt_srq.c), two processes on one
# host and across namespaces: 32 RC QPs (and 255) on one SRQ with each
# completion's qp_num naming the QP its message came through, in order,
# every receive used once; ibv_create_srq / ibv_create_srq_ex error paths,
# ibv_query_srq, ibv_modify_srq (limit; resizing refused, as SRQ_RESIZE is
# not advertised); IBV_EVENT_SRQ_LIMIT_REACHED only below the limit, then
# disarmed, and again when re-armed; IBV_EVENT_QP_LAST_WQE_REACHED; RNR
# NAKs from an exhausted SRQ (send_rnr_err, rcvd_rnr_err) and the sender
# completing with rnr_retry 7 once a receive is posted, also with a second
# SEND in flight behind the refused one; EBUSY destroying
# an SRQ in use.
. "$(dirname "$0")/qptypes_lib.sh"

qt_topologies
qt_prog_both srq qpt_srq -n 32
qt_prog_both srq255 qpt_srq -n 255
ur_done
