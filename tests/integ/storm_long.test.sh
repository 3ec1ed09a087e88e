#!/usr/bin/env bash
# ctest-timeout: 3600
# ctest-labels: long
# storm.test.sh at full size: 100 000 random messages of 1 B .. 1 MiB at
# each loss rate (clean, 1 %, 5 %, 20 %, each with 5 % reordering, 1 %
# duplication and 0.1 % corruption), and 1000 RC QPs with 1000 messages
# each under 1 % loss.  17 minutes on the project's 2-core machine, 14.5
# of them at 20 % loss (go-back-N resends a whole window for each loss).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/progs_lib.sh"
. "$(dirname "$0")/storm_lib.sh"
UR_TIMEOUT=2400
F="reorder=0.05,dup=0.01,corrupt=0.001"

g=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
ur_expect_eq "uroce0: GID index of ::ffff:127.0.0.1" 1 "$g"
[ -n "$g" ] || ur_done

declare -A gbps
storm_case lo.clean uroce0 "$g" 127.0.0.1 none --messages 100000 --seed 11
gbps[0]=$STORM_GBPS
storm_case lo.loss1 uroce0 "$g" 127.0.0.1 "loss=0.01,$F" --messages 100000 --seed 12
gbps[1]=$STORM_GBPS
storm_case lo.loss5 uroce0 "$g" 127.0.0.1 "loss=0.05,$F" --messages 100000 --seed 13
gbps[5]=$STORM_GBPS
storm_case lo.loss20 uroce0 "$g" 127.0.0.1 "loss=0.20,$F" --messages 100000 --seed 14
gbps[20]=$STORM_GBPS
ur_log "goodput (Gb/s), 100 000 messages of 1 B .. 1 MiB: clean ${gbps[0]:-?}, 1 % loss ${gbps[1]:-?}, 5 % ${gbps[5]:-?}, 20 % ${gbps[20]:-?}"
storm_case lo.qps1000 uroce0 "$g" 127.0.0.1 "loss=0.01,$F" --qps 1000 --max-size 4096 \
	--depth 4 --messages 1000000 --seed 15
ur_done
