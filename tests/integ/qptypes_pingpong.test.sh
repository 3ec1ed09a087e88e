#!/bin/bash
# ibverbs-utils' UC, UD, SRQ and XRC pingpongs, unmodified, as two processes:
# on one host (uroce0, 127.0.0.1) and across two network namespaces joined
# by a veth (path MTU 1024 there, as on a 1500-byte Ethernet link).
#
# Asserts: both sides exit 0 and report their iterations (the tools fail on
# any error completion, unknown QPN or wr_id); srq_pingpong with 16 QPs and
# with 256 (the tool's MAX_QP) on one SRQ, each completion naming a QP it
# owns (srq_pingpong's -n counts exchanges over all QPs together);
# xsrq_pingpong with one client, and with two clients sharing a domain;
# then two clients with a private domain each (the program's fallback when
# it cannot open /tmp/xrc_domain): the server's sends to one client's SRQ
# through the other client's target QP are refused with NAK invalid
# request, its two send QPs end in error and the three programs wait on,
# as on any XRC device, since an SRQ is reachable only through target QPs
# of its own domain.
. "$(dirname "$0")/qptypes_lib.sh"

# xrc_file_refused NS: why ibv_xsrq_pingpong in namespace NS would fall
# back to a private XRC domain: it opens /tmp/xrc_domain with O_RDONLY |
# O_CREAT and, where that fails ("Couldn't create the file for the XRC
# Domain but not stopping"), opens its domain without a file.  Prints the
# reason, or nothing where the open succeeds or the file is absent (the
# server, started first, then makes it for all three) or where this cannot
# be checked (no python3: the case runs).
xrc_file_refused() {
	local why
	ur_ns_prefix "$1"
	why=$("${UR_NS_PREFIX[@]}" python3 -c '
import os
p = "/tmp/xrc_domain"
if os.path.lexists(p):
    try:
        os.close(os.open(p, os.O_RDONLY | os.O_CREAT, 0o440))
    except OSError as e:
        print(e.strerror)
' 2>/dev/null)
	[ -n "$why" ] && printf '/tmp/xrc_domain (%s) cannot be opened here: %s' \
		"$(stat -c "%U's %F, mode %a" /tmp/xrc_domain 2>/dev/null)" "$why"
}

# xsrq_counter NAME NS DEV COUNTER: COUNTER of DEV in namespace NS, summed
# over its processes (uroce devinfo -c).
xsrq_counter() {
	local n=$1.$RANDOM
	UR_NS=$2 ur_run "$n" uroce devinfo -c -d "$3" >/dev/null
	awk -v c="$4" '$1 == c { print $2 }' "$(ur_out "$n")"
}

# The words that run a program in a mount namespace of its own whose
# /tmp/xrc_domain is a directory, so that ibv_xsrq_pingpong's open of it
# fails (EISDIR) and the program opens a private domain.  Within the test's
# namespaces (as a user, its user namespace, where the programs run
# anyway), so it tests the same thing as root and as a user.
XRC_PRIVATE=(unshare -m --propagation private sh -c
	'mount -t tmpfs -o size=64k,mode=1777 none /tmp && mkdir /tmp/xrc_domain && exec "$@"' sh)

# run_set TAG DEV GIDX SERVER_IP MTU: every tool once, server then client.
run_set() {
	local tag=$1 dev=$2 gidx=$3 ip=$4 mtu=$5 p why
	local common=(-d "$dev" -g "$gidx")

	p=$(ur_port)
	ur_pair "$tag.uc" "$p" ibv_uc_pingpong "${common[@]}" -p "$p" -n 300 -c -- \
		ibv_uc_pingpong "${common[@]}" -p "$p" -n 300 -c "$ip"
	qt_expect_pair "$tag.uc" "$tag: ibv_uc_pingpong, 300 x 4 KiB (4 packets at MTU 1024)"
	ur_expect_grep "$tag.uc.client" '300 iters in' "$tag: uc_pingpong client did 300 iterations"

	p=$(ur_port)
	ur_pair "$tag.uc-ev" "$p" ibv_uc_pingpong "${common[@]}" -p "$p" -n 100 -e -s 100 -- \
		ibv_uc_pingpong "${common[@]}" -p "$p" -n 100 -e -s 100 "$ip"
	qt_expect_pair "$tag.uc-ev" "$tag: ibv_uc_pingpong -e (CQ events), 100 x 100 B"

	# UD: the payload must fit the path MTU (the tool checks against the port).
	p=$(ur_port)
	ur_pair "$tag.ud" "$p" ibv_ud_pingpong "${common[@]}" -p "$p" -n 300 -s "$mtu" -c -- \
		ibv_ud_pingpong "${common[@]}" -p "$p" -n 300 -s "$mtu" -c "$ip"
	qt_expect_pair "$tag.ud" "$tag: ibv_ud_pingpong, 300 x $mtu B (a full MTU datagram)"
	ur_expect_grep "$tag.ud.server" '300 iters in' "$tag: ud_pingpong server did 300 iterations"

	p=$(ur_port)
	ur_pair "$tag.ud-ev" "$p" ibv_ud_pingpong "${common[@]}" -p "$p" -n 100 -s 64 -e -- \
		ibv_ud_pingpong "${common[@]}" -p "$p" -n 100 -s 64 -e "$ip"
	qt_expect_pair "$tag.ud-ev" "$tag: ibv_ud_pingpong -e (CQ events), 100 x 64 B"

	p=$(ur_port)
	ur_pair "$tag.srq16" "$p" ibv_srq_pingpong "${common[@]}" -p "$p" -q 16 -n 200 -c -- \
		ibv_srq_pingpong "${common[@]}" -p "$p" -q 16 -n 200 -c "$ip"
	qt_expect_pair "$tag.srq16" "$tag: ibv_srq_pingpong, 16 QPs on one SRQ, 200 exchanges"
	ur_expect_grep "$tag.srq16.client" '200 iters in' "$tag: srq_pingpong (16 QPs) completed"

	p=$(ur_port)
	ur_pair "$tag.srq16-ev" "$p" ibv_srq_pingpong "${common[@]}" -p "$p" -q 16 -n 50 -e -s 64 -- \
		ibv_srq_pingpong "${common[@]}" -p "$p" -q 16 -n 50 -e -s 64 "$ip"
	qt_expect_pair "$tag.srq16-ev" "$tag: ibv_srq_pingpong -e, 16 QPs, CQ events"

	# The tool's own limit: "num_qp 256 must be less than 255" (Debian's
	# rdma-core 44 refuses -q >= MAX_QP = 256), so 255 is the most it runs.
	p=$(ur_port)
	ur_pair "$tag.srq255" "$p" ibv_srq_pingpong "${common[@]}" -p "$p" -q 255 -n 2000 -s 1024 -- \
		ibv_srq_pingpong "${common[@]}" -p "$p" -q 255 -n 2000 -s 1024 "$ip"
	qt_expect_pair "$tag.srq255" "$tag: ibv_srq_pingpong, 255 QPs on one SRQ (the tool's limit)"
	ur_expect_grep "$tag.srq255.server" '2000 iters in' "$tag: srq_pingpong (255 QPs) completed"

	p=$(ur_port)
	ur_pair "$tag.xsrq1" "$p" ibv_xsrq_pingpong "${common[@]}" -p "$p" -n 50 -- \
		ibv_xsrq_pingpong "${common[@]}" -p "$p" -n 50 "$ip"
	qt_expect_pair "$tag.xsrq1" "$tag: ibv_xsrq_pingpong, one client, 50 tests"
	ur_expect_grep "$tag.xsrq1.client" '^success' "$tag: xsrq_pingpong client reports success"

	p=$(ur_port)
	ur_pair "$tag.xsrq1-ev" "$p" ibv_xsrq_pingpong "${common[@]}" -p "$p" -n 20 -e -- \
		ibv_xsrq_pingpong "${common[@]}" -p "$p" -n 20 -e "$ip"
	qt_expect_pair "$tag.xsrq1-ev" "$tag: ibv_xsrq_pingpong -e, one client"

	# xsrq_pingpong: the server connects -c clients, then sends to each
	# client's SRQ round robin through every client's target QP, so the two
	# clients (one host) must share their XRC domain (the file the tool
	# opens it by), as they do on a kernel device.
	# Where /tmp/xrc_domain is there but not theirs to open (another
	# user's, mode 0440), each program falls back to a private domain and
	# the three wait forever, by the program's design (xsrq_private says
	# why): this case is then left out.
	why=$(xrc_file_refused "${UR_SNS-$UR_NS}")
	[ -n "$why" ] || why=$(xrc_file_refused "${UR_CNS-$UR_NS}")
	if [ -n "$why" ]; then
		ur_log "left out: $tag: ibv_xsrq_pingpong, 2 clients sharing a domain: $why," \
			"so each process would open a private XRC domain (the private-domain case)"
	else
		xsrq_shared "$tag" "$ip" "${common[@]}"
	fi
	xsrq_private "$tag" "$dev" "$ip" "${common[@]}"
}

# xsrq_shared TAG SERVER_IP ARGS...: two clients, one domain (the file's).
xsrq_shared() {
	local tag=$1 ip=$2 p
	shift 2
	p=$(ur_port)
	UR_TIMEOUT=60 UR_NS=${UR_SNS-$UR_NS} ur_start "$tag.xsrq.server" ibv_xsrq_pingpong "$@" -p "$p" -c 2 -n 10
	if UR_NS=${UR_SNS-$UR_NS} ur_wait_listen "$p" "${UR_PID[$tag.xsrq.server]}"; then
		UR_TIMEOUT=60 UR_NS=${UR_CNS-$UR_NS} ur_start "$tag.xsrq.client1" ibv_xsrq_pingpong "$@" -p "$p" -n 10 "$ip"
		UR_TIMEOUT=60 UR_NS=${UR_CNS-$UR_NS} ur_start "$tag.xsrq.client2" ibv_xsrq_pingpong "$@" -p "$p" -n 10 "$ip"
		ur_wait "$tag.xsrq.client1"
		ur_wait "$tag.xsrq.client2"
		ur_expect_rc "$tag.xsrq.client1" 0 "$tag: ibv_xsrq_pingpong, client 1 of 2"
		ur_expect_rc "$tag.xsrq.client2" 0 "$tag: ibv_xsrq_pingpong, client 2 of 2"
	else
		ur_fail "$tag: ibv_xsrq_pingpong server never listened"
	fi
	ur_wait "$tag.xsrq.server"
	ur_expect_rc "$tag.xsrq.server" 0 "$tag: ibv_xsrq_pingpong server, 2 clients"
	ur_expect_grep "$tag.xsrq.server" '^success' "$tag: xsrq_pingpong server reports success"
}

# xsrq_private TAG DEV SERVER_IP ARGS...: two clients with a private domain
# each.  The server's first send to each client goes through that client's
# own target QP and is placed; its second to client 1 goes through client
# 2's target QP (and the reverse), whose domain does not hold client 1's
# SRQ: NAK invalid request, and the server's send QP ends in error
# (IBV_WC_REM_INV_REQ_ERR, which the program never polls).  Nobody sends
# again, so all three wait; they are stopped once both errors are counted.
# Had uroce let a target QP reach another process's private domain, the
# programs would finish instead, and this fails.  A slow client (under
# ASan) may get the refusal while its receive QP is still in RTR: the QP
# goes to error, the program's move to RTS fails and it exits; refused all
# the same, and counted so.
xsrq_private() {
	local tag=$1 dev=$2 ip=$3 p n sns=${UR_SNS-$UR_NS} cns=${UR_CNS-$UR_NS}
	local e0 k0 e1 k1 i r alive
	shift 3
	n=$tag.xsrqp
	p=$(ur_port)
	e0=$(xsrq_counter "$n.ctr" "$sns" "$dev" completion_errors)
	k0=$(xsrq_counter "$n.ctr" "$sns" "$dev" rcvd_nak)
	UR_TIMEOUT=60 UR_NS=$sns ur_start "$n.server" "${XRC_PRIVATE[@]}" ibv_xsrq_pingpong "$@" -p "$p" -c 2 -n 10
	if ! UR_NS=$sns ur_wait_listen "$p" "${UR_PID[$n.server]}"; then
		ur_fail "$tag: ibv_xsrq_pingpong server (private domains) never listened"
		ur_stop "$n.server"
		return
	fi
	for i in 1 2; do
		UR_TIMEOUT=60 UR_NS=$cns ur_start "$n.client$i" "${XRC_PRIVATE[@]}" ibv_xsrq_pingpong "$@" -p "$p" -n 10 "$ip"
	done
	for ((i = 0; i < 150; i++)); do
		e1=$(xsrq_counter "$n.ctr" "$sns" "$dev" completion_errors)
		[ $((e1 - e0)) -ge 2 ] && break
		alive=0
		for r in server client1 client2; do
			kill -0 "${UR_PID[$n.$r]}" 2>/dev/null && alive=$((alive + 1))
		done
		[ $alive = 3 ] || break
		sleep 0.2
	done
	sleep 0.5    # anything more that would come
	e1=$(xsrq_counter "$n.ctr" "$sns" "$dev" completion_errors)
	k1=$(xsrq_counter "$n.ctr" "$sns" "$dev" rcvd_nak)
	alive=0 early=0
	for r in server client1 client2; do
		if kill -0 "${UR_PID[$n.$r]}" 2>/dev/null; then
			alive=$((alive + 1))
		elif grep -q 'no transition ERR -> RTS' "$(ur_out "$n.$r")"; then
			# The refusal reached its receive QP in RTR, before the
			# program moved it to RTS (a slow client, under ASan):
			# refused all the same, and it stops there.
			early=$((early + 1))
		fi
		ur_stop "$n.$r"
	done
	ur_expect_grep "$n.client1" 'Couldn.t create the file for the XRC Domain' \
		"$tag: private domains: client 1 opened its domain without the file"
	if [ $((e1 - e0)) = 2 ] && [ $((k1 - k0)) -ge 2 ] && [ $alive = 3 ]; then
		ur_pass "$tag: private domains: the server's 2 cross-client sends refused (NAK invalid request, 2 error completions), the programs waiting"
	elif [ "$early" -gt 0 ] && [ $((e1 - e0)) -ge 1 ] && [ $((k1 - k0)) -ge 1 ] &&
		[ $((alive + early)) = 3 ] &&
		! grep -q success "$(ur_out "$n.server")" "$(ur_out "$n.client1")" "$(ur_out "$n.client2")"; then
		ur_pass "$tag: private domains: cross-client sends refused (+$((e1 - e0)) error completions, +$((k1 - k0)) NAKs), $early client(s) refused before RTS, none finished"
	else
		ur_fail "$tag: private domains: error completions +$((e1 - e0)) (want 2), NAKs received +$((k1 - k0)) (want >= 2), $alive of 3 programs still running (want 3)"
	fi
}

# One host: two processes in a network namespace of their own (lo only),
# so that no other uroce process of the machine (another build serving
# port 4791, another registry version) takes part; then two namespaces.
qt_topologies
ur_log "--- one host ($QT_HOST_DEV, lo)"
UR_SNS=$QT_NS_S UR_CNS=$QT_NS_S run_set host "$QT_HOST_DEV" "$QT_HOST_GID" "$QT_HOST_IP" 4096
ur_log "--- two network namespaces (veth, MTU 1500)"
UR_SNS=$UR_NS_A UR_CNS=$UR_NS_B run_set netns "$QT_NET_DEV" "$QT_NET_GID" "$QT_NET_IP" 1024

ur_done
