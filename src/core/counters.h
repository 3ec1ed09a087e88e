/* Device counters, named as Linux rxe names its hw_counters so that tools
 * print the same thing for both.  Each process counts into its devices and
 * publishes the totals in the host registry; readers (ibv_read_sysfs_file
 * on <ibdev_path>/ports/1/hw_counters/<name>) sum every process's, live or
 * gone, so they behave like a NIC's counters. */
#ifndef UROCE_CORE_COUNTERS_H
#define UROCE_CORE_COUNTERS_H

#include <stdint.h>

#include "util/enum_name.h"

#define UR_COUNTER_LIST(X)							\
	X(UR_CNT_SENT_PKTS, "sent_pkts")					\
	X(UR_CNT_RCVD_PKTS, "rcvd_pkts")					\
	X(UR_CNT_DUPLICATE_REQUEST, "duplicate_request")			\
	X(UR_CNT_OUT_OF_SEQ_REQUEST, "out_of_seq_request")			\
	X(UR_CNT_RCVD_RNR_ERR, "rcvd_rnr_err")					\
	X(UR_CNT_SEND_RNR_ERR, "send_rnr_err")					\
	X(UR_CNT_RCVD_SEQ_ERR, "rcvd_seq_err")					\
	X(UR_CNT_RETRY_EXCEEDED_ERR, "retry_exceeded_err")			\
	X(UR_CNT_RETRY_RNR_EXCEEDED_ERR, "retry_rnr_exceeded_err")		\
	X(UR_CNT_COMPLETER_RETRY_ERR, "completer_retry_err")			\
	X(UR_CNT_RCVD_NAK, "rcvd_nak")						\
	X(UR_CNT_RDMA_SENDS, "rdma_sends")					\
	X(UR_CNT_RDMA_RECVS, "rdma_recvs")					\
	X(UR_CNT_QKEY_VIOLATIONS, "qkey_violations")				\
	/* not for any QP state, or refused by a QP */				\
	X(UR_CNT_DROPPED, "dropped")						\
	/* dropped: ICRC mismatch */						\
	X(UR_CNT_ICRC_ERRORS, "icrc_errors")					\
	/* dropped: failed to parse */						\
	X(UR_CNT_MALFORMED, "malformed")					\
	/* dropped: no such QP on the host */					\
	X(UR_CNT_NO_QP, "no_qp")						\
	/* dropped: for a connected QP, from another address than its peer */	\
	X(UR_CNT_WRONG_PEER, "wrong_peer")					\
	/* completions in error, flushes aside */				\
	X(UR_CNT_COMPLETION_ERRORS, "completion_errors")			\
	/* responder: kept past a gap, executed when it filled */		\
	X(UR_CNT_HELD_OUT_OF_SEQ, "held_out_of_seq")				\
	/* requester: one packet resent for a NAK, not the window */		\
	X(UR_CNT_SELECTIVE_RESENDS, "selective_resends")			\
	/* What the fault injector (UROCE_FAULTS) did to received packets, so	\
	 * that a test can reconcile the other counters with it. */		\
	X(UR_CNT_INJECTED_LOSS, "injected_loss")				\
	X(UR_CNT_INJECTED_REORDER, "injected_reorder")				\
	X(UR_CNT_INJECTED_DUP, "injected_dup")					\
	X(UR_CNT_INJECTED_CORRUPT, "injected_corrupt")				\
	/* requester: a gap past UR_SEL_GAPS_MAX in one flight went back */	\
	X(UR_CNT_SELECTIVE_DENSE, "selective_go_backs")				\
	/* responder: gaps past a NAKed one told (UR_AETH_GAP) */		\
	X(UR_CNT_GAP_REPORTS, "gap_reports")					\
	/* requester: packets resent alone for a gap report */			\
	X(UR_CNT_GAP_RESENDS, "gap_resends")					\
	/* Large WRITEs and READs between processes of the host: regions whose	\
	 * memory moved into a memfd (util/vm_share.h), and the copies made	\
	 * with memcpy through one, or by the kernel (process_vm_writev). */	\
	X(UR_CNT_MR_SHARED, "mr_shared")					\
	X(UR_CNT_COPY_MAPPED, "copies_mapped")					\
	X(UR_CNT_COPY_KERNEL, "copies_kernel")					\
	/* requester: resent because its timer fired (a loss that nothing	\
	 * after it revealed: no NAK, no gap report came), counted or early */	\
	X(UR_CNT_TIMER_RESENDS, "timer_resends")				\
	/* completer: ACKs that arrived while another thread held the QP for	\
	 * a long copy, left in its inbox (rel/inbox.h) instead of waiting */	\
	X(UR_CNT_ACKS_INBOX, "acks_inbox")					\
	/* transports: packets lost between processes of this host, handed	\
	 * on by the router to a process whose socket was full or that had	\
	 * ended, or still waiting for room when the process exited		\
	 * (counted against the receiving device where known, else the	\
	 * sending one) */							\
	X(UR_CNT_HOST_LOST, "host_lost")

UR_ENUM_DECLARE(ur_counter, UR_COUNTER_LIST, UR_CNT_NR, ur_counter_name);

/* The counter called name, or -1. */
int ur_counter_by_name(const char *name);

#endif
