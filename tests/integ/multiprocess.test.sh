#!/usr/bin/env bash
# ctest-timeout: 600
# Many uroce processes at once, and processes that die without cleaning up.
#
#  - one host (lo): four ibv_rc_pingpong pairs, two ib_write_bw pairs and an
#    ib_send_lat pair run at the same time: every process exits 0, every
#    local QP number printed is unique across all of them, and each client
#    names as its remote QPN the one its server printed;
#  - two namespaces: three ibv_rc_pingpong pairs at once, so that in each
#    namespace two of the three processes receive through the one that
#    serves UDP port 4791 (hand-off by QPN);
#  - kill -9 on one host: an ib_write_bw server killed mid-run leaves its
#    client failing on its own within seconds (retry exceeded, not a hang),
#    and a fresh pair works; twenty servers killed right after creating
#    their QPs leave no registry state that stops a fresh pair;
#  - kill -9 of the process serving port 4791 in a namespace, mid-run: a
#    pair whose processes do not serve the port keeps running to a clean
#    end (another process takes the port over within the retry budget), and
#    a fresh pair works afterwards.
. "$(dirname "$0")/lib.sh"
UR_TIMEOUT=120

# mp_qpns NAME: "local remote" QPNs (hex, lower case) printed by run NAME.
mp_local_qpns() {
	grep -oiE 'local address: *LID 0x?[0-9a-f]+,? QPN 0x[0-9a-f]+' "$(ur_out "$1")" |
		sed 's/.*QPN 0x//' | tr 'A-F' 'a-f'
}
mp_remote_qpns() {
	grep -oiE 'remote address: *LID 0x?[0-9a-f]+,? QPN 0x[0-9a-f]+' "$(ur_out "$1")" |
		sed 's/.*QPN 0x//' | tr 'A-F' 'a-f'
}

# mp_start_pairs TAG ADDR SDEV CDEV SPEC...: for each SPEC "name:prog args",
# a server (in UR_SNS) started and awaited until it listens, then, once all
# servers listen, all clients (in UR_CNS) at once.  Names in MP_NAMES.
mp_start_pairs() {
	local tag=$1 addr=$2 sdev=$3 cdev=$4 spec name prog port
	shift 4
	MP_NAMES=()
	declare -gA MP_PORT=() MP_PROG=() MP_ALONE=()
	MP_ADDR=$addr MP_SDEV=$sdev MP_CDEV=$cdev MP_SNS=${UR_SNS-} MP_CNS=${UR_CNS-}
	for spec in "$@"; do
		name=$tag.${spec%%:*}
		read -r -a prog <<< "${spec#*:}"
		port=$(ur_port)
		MP_PORT[$name]=$port
		MP_PROG[$name]=${spec#*:}
		UR_NS=${UR_SNS-} ur_start "$name.server" "${prog[@]}" -d "$sdev" -p "$port"
		UR_NS=${UR_SNS-} ur_wait_listen "$port" "${UR_PID[$name.server]}" ||
			ur_fail "$name: server did not listen on port $port"
		MP_NAMES+=("$name")
	done
	for spec in "$@"; do
		name=$tag.${spec%%:*}
		read -r -a prog <<< "${spec#*:}"
		UR_NS=${UR_CNS-} ur_start "$name.client" "${prog[@]}" -d "$cdev" -p "${MP_PORT[$name]}" "$addr"
	done
}

# mp_again NAME: a perftest pair whose program could not time itself
# (ur_clock_spoiled: its clock calibration, spoiled by a busy machine, not
# the device) runs again, alone, up to UR_CLOCK_TRIES times in all; marked
# in MP_ALONE, as its QPNs were not in use beside the others'.
mp_again() {
	local name=$1 try=1 port prog
	read -r -a prog <<< "${MP_PROG[$name]}"
	while [ "$try" -lt "$UR_CLOCK_TRIES" ] && ur_clock_spoiled "$name" "$try"; do
		port=$(ur_port)
		UR_SNS=$MP_SNS UR_CNS=$MP_CNS ur_pair "$name" "$port" \
			"${prog[@]}" -d "$MP_SDEV" -p "$port" -- "${prog[@]}" -d "$MP_CDEV" -p "$port" "$MP_ADDR"
		MP_ALONE[$name]=1
		try=$((try + 1))
	done
}

# mp_check_pairs [split]: every pair in MP_NAMES ended well; QPNs consistent
# between the two sides of each pair and unique on each host (with "split",
# servers and clients are on two hosts, each with its own numbers) among
# the pairs that ran together.
mp_check_pairs() {
	local name qpn all=() dups s c side
	for name in "${MP_NAMES[@]}"; do
		ur_wait "$name.client"
		ur_wait "$name.server"
	done
	for name in "${MP_NAMES[@]}"; do
		mp_again "$name"
	done
	for name in "${MP_NAMES[@]}"; do
		ur_expect_pair_ok "$name" "$name: $(ur_cmdline_of "$name.client")"
		ur_sanitizer_clean "$name.server"
		ur_sanitizer_clean "$name.client"
		s=$(mp_local_qpns "$name.server" | tr '\n' ' ')
		c=$(mp_remote_qpns "$name.client" | tr '\n' ' ')
		if [ -n "$s" ] && [ "$s" = "$c" ]; then
			ur_pass "$name: the client's remote QPNs are the server's ($s)"
		else
			ur_fail "$name: server printed local QPNs '$s', client printed remote '$c'"
		fi
		[ -n "${MP_ALONE[$name]:-}" ] && continue
		for side in server client; do
			for qpn in $(mp_local_qpns "$name.$side"); do
				if [ "${1:-}" = split ]; then all+=("$side:$qpn"); else all+=("$qpn"); fi
			done
		done
	done
	dups=$(printf '%s\n' "${all[@]}" | sort | uniq -d | tr '\n' ' ')
	if [ ${#all[@]} -gt 0 ] && [ -z "$dups" ]; then
		ur_pass "${#all[@]} local QPNs across $((2 * ${#MP_NAMES[@]})) processes are unique${1:+ per host}: ${all[*]}"
	else
		ur_fail "QPNs used by more than one process: '$dups' (all: ${all[*]})"
	fi
}

# mp_kill9 NAME: SIGKILL the program of run NAME (not its timeout wrapper).
mp_kill9() {
	ur_prog_signal "$1" KILL kill
}

# mp_running NAME SECONDS: run NAME is still running SECONDS from now (its
# output, a file, is block-buffered: progress cannot be read from it).
mp_running() {
	sleep "$2"
	kill -0 "${UR_PID[$1]:-0}" 2>/dev/null
}

# mp_fresh_pair TAG SDEV CDEV ADDR GID: a new ibv_rc_pingpong pair works.
mp_fresh_pair() {
	ur_fresh_pair "$@" "$1: a fresh ibv_rc_pingpong pair after the kill"
}

g=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
ur_expect_eq "uroce0: GID index of ::ffff:127.0.0.1" 1 "$g"
[ -n "$g" ] || ur_done

# --- many pairs at once on one host -------------------------------------------

mp_start_pairs lo 127.0.0.1 uroce0 uroce0 \
	"pp1:ibv_rc_pingpong -g $g -n 3000" \
	"pp2:ibv_rc_pingpong -g $g -n 3000 -e" \
	"pp3:ibv_rc_pingpong -g $g -n 1000 -s 65536" \
	"pp4:ibv_rc_pingpong -g $g -n 3000 -N" \
	"wbw1:ib_write_bw -x $g -n 2000" \
	"wbw2:ib_write_bw -x $g -n 2000 -q 2" \
	"slat:ib_send_lat -x $g -n 2000"
mp_check_pairs

# --- many pairs at once across namespaces --------------------------------------

ur_netns_pair 1500
ns_a=$UR_NS_A ns_b=$UR_NS_B ip_b=$UR_IP_B
UR_SNS=$ns_b UR_CNS=$ns_a mp_start_pairs veth "$ip_b" uroce1 uroce1 \
	"pp1:ibv_rc_pingpong -g 1 -n 2000" \
	"pp2:ibv_rc_pingpong -g 1 -n 2000 -e" \
	"pp3:ibv_rc_pingpong -g 1 -n 500 -s 65536 -c"
mp_check_pairs split

# --- kill -9 on one host ---------------------------------------------------------

port=$(ur_port)
ur_start k1.server ib_write_bw -d uroce0 -x "$g" -p "$port" -D 30
if ur_wait_listen "$port" "${UR_PID[k1.server]}"; then
	ur_start k1.client ib_write_bw -d uroce0 -x "$g" -p "$port" -D 30 127.0.0.1
	if mp_running k1.client 4; then
		mp_kill9 k1.server
		ur_wait k1.server
		UR_TIMEOUT=60 ur_wait k1.client
		ur_expect_eq "k1: the killed server's exit" 137 "${UR_RC[k1.server]}"
		ur_expect_fail_fast k1.client "k1: the client of a server killed mid-run"
		ur_expect_grep k1.client 'transport retry counter exceeded|Failed status 12' \
			"k1: the client's writes end in retry exceeded"
	else
		ur_fail "k1: the ib_write_bw client ended before its server could be killed"
		ur_show k1.client
	fi
else
	ur_fail "k1: ib_write_bw server did not listen"
	ur_show k1.server
fi
ur_stop k1.client
ur_stop k1.server
mp_fresh_pair k1.fresh uroce0 uroce0 127.0.0.1 "$g"

for i in $(seq 20); do
	port=$(ur_port)
	ur_start "k2.$i" ibv_rc_pingpong -d uroce0 -g "$g" -p "$port"
	ur_wait_listen "$port" "${UR_PID[k2.$i]}" || { ur_fail "k2.$i: server did not listen"; continue; }
	mp_kill9 "k2.$i"
	ur_wait "k2.$i"
done
ur_pass "twenty ibv_rc_pingpong servers killed with their QPs created"
mp_fresh_pair k2.fresh uroce0 uroce0 127.0.0.1 "$g"

# --- kill -9 of the process serving port 4791 in a namespace ---------------------

# r1 starts first on both sides: its processes serve port 4791 in their
# namespaces; r2's reach each other through them.
port1=$(ur_port)
UR_NS=$ns_b ur_start r1.server ib_write_bw -d uroce1 -x 1 -p "$port1" -D 40
UR_NS=$ns_b ur_wait_listen "$port1" "${UR_PID[r1.server]}" || ur_fail "r1: server did not listen"
UR_NS=$ns_a ur_start r1.client ib_write_bw -d uroce1 -x 1 -p "$port1" -D 40 "$ip_b"
mp_running r1.client 3 || ur_fail "r1: the ib_write_bw client ended early"
port2=$(ur_port)
# r2's server says (info) when it takes the port over, and from whom.
UR_ENV=(UROCE_LOG=info)
UR_NS=$ns_b ur_start r2.server ibv_rc_pingpong -d uroce1 -g 1 -p "$port2" -n 40000 -s 1024
UR_ENV=()
UR_NS=$ns_b ur_wait_listen "$port2" "${UR_PID[r2.server]}" || ur_fail "r2: server did not listen"
UR_NS=$ns_a ur_start r2.client ibv_rc_pingpong -d uroce1 -g 1 -p "$port2" -n 40000 -s 1024 "$ip_b"
# The server stops listening once the client has exchanged its address:
# from then on r2 runs, and the kill lands mid-run on a machine of any speed.
for _ in $(seq 200); do
	ur_nsexec "$ns_b" ss -Htln "sport = :$port2" 2>/dev/null | grep -q . || break
	sleep 0.05
done
sleep 0.3
if kill -0 "${UR_PID[r2.client]}" 2>/dev/null; then
	r1pid=$(ur_prog_pid r1.server)
	mp_kill9 r1.server
	ur_wait r1.server
	ur_expect_eq "r1: the killed server (serving port 4791 in its namespace)" 137 "${UR_RC[r1.server]}"
else
	ur_fail "r2 ended before r1's server could be killed mid-run"
fi
ur_wait r2.client
ur_wait r2.server
ur_expect_pair_ok r2 "r2: ibv_rc_pingpong -n 40000 through a port-4791 owner killed mid-run"
ur_expect_grep r2.client '^40000 iters' "r2: the client completed every iteration"
# It watched the router's exit (a pidfd): told at once, not at its next
# election, which on a loaded host came after the client's retries were
# spent (RETRY_EXC_ERR on both sides, about 1 run in 10 under load).
ur_expect_grep r2.server "port 4791, pid ${r1pid:-none}, has ended: this one takes the port over" \
	"r2: its server took port 4791 over from the killed process"
UR_TIMEOUT=60 ur_wait r1.client
ur_expect_fail_fast r1.client "r1: the client of the killed server"
UR_SNS=$ns_b UR_CNS=$ns_a mp_fresh_pair r.fresh uroce1 uroce1 "$ip_b" 1
ur_done
