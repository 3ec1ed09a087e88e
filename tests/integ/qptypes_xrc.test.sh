#!/bin/bash
# ctest-labels: tsan light
# XRC with qpt_xrc (tests/integ/qptypes/qpt_xrc.c), two processes on one
# host and across namespaces: ibv_open_xrcd by fd (opened twice through one
# file), anonymous with O_CREAT, and its errors (no fd nor O_CREAT, a file
# with no domain without O_CREAT, a bad fd, O_EXCL on an existing one);
# XRC SRQs with ibv_get_srq_num; XRC target and initiator QPs from
# ibv_create_qp_ex; SENDs naming SRQ numbers complete on each SRQ's CQ with
# the target QP's number; RDMA WRITE/READ through XRC; an unknown SRQ
# number and an SRQ of another domain refused (IBV_WC_REM_INV_REQ_ERR,
# nothing consumed); closing a domain in use: EBUSY.
# Then a domain shared by two processes of one host through its file, as
# ibv_xsrq_pingpong with two clients uses it: one owns the SRQ, the other
# the target QP the message comes through; and the owner dying first.
# Then the checks again with out-of-order tolerance and 30 % reordering.
. "$(dirname "$0")/qptypes_lib.sh"

qt_topologies
qt_prog_both xrc qpt_xrc

# domain NAME SNS DEV GIDX OWNER: a fresh domain file, and in SNS the SRQ's
# owner (qpt_xrc -a OWNER:FILE) and the target QP's process sharing it;
# true once both listen (the owner on port p, set here, the target on p + 1).
domain() {
	local name=$1 sns=$2 dev=$3 gidx=$4 file=$UR_TMP/$1.domain
	p=$(ur_port)
	: > "$file"
	UR_NS=$sns ur_start "$name.owner" qpt_xrc -m shared -a "$5:$file" -d "$dev" -g "$gidx" -p "$p"
	UR_NS=$sns ur_start "$name.target" qpt_xrc -m shared -a "target:$file" -d "$dev" -g "$gidx" -p "$p"
	UR_NS=$sns ur_wait_listen "$p" "${UR_PID[$name.owner]}" &&
		UR_NS=$sns ur_wait_listen "$((p + 1))" "${UR_PID[$name.target]}"
}
# shared NAME SNS CNS DEV GIDX IP
shared() {
	local name=$1 sns=$2 cns=$3 dev=$4 gidx=$5 ip=$6 p
	if domain "$name" "$sns" "$dev" "$gidx" owner; then
		UR_TIMEOUT=60 UR_NS=$cns ur_run "$name.client" qpt_xrc -m shared -d "$dev" -g "$gidx" -p "$p" "$ip"
		qt_expect_prog "$name.client" "$name: initiator"
	else
		ur_fail "$name: the owner or target never listened"
	fi
	for r in owner target; do
		ur_wait "$name.$r"
		qt_expect_prog "$name.$r" "$name: $r process"
	done
}
# gone NAME SNS CNS DEV GIDX IP: the SRQ's owner dies (no clean-up) before
# the message comes; the target process refuses it (the client sees
# IBV_WC_REM_INV_REQ_ERR, not a retry timeout) and is not wedged.
gone() {
	local name=$1 sns=$2 cns=$3 dev=$4 gidx=$5 ip=$6 p
	if domain "$name" "$sns" "$dev" "$gidx" owner-gone; then
		UR_TIMEOUT=60 UR_NS=$cns ur_run "$name.client" qpt_xrc -m shared -a gone -d "$dev" -g "$gidx" -p "$p" "$ip"
		qt_expect_prog "$name.client" "$name: initiator, owner gone"
	else
		ur_fail "$name: the owner or target never listened"
	fi
	ur_wait "$name.owner"
	ur_wait "$name.target"
	qt_expect_prog "$name.target" "$name: target process, owner gone"
}
shared host.xrc-shared "$QT_NS_S" "$QT_NS_S" "$QT_HOST_DEV" "$QT_HOST_GID" "$QT_HOST_IP"
shared netns.xrc-shared "$UR_NS_A" "$UR_NS_B" "$QT_NET_DEV" "$QT_NET_GID" "$QT_NET_IP"
gone host.xrc-gone "$QT_NS_S" "$QT_NS_S" "$QT_HOST_DEV" "$QT_HOST_GID" "$QT_HOST_IP"
gone netns.xrc-gone "$UR_NS_A" "$UR_NS_B" "$QT_NET_DEV" "$QT_NET_GID" "$QT_NET_IP"

# The same checks with out-of-order tolerance on, both sides reordering 30 %
# of what they receive (UROCE_FAULTS): XRC runs RC's responder, holding
# what arrives past a gap; the server's device counters show packets held.
held() {
	ur_nsexec "$1" "$UR_BUILD/bin/uroce" devinfo -d "$QT_NET_DEV" -c |
		awk '$1 == "held_out_of_seq" { print $2 }'
}
before=$(held "$UR_NS_A")
UR_ENV=(UROCE_OOO=1 UROCE_FAULTS=reorder=0.3,seed=11)
qt_prog_pair netns.xrc-reorder "$UR_NS_A" "$UR_NS_B" "$QT_NET_DEV" "$QT_NET_GID" "$QT_NET_IP" qpt_xrc
UR_ENV=()
after=$(held "$UR_NS_A")
if [ "${after:-0}" -gt "${before:-0}" ]; then
	ur_pass "netns.xrc-reorder: the server's device held packets past a gap ($before -> $after)"
else
	ur_fail "netns.xrc-reorder: no packet held past a gap ($before -> $after): reordering did not reach XRC"
fi
ur_done
