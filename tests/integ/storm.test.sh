#!/usr/bin/env bash
# ctest-timeout: 900
# ctest-labels: reliability
# RC under load and faults between two processes (tests/integ/progs/storm.c):
# random messages of 1 B .. 1 MiB (SEND, SEND with immediate, WRITE, WRITE
# with immediate, READ, fetch-and-add, compare-and-swap), every byte, every
# receive's order, length and immediate, every atomic result and the final
# atomic words checked; both processes run with uroce's fault injector
# (UROCE_FAULTS): loss 1 %, 5 % and 20 %, each with 5 % reordering, 1 %
# duplication and 0.1 % corruption, with selective retransmission (the
# default), then 1 % and 5 % with go-back-N only.  Then 1000 RC QPs between the two
# processes, traffic on all of them, under 1 % loss; and 1 % loss across
# two network namespaces.  Goodput is printed beside the clean figure.
# storm_long.test.sh (label long) runs 100 000 messages at each loss rate.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/progs_lib.sh"
. "$(dirname "$0")/storm_lib.sh"
UR_TIMEOUT=300
F="reorder=0.05,dup=0.01,corrupt=0.001"
# m N: N messages, half as many under ASan (the same paths, each packet
# slower: it keeps the suite's sanitizer stage short).
m() { if ur_is_asan; then echo $(($1 / 2)); else echo "$1"; fi; }

# On one host in a namespace of its own where one can be made: the
# counters compared below are those of every uroce process of the
# namespace, and other tests' traffic beside this one would join them.
if ur_netns_new own_ns; then
	export UR_NS=$own_ns
else
	ur_log "in this namespace ($UR_NETNS_WHY): the counters are shared with the host's other uroce processes; run it alone"
fi
g=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
ur_expect_eq "uroce0: GID index of ::ffff:127.0.0.1" 1 "$g"
[ -n "$g" ] || ur_done
declare -A before=()
fault_counters before

# sel_counter NAME: a counter of uroce0 (they outlive the processes).
sel_counter() {
	ur_nsexec "$UR_NS" "$UR_BUILD/bin/uroce" devinfo -c -d uroce0 | awk -v n="$1" '$1 == n { print $2; f = 1 } END { if (!f) print 0 }'
}
s0=$(sel_counter selective_resends)
r0=$(sel_counter gap_reports)
a0=$(sel_counter gap_resends)
declare -A gbps
storm_case lo.clean uroce0 "$g" 127.0.0.1 none --messages "$(m 10000)" --seed 1
gbps[0]=$STORM_GBPS
storm_case lo.loss1 uroce0 "$g" 127.0.0.1 "loss=0.01,$F" --messages "$(m 10000)" --seed 2
gbps[1]=$STORM_GBPS
storm_case lo.loss5 uroce0 "$g" 127.0.0.1 "loss=0.05,$F" --messages "$(m 5000)" --seed 3
gbps[5]=$STORM_GBPS
storm_case lo.loss20 uroce0 "$g" 127.0.0.1 "loss=0.20,$F" --messages "$(m 500)" --seed 4
gbps[20]=$STORM_GBPS
ur_log "goodput (Gb/s), messages of 1 B .. 1 MiB: clean ${gbps[0]:-?}, 1 % loss ${gbps[1]:-?}, 5 % ${gbps[5]:-?}, 20 % ${gbps[20]:-?}"

# Selective retransmission is the default: the losses above were resent
# alone, and the gaps past a NAKed one were reported by the responder
# (gap_reports) and resent at once (gap_resends).  The same with go-back-N
# only (UROCE_SELECTIVE_RETRANSMIT=0): nothing resent alone, no requests
# marked, so nothing reported.
s1=$(sel_counter selective_resends)
r1=$(sel_counter gap_reports)
a1=$(sel_counter gap_resends)
if [ "$(( ${s1:-0} - ${s0:-0} ))" -gt 0 ] && [ "$(( ${r1:-0} - ${r0:-0} ))" -gt 0 ] &&
   [ "$(( ${a1:-0} - ${a0:-0} ))" -gt 0 ]; then
	ur_pass "selective: $(( s1 - s0 )) packets resent alone, $(( a1 - a0 )) of them for $(( r1 - r0 )) gap reports"
else
	ur_fail "selective: selective_resends ${s0:-?} -> ${s1:-?}, gap_reports ${r0:-?} -> ${r1:-?}, gap_resends ${a0:-?} -> ${a1:-?}: all should grow"
fi
STORM_ENV=(UROCE_SELECTIVE_RETRANSMIT=0)
storm_case lo.loss1.go_back uroce0 "$g" 127.0.0.1 "loss=0.01,$F" --messages "$(m 10000)" --seed 2
gbps[b1]=$STORM_GBPS
storm_case lo.loss5.go_back uroce0 "$g" 127.0.0.1 "loss=0.05,$F" --messages "$(m 5000)" --seed 3
gbps[b5]=$STORM_GBPS
STORM_ENV=()
s2=$(sel_counter selective_resends)
r2=$(sel_counter gap_reports)
ur_expect_eq "go-back-N only: packets resent alone" "${s1:-?}" "${s2:-?}"
ur_expect_eq "go-back-N only: gaps reported" "${r1:-?}" "${r2:-?}"
ur_log "goodput (Gb/s) with go-back-N only: 1 % loss ${gbps[b1]:-?}, 5 % ${gbps[b5]:-?}"

# 1000 connected RC QPs between two processes (kernel rxe's old limit),
# 100 messages of up to 4 KiB on each, 4 in flight per QP, with the
# default timeout (14: 8 x 67 ms): on a loaded host answers come after the
# requester went back, and must still count (docs/reliability.md).
storm_case lo.qps1000 uroce0 "$g" 127.0.0.1 "loss=0.01,$F" --qps 1000 --max-size 4096 \
	--depth 4 --messages "$(m 100000)" --seed 5
fault_reconcile before

UR_NS=
ur_netns_pair 1500
UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A storm_case veth.loss1 uroce1 1 "$UR_IP_B" "loss=0.01,$F" \
	--messages "$(m 5000)" --seed 6
ur_done
