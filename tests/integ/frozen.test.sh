#!/usr/bin/env bash
# ctest-timeout: 300
# ctest-labels: reliability
# Peers that freeze or die mid-transfer, on one host and across network
# namespaces: the survivor gets error completions, never a hang, and the
# next run right after works.
#
#  - SIGSTOP of an ib_write_bw server mid-run (lo, then two namespaces):
#    its client's writes end in "transport retry counter exceeded" within
#    seconds (perftest's timeout 14 and retry_cnt 7: 8 timeouts of 67 ms);
#    the server, continued (SIGCONT), ends too, and a fresh pair works;
#  - SIGKILL of an ib_write_bw server mid-run across namespaces: the same
#    for its client; the killed process's registry slot and QP numbers do
#    not stop a fresh pair in the same namespaces;
#  - a server that is runnable but kept off the CPU for 1.5 s (pinned to a
#    CPU where a real-time thread spins: integ_cpu_hog), three times its
#    client's 7 x 67 ms: the ibv_rc_pingpong pair across namespaces ends
#    well, as against a NIC, whose responder no scheduler holds up (before
#    rel/starved.c, the client ended in RETRY_EXC_ERR every time).  Needs
#    two CPUs and SCHED_FIFO (root).
. "$(dirname "$0")/lib.sh"
UR_TIMEOUT=120

# fz_case TAG DEV GID ADDR SIG: an ib_write_bw pair (server in UR_SNS,
# client in UR_CNS); 3 s into the run the server gets SIG; the client must
# end with retry exceeded within 20 s; a stopped server is continued and
# must end within 20 s; then a fresh ibv_rc_pingpong pair works.
fz_case() {
	local tag=$1 dev=$2 g=$3 addr=$4 sig=$5 port t0 t
	port=$(ur_port)
	UR_NS=${UR_SNS-$UR_NS} ur_start "$tag.server" ib_write_bw -d "$dev" -x "$g" -p "$port" -D 60
	if ! UR_NS=${UR_SNS-$UR_NS} ur_wait_listen "$port" "${UR_PID[$tag.server]}"; then
		ur_fail "$tag: the ib_write_bw server did not listen"
		ur_show "$tag.server"
		ur_stop "$tag.server"
		return 1
	fi
	UR_NS=${UR_CNS-$UR_NS} ur_start "$tag.client" ib_write_bw -d "$dev" -x "$g" -p "$port" -D 60 "$addr"
	sleep 3
	if ! kill -0 "${UR_PID[$tag.client]}" 2>/dev/null; then
		ur_fail "$tag: the client ended before its server could be signalled"
		ur_show "$tag.client"
		ur_stop "$tag.server"
		return 1
	fi
	ur_prog_signal "$tag.server" "$sig"
	t0=$(date +%s.%N)
	if ! ur_ends_within "$tag.client" 20; then
		ur_fail "$tag: the client still runs 20 s after its server got SIG$sig"
		ur_stop "$tag.client"
	else
		t=$(echo "$(date +%s.%N) $t0" | awk '{printf "%.1f", $1 - $2}')
		ur_wait "$tag.client"
		ur_pass "$tag: the client ended ${t} s after its server got SIG$sig"
		ur_expect_fail_fast "$tag.client" "$tag: the client of a server that got SIG$sig"
		ur_expect_grep "$tag.client" 'transport retry counter exceeded|Failed status 12' \
			"$tag: the client's writes end in retry exceeded"
	fi
	if [ "$sig" = STOP ]; then
		ur_prog_signal "$tag.server" CONT
		if ! ur_ends_within "$tag.server" 20; then
			ur_fail "$tag: the continued server still runs 20 s later"
			ur_stop "$tag.server"
		else
			ur_wait "$tag.server"
			ur_pass "$tag: the continued server ended (exit ${UR_RC[$tag.server]})"
		fi
	else
		ur_wait "$tag.server"
		ur_expect_eq "$tag: the killed server's exit" 137 "${UR_RC[$tag.server]}"
	fi
	ur_fresh_pair "$tag.fresh" "$dev" "$dev" "$addr" "$g" "$tag: a fresh ibv_rc_pingpong pair right after"
}

# fz_starved TAG DEV GID ADDR: an ibv_rc_pingpong pair, the server's
# threads on CPU 1 and the client's on CPU 0; 1 s into the run a
# real-time thread takes CPU 1 for 1.5 s; both sides must end well.
fz_starved() {
	local tag=$1 dev=$2 g=$3 addr=$4 port args=(-s 4096 -n 100000)
	if [ "$(nproc)" -lt 2 ]; then
		ur_log "$tag: not run: needs two CPUs ($(nproc) here)"
		return 0
	fi
	port=$(ur_port)
	UR_NS=${UR_SNS-$UR_NS} ur_start "$tag.server" taskset -c 1 ibv_rc_pingpong -d "$dev" -g "$g" \
		"${args[@]}" -p "$port"
	UR_NS=${UR_SNS-$UR_NS} ur_wait_listen "$port" "${UR_PID[$tag.server]}" ||
		ur_fail "$tag: the server did not listen"
	UR_NS=${UR_CNS-$UR_NS} ur_start "$tag.client" taskset -c 0 ibv_rc_pingpong -d "$dev" -g "$g" \
		"${args[@]}" -p "$port" "$addr"
	sleep 1
	ur_run "$tag.hog" integ_cpu_hog 1 1.5
	if [ "${UR_RC[$tag.hog]}" = 3 ]; then
		ur_log "$tag: not run: $(cat "$(ur_out "$tag.hog")")"
		ur_wait "$tag.client"
		ur_wait "$tag.server"
		return 0
	fi
	ur_expect_eq "$tag: the real-time thread spun its 1.5 s" 0 "${UR_RC[$tag.hog]}"
	ur_wait "$tag.client"
	ur_wait "$tag.server"
	ur_expect_pair_ok "$tag" "$tag: a server kept off the CPU for 1.5 s, its pair ends well"
}

g=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
ur_expect_eq "uroce0: GID index of ::ffff:127.0.0.1" 1 "$g"
[ -n "$g" ] || ur_done
fz_case stop.lo uroce0 "$g" 127.0.0.1 STOP

ur_netns_pair 1500
export UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A
fz_case stop.veth uroce1 1 "$UR_IP_B" STOP
fz_case kill.veth uroce1 1 "$UR_IP_B" KILL
fz_starved starved.veth uroce1 1 "$UR_IP_B"
ur_done
