#!/bin/bash
# ctest-labels: light
# ibv_devinfo -v advertises exactly what works.  Every device capability
# flag it prints must be one a test verifies (the table below names the
# test); qpt_caps (tests/integ/qptypes/qpt_caps.c) checks flags and limits
# against use, both ways (advertised -> works, not advertised -> refused);
# qpt_mcast -m limits and qpt_cq check the multicast limits, completion
# timestamps and CQ moderation capabilities that ibv_devinfo prints.
. "$(dirname "$0")/qptypes_lib.sh"

declare -A VERIFIED_BY=(
	[PORT_ACTIVE_EVENT]=qptypes_async
	[SYS_IMAGE_GUID]=qptypes_devinfo
	[RC_RNR_NAK_GEN]=qptypes_srq
	[MEM_WINDOW]=qptypes_mw
	[MEM_WINDOW_TYPE_2B]=qptypes_mw
	[XRC]=qptypes_xrc
)

qt_netns_solo
dev=$(UR_NS=$QT_NS_S ur_dev_of 127.0.0.1)
gidx=$(UR_NS=$QT_NS_S ur_gid_index "$dev" ::ffff:127.0.0.1)
UR_NS=$QT_NS_S ur_run devinfo ibv_devinfo -v -d "$dev"
ur_expect_rc devinfo 0 "ibv_devinfo -v -d $dev"
out=$(ur_out devinfo)
flags=$(sed -n '/device_cap_flags:/,/max_sge:/p' "$out" | sed -n 's/^[[:space:]]*\([A-Z][A-Z0-9_]*\)[[:space:]]*$/\1/p')
[ -n "$flags" ] || ur_fail "no device_cap_flags names in the ibv_devinfo output"
for f in $flags; do
	t=${VERIFIED_BY[$f]:-}
	if [ -z "$t" ]; then
		ur_fail "device_cap_flags advertises $f, which no test verifies"
	elif [ ! -f "$UR_SRC/tests/integ/$t.test.sh" ]; then
		ur_fail "$f: its test $t.test.sh is missing"
	else
		ur_pass "$f advertised, verified by $t"
	fi
done
for f in "${!VERIFIED_BY[@]}"; do
	grep -qw "$f" <<< "$flags" || ur_fail "$f is verified by ${VERIFIED_BY[$f]} but not advertised"
done
for field in max_mw max_mcast_grp max_mcast_qp_attach max_srq max_ah max_qp_rd_atom; do
	v=$(sed -n "s/^[[:space:]]*$field:[[:space:]]*\([0-9]*\).*/\1/p" "$out" | head -n1)
	if [ -n "$v" ] && [ "$v" -gt 0 ]; then
		ur_pass "$field: $v"
	else
		ur_fail "$field: '$v' (expected a non-zero limit)"
	fi
done
ur_expect_grep devinfo 'completion timestamp_mask:[[:space:]]*0x[0-9a-f]*[1-9a-f]' "a completion timestamp mask"
ur_expect_grep devinfo 'hca_core_clock:[[:space:]]*[1-9]' "hca_core_clock"
ur_expect_grep devinfo 'max_cq_count:[[:space:]]*[1-9]' "CQ moderation: max_cq_count"
ur_expect_grep devinfo 'rc_odp_caps:' "ODP capabilities printed"

UR_NS=$QT_NS_S ur_run caps qpt_caps -d "$dev" -g "$gidx"
qt_expect_prog caps "advertised capabilities against use (qpt_caps)"
UR_NS=$QT_NS_S ur_run mcast-limits qpt_mcast -m limits -d "$dev" -g "$gidx"
qt_expect_prog mcast-limits "max_mcast_grp / max_mcast_qp_attach honoured (qpt_mcast -m limits)"
UR_NS=$QT_NS_S ur_run cq qpt_cq -d "$dev" -g "$gidx"
qt_expect_prog cq "timestamps and CQ moderation capabilities (qpt_cq)"
ur_done
