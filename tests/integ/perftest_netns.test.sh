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

ur_netns_pair 1500
export UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A
sdev=$(UR_NS=$UR_NS_B ur_dev_of "$UR_IP_B")
cdev=$(UR_NS=$UR_NS_A ur_dev_of "$UR_IP_A")
ur_expect_eq "device of the server's veth" uroce1 "$sdev"
ur_expect_eq "device of the client's veth" uroce1 "$cdev"
[ -n "$sdev" ] && [ -n "$cdev" ] || ur_done
gs=$(UR_NS=$UR_NS_B ur_gid_index "$sdev" "::ffff:$UR_IP_B")
gc=$(UR_NS=$UR_NS_A ur_gid_index "$cdev" "::ffff:$UR_IP_A")
ur_expect_eq "server: GID index of ::ffff:$UR_IP_B" 1 "$gs"
ur_expect_eq "client: GID index of ::ffff:$UR_IP_A" 1 "$gc"
[ -n "$gs" ] && [ "$gs" = "$gc" ] || ur_done   # one -x for both sides

PT_LAT_ALL=ib_read_lat pt_suite veth "$sdev" "$cdev" "$UR_IP_B" "$gs"

ur_done
