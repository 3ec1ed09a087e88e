#!/bin/bash
# ibverbs-utils' UC, UD, SRQ and XRC pingpongs, unmodified, as two processes:
# on one host (uroce0, 127.0.0.1) and across two network namespaces joined
# by a veth (path MTU 1024 there, as on a 1500-byte Ethernet link).
#
# Asserts: both sides exit 0 and report their iterations (the tools fail on
# any error completion, unknown QPN or wr_id); srq_pingpong with 16 QPs and
# with 256 (the tool's MAX_QP) on one SRQ, each completion naming a QP it
# owns (srq_pingpong's -n counts exchanges over all QPs together);
# xsrq_pingpong with one client, and with two clients sharing a domain.
. "$(dirname "$0")/qptypes_lib.sh"

# run_set TAG DEV GIDX SERVER_IP MTU: every tool once, server then client.
run_set() {
	local tag=$1 dev=$2 gidx=$3 ip=$4 mtu=$5 p
	local common=(-d "$dev" -g "$gidx")

	p=$(qt_port)
	qt_pair "$tag.uc" "$p" ibv_uc_pingpong "${common[@]}" -p "$p" -n 300 -c -- \
		ibv_uc_pingpong "${common[@]}" -p "$p" -n 300 -c "$ip"
	qt_expect_pair "$tag.uc" "$tag: ibv_uc_pingpong, 300 x 4 KiB (4 packets at MTU 1024)"
	qt_expect_grep "$tag.uc.client" '300 iters in' "$tag: uc_pingpong client did 300 iterations"

	p=$(qt_port)
	qt_pair "$tag.uc-ev" "$p" ibv_uc_pingpong "${common[@]}" -p "$p" -n 100 -e -s 100 -- \
		ibv_uc_pingpong "${common[@]}" -p "$p" -n 100 -e -s 100 "$ip"
	qt_expect_pair "$tag.uc-ev" "$tag: ibv_uc_pingpong -e (CQ events), 100 x 100 B"

	# UD: the payload must fit the path MTU (the tool checks against the port).
	p=$(qt_port)
	qt_pair "$tag.ud" "$p" ibv_ud_pingpong "${common[@]}" -p "$p" -n 300 -s "$mtu" -c -- \
		ibv_ud_pingpong "${common[@]}" -p "$p" -n 300 -s "$mtu" -c "$ip"
	qt_expect_pair "$tag.ud" "$tag: ibv_ud_pingpong, 300 x $mtu B (a full MTU datagram)"
	qt_expect_grep "$tag.ud.server" '300 iters in' "$tag: ud_pingpong server did 300 iterations"

	p=$(qt_port)
	qt_pair "$tag.ud-ev" "$p" ibv_ud_pingpong "${common[@]}" -p "$p" -n 100 -s 64 -e -- \
		ibv_ud_pingpong "${common[@]}" -p "$p" -n 100 -s 64 -e "$ip"
	qt_expect_pair "$tag.ud-ev" "$tag: ibv_ud_pingpong -e (CQ events), 100 x 64 B"

	p=$(qt_port)
	qt_pair "$tag.srq16" "$p" ibv_srq_pingpong "${common[@]}" -p "$p" -q 16 -n 200 -c -- \
		ibv_srq_pingpong "${common[@]}" -p "$p" -q 16 -n 200 -c "$ip"
	qt_expect_pair "$tag.srq16" "$tag: ibv_srq_pingpong, 16 QPs on one SRQ, 200 exchanges"
	qt_expect_grep "$tag.srq16.client" '200 iters in' "$tag: srq_pingpong (16 QPs) completed"

	p=$(qt_port)
	qt_pair "$tag.srq16-ev" "$p" ibv_srq_pingpong "${common[@]}" -p "$p" -q 16 -n 50 -e -s 64 -- \
		ibv_srq_pingpong "${common[@]}" -p "$p" -q 16 -n 50 -e -s 64 "$ip"
	qt_expect_pair "$tag.srq16-ev" "$tag: ibv_srq_pingpong -e, 16 QPs, CQ events"

	# The tool's own limit: "num_qp 256 must be less than 255" (Debian's
	# rdma-core 44 refuses -q >= MAX_QP = 256), so 255 is the most it runs.
	p=$(qt_port)
	qt_pair "$tag.srq255" "$p" ibv_srq_pingpong "${common[@]}" -p "$p" -q 255 -n 2000 -s 1024 -- \
		ibv_srq_pingpong "${common[@]}" -p "$p" -q 255 -n 2000 -s 1024 "$ip"
	qt_expect_pair "$tag.srq255" "$tag: ibv_srq_pingpong, 255 QPs on one SRQ (the tool's limit)"
	qt_expect_grep "$tag.srq255.server" '2000 iters in' "$tag: srq_pingpong (255 QPs) completed"

	p=$(qt_port)
	qt_pair "$tag.xsrq1" "$p" ibv_xsrq_pingpong "${common[@]}" -p "$p" -n 50 -- \
		ibv_xsrq_pingpong "${common[@]}" -p "$p" -n 50 "$ip"
	qt_expect_pair "$tag.xsrq1" "$tag: ibv_xsrq_pingpong, one client, 50 tests"
	qt_expect_grep "$tag.xsrq1.client" '^success' "$tag: xsrq_pingpong client reports success"

	p=$(qt_port)
	qt_pair "$tag.xsrq1-ev" "$p" ibv_xsrq_pingpong "${common[@]}" -p "$p" -n 20 -e -- \
		ibv_xsrq_pingpong "${common[@]}" -p "$p" -n 20 -e "$ip"
	qt_expect_pair "$tag.xsrq1-ev" "$tag: ibv_xsrq_pingpong -e, one client"

	# xsrq_pingpong: the server connects -c clients, then sends to each
	# client's SRQ round robin through every client's target QP, so the two
	# clients (one host) must share their XRC domain (the file the tool
	# opens it by), as they do on a kernel device.
	p=$(qt_port)
	QT_TIMEOUT=60 QT_NS=${QT_SNS-$QT_NS} qt_start "$tag.xsrq.server" ibv_xsrq_pingpong "${common[@]}" -p "$p" -c 2 -n 10
	if QT_NS=${QT_SNS-$QT_NS} qt_wait_listen "$p" "${QT_PID[$tag.xsrq.server]}"; then
		QT_TIMEOUT=60 QT_NS=${QT_CNS-$QT_NS} qt_start "$tag.xsrq.client1" ibv_xsrq_pingpong "${common[@]}" -p "$p" -n 10 "$ip"
		QT_TIMEOUT=60 QT_NS=${QT_CNS-$QT_NS} qt_start "$tag.xsrq.client2" ibv_xsrq_pingpong "${common[@]}" -p "$p" -n 10 "$ip"
		qt_wait "$tag.xsrq.client1"
		qt_wait "$tag.xsrq.client2"
		qt_expect_rc "$tag.xsrq.client1" 0 "$tag: ibv_xsrq_pingpong, client 1 of 2"
		qt_expect_rc "$tag.xsrq.client2" 0 "$tag: ibv_xsrq_pingpong, client 2 of 2"
	else
		qt_fail "$tag: ibv_xsrq_pingpong server never listened"
	fi
	qt_wait "$tag.xsrq.server"
	qt_expect_rc "$tag.xsrq.server" 0 "$tag: ibv_xsrq_pingpong server, 2 clients"
	qt_expect_grep "$tag.xsrq.server" '^success' "$tag: xsrq_pingpong server reports success"
}

# One host: two processes in a network namespace of their own (lo only),
# so that no other uroce process of the machine (another build serving
# port 4791, another registry version) takes part; then two namespaces.
qt_topologies
qt_log "--- one host ($QT_HOST_DEV, lo)"
QT_SNS=$QT_NS_S QT_CNS=$QT_NS_S run_set host "$QT_HOST_DEV" "$QT_HOST_GID" "$QT_HOST_IP" 4096
qt_log "--- two network namespaces (veth, MTU 1500)"
QT_SNS=$QT_NS_A QT_CNS=$QT_NS_B run_set netns "$QT_NET_DEV" "$QT_NET_GID" "$QT_NET_IP" 1024

qt_done
