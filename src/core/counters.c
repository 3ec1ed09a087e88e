#include "core/counters.h"

#include <string.h>

const char *const ur_counter_name[UR_CNT_NR] = {
	[UR_CNT_SENT_PKTS] = "sent_pkts",
	[UR_CNT_RCVD_PKTS] = "rcvd_pkts",
	[UR_CNT_DUPLICATE_REQUEST] = "duplicate_request",
	[UR_CNT_OUT_OF_SEQ_REQUEST] = "out_of_seq_request",
	[UR_CNT_RCVD_RNR_ERR] = "rcvd_rnr_err",
	[UR_CNT_SEND_RNR_ERR] = "send_rnr_err",
	[UR_CNT_RCVD_SEQ_ERR] = "rcvd_seq_err",
	[UR_CNT_RETRY_EXCEEDED_ERR] = "retry_exceeded_err",
	[UR_CNT_RETRY_RNR_EXCEEDED_ERR] = "retry_rnr_exceeded_err",
	[UR_CNT_COMPLETER_RETRY_ERR] = "completer_retry_err",
	[UR_CNT_RCVD_NAK] = "rcvd_nak",
	[UR_CNT_RDMA_SENDS] = "rdma_sends",
	[UR_CNT_RDMA_RECVS] = "rdma_recvs",
	[UR_CNT_QKEY_VIOLATIONS] = "qkey_violations",
	[UR_CNT_DROPPED] = "dropped",
	[UR_CNT_ICRC_ERRORS] = "icrc_errors",
	[UR_CNT_MALFORMED] = "malformed",
	[UR_CNT_NO_QP] = "no_qp",
	[UR_CNT_WRONG_PEER] = "wrong_peer",
	[UR_CNT_COMPLETION_ERRORS] = "completion_errors",
	[UR_CNT_HELD_OUT_OF_SEQ] = "held_out_of_seq",
	[UR_CNT_SELECTIVE_RESENDS] = "selective_resends",
	[UR_CNT_SELECTIVE_DENSE] = "selective_go_backs",
	[UR_CNT_GAP_REPORTS] = "gap_reports",
	[UR_CNT_GAP_RESENDS] = "gap_resends",
	[UR_CNT_INJECTED_LOSS] = "injected_loss",
	[UR_CNT_INJECTED_REORDER] = "injected_reorder",
	[UR_CNT_INJECTED_DUP] = "injected_dup",
	[UR_CNT_INJECTED_CORRUPT] = "injected_corrupt",
	[UR_CNT_MR_SHARED] = "mr_shared",
	[UR_CNT_COPY_MAPPED] = "copies_mapped",
	[UR_CNT_COPY_KERNEL] = "copies_kernel",
	[UR_CNT_TIMER_RESENDS] = "timer_resends",
	[UR_CNT_ACKS_INBOX] = "acks_inbox",
};

int ur_counter_by_name(const char *name)
{
	for (int i = 0; i < UR_CNT_NR; i++)
		if (!strcmp(ur_counter_name[i], name))
			return i;
	return -1;
}
