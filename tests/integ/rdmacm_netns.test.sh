#!/usr/bin/env bash
# ctest-labels: light
# Unmodified rdma_cm programs between two network namespaces joined by a veth
# (a stand-in for two hosts): the CM's MADs go to the peer's UDP 4791 as
# RoCEv2 datagrams to QP1, where the namespace's port-4791 owner hands them to
# the listening process (a REQ) or to the owner of the comm ID (the rest).
#  - rping -C 1000 -v -V over IPv4 and over IPv6: both exit 0, every ping's
#    pattern checked on both sides; udaddy -c 4 -C 100 (UD ids, SIDR);
#    mckey (a multicast group joined on one side, sent to from the other);
#  - no uroce process on the other host: rping's connection is UNREACHABLE
#    (-ETIMEDOUT) after the REQ's retries; a CM there but nobody listening on
#    the port: REJECTED (reason 8) at once.
# ctest-timeout: 300
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdmacm_lib.sh"
UR_TIMEOUT=60

ur_netns_pair 1500
export UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A

port=$(ur_port)
cm_pair rping4 rping -s -a "$UR_IP_B" -p "$port" -C 1000 -v \
	-- rping -c -a "$UR_IP_B" -p "$port" -C 1000 -v -V
ur_expect_pair_ok rping4 "rping over IPv4 between namespaces"
ur_report "rping4 client" cm_check_rping "$(ur_out rping4.client)" "" 1000
ur_report "rping4 server" cm_check_rping "$(ur_out rping4.server)" "server " 1000

port=$(ur_port)
cm_pair rping6 rping -s -a "$UR_IP6_B" -p "$port" -C 1000 -v \
	-- rping -c -a "$UR_IP6_B" -p "$port" -C 1000 -v -V
ur_expect_pair_ok rping6 "rping over IPv6 between namespaces"
ur_report "rping6 client" cm_check_rping "$(ur_out rping6.client)" "" 1000

# UD ids: udaddy's SIDR_REQ crosses to the other namespace's listener, its
# SIDR_REP comes back with the QP number and Q_Key, 100 datagrams each way.
CM_PORT=7174 cm_pair udaddy udaddy -b "$UR_IP_B" -c 4 -C 100 -S 1000 \
	-- udaddy -s "$UR_IP_B" -c 4 -C 100 -S 1000
ur_expect_pair_ok udaddy "udaddy between namespaces"
ur_expect_grep udaddy.client '^data transfers complete' "udaddy client: data transfers complete"

# Multicast across the link: the receiver's join makes its namespace's
# interface join the IP group; the sender's datagrams to it cross the veth.
cm_mckey mckey 239.1.2.4 "$UR_IP_B" "$UR_IP_A" 20

# No uroce process on the other host: nothing answers at its UDP 4791, the
# REQ goes unanswered through its retries and the connection is reported
# unreachable (about 16 s: 1 s between 16 sends), not a hang.
port=$(ur_port)
UR_NS=$UR_NS_A ur_run nocm rping -c -a "$UR_IP_B" -p "$port" -C 1
ur_expect_grep nocm 'RDMA_CM_EVENT_UNREACHABLE, error -110' "no CM on the other host: UNREACHABLE (-ETIMEDOUT)"
ur_expect_eq "no CM on the other host: rping's exit" 255 "${UR_RC[nocm]}"

# A CM there (a server on another port) but nobody on this port: REJECTED.
port=$(ur_port)
other=$(ur_port)
UR_NS=$UR_NS_B ur_start other rping -s -a "$UR_IP_B" -p "$other" -C 1
for _ in $(seq 100); do   # until it serves the namespace's UDP 4791
	ur_nsexec "$UR_NS_B" ss -Huln 'sport = :4791' | grep -q . && break
	sleep 0.1
done
UR_NS=$UR_NS_A ur_run norcv rping -c -a "$UR_IP_B" -p "$port" -C 1
cm_expect_refused norcv "rping with nobody listening on the other host"
ur_expect_grep norcv 'RDMA_CM_EVENT_REJECTED, error 8'
ur_stop other

for n in rping4.server rping4.client rping6.server rping6.client udaddy.server udaddy.client mckey.recv mckey.send; do
	ur_sanitizer_clean "$n"
done
ur_done
