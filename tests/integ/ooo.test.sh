#!/usr/bin/env bash
# ctest-timeout: 600
# ctest-labels: reliability
# Out-of-order tolerance (UROCE_OOO=1, docs/reliability.md) between two
# processes, both peers' fault injectors on (UROCE_FAULTS):
#  - reordering only (5 % of received packets held back behind the next
#    one): `uroce pingpong --validate` of SEND, WRITE and READ, 64 KiB,
#    every message once, in order, byte for byte; the device counters show
#    the packets held past a gap and not one sequence NAK received, where
#    the same runs without UROCE_OOO NAK the reordered packets;
#  - reordering with loss, duplication and corruption: every operation,
#    atomics too, validated as in integ.faults.
# When root, each part runs in a network namespace of its own, so the
# counters are its processes' alone.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fault_counters.sh"
. "$(dirname "$0")/validated_lib.sh"
UR_TIMEOUT=180
OOO_COUNTERS="injected_reorder held_out_of_seq rcvd_seq_err out_of_seq_request"

# validated TAG FAULTS OOO ITERS ARGS...: a validated pair on lo.
validated() {
	local tag=$1 faults=$2 ooo=$3 iters=$4 port
	shift 4
	port=$(ur_port)
	local UR_ENV=("UROCE_FAULTS=$faults,seed=$port" "UROCE_OOO=$ooo")
	validated_pair "$tag" "$iters" "$* (UROCE_OOO=$ooo, $faults)" "$@"
}

# reorder_only OOO: the three operations under reordering alone; into the
# array named by the second argument, the counters they moved.
reorder_only() {
	local ooo=$1 op name
	local -n moved=$2
	local -A was=() now=()
	fault_counters was uroce0 "$OOO_COUNTERS"
	for op in send write read; do
		validated "reorder.ooo$ooo.$op" reorder=0.05 "$ooo" 200 --op "$op" -s 65536
	done
	fault_counters now uroce0 "$OOO_COUNTERS"
	for name in $OOO_COUNTERS; do
		moved[$name]=$(( ${now[$name]:-0} - ${was[$name]:-0} ))
	done
	ur_log "UROCE_OOO=$ooo: $(for name in $OOO_COUNTERS; do printf '%s +%s ' "$name" "${moved[$name]}"; done)"
}

if ur_netns_new UR_NS_OWN; then
	export UR_NS=$UR_NS_OWN
fi
declare -A off=() on=()
reorder_only 0 off
if ur_netns_new UR_NS_OWN; then
	export UR_NS=$UR_NS_OWN
fi
reorder_only 1 on
if [ "${on[injected_reorder]}" -gt 0 ] && [ "${on[held_out_of_seq]}" -gt 0 ]; then
	ur_pass "UROCE_OOO=1: ${on[injected_reorder]} packets reordered, ${on[held_out_of_seq]} held past a gap"
else
	ur_fail "UROCE_OOO=1: reordered ${on[injected_reorder]}, held ${on[held_out_of_seq]}: nothing was held"
fi
ur_expect_eq "UROCE_OOO=1: sequence NAKs received under reordering alone" 0 "${on[rcvd_seq_err]}"
if [ "${off[rcvd_seq_err]}" -gt 0 ]; then
	ur_pass "without UROCE_OOO the same runs NAK reordered packets (${off[rcvd_seq_err]} sequence NAKs)"
else
	ur_fail "without UROCE_OOO no sequence NAK was received (${off[injected_reorder]} reordered): the comparison shows nothing"
fi

for op in send write read; do
	validated "mixed.$op" loss=0.01,reorder=0.05,dup=0.01,corrupt=0.001 1 200 --op "$op" -s 65536
done
validated mixed.faa loss=0.01,reorder=0.05,dup=0.01,corrupt=0.001 1 300 --op faa
validated mixed.cas loss=0.01,reorder=0.05,dup=0.01,corrupt=0.001 1 300 --op cas
validated loss5.write loss=0.05,reorder=0.05,dup=0.01,corrupt=0.001 1 100 --op write -s 65536
validated loss5.read loss=0.05,reorder=0.05,dup=0.01,corrupt=0.001 1 100 --op read -s 65536
ur_done
