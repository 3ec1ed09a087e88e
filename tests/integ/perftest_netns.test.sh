#!/usr/bin/env bash
# ctest-timeout: 900
# ctest-labels: repeat
# Unmodified perftest between two network namespaces joined by a 1500-byte
# veth (active MTU 1024: messages go as many packets), server in one, client
# in the other, with -x the GID index of each side's IPv4 address.  The same
# matrix as on one host (perftest.test.sh), except that of the latency
# programs only ib_read_lat runs -a (each size costs perftest a clock
# calibration).  Each run: both sides exit 0, no error completion, a numeric
# result row for every size.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/perftest_cases.sh"
UR_TIMEOUT=240

ur_netns_server_client 1500
ur_expect_eq "server: GID index of ::ffff:$UR_IP_B" 1 "$gs"
ur_expect_eq "client: GID index of ::ffff:$UR_IP_A" 1 "$gc"
[ -n "$gs" ] && [ "$gs" = "$gc" ] || ur_done   # one -x for both sides

PT_LAT_ALL=ib_read_lat pt_suite veth "$sdev" "$cdev" "$UR_IP_B" "$gs"

ur_done
