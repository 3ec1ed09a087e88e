#!/usr/bin/env bash
# ctest-timeout: 120
# Unmodified UCX (Debian's ucx-utils) sees uroce's devices: `ucx_info -d`
# under uroce's library lists rc_verbs and ud_verbs on every uroce device
# whose port is ACTIVE, on one host (uroce0 on lo) and in a namespace with
# a veth (uroce0, uroce1), and neither on a port that is DOWN (its
# interface down or without carrier, such as a tap nobody opened: UCX
# leaves inactive ports out).  Needs the /dev/infiniband nodes (`uroce
# devnodes create`, made here when root).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ucx_lib.sh"

# ucx_lists TAG TRANSPORT DEV: whether TAG's ucx_info -d lists TRANSPORT on
# DEV's port 1.
ucx_lists() {
	awk -v t="$2" -v d="$3:1" '/Transport:/ { cur = $3 } /Device:/ && cur == t && $3 == d { f = 1 } END { exit !f }' \
		"$(ur_out "$1.ucx")"
}

# ucx_devices TAG: every device ibv_devices lists in UR_NS has rc_verbs and
# ud_verbs in ucx_info -d if its port is ACTIVE (uroce link), neither if not.
ucx_devices() {
	local tag=$1 devs d state t
	ur_run "$tag.ibv" ibv_devices
	devs=$(awk 'NR > 2 { print $1 }' "$(ur_out "$tag.ibv")")
	ur_run "$tag.link" "$UR_BUILD/bin/uroce" link
	local UR_ENV=("${UCX_ENV[@]}")
	ur_run "$tag.ucx" ucx_info -d
	ur_expect_rc "$tag.ucx" 0 "$tag: ucx_info -d"
	if [ -n "$devs" ]; then
		ur_pass "$tag: ibv_devices lists $(echo $devs)"
	else
		ur_fail "$tag: ibv_devices lists no device"
	fi
	for d in $devs; do
		state=$(awk -v p="$d/1" '$1 == "link" && $2 == p { print $4 }' "$(ur_out "$tag.link")")
		for t in rc_verbs ud_verbs; do
			if [ "$state" = ACTIVE ] && ucx_lists "$tag" "$t" "$d"; then
				ur_pass "$tag: ucx_info -d lists $t on $d:1 (ACTIVE)"
			elif [ "$state" = ACTIVE ]; then
				ur_fail "$tag: ucx_info -d does not list $t on $d:1 (ACTIVE)"
				ur_show "$tag.ucx" 60
			elif [ -z "$state" ]; then
				ur_fail "$tag: uroce link shows no port 1 of $d"
				ur_show "$tag.link"
			elif ucx_lists "$tag" "$t" "$d"; then
				ur_fail "$tag: ucx_info -d lists $t on $d:1, whose port is $state"
				ur_show "$tag.link"
			else
				ur_pass "$tag: $d:1 is $state ($(awk -v p="$d/1" '$2 == p { print $NF }' \
					"$(ur_out "$tag.link")")): ucx_info -d lists no $t on it"
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
