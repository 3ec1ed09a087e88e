#!/usr/bin/env bash
# ctest-timeout: 300
# Unmodified Open MPI (Debian's openmpi-bin, whose point-to-point layer is
# UCX) over uroce: two ranks of tests/integ/mpi/mpi_check.c (ping-pong 8 B
# .. 4 MiB, allreduce of 4 MiB, one-sided put/get of 1 MiB, every byte
# checked) with --mca pml ucx (pml_ucx_tls/devices any: Open MPI 4.1 takes
# only known NICs otherwise), osc ucx and UCX_TLS=rc_verbs,ud_verbs:aux,self
# on uroce0, so nothing can go over shared memory or TCP; uroce's packet
# counters must show the traffic.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ucx_lib.sh"
UR_TIMEOUT=180

prog=$UR_BUILD/bin/integ_mpi_check
command -v mpirun >/dev/null || ur_skip "needs Open MPI (apt-get install openmpi-bin libopenmpi-dev)"
[ -x "$prog" ] || ur_skip "$prog is not built (needs libopenmpi-dev when configuring)"
ucx_need uroce0

# sent_pkts of uroce0 (host-wide counters: every process's).
sent_pkts() {
	local n=pkts.$RANDOM
	ur_run "$n" "$UR_BUILD/bin/uroce" devinfo -d uroce0 -c >/dev/null
	awk '$1 == "sent_pkts" { print $2 }' "$(ur_out "$n")"
}

# mpirun passes its environment to the ranks it starts here; -x names
# what UCX must see.  Open MPI's own leaks are not uroce's.
mpi_run() {
	local tag=$1
	shift
	local UR_ENV=("${UCX_ENV[@]}" UCX_TLS=rc_verbs,ud_verbs:aux,self UCX_NET_DEVICES=uroce0:1
		      OMPI_MCA_rmaps_base_oversubscribe=1)
	ur_is_asan && UR_ENV+=(ASAN_OPTIONS=detect_leaks=0)
	ur_run "$tag" mpirun --allow-run-as-root -np 2 \
		--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
		--mca osc ucx --mca btl self \
		-x UCX_TLS -x UCX_NET_DEVICES -x LD_LIBRARY_PATH "$@"
}

before=$(sent_pkts)
mpi_run lo "$prog" 100
ur_expect_rc lo 0 "mpirun -np 2 mpi_check over rc_verbs,ud_verbs:aux on uroce0"
ur_report lo grep -E '^(ok|FAIL): ' "$(ur_out lo)"
ur_expect_grep lo '^figure: pingpong_8B_us=[0-9.]+ pingpong_4MiB_MBps=[0-9.]+' "lo: figures"
ur_sanitizer_clean lo
after=$(sent_pkts)
if [ -n "$before" ] && [ -n "$after" ] && [ $((after - before)) -gt 1000 ]; then
	ur_pass "uroce0 carried the MPI traffic: $((after - before)) packets sent"
else
	ur_fail "uroce0's sent_pkts went from '$before' to '$after': the MPI run did not use uroce"
fi

ur_done
