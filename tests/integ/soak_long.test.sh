#!/usr/bin/env bash
# ctest-timeout: 1200
# ctest-labels: soak long
# The soak for 10 minutes (tests/integ/soak_lib.sh); scripts/test -L soak
# runs it (under ASan too: scripts/test -L soak runs only the normal build;
# for the leak check, run it in build-asan as docs/testing.md says).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/progs_lib.sh"
. "$(dirname "$0")/storm_lib.sh"
. "$(dirname "$0")/soak_lib.sh"
soak_run 600
ur_done
