#!/bin/bash
# ctest-labels: light
# UD multicast with qpt_mcast (tests/integ/qptypes/qpt_mcast.c): a sender
# and member processes with two or three QPs each attached to one group
# (ibv_attach_mcast), on one host and across namespaces (members in the
# sender's namespace and in the other one).  Every attached QP receives
# each datagram once, with the group as the GRH destination; a detached QP
# gets no more while the others still do; after all detach, nobody does.
# Across namespaces again with four receive contexts per process.
# Plus the attach/detach error paths and the advertised limits
# (max_mcast_grp groups on one QP, max_mcast_qp_attach QPs on one group).
. "$(dirname "$0")/qptypes_lib.sh"

# group NAME DEV GIDX SENDER_NS SENDER_IP MEMBER_NS:QPS...
group() {
	local name=$1 dev=$2 gidx=$3 sns=$4 ip=$5 p i=0 m
	shift 5
	p=$(ur_port)
	UR_NS=$sns ur_start "$name.sender" qpt_mcast -m sender -n $# -d "$dev" -g "$gidx" -p "$p"
	if ! UR_NS=$sns ur_wait_listen "$p" "${UR_PID[$name.sender]}"; then
		ur_fail "$name: the sender never listened"
		ur_stop "$name.sender"
		return
	fi
	for m in "$@"; do
		i=$((i + 1))
		UR_NS=${m%%:*} ur_start "$name.member$i" qpt_mcast -m member -n "${m##*:}" \
			-d "$dev" -g "$gidx" -p "$p" "$ip"
	done
	for ((j = 1; j <= i; j++)); do
		ur_wait "$name.member$j"
		m=${*:$j:1}
		qt_expect_prog "$name.member$j" "$name: member $j (namespace ${m%%:*}, ${m##*:} QPs)"
	done
	ur_wait "$name.sender"
	qt_expect_prog "$name.sender" "$name: sender"
}

qt_topologies
group host.mcast "$QT_HOST_DEV" "$QT_HOST_GID" "$QT_NS_S" "$QT_HOST_IP" "$QT_NS_S:2" "$QT_NS_S:3"
group netns.mcast "$QT_NET_DEV" "$QT_NET_GID" "$UR_NS_B" "$UR_IP_B" "$UR_NS_A:2" "$UR_NS_A:3" "$UR_NS_B:2"
# Again with four receive contexts per process (docs/design.md, "Receive
# contexts"): each socket of the port-4791 group gets its own copy of a
# datagram to an IP group, and only context 0's may be delivered.
UROCE_RX_THREADS=4 group netns.mcast.rx4 "$QT_NET_DEV" "$QT_NET_GID" "$UR_NS_B" "$UR_IP_B" \
	"$UR_NS_A:2" "$UR_NS_A:3" "$UR_NS_B:2"
UR_NS=$QT_NS_S ur_run host.limits qpt_mcast -m limits -d "$QT_HOST_DEV" -g "$QT_HOST_GID"
qt_expect_prog host.limits "advertised multicast limits"
ur_done
