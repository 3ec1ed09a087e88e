#!/usr/bin/env bash
# ctest-timeout: 300
# Unmodified Open MPI (Debian's openmpi-bin, whose point-to-point layer is
# UCX) over uroce: two ranks of tests/integ/mpi/mpi_check.c (ping-pong 8 B
# .. 4 MiB, allreduce of 4 MiB, one-sided put/get of 1 MiB, every byte
# checked) with --mca pml ucx and osc ucx (Debian's configuration turns
# both off; nothing else is needed: named, pml ucx takes devices whose names
# are not in its pml_ucx_devices) and UCX_TLS=rc_verbs,ud_verbs:aux,self
# on uroce0, so nothing can go over shared memory or TCP; uroce's packet
# counters must show the traffic.  Then one rank in each of two network
# namespaces joined by a veth (uroce1): mpirun in one starts the other's
# daemon through an rsh agent that enters it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ucx_lib.sh"
UR_TIMEOUT=180

prog=$UR_BUILD/bin/integ_mpi_check
command -v mpirun >/dev/null || ur_skip "needs Open MPI (apt-get install openmpi-bin libopenmpi-dev)"
[ -x "$prog" ] || ur_skip "$prog is not built (needs libopenmpi-dev when configuring)"
ucx_need uroce0

# sent_pkts of DEV (default uroce0) in UR_NS (host-wide counters: every
# process's).
sent_pkts() {
	local n=pkts.$RANDOM
	ur_run "$n" "$UR_BUILD/bin/uroce" devinfo -d "${1:-uroce0}" -c >/dev/null
	awk '$1 == "sent_pkts" { print $2 }' "$(ur_out "$n")"
}

# mpi_run TAG DEV ARGS...: mpirun (in UR_NS) with UCX on DEV only.  -x
# names what the ranks must see.  Open MPI's own leaks are not uroce's.
mpi_run() {
	local tag=$1 dev=$2
	shift 2
	local UR_ENV=("${UCX_ENV[@]}" UCX_TLS=rc_verbs,ud_verbs:aux,self "UCX_NET_DEVICES=$dev:1"
		      OMPI_MCA_rmaps_base_oversubscribe=1)
	ur_is_asan && UR_ENV+=(ASAN_OPTIONS=detect_leaks=0)
	ur_run "$tag" mpirun --allow-run-as-root -np 2 \
		--mca pml ucx --mca osc ucx --mca btl self \
		-x UCX_TLS -x UCX_NET_DEVICES -x LD_LIBRARY_PATH "$@"
}

# mpi_checks TAG: the program's own checks and figures.
mpi_checks() {
	ur_report "$1" grep -E '^(ok|FAIL): ' "$(ur_out "$1")"
	ur_expect_grep "$1" '^figure: pingpong_8B_us=[0-9.]+ pingpong_4MiB_MBps=[0-9.]+' "$1: figures"
	ur_sanitizer_clean "$1"
}

# expect_traffic WHAT BEFORE AFTER: a counter moved by more than 1000.
expect_traffic() {
	if [ -n "$2" ] && [ -n "$3" ] && [ $(($3 - $2)) -gt 1000 ]; then
		ur_pass "$1 carried the MPI traffic: $(($3 - $2)) packets sent"
	else
		ur_fail "$1: sent_pkts went from '$2' to '$3': the MPI run did not use uroce"
	fi
}

# Round trips per size (fewer for 4 MiB): the sanitizer builds check the
# same paths with fewer.
iters=100
if ur_is_asan || ur_is_tsan; then
	iters=20
fi

before=$(sent_pkts)
mpi_run lo uroce0 "$prog" "$iters"
ur_expect_rc lo 0 "mpirun -np 2 mpi_check over rc_verbs,ud_verbs:aux on uroce0"
mpi_checks lo
expect_traffic uroce0 "$before" "$(sent_pkts)"

# Two namespaces: mpirun in A (rank 0 on this host's name), rank 1 in B,
# its daemon started by the agent; Open MPI's own wire-up over the veth.
ur_netns_pair 1500
ucx_need uroce1
agent=$UR_TMP/netns-agent.sh
# The hostfile names B by a word without a colon (Open MPI reads "host:N"
# as N slots); the agent knows which namespace that is.
case $UR_NS_B in
userns:*) host_b=uroce-userns-${UR_NS_B#userns:} enter="${UR_NSENTER[*]} -t ${UR_NS_B#userns:} --" ;;
*) host_b=$UR_NS_B enter="ip netns exec $UR_NS_B" ;;
esac
printf '#!/bin/sh\n# rsh agent: HOST CMD... runs CMD in namespace B (HOST: %s)\nshift\nexec %s sh -c "$*"\n' \
	"$host_b" "$enter" > "$agent"
chmod +x "$agent"
printf '%s slots=1\n%s slots=1\n' "$(hostname)" "$host_b" > "$UR_TMP/hosts"
before_b=$(UR_NS=$UR_NS_B sent_pkts uroce1)
UR_NS=$UR_NS_A mpi_run veth uroce1 --hostfile "$UR_TMP/hosts" --mca plm_rsh_agent "$agent" \
	--mca oob_tcp_if_include "${UR_IP_A%.*}.0/24" "$prog" "$iters"
ur_expect_rc veth 0 "mpirun, one rank per namespace, over rc_verbs,ud_verbs:aux on uroce1 (veth)"
mpi_checks veth
expect_traffic "uroce1 in namespace B" "$before_b" "$(UR_NS=$UR_NS_B sent_pkts uroce1)"

ur_done
