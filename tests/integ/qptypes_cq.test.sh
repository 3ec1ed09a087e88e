#!/bin/bash
# ctest-labels: tsan light
# CQ details with qpt_cq (tests/integ/qptypes/qpt_cq.c), one process with a
# looped-back RC pair, on lo (one host) and on a veth device: ibv_resize_cq
# keeps queued completions (and refuses to drop any); a CQ overrun raises
# IBV_EVENT_CQ_ERR; ibv_modify_cq moderation by count and by period;
# solicited-only notification (unsolicited completions raise no event,
# IBV_SEND_SOLICITED and error completions do); ibv_query_device_ex
# (completion_timestamp_mask, hca_core_clock, cq_mod_caps) and
# ibv_query_rt_values_ex; completion timestamps from an ibv_cq_ex in order
# and within the raw clock read around them, wall-clock ones likewise.
. "$(dirname "$0")/qptypes_lib.sh"

qt_topologies
UR_NS=$QT_NS_S ur_run host.cq qpt_cq -d "$QT_HOST_DEV" -g "$QT_HOST_GID"
qt_expect_prog host.cq "CQ details on $QT_HOST_DEV (lo)"
UR_NS=$UR_NS_A ur_run netns.cq qpt_cq -d "$QT_NET_DEV" -g "$QT_NET_GID"
qt_expect_prog netns.cq "CQ details on $QT_NET_DEV (veth)"
ur_done
