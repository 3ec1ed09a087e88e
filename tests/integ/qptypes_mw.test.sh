#!/bin/bash
# ctest-labels: tsan
# Memory windows with qpt_mw (tests/integ/qptypes/qpt_mw.c), two processes
# on one host and across namespaces: type 1 windows bound with ibv_bind_mw
# and type 2 with IBV_WR_BIND_MW; remote WRITE/READ inside a window work,
# across its end or beyond its rights fail with IBV_WC_REM_ACCESS_ERR and
# change no byte; a type 2 window only through its own QP; IBV_WR_LOCAL_INV
# and IBV_WR_SEND_WITH_INV (IBV_WC_WITH_INV, invalidated_rkey) end access;
# bind errors give IBV_WC_MW_BIND_ERR; ibv_dereg_mr with a bound window is
# EBUSY until it is unbound or invalidated.
. "$(dirname "$0")/qptypes_lib.sh"

qt_topologies
qt_prog_both mw qpt_mw
ur_done
