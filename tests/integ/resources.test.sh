#!/usr/bin/env bash
# ctest-timeout: 300
# ctest-labels: reliability
# Resources (tests/integ/progs/resources.c): PDs, CQs, SRQs, AHs and QPs
# up to the limits ibv_query_device reports and not one more (ENOMEM);
# send queues, receive queues and SRQs refuse the work request past their
# depth with ENOMEM and *bad_wr on it; 10 rounds of 10 000 QPs created
# (1000 of them connected) and destroyed leave the process's live heap, mapped memory
# and open files where the first round left them.  The limit refusals print
# nothing at the default log level.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/progs_lib.sh"

# In a network namespace of its own where one can be made: the churn
# counts the process's open files, and in a namespace other uroce
# processes share, which of them serves port 4791 changes as they come
# and go (a pidfd watched, or the port's sockets bound), one file more or
# less (1 of 5 runs beside two test loops).
ur_netns_new RNS r 2>/dev/null || RNS=
export UR_NS=$RNS
g4=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
prog_run lo.resources resources uroce0 "${g4:-1}"
ur_expect_no_grep lo.resources '^uroce (error|warn)' "no uroce error/warning lines at the limits"
ur_done
