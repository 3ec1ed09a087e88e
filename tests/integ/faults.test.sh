#!/usr/bin/env bash
# ctest-timeout: 600
# ctest-labels: reliability
# RC over a bad network, between two processes: both peers run with uroce's
# fault injector (UROCE_FAULTS, src/xport/udp/udp_fault.c) losing, holding
# back (reordering), duplicating and corrupting received packets, and
# `uroce pingpong --validate` checks that every message of every operation
# arrives exactly once, in order and byte for byte: SEND, SEND with
# immediate (the immediate is the iteration number), WRITE, WRITE with
# immediate, READ, and compare-and-swap / fetch-and-add, whose every
# returned value and whose final word on the server (a FAA executed twice
# would show) are checked.  1 % loss on every operation, 5 % on the main
# ones, 20 % on two; each with 5 % reordering, 1 % duplication and 0.1 %
# corruption.  The device counters must agree with the injector's
# (fault_counters.sh): every corrupted packet caught by the ICRC,
# duplicates recognised.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fault_counters.sh"
. "$(dirname "$0")/validated_lib.sh"
UR_TIMEOUT=180

# faulty TAG LOSS ITERS ARGS...: a validated pair on lo, both sides faulted.
faulty() {
	local tag=$1 loss=$2 iters=$3 port
	shift 3
	port=$(ur_port)
	local UR_ENV=("UROCE_FAULTS=loss=$loss,reorder=0.05,dup=0.01,corrupt=0.001,seed=$port")
	validated_pair "$tag" "$iters" "$* at $loss loss" "$@"
}

# In a namespace of its own where one can be made: the counters reconciled
# are those of every uroce process of the namespace, and other tests'
# traffic beside this one would join them.
if ur_netns_new own_ns; then
	export UR_NS=$own_ns
else
	ur_log "in this namespace ($UR_NETNS_WHY): the counters are shared with the host's other uroce processes; run it alone"
fi
declare -A before=()
fault_counters before

for op in send send-imm write write-imm read; do
	faulty "loss1.$op" 0.01 200 --op "$op" -s 65536
done
faulty loss1.cas 0.01 300 --op cas
faulty loss1.faa 0.01 300 --op faa
for op in send-imm write read; do
	faulty "loss5.$op" 0.05 100 --op "$op" -s 65536
done
faulty loss5.faa 0.05 200 --op faa
faulty loss20.send 0.20 30 --op send -s 4096
faulty loss20.faa 0.20 30 --op faa

fault_reconcile before
ur_done
