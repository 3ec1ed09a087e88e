#!/usr/bin/env bash
# Unmodified rdmacm-utils over uroce's librdmacm.so.1 on one host (uroce0 on
# lo): the connection manager's REQ/REP/RTU and DREQ/DREP travel as CM MADs
# to QP1 over RoCEv2, through the port-4791 owner's forwarding.
#  - rping -s / rping -c -C 1000 -v -V: both exit 0, the client prints all 1000
#    pings and the server 1000 (-V: the client checks what it read back),
#    each with rping's rotating pattern;
#  - ucmatose with 100 connections (-c 100): both report "test complete" and
#    return status 0; cmtime -c 100 (connections set up and torn down at
#    once) ends 0 and prints its timing table;
#  - rdma_server / rdma_client (synchronous ids, rdma_create_ep,
#    rdma_get_request, the rdma_verbs.h helpers): both end 0;
#  - rdma_xserver / rdma_xclient, RC (-c r) and XRC (-c x): both end 0;
#  - udaddy -c 10 -C 100 -S 1000 (UD ids: SIDR_REQ/SIDR_REP give each client
#    the server's QP number and Q_Key; 100 datagrams each way): both end 0;
#  - mckey: a receiver joins a multicast group, a send-only member sends
#    20 datagrams to it, all arrive;
#  - nobody listening: rping's, ucmatose's and rdma_client's connect is
#    REJECTED (reason 8, invalid service ID) within seconds, not a hang;
#    udaddy's is UNREACHABLE (SIDR status 1) once the 1.5 s grace is over;
#  - progs/rdmacm_api.c: the API's corners (below); progs/rdmacm_ud.c: UD
#    ids' private data limits, the answer's QP number, Q_Key and address (a
#    datagram sent through it, checked), rejection and nobody listening.
# ctest-timeout: 300
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdmacm_lib.sh"
. "$(dirname "$0")/progs_lib.sh"
UR_TIMEOUT=60

# The contract's corners (progs/rdmacm_api.c): a pollable, non-blocking
# event channel; private data limits (56 in a REQ, 196 in a REP: EINVAL
# beyond); QP states INIT / RTS / ERROR; both sides DISCONNECTED; a reject's
# reason and private data; a backlog of 1 turning the second request away;
# ADDR_ERROR for an address with no route; a bind to 127.0.0.1 bound to
# uroce0, and rdma_getaddrinfo answering from the hints' addresses when
# given neither node nor service; EOPNOTSUPP for what is not
# supported (ECE); a
# thread asleep in rdma_get_cm_event while its channel is destroyed stays
# asleep (300 rounds; the old code crashed, as rping did at its end).
# It runs in a namespace of its own (lo alone, no default route): the "no
# route" case needs an address that nothing here routes to, and the
# machine's default route, if it has one, reaches any.  Without root, the
# namespace is one of a user namespace of the user's own (unshare -Urn);
# where neither can be made, the other cases run here and that one is
# skipped, visibly.
if ur_netns_private; then
	UR_NS=$UR_NS_P prog_run lo.rdmacm_api rdmacm_api uroce0 1
else
	ur_log "SKIP: rdmacm_api's case addr (an address with no route): $UR_NETNS_WHY"
	prog_run lo.rdmacm_api rdmacm_api uroce0 1 channel privdata reject backlog bind unsupported teardown
fi
prog_run lo.rdmacm_ud rdmacm_ud uroce0 1

port=$(ur_port)
cm_pair rping rping -s -a 127.0.0.1 -p "$port" -C 1000 -v \
	-- rping -c -a 127.0.0.1 -p "$port" -C 1000 -v -V
ur_expect_pair_ok rping "rping -C 1000 -v -V"
ur_report "rping client" cm_check_rping "$(ur_out rping.client)" "" 1000
ur_report "rping server" cm_check_rping "$(ur_out rping.server)" "server " 1000

port=$(ur_port)
cm_pair ucmatose ucmatose -p "$port" -c 100 -- ucmatose -s 127.0.0.1 -p "$port" -c 100
ur_expect_pair_ok ucmatose "ucmatose -c 100"
ur_expect_grep ucmatose.server '^test complete' "ucmatose server: test complete"
ur_expect_grep ucmatose.client '^return status 0' "ucmatose client: return status 0"

# cmtime: 100 connections set up and torn down at once (its server serves
# until stopped); its table (the
# set-up rate) is left in the output for reading, never asserted.
port=$(ur_port)
CM_STOP_SERVER=1 cm_pair cmtime cmtime -p "$port" -c 100 -- cmtime -s 127.0.0.1 -p "$port" -c 100
ur_expect_rc cmtime.client 0 "cmtime -c 100 (client; the server serves until stopped)"
ur_expect_grep cmtime.client '^connect +:' "cmtime: the connect row"

port=$(ur_port)
cm_pair rsrv rdma_server -p "$port" -- rdma_client -s 127.0.0.1 -p "$port"
ur_expect_pair_ok rsrv "rdma_server / rdma_client"
ur_expect_grep rsrv.client 'rdma_client: end 0'

# rdma_xserver / rdma_xclient: an inline SEND over an RC id (-c r), then
# over XRC (-c x: the client's XRC_SEND QP reaches the server's XRC_RECV
# QP, whose SRQ number comes back in the REP's private data; the server
# ends 0 only when the SEND arrived on that SRQ).
for t in r x; do
	port=$(ur_port)
	cm_pair "xsrv$t" rdma_xserver -p "$port" -c "$t" -- rdma_xclient -s 127.0.0.1 -p "$port" -c "$t"
	ur_expect_pair_ok "xsrv$t" "rdma_xserver / rdma_xclient -c $t"
	ur_expect_grep "xsrv$t.server" 'rdma_xserver: end 0'
done

# udaddy's port is fixed (7174) and it has no -p for it.
CM_PORT=7174 cm_pair udaddy udaddy -b 127.0.0.1 -c 10 -C 100 -S 1000 \
	-- udaddy -s 127.0.0.1 -c 10 -C 100 -S 1000
ur_expect_pair_ok udaddy "udaddy -c 10 -C 100 -S 1000"
ur_expect_grep udaddy.client '^data transfers complete' "udaddy client: data transfers complete"
ur_expect_grep udaddy.server '^data transfers complete' "udaddy server: data transfers complete"

# mckey: a UD id joins 239.1.2.3 (rdma_join_multicast; its QP attached to
# ::ffff:239.1.2.3), another sends to the group as a send-only member.  In a
# namespace of its own where one can be made: a group's datagrams reach
# the members through the process serving port 4791, which beside other
# tests (or another user's uroce, which then holds the port) is not this
# test's.
if ur_netns_new mc_ns; then
	UR_SNS=$mc_ns UR_CNS=$mc_ns cm_mckey mckey 239.1.2.3 127.0.0.1 127.0.0.1 20
else
	cm_mckey mckey 239.1.2.3 127.0.0.1 127.0.0.1 20
fi

port=$(ur_port)
ur_run norcv.rping rping -c -a 127.0.0.1 -p "$port" -C 1
cm_expect_refused norcv.rping "rping with nobody listening"
ur_expect_grep norcv.rping 'RDMA_CM_EVENT_REJECTED, error 8'
ur_run norcv.ucmatose ucmatose -s 127.0.0.1 -p "$port"
cm_expect_refused norcv.ucmatose "ucmatose with nobody listening"
ur_expect_grep norcv.ucmatose 'RDMA_CM_EVENT_REJECTED, error: 8'
ur_run norcv.rdma_client rdma_client -s 127.0.0.1 -p "$port"
cm_expect_refused norcv.rdma_client "rdma_client with nobody listening"
ur_expect_grep norcv.rdma_client 'rdma_connect: Connection refused'
ur_run norcv.udaddy udaddy -s 127.0.0.1
cm_expect_refused norcv.udaddy "udaddy with nobody listening"
ur_expect_grep norcv.udaddy 'RDMA_CM_EVENT_UNREACHABLE, error: 1'

# A peer killed mid-run sends no DREQ: the survivor ends within seconds,
# never hangs: its CM sees the peer's process gone and reports
# DISCONNECTED (rping prints its DISCONNECT line), or its next RDMA
# operation fails first (a completion error), whichever comes first.
port=$(ur_port)
ur_start killed.server rping -s -a 127.0.0.1 -p "$port" -C 1000000
"$UR_BUILD/bin/uroce" run -- "$UR_BUILD/bin/integ_cm_listening" "$port" 30 >/dev/null 2>&1 ||
	ur_fail "killed: the rping server does not listen on rdma_cm port $port"
ur_start killed.client rping -c -a 127.0.0.1 -p "$port" -C 1000000
sleep 2
kill -KILL "$(ur_prog_pid killed.client)" 2>/dev/null
ur_wait killed.client
t0=$(date +%s.%N)
for _ in $(seq 100); do kill -0 "${UR_PID[killed.server]}" 2>/dev/null || break; sleep 0.1; done
t=$(echo "$(date +%s.%N) $t0" | awk '{printf "%.1f", $1 - $2}')
if kill -0 "${UR_PID[killed.server]}" 2>/dev/null; then
	ur_fail "killed: the server still runs 10 s after its client was killed"
	ur_stop killed.server
else
	ur_wait killed.server
	ur_pass "killed: the server ended ${t} s after its client was killed"
	ur_expect_grep killed.server 'server DISCONNECT EVENT|cq completion failed status' \
		"killed: the server was told (DISCONNECTED or a completion error)"
fi

for n in rping.server rping.client ucmatose.server ucmatose.client cmtime.server cmtime.client \
	 rsrv.server rsrv.client xsrvr.server xsrvr.client \
	 xsrvx.server xsrvx.client udaddy.server udaddy.client mckey.recv mckey.send; do
	ur_sanitizer_clean "$n"
done
ur_done
