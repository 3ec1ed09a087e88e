#!/bin/bash
# ctest-labels: tsan light
# Asynchronous events, with qpt_async (tests/integ/qptypes/qpt_async.c) and
# the unmodified ibv_asyncwatch:
#  - in one process on lo and on a veth device: COMM_EST for the first
#    packet on a QP in RTR (once), SRQ_LIMIT_REACHED, QP_LAST_WQE_REACHED,
#    and a CQ overrun raising CQ_ERR, and QP_FATAL for the QP that lost
#    its completion;
#  - in a namespace whose veth the test takes down, up, gives an address
#    and deletes: PORT_ERR, PORT_ACTIVE, GID_CHANGE (the new GID present),
#    DEVICE_FATAL, seen both by qpt_async and by ibv_asyncwatch.
. "$(dirname "$0")/qptypes_lib.sh"

qt_topologies
UR_NS=$QT_NS_S ur_run host.local qpt_async -m local -d "$QT_HOST_DEV" -g "$QT_HOST_GID"
qt_expect_prog host.local "QP/SRQ/CQ events on $QT_HOST_DEV (lo)"
UR_NS=$UR_NS_A ur_run netns.local qpt_async -m local -d "$QT_NET_DEV" -g "$QT_NET_GID"
qt_expect_prog netns.local "QP/SRQ/CQ events on $QT_NET_DEV (veth)"

# Port events: the link of namespace A goes down, up, gets an address and
# goes away; a program of ours and ibv_asyncwatch watch the device.
newip=${UR_IP_A%.*}.77
UR_NS=$UR_NS_A ur_start port qpt_async -m port -d "$QT_NET_DEV" -a "$newip"
UR_NS=$UR_NS_A ur_start asyncwatch ibv_asyncwatch -d "$QT_NET_DEV"
step() {   # step WHAT ERE COMMAND...: do it, then wait for qpt_async to see it
	local what=$1 ere=$2
	shift 2
	"$@" || ur_fail "port events: '$*' failed"
	qt_wait_output port "$ere" 40 || ur_fail "port events: no '$ere' after $what"
}
if qt_wait_output port '^ready' 30 && qt_wait_output asyncwatch 'async event FD' 30; then
	step "link down" 'got IBV_EVENT_PORT_ERR' ur_ip "$UR_NS_A" link set "$UR_IF_A" down
	step "link up" 'got IBV_EVENT_PORT_ACTIVE' ur_ip "$UR_NS_A" link set "$UR_IF_A" up
	qt_wait_output port '^add the address' 10
	step "address added" 'got IBV_EVENT_GID_CHANGE' ur_ip "$UR_NS_A" addr add "$newip/24" dev "$UR_IF_A"
	step "interface deleted" 'got IBV_EVENT_DEVICE_FATAL' ur_ip "$UR_NS_A" link del "$UR_IF_A"
else
	ur_fail "port events: qpt_async or ibv_asyncwatch did not start"
fi
ur_wait port
qt_expect_prog port "port/GID/device events seen by qpt_async"
qt_wait_output asyncwatch 'IBV_EVENT_DEVICE_FATAL' 20
ur_stop asyncwatch
for ev in PORT_ERR PORT_ACTIVE GID_CHANGE DEVICE_FATAL; do
	ur_expect_grep asyncwatch "event_type IBV_EVENT_$ev \\(" "ibv_asyncwatch reports IBV_EVENT_$ev"
done
ur_expect_no_grep asyncwatch 'unexpected' "ibv_asyncwatch saw no event it does not expect on a port"
ur_done
