#!/usr/bin/env bash
# ctest-timeout: 600
# ctest-labels: reliability
# The soak for 30 seconds (tests/integ/soak_lib.sh): RC, UC and UD, every
# operation, busy-polling and completion channels, on lo and across
# namespaces, ten processes, all under 1 % loss with reordering,
# duplication and corruption.  soak_long.test.sh (labels soak, long) runs
# it for 10 minutes: scripts/test -L soak.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/progs_lib.sh"
. "$(dirname "$0")/storm_lib.sh"
. "$(dirname "$0")/soak_lib.sh"
soak_run "${UROCE_SOAK_SECONDS:-30}"
ur_done
