#!/usr/bin/env bash
# Unmodified ibv_rc_pingpong, server and client processes on one host (uroce0
# on lo), with the GID index of ::ffff:127.0.0.1:
#  - plain (4 KiB, 10000 iterations), 1 B (10000), -e (completion events),
#    -N (ibv_wr_* new send API), -c (data check), 64 KiB, 1 MiB, all of
#    -e -N -c at 1 MiB, the IPv6 GID (::1), and -m 4096 (lo's active MTU):
#    both sides exit 0 and report every iteration, no bad completion, no
#    corrupted data;
#  - on-demand paging: -o (ODP regions) with -c, -o -P (prefetched with
#    ibv_advise_mr), -O (implicit ODP: one region over the whole address
#    space) with -c and at 64 KiB, and -O -P;
#  - the faithful failures, each exiting non-zero within seconds (not a
#    hang) with the library's error naming the fix: without -g (no GRH on a
#    RoCE port: kernel rxe rejects RTR with EINVAL too).  (Every GID index,
#    0 included, is gids_usable's.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rc_pingpong_cases.sh"
UR_TIMEOUT=300

g4=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
g6=$(ur_gid_index uroce0 ::1)
ur_expect_eq "uroce0: GID index of ::ffff:127.0.0.1" 1 "$g4"
[ -n "$g4" ] || ur_done

rc_pp_suite lo uroce0 uroce0 127.0.0.1 "$g4" "${g6:-2}"
# lo's active MTU is 4096: the largest path MTU is accepted and used.
rc_pp_ok lo.mtu4096 uroce0 uroce0 127.0.0.1 -g "$g4" -m 4096 -s 65536 -c -n 500

rc_pp_ok lo.odp uroce0 uroce0 127.0.0.1 -g "$g4" -o -c -s 65536 -n 200
rc_pp_ok lo.odp-prefetch uroce0 uroce0 127.0.0.1 -g "$g4" -o -P -c -n 200
rc_pp_ok lo.odp-implicit uroce0 uroce0 127.0.0.1 -g "$g4" -O -c -n 200
rc_pp_ok lo.odp-implicit-64k uroce0 uroce0 127.0.0.1 -g "$g4" -O -s 65536 -n 100
rc_pp_ok lo.odp-implicit-prefetch uroce0 uroce0 127.0.0.1 -g "$g4" -O -P -n 200

rc_pp_fails lo.no-gid uroce0 uroce0 127.0.0.1 \
	'no GRH.*GID index'

ur_done
