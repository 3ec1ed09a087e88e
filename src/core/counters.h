/* Device counters, named as Linux rxe names its hw_counters so that tools
 * print the same thing for both.  Each process counts into its devices and
 * publishes the totals in the host registry; readers (ibv_read_sysfs_file
 * on <ibdev_path>/ports/1/hw_counters/<name>) sum every process's, live or
 * gone, so they behave like a NIC's counters. */
#ifndef UROCE_CORE_COUNTERS_H
#define UROCE_CORE_COUNTERS_H

#include <stdint.h>

enum ur_counter {
	UR_CNT_SENT_PKTS,
	UR_CNT_RCVD_PKTS,
	UR_CNT_DUPLICATE_REQUEST,
	UR_CNT_OUT_OF_SEQ_REQUEST,
	UR_CNT_RCVD_RNR_ERR,
	UR_CNT_SEND_RNR_ERR,
	UR_CNT_RCVD_SEQ_ERR,
	UR_CNT_RETRY_EXCEEDED_ERR,
	UR_CNT_RETRY_RNR_EXCEEDED_ERR,
	UR_CNT_COMPLETER_RETRY_ERR,
	UR_CNT_RCVD_NAK,
	UR_CNT_RDMA_SENDS,
	UR_CNT_RDMA_RECVS,
	UR_CNT_QKEY_VIOLATIONS,
	UR_CNT_DROPPED,          /* not for any QP state, or refused by a QP */
	UR_CNT_ICRC_ERRORS,      /* dropped: ICRC mismatch */
	UR_CNT_MALFORMED,        /* dropped: failed to parse */
	UR_CNT_NO_QP,            /* dropped: no such QP on the host */
	UR_CNT_WRONG_PEER,       /* dropped: for a connected QP, from another address than its peer */
	UR_CNT_COMPLETION_ERRORS, /* completions in error, flushes aside */
	UR_CNT_HELD_OUT_OF_SEQ,  /* responder: kept past a gap, executed when it filled */
	UR_CNT_SELECTIVE_RESENDS, /* requester: one packet resent for a NAK, not the window */
	/* What the fault injector (UROCE_FAULTS) did to received packets, so
	 * that a test can reconcile the other counters with it. */
	UR_CNT_INJECTED_LOSS,
	UR_CNT_INJECTED_REORDER,
	UR_CNT_INJECTED_DUP,
	UR_CNT_INJECTED_CORRUPT,
	UR_CNT_SELECTIVE_DENSE,  /* requester: a gap past UR_SEL_GAPS_MAX in one flight went back */
	UR_CNT_GAP_REPORTS,      /* responder: gaps past a NAKed one told (UR_AETH_GAP) */
	UR_CNT_GAP_RESENDS,      /* requester: packets resent alone for a gap report */
	/* Large WRITEs and READs between processes of the host: regions whose
	 * memory moved into a memfd (util/vm_share.h), and the copies made
	 * with memcpy through one, or by the kernel (process_vm_writev). */
	UR_CNT_MR_SHARED,
	UR_CNT_COPY_MAPPED,
	UR_CNT_COPY_KERNEL,
	/* requester: resent because its timer fired (a loss that nothing
	 * after it revealed: no NAK, no gap report came), counted or early */
	UR_CNT_TIMER_RESENDS,
	/* completer: ACKs that arrived while another thread held the QP for
	 * a long copy, left in its inbox (rel/inbox.h) instead of waiting */
	UR_CNT_ACKS_INBOX,
	UR_CNT_NR
};

extern const char *const ur_counter_name[UR_CNT_NR];

/* The counter called name, or -1. */
int ur_counter_by_name(const char *name);

#endif
