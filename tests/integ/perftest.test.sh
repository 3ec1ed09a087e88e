#!/usr/bin/env bash
# ctest-timeout: 900
# Unmodified perftest (ib_{send,write,read,atomic}_{bw,lat}) on one host:
# server and client processes on uroce0 (lo) with -x the GID index of
# ::ffff:127.0.0.1.  For every program: defaults, -a (every size from 2 B to
# 8 MiB, -n 20; for atomics -A CMP_AND_SWAP instead; of the latency
# programs ib_send_lat and ib_write_lat only, and none under ASan), all on perftest's
# ibv_create_qp_ex + ibv_wr_* path (uroce's part id is one perftest knows),
# and once with UROCE_VENDOR_PART_ID=0 (its ibv_post_send path); for the bandwidth programs also -q 4,
# -b (bidirectional), --report_gbits and --odp (on-demand paging; not
# ib_atomic_bw, which refuses it itself).  Each run: both sides exit 0, no
# error completion, a numeric result row for every size.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/perftest_cases.sh"
UR_TIMEOUT=240

g4=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
ur_expect_eq "uroce0: GID index of ::ffff:127.0.0.1" 1 "$g4"
[ -n "$g4" ] || ur_done

# Of the latency programs' -a runs (each size costs perftest a clock
# calibration of about 0.7 s), ib_read_lat's runs across namespaces
# (perftest_netns.test.sh).  Under ASan none run: the bandwidth programs'
# -a take every size through the same library paths.
if ur_is_asan; then
	PT_LAT_ALL=
else
	PT_LAT_ALL="ib_send_lat ib_write_lat"
fi
pt_suite lo uroce0 uroce0 127.0.0.1 "$g4"

ur_done
