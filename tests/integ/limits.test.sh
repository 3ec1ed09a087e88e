#!/usr/bin/env bash
# ctest-timeout: 300
# Limits probed the way libfabric and UCX probe them (tests/integ/progs/
# limits.c): QPs, CQs and SRQs asking for more than the device allows are
# refused with EINVAL, the largest granted values are the ones
# ibv_query_device reports, and the refusals print nothing at the default
# log level (a probe's answer is not an error); with UROCE_LOG=debug the
# reason is there.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/progs_lib.sh"

prog_run lo.limits limits uroce0 1
ur_expect_no_grep lo.limits '^uroce (error|warn)' "probing at the default log level: no uroce error/warning lines"

UR_ENV=(UROCE_LOG=debug)
ur_run lo.limits.debug "$UR_BUILD/bin/integ_limits" uroce0 1 qp
UR_ENV=()
ur_expect_rc lo.limits.debug 0 "probing with UROCE_LOG=debug"
ur_expect_grep lo.limits.debug '^uroce debug: uroce0: check_caps: max_inline_data [0-9]+: the device allows up to' \
	"UROCE_LOG=debug names the refused max_inline_data"

ur_done
