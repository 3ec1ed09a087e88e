/* Unit tests of the reliability protocol: requester, completer, responder,
 * memory-window operations, driven packet by packet through a fake
 * transport (harness.h) between pairs of QPs (pair.h).  One file per
 * concern, included here so that the module is one executable. */
#include "harness.h"
#include "pair.h"

#include "send_tests.c"
#include "ack_batch_tests.c"
#include "rdma_tests.c"
#include "loss_tests.c"
#include "selective_tests.c"
#include "ooo_tests.c"
#include "odp_tests.c"
#include "place_tests.c"
#include "inbox_tests.c"
#include "dup_ack_tests.c"
#include "rnr_tests.c"
#include "uc_ud_tests.c"
#include "access_tests.c"
#include "length_tests.c"
#include "mw_tests.c"
#include "xrc_tests.c"
#include "xrc_shared_tests.c"
#include "eagain_tests.c"
#include "congest_tests.c"
#include "park_tests.c"
#include "error_tests.c"
#include "misc_tests.c"
#include "edge_tests.c"
#include "chaos_tests.c"

/* Every test, in the order they run; UT_ONLY=name picks one. */
static const struct ut_case rel_tests[] = {
	UT_CASE(test_send_sizes),
	UT_CASE(test_send_imm_solicited),
	UT_CASE(test_send_ackreq_every),
	UT_CASE(test_send_psn_wrap),
	UT_CASE(test_send_sge_inline),
	UT_CASE(test_send_coalesced_ack),
	UT_CASE(test_ack_not_asked_when_followed),
	UT_CASE(test_ack_one_per_batch),
	UT_CASE(test_ack_held_goes_before_nak),
	UT_CASE(test_ack_held_goes_before_reply),

	UT_CASE(test_write),
	UT_CASE(test_read),
	UT_CASE(test_atomics),
	UT_CASE(test_rd_atomic_limit),
	UT_CASE(test_fence),

	UT_CASE(test_loss_middle_nak_once),
	UT_CASE(test_loss_two_gaps),
	UT_CASE(test_loss_ack_timer),
	UT_CASE(test_loss_first_message),
	UT_CASE(test_loss_window_halves_once),
	UT_CASE(test_sel_middle_one_resend),
	UT_CASE(test_sel_two_gaps),
	UT_CASE(test_sel_gap_reports),
	UT_CASE(test_sel_gap_resend_lost),
	UT_CASE(test_sel_dense_goes_back),
	UT_CASE(test_sel_resend_lost),
	UT_CASE(test_sel_nak_lost_probe),
	UT_CASE(test_sel_tail_lost_probe),
	UT_CASE(test_sel_probe_then_new_sends),
	UT_CASE(test_sel_unmarked_requester),
	UT_CASE(test_sel_learns_go_back),
	UT_CASE(test_ooo_write_reordered),
	UT_CASE(test_ooo_write_loss_nak_after_three),
	UT_CASE(test_ooo_read_reordered),
	UT_CASE(test_ooo_read_loss_retry_after_three),
	UT_CASE(test_odp_implicit),
	UT_CASE(test_odp_touched_after_registration),
	UT_CASE(test_place_read_behind_write),
	UT_CASE(test_place_write_behind_rnr),
	UT_CASE(test_place_large_waits_for_packets),
	UT_CASE(test_inbox_ack_while_held),
	UT_CASE(test_inbox_wrong_peer),
	UT_CASE(test_loss_atomic_duplicate),
	UT_CASE(test_loss_read_response),
	UT_CASE(test_loss_answers_while_gone_back),
	UT_CASE(test_loss_read_response_one_retry),
	UT_CASE(test_loss_read_response_acks_behind),
	UT_CASE(test_loss_read_chunked),
	UT_CASE(test_loss_retry_exhausted),
	UT_CASE(test_loss_giveup_marks),
	UT_CASE(test_loss_retry_zero),
	UT_CASE(test_loss_rtt_timer),
	UT_CASE(test_loss_peer_frozen),
	UT_CASE(test_loss_gbn_across_wqes),
	UT_CASE(test_loss_duplicates_everywhere),
	UT_CASE(test_loss_ack_before_read),
	UT_CASE(test_loss_ack_and_read_response),
	UT_CASE(test_loss_atomic_ack_then_next),
	UT_CASE(test_loss_seq_nak_past_atomic),
	UT_CASE(test_loss_ack_beyond_resend),
	UT_CASE(test_loss_same_tail_every_flight),
	UT_CASE(test_loss_atomic_saved_after_read_dups),
	UT_CASE(test_loss_read_response_past_atomic),
	UT_CASE(test_dup_ack_send),
	UT_CASE(test_dup_ack_write),

	UT_CASE(test_rnr_wait_and_retry),
	UT_CASE(test_rnr_timer_table),
	UT_CASE(test_rnr_exhausted),
	UT_CASE(test_rnr_zero),
	UT_CASE(test_rnr_infinite),
	UT_CASE(test_rnr_slow_naks),
	UT_CASE(test_rnr_second_message),
	UT_CASE(test_rnr_write_imm),
	UT_CASE(test_rnr_with_packets_behind),
	UT_CASE(test_rnr_quiet_after),
	UT_CASE(test_rnr_past_atomic),

	UT_CASE(test_access_errors),
	UT_CASE(test_access_edges),
	UT_CASE(test_access_unmapped),
	UT_CASE(test_access_stale_rkey),
	UT_CASE(test_access_local),
	UT_CASE(test_access_atomic_misaligned),
	UT_CASE(test_access_recv_lkey),

	UT_CASE(test_len_send_too_big),
	UT_CASE(test_len_write_vs_reth),
	UT_CASE(test_len_send_packet_sizes),
	UT_CASE(test_seq_rc_out_of_order),

	UT_CASE(test_uc_send),
	UT_CASE(test_uc_loss_drops_message),
	UT_CASE(test_uc_loss_last_packet),
	UT_CASE(test_uc_out_of_order),
	UT_CASE(test_uc_no_receive),
	UT_CASE(test_uc_write),
	UT_CASE(test_ud_grh),
	UT_CASE(test_ud_grh_ipv6),
	UT_CASE(test_ud_qkey),
	UT_CASE(test_ud_drops),
	UT_CASE(test_ud_srq),
	UT_CASE(test_ud_recv_unmapped),

	UT_CASE(test_mw_access),
	UT_CASE(test_mw_rebind_stale_key),
	UT_CASE(test_mw_local_inv),
	UT_CASE(test_mw_send_with_inv),
	UT_CASE(test_mw_bind_errors),
	UT_CASE(test_mw_bind_ordering),
	UT_CASE(test_mw_bind_after_read),

	UT_CASE(test_xrc_delivery),
	UT_CASE(test_xrc_unknown_srq),
	UT_CASE(test_xrc_other_domain),
	UT_CASE(test_xrc_shared_send),
	UT_CASE(test_xrc_shared_gap),
	UT_CASE(test_xrc_dup_other_srq_mid_message),
	UT_CASE(test_xrc_shared_rnr),
	UT_CASE(test_xrc_shared_lost_reply),
	UT_CASE(test_xrc_shared_owner_gone),
	UT_CASE(test_xrc_shared_refused),
	UT_CASE(test_xrc_shared_stale_reply),

	UT_CASE(test_eagain_mid_message),
	UT_CASE(test_blocked_off_the_list),
	UT_CASE(test_blocked_first_packet_off_the_list),
	UT_CASE(test_eagain_every_point),
	UT_CASE(test_eagain_responder),
	UT_CASE(test_eagain_nak_survives_error),
	UT_CASE(test_xport_hard_error),
	UT_CASE(test_destroy_while_waiting),
	UT_CASE(test_congest_turns_do_not_count),
	UT_CASE(test_park_lost_wakeup),
	UT_CASE(test_park_late_wakeup),
	UT_CASE(test_park_then_silence_counts),
	UT_CASE(test_park_peer_behind),
	UT_CASE(test_park_peer_behind_runs),
	UT_CASE(test_park_behind_holds_back),
	UT_CASE(test_park_self_behind),
	UT_CASE(test_park_behind_asks_starved),
	UT_CASE(test_park_error_then_turn),
	UT_CASE(test_congest_response_before_resend),
	UT_CASE(test_congest_dup_reads_share_slots),
	UT_CASE(test_congest_repeat_gives_way),
	UT_CASE(test_congest_ff_counts_reads),
	UT_CASE(test_congest_late_dup_gives_way),
	UT_CASE(test_congest_stale_rd_count),
	UT_CASE(test_congest_fair_turns),
	UT_CASE(test_congest_wait_in_line),
	UT_CASE(test_congest_wait_in_line_bounded),

	UT_CASE(test_err_flush_in_order),
	UT_CASE(test_err_srq_last_wqe),
	UT_CASE(test_err_comm_est),
	UT_CASE(test_err_reset_reuse),
	UT_CASE(test_err_late_responses),
	UT_CASE(test_err_post_states),

	UT_CASE(test_dispatch_drops),
	UT_CASE(test_wrong_peer),
	UT_CASE(test_mcast_fanout),
	UT_CASE(test_srq_limit),
	UT_CASE(test_wr_builder),
	UT_CASE(test_wr_builder_xrc),
	UT_CASE(test_post_validation),

	UT_CASE(test_edge_bad_read_response),
	UT_CASE(test_edge_atomic_local_error),
	UT_CASE(test_edge_write_target_vanishes),
	UT_CASE(test_edge_read_source_vanishes),
	UT_CASE(test_edge_rd_atomic_overflow),
	UT_CASE(test_edge_unsupported_opcodes),
	UT_CASE(test_edge_xrc_srq_changes),
	UT_CASE(test_edge_mw_on_uc),
	UT_CASE(test_edge_invalidate_errors),
	UT_CASE(test_edge_uc_too_big),

	UT_CASE(test_chaos),
	UT_CASE(test_chaos_uc),
};

int main(void)
{
	ut_env_init("ut0:lo");
	ut_run_cases(rel_tests, UR_ARRAY_SIZE(rel_tests));
	return UT_DONE();
}
