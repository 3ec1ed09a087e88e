#!/usr/bin/env bash
# ctest-timeout: 240
# `uroce srq-server` / `uroce srq-client`: one server, one SRQ and one CQ,
# many RC connections from several client processes.
#  - 100 connections (4 processes x 25) send 500 messages each: every client
#    exits 0, the server exits 0 and its table has 100 rows, each with
#    exactly 500 messages and 500 x size bytes, state done;
#  - one client process killed (kill -9) mid-run (it declared more
#    messages than it can send by then) while three others complete:
#    the others' 75 rows are done with exact counts, the killed
#    process's 25 rows are aborted, the server exits 1 and says so;
#  - 1000 connections (4 processes x 250, 20 messages each), all counted;
#  - across two namespaces: 10 connections counted exactly;
#  - refusals: a client over the server's -q is told so (exit 1), a client
#    whose -s exceeds the server's buffers exits 1 naming it, no server
#    exits 1, bad arguments exit 2; SIGTERM prints the table.
. "$(dirname "$0")/lib.sh"
UR_TIMEOUT=120
U=$UR_BUILD/bin/uroce

# srq_rows TAG STATE: how many rows of the server's table have STATE.
srq_rows() {
	awk -v st="$2" '$1 ~ /^[0-9]+$/ && $3 ~ /^0x/ && ($6 == st || $6 == st ":") { n++ } END { print n + 0 }' "$(ur_out "$1")"
}
# srq_exact TAG MSGS BYTES [STATE]: rows whose counts are exactly MSGS and
# BYTES (and whose state is STATE, if given).
srq_exact() {
	awk -v m="$2" -v b="$3" -v st="${4:-}" '$1 ~ /^[0-9]+$/ && $3 ~ /^0x/ && $4 == m && $5 == b &&
		(st == "" || $6 == st) { n++ } END { print n + 0 }' "$(ur_out "$1")"
}

# srq_run TAG PROCS CONNS MSGS SIZE [SERVER_ARGS...]: a server for PROCS x
# CONNS clients and PROCS client processes; waits for all.
srq_run() {
	local tag=$1 procs=$2 conns=$3 msgs=$4 size=$5 port i
	shift 5
	port=$(ur_port)
	ur_start "$tag.server" "$U" srq-server -p "$port" -q $((procs * conns)) -n "$msgs" "$@"
	ur_wait_listen "$port" "${UR_PID[$tag.server]}" || { ur_fail "$tag: server did not listen"; ur_show "$tag.server"; return 1; }
	for ((i = 1; i <= procs; i++)); do
		ur_start "$tag.client$i" "$U" srq-client -p "$port" -c "$conns" -n "$msgs" -s "$size" 127.0.0.1
	done
	SRQ_PORT=$port
}

# --- 100 connections from 4 processes ---------------------------------------------
srq_run c100 4 25 500 64
for i in 1 2 3 4; do
	ur_wait c100.client$i
	ur_expect_rc c100.client$i 0 "c100: client process $i"
	ur_expect_grep c100.client$i "25 connections, 12500 messages .*the server confirmed 25 of 25" "c100: client $i confirmed"
done
ur_wait c100.server
ur_expect_rc c100.server 0 "c100: server"
ur_expect_eq "c100: rows done" 100 "$(srq_rows c100.server done)"
ur_expect_eq "c100: rows with exactly 500 messages, 32000 bytes" 100 "$(srq_exact c100.server 500 32000)"
ur_expect_grep c100.server "^total: 100 clients \(100 done, 0 aborted, 0 bad, 0 refused, 0 still running\); 50000 messages, 3200000 bytes" "c100: totals"

# --- one client process killed mid-run ------------------------------------------------
# The server takes the count each client declares (no -n): the victim
# declares far more messages than it can send before it is killed, so its
# 25 connections are mid-run whenever the kill lands, however fast the
# machine.
port=$(ur_port)
ur_start kill.server "$U" srq-server -p "$port" -q 100
ur_wait_listen "$port" "${UR_PID[kill.server]}" || { ur_fail "kill: server did not listen"; ur_show kill.server; }
for i in 1 2 3 4; do
	n=3000
	[ "$i" = 2 ] && n=100000000
	ur_start "kill.client$i" "$U" srq-client -p "$port" -c 25 -n "$n" -s 64 127.0.0.1
done
victim=$(ur_prog_pid kill.client2)
# Once it has sent something (the server's table is printed only at the end,
# so wait for the other side: its QPs exist once the client is connected).
sleep 1.5
kill -9 "$victim"
ur_wait kill.client2
ur_expect_eq "kill: client 2 died of SIGKILL" 137 "${UR_RC[kill.client2]}"
for i in 1 3 4; do
	ur_wait kill.client$i
	ur_expect_rc kill.client$i 0 "kill: client process $i undisturbed"
done
ur_wait kill.server
ur_expect_rc kill.server 1 "kill: server reports the aborted clients (exit 1)"
ur_expect_eq "kill: rows done" 75 "$(srq_rows kill.server done)"
# (done: a victim's connection may be cut at exactly 3000 too.)
ur_expect_eq "kill: rows done with exactly 3000 messages" 75 "$(srq_exact kill.server 3000 192000 done)"
ur_expect_eq "kill: rows aborted" 25 "$(srq_rows kill.server aborted)"
ur_expect_grep kill.server "aborted: disconnected after [0-9]+ messages, before saying it was done" "kill: the aborted rows say why"
ur_expect_grep kill.server "^total: 100 clients \(75 done, 25 aborted, 0 bad" "kill: totals"

# --- 1000 connections -------------------------------------------------------------------
srq_run c1000 4 250 20 64
for i in 1 2 3 4; do
	ur_wait c1000.client$i
	ur_expect_rc c1000.client$i 0 "c1000: client process $i (250 connections)"
done
ur_wait c1000.server
ur_expect_rc c1000.server 0 "c1000: server"
ur_expect_eq "c1000: rows with exactly 20 messages, 1280 bytes" 1000 "$(srq_exact c1000.server 20 1280)"

# --- refusals ---------------------------------------------------------------------------
port=$(ur_port)
ur_start full.server "$U" srq-server -p "$port" -q 1 -s 128
ur_wait_listen "$port" "${UR_PID[full.server]}"
ur_run big.client "$U" srq-client -p "$port" -s 4096 127.0.0.1
ur_expect_rc big.client 1 "-s beyond the server's: exit 1"
ur_expect_grep big.client "-s 4096 exceeds the server's receive buffers \(128 bytes" "-s beyond the server's: says so"
ur_wait full.server
ur_expect_grep full.server "refused: its -s 4096 is outside 16..128" "the server says why it refused"

port=$(ur_port)
ur_start full2.server "$U" srq-server -p "$port" -q 1 --duration 20
ur_wait_listen "$port" "${UR_PID[full2.server]}"
ur_run full2.client "$U" srq-client -p "$port" -c 2 -n 10 127.0.0.1
ur_expect_rc full2.client 1 "a client beyond -q: exit 1"
ur_expect_grep full2.client "the server already serves as many clients as its -q allows" "a client beyond -q is told so"
ur_wait full2.server
ur_expect_grep full2.server "refused a client from .*: already served -q 1 clients" "the server says it refused one"

port=$(ur_port)
ur_start term.server "$U" srq-server -p "$port" -q 5
ur_wait_listen "$port" "${UR_PID[term.server]}"
ur_run term.client "$U" srq-client -p "$port" -c 2 -n 10 127.0.0.1
ur_expect_rc term.client 0 "two clients of five"
ur_stop term.server
ur_expect_rc term.server 0 "SIGTERM: the server stops, exit 0 (nothing went wrong)"
ur_expect_grep term.server "stopped by SIGTERM" "SIGTERM: the server prints its table"
ur_expect_eq "SIGTERM: rows with exactly 10 messages" 2 "$(srq_exact term.server 10 640)"

port=$(ur_port)
ur_run none.client "$U" srq-client -p "$port" 127.0.0.1
ur_expect_rc none.client 1 "no server: exit 1"
ur_expect_grep none.client "no server at 127.0.0.1:$port: connection refused; start \`uroce srq-server\`" "no server: says so"
ur_run bad1 "$U" srq-client
ur_expect_rc bad1 2 "srq-client without SERVER: exit 2"
ur_run bad2 "$U" srq-server -q 0
ur_expect_rc bad2 2 "srq-server -q 0: exit 2"
ur_run bad3 "$U" srq-client -s 8 127.0.0.1
ur_expect_rc bad3 2 "srq-client -s 8 (below the header): exit 2"

# --- two namespaces -----------------------------------------------------------------------
ur_netns_pair
port=$(ur_port)
UR_NS=$UR_NS_A ur_start ns.server "$U" srq-server -p "$port" -q 10 -n 200
UR_NS=$UR_NS_A ur_wait_listen "$port" "${UR_PID[ns.server]}"
UR_NS=$UR_NS_B ur_run ns.client "$U" srq-client -p "$port" -c 10 -n 200 -s 256 "$UR_IP_A"
ur_expect_rc ns.client 0 "netns: client (10 connections)"
ur_wait ns.server
ur_expect_rc ns.server 0 "netns: server"
ur_expect_eq "netns: rows with exactly 200 messages, 51200 bytes" 10 "$(srq_exact ns.server 200 51200)"

ur_done
