#!/usr/bin/env bash
# ctest-timeout: 600
# ctest-labels: reliability tsan
# Receive contexts (UROCE_RX_THREADS, docs/design.md "Threads"): RC under
# load and faults between two network namespaces over a veth, both
# processes with 4 receive contexts, so that packets for different QPs are
# received by different threads at once (the kernel steers each datagram
# on port 4791 by its destination QP).  tests/integ/progs/storm.c on 32
# QPs: every byte, every receive's order, length and immediate, every
# atomic result checked, with the fault injector on (1 % loss, 5 %
# reordering, 1 % duplication, 0.1 % corruption) in each context.  Each
# process says at exit how many packets each context read (UROCE_LOG=info):
# every one of the four must have read some, on both sides, and none a
# packet for a QP the kernel should have steered to another (a QP stays on
# one context); uroce devinfo -c shows the setting.  With one
# context (UROCE_RX_THREADS=1) nothing is said.  scripts/test runs it again
# in the ThreadSanitizer build (label tsan), with fewer messages.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/progs_lib.sh"
. "$(dirname "$0")/storm_lib.sh"
ur_need_root
UR_TIMEOUT=240
F="loss=0.01,reorder=0.05,dup=0.01,corrupt=0.001"
# Under ThreadSanitizer, fewer messages; the QPs keep the default timeout
# (they had a longer one while a QP's answers came later than 8 x 67 ms,
# docs/reliability.md).
if ur_is_tsan; then
	msgs=1500
else
	msgs=10000
fi

ur_netns_pair 1500

# The setting, as uroce devinfo -c shows it.
UR_ENV=(UROCE_RX_THREADS=4)
UR_NS=$UR_NS_B ur_run devinfo.rx4 "$UR_BUILD/bin/uroce" devinfo -c -d uroce1
UR_ENV=()
ur_expect_grep devinfo.rx4 '^[[:space:]]+receive contexts:[[:space:]]+4$' "devinfo -c: 4 receive contexts"

# contexts_used TAG SIDE: how many receive contexts said they read packets.
contexts_used() {
	grep -E 'receive context [0-9]+: [1-9][0-9]* packets' "$(ur_out "$1.$2")" |
		sed 's/.*receive context \([0-9]*\):.*/\1/' | sort -u | wc -l
}

# strays TAG SIDE: packets the contexts read for another context's QPs.
strays() {
	grep -oE "[0-9]+ of them for another context's QPs" "$(ur_out "$1.$2")" |
		awk '{ n += $1; f = 1 } END { print f ? n : "none said" }'
}

STORM_ENV=(UROCE_RX_THREADS=4 UROCE_LOG=info)
UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A storm_case veth.rx4 uroce1 1 "$UR_IP_B" "$F" \
	--qps 32 --depth 4 --max-size 65536 --messages "$msgs" --seed 11
for side in server client; do
	ur_log "veth.rx4.$side: $(grep -oE 'receive context [0-9]+: [0-9]+ packets' \
		"$(ur_out "veth.rx4.$side")" | sed 's/receive context //' | paste -sd, -)"
	ur_expect_eq "veth.rx4.$side: receive contexts that read packets" 4 \
		"$(contexts_used veth.rx4 "$side")"
	ur_expect_eq "veth.rx4.$side: packets read by another context than their QP's" 0 \
		"$(strays veth.rx4 "$side")"
done

STORM_ENV=(UROCE_RX_THREADS=1 UROCE_LOG=info)
UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A storm_case veth.rx1 uroce1 1 "$UR_IP_B" "$F" \
	--qps 8 --depth 4 --max-size 65536 --messages "$((msgs / 4))" --seed 12
ur_expect_eq "veth.rx1.server: one context says nothing of contexts" 0 \
	"$(grep -c 'receive context' "$(ur_out veth.rx1.server)")"
ur_done
