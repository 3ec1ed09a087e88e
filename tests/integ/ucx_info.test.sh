#!/usr/bin/env bash
# ctest-timeout: 120
# Unmodified UCX (Debian's ucx-utils) sees uroce's devices: `ucx_info -d`
# under uroce's library lists rc_verbs and ud_verbs on every uroce device,
# on one host (uroce0 on lo) and in a namespace with a veth (uroce0,
# uroce1).  Needs the /dev/infiniband nodes (`uroce devnodes create`, made
# here when root).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ucx_lib.sh"

# ucx_devices TAG: every device ibv_devices lists in UR_NS has rc_verbs and
# ud_verbs in ucx_info -d.
ucx_devices() {
	local tag=$1 devs d
	ur_run "$tag.ibv" ibv_devices
	devs=$(awk 'NR > 2 { print $1 }' "$(ur_out "$tag.ibv")")
	local UR_ENV=("${UCX_ENV[@]}")
	ur_run "$tag.ucx" ucx_info -d
	ur_expect_rc "$tag.ucx" 0 "$tag: ucx_info -d"
	if [ -n "$devs" ]; then
		ur_pass "$tag: ibv_devices lists $(echo $devs)"
	else
		ur_fail "$tag: ibv_devices lists no device"
	fi
	for d in $devs; do
		for t in rc_verbs ud_verbs; do
			if awk -v t="$t" -v d="$d:1" '/Transport:/ { cur = $3 } /Device:/ && cur == t && $3 == d { f = 1 } END { exit !f }' \
				"$(ur_out "$tag.ucx")"; then
				ur_pass "$tag: ucx_info -d lists $t on $d:1"
			else
				ur_fail "$tag: ucx_info -d does not list $t on $d:1"
				ur_show "$tag.ucx" 60
			fi
		done
	done
}

ucx_need uroce0 uroce1
# The node is the null device, readable and writable by all: harmless.
ur_expect_eq "/dev/infiniband/uverbs-uroce0" "character special file 1:3 666" \
	"$(stat -c '%F %t:%T %a' /dev/infiniband/uverbs-uroce0 2>&1)"
ur_run devnodes "$UR_BUILD/bin/uroce" devnodes
ur_expect_rc devnodes 0 "uroce devnodes: every device has its node"
ur_expect_grep devnodes '^uroce0 +/dev/infiniband/uverbs-uroce0: ok' "uroce devnodes shows uroce0's node"
ucx_devices lo

ur_netns_pair 1500
UR_NS=$UR_NS_A ucx_devices veth

ur_done
