#!/bin/bash
# ctest-labels: light
# UD with qpt_ud (tests/integ/qptypes/qpt_ud.c), two processes on one host
# and across namespaces, with IPv4 GIDs and (across namespaces) IPv6 GIDs:
# ibv_create_ah, ibv_create_ah_from_wc and ibv_init_ah_from_wc (replies
# through them reach the sender); the 40-byte GRH (IPv4 header in its last
# 20 bytes with the two addresses, or an IPv6 header); src_qp, qp_num,
# IBV_WC_GRH, IBV_WC_WITH_IMM; a wrong Q_Key dropped and counted in
# qkey_violations, a Q_Key with the high bit set replaced by the sending
# QP's own; a full-MTU datagram, and EINVAL at post one byte beyond; bad
# AHs (GID index, no GRH, port, no route) and a missing AH refused; a
# datagram to an unknown QPN counted in no_qp; a too-small receive buffer
# completes with IBV_WC_LOC_LEN_ERR.
. "$(dirname "$0")/qptypes_lib.sh"

qt_topologies
qt_prog_both ud qpt_ud
qt_prog_pair netns.ud-v6 "$UR_NS_A" "$UR_NS_B" "$QT_NET_DEV" 0 "$QT_NET_IP" qpt_ud -a v6
ur_done
