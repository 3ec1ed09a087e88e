#!/usr/bin/env bash
# ctest-timeout: 600
# `uroce capture` with unmodified clients: on one host (shared memory, the
# default, and the unix sockets UD takes) and between two namespaces joined
# by a veth (UDP), capture runs while ibv_rc_pingpong, ib_write_bw,
# ib_read_bw, ib_atomic_bw (fetch-add and compare-swap), ibv_ud_pingpong and
# uroce pingpong with send/write with immediate run.  For each file:
#  - tshark decodes every frame as InfiniBand over UDP 4791 (RRoCE), none
#    malformed and no expert error, and every opcode the run uses is there;
#  - capture_check.py finds every ICRC equal to the one the headers shown
#    and the bytes give, and the lengths adding up;
#  - the capture reports no copy dropped;
#  - between namespaces, packets of both directions, each once (the peer's
#    namespace is not captured: what arrives is received, what leaves sent).
# Filters: --pid keeps only the packets of that process (another pair runs
# meanwhile and is counted as filtered out); --qp only those to that QP.
# Overload: with the capture stopped (SIGSTOP), ib_write_bw still ends well
# and the copies dropped are reported.
# -c stops after COUNT; -C/-W write a ring of files, each decodable.
# Off: with nothing capturing, a listener on the capture's socket sees no
# process connect, and no file but the switch is made.
. "$(dirname "$0")/lib.sh"
command -v tshark >/dev/null || ur_skip "tshark missing (apt-get install tshark)"
for p in ibv_rc_pingpong ibv_ud_pingpong ib_write_bw ib_read_bw ib_atomic_bw stdbuf; do
	command -v "$p" >/dev/null || ur_skip "$p missing"
done
UR_TIMEOUT=120
UR_KILL_AFTER=30
UROCE=$UR_BUILD/bin/uroce
CHECK=$UR_SRC/tests/integ/capture_check.py

# cap_start NAME ARGS...: `uroce capture -w $UR_TMP/NAME.pcapng ARGS` in
# UR_NS, awaited until it captures.
cap_start() {
	local name=$1
	shift
	ur_start "cap.$name" "$UROCE" capture -w "$UR_TMP/$name.pcapng" "$@"
	for _ in $(seq 100); do
		grep -q capturing "$(ur_out "cap.$name")" && return 0
		[ -n "${UR_PID[cap.$name]:-}" ] && kill -0 "${UR_PID[cap.$name]}" 2>/dev/null || break
		sleep 0.1
	done
	ur_fail "capture $name did not start"
	ur_show "cap.$name"
	return 1
}

# cap_stop NAME: SIGTERM (timeout(1) passes it on); it must exit 0 and
# report its count.  Awaited whole: a loaded machine may take its time (an
# ASan build's exit, its leak check included, once took over 5 s, which
# timeout(1)'s KILL cut short: UR_KILL_AFTER gives it 30 s).
cap_stop() {
	local t0
	t0=$(date +%s%N)
	kill -TERM "${UR_PID[cap.$1]}"
	ur_wait "cap.$1"
	ur_expect_rc "cap.$1" 0 "capture $1 stops cleanly on SIGTERM" &&
		echo "    (ended $(( ($(date +%s%N) - t0) / 1000000 )) ms after SIGTERM)"
	ur_expect_grep "cap.$1" 'packets written' "capture $1 reports"
}

# tsk NAME ARGS...: tshark on NAME's file.
tsk() {
	local name=$1
	shift
	tshark -r "$UR_TMP/$name.pcapng" "$@" 2>/dev/null
}

# cap_decoded NAME OPCODE...: the file of capture NAME decodes wholly as
# RoCEv2 with every OPCODE (BTH opcode numbers) present, ICRCs right, and
# nothing dropped.
cap_decoded() {
	local name=$1 total ib bad err ops missing= op chk
	shift
	total=$(tsk "$name" | wc -l)
	ib=$(tsk "$name" -Y 'udp.dstport == 4791 && infiniband' | wc -l)
	bad=$(tsk "$name" -Y '_ws.malformed || _ws.expert.severity >= "error"' | wc -l)
	ops=$(tsk "$name" -T fields -e infiniband.bth.opcode | sort -n | uniq | tr '\n' ' ')
	for op in "$@"; do
		case " $ops" in *" $op "*) ;; *) missing+=" $op" ;; esac
	done
	if [ "$total" -gt 0 ] && [ "$ib" = "$total" ] && [ "$bad" = 0 ] && [ -z "$missing" ]; then
		ur_pass "$name: $total frames, all RoCEv2, none malformed; opcodes $ops"
	else
		ur_fail "$name: $total frames, $ib RoCEv2, $bad malformed or in error; opcodes $ops; missing:${missing:- none}"
	fi
	chk=$(python3 "$CHECK" "$UR_TMP/$name.pcapng")
	ur_expect_eq "$name: ICRCs and lengths ($chk)" "packets $total icrc_bad 0 other 0" "$chk"
	ur_expect_grep "cap.$name" ' 0 dropped by processes' "$name: no copy dropped"
}

# run_pair NAME ARGS... -- CLIENT_EXTRA: one server/client pair of ARGS (TCP
# port given as -p), the client with CLIENT_EXTRA appended.
run_pair() {
	local name=$1 port a s=() c=() seen=0 try
	shift
	for a in "$@"; do
		if [ $seen = 0 ] && [ "$a" = -- ]; then seen=1; continue; fi
		if [ $seen = 0 ]; then s+=("$a"); else c+=("$a"); fi
	done
	for try in $(seq "$UR_CLOCK_TRIES"); do
		port=$(ur_port)
		ur_pair "$name" "$port" "${s[@]}" -p "$port" -- "${s[@]}" -p "$port" "${c[@]}"
		ur_clock_spoiled "$name" "$try" || break
	done
	ur_expect_pair_ok "$name" "$name: ${s[*]}"
}

# workload TAG DEV GID SERVER_ADDR: the run under capture TAG.
workload() {
	local tag=$1 dev=$2 gid=$3 addr=$4
	run_pair "$tag.rc" ibv_rc_pingpong -d "$dev" -g "$gid" -s 4096 -n 20 -- "$addr"
	run_pair "$tag.write" ib_write_bw -d "$dev" -x "$gid" -s 8192 -n 50 -- "$addr"
	run_pair "$tag.read" ib_read_bw -d "$dev" -x "$gid" -s 8192 -n 50 -- "$addr"
	run_pair "$tag.faa" ib_atomic_bw -d "$dev" -x "$gid" -n 50 -- "$addr"
	run_pair "$tag.cas" ib_atomic_bw -d "$dev" -x "$gid" -n 50 -A CMP_AND_SWAP -- "$addr"
	run_pair "$tag.ud" ibv_ud_pingpong -d "$dev" -g "$gid" -s 512 -n 20 -- "$addr"
	run_pair "$tag.sendimm" "$UROCE" pingpong -d "$dev" -g "$gid" --op send-imm -s 2048 -n 20 -- "$addr"
	run_pair "$tag.writeimm" "$UROCE" pingpong -d "$dev" -g "$gid" --op write-imm -s 64 -n 20 -- "$addr"
}

# --- one host ----------------------------------------------------------------
# In a namespace of the test's own (lo alone), where one can be made: a
# capture records every process of the user in its namespace, and other
# tests' processes beside this one would be in its file (received copies
# of their CM's datagrams, say) and in its counts.
if ur_netns_new UR_NS_HOST; then
	export UR_NS=$UR_NS_HOST
else
	ur_log "one host in this namespace ($UR_NETNS_WHY): run it alone"
fi
ino=$(ur_netns_ino "$UR_NS")
g4=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
ur_expect_eq "uroce0: GID index of ::ffff:127.0.0.1" 1 "$g4"
[ -n "$g4" ] || ur_done

# Off: nothing connects to the capture's socket, no file appears.
ur_start off.listen python3 -c '
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind("\0uroce-capture-%d" % os.getuid())
s.listen(64)
s.setblocking(False)
print("listening", flush=True)
n = 0
while not os.path.exists(sys.argv[1]):
    try:
        s.accept()
        n += 1
    except BlockingIOError:
        time.sleep(0.05)
print("connections", n)' "$UR_TMP/off.stop"
for _ in $(seq 50); do grep -q listening "$(ur_out off.listen)" && break; sleep 0.1; done
run_pair off.rc ibv_rc_pingpong -d uroce0 -g "$g4" -n 20 -- 127.0.0.1
run_pair off.ud ibv_ud_pingpong -d uroce0 -g "$g4" -n 20 -- 127.0.0.1
: > "$UR_TMP/off.stop"
ur_wait off.listen
ur_expect_grep off.listen '^connections 0$' "capture off: no process connects to the capture's socket"
ur_expect_eq "capture off: the namespace's files in /dev/shm (none but the registry, its lock and the switch)" \
	"" "$(ls /dev/shm | grep -- "-net$ino[.-]" | grep -Ev -- "-net$ino(-v[0-9]+|\.router|\.capture)$")"

cap_start host || ur_done
workload host uroce0 "$g4" 127.0.0.1
cap_stop host
# Shared memory: WRITE and READ payloads go straight between the processes
# (their packets carry the headers, said in the comment); UD takes the unix
# sockets.
cap_decoded host 0 1 2 5 10 11 12 16 17 18 19 20 100
ur_expect_eq "host: every packet once, as sent (no received copies)" 0 \
	"$(tsk host -Y 'frame.p2p_dir == 1' | wc -l)"

# --pid: the packets of one process, while another pair runs too.
port=$(ur_port)
ur_start pid.server ibv_rc_pingpong -d uroce0 -g "$g4" -n 20 -p "$port"
spid=$(ur_prog_pid pid.server)
ur_wait_listen "$port" "${UR_PID[pid.server]}"
cap_start pid --pid "$spid" || ur_done
ur_start pid.client ibv_rc_pingpong -d uroce0 -g "$g4" -n 20 -p "$port" 127.0.0.1
ur_wait pid.client
ur_wait pid.server
run_pair pid.other ibv_rc_pingpong -d uroce0 -g "$g4" -n 20 -- 127.0.0.1
cap_stop pid
# 20 iterations each way of 4 packets and an ACK, and any retransmissions.
n=$(tsk pid | wc -l)
[ "$n" -ge 200 ] && ur_pass "--pid $spid: $n packets (at least 200)" ||
	ur_fail "--pid $spid: $n packets, fewer than the run's 200"
ur_expect_eq "--pid $spid: every packet names it" 0 \
	"$(tsk pid -T fields -e frame.comment | grep -vc "pid $spid ")"
ur_expect_grep cap.pid 'written, [1-9][0-9]* filtered out' "--pid: the other pair filtered out"

# --qp: the server's QP number, printed before it waits for its client.
port=$(ur_port)
ur_start qp.server stdbuf -oL ibv_rc_pingpong -d uroce0 -g "$g4" -n 20 -p "$port"
for _ in $(seq 100); do grep -q 'local address' "$(ur_out qp.server)" && break; sleep 0.1; done
sqp=$(sed -n 's/.*local address.*QPN \(0x[0-9a-f]*\).*/\1/p' "$(ur_out qp.server)")
cap_start qp --qp "$sqp" || ur_done
ur_start qp.client ibv_rc_pingpong -d uroce0 -g "$g4" -n 20 -p "$port" 127.0.0.1
ur_wait qp.client
ur_wait qp.server
cap_stop qp
# 20 messages of 4 packets and 20 ACKs to it, and any retransmissions.
n=$(tsk qp | wc -l)
[ "$n" -ge 100 ] && ur_pass "--qp $sqp: $n packets (at least 100)" ||
	ur_fail "--qp $sqp: $n packets, fewer than the run's 100"
ur_expect_eq "--qp $sqp: all to it" "$n" \
	"$(tsk qp -Y "infiniband.bth.destqp == $sqp" | wc -l)"
ur_expect_grep cap.qp 'written, [1-9][0-9]* filtered out' "--qp: the other direction filtered out"

# Overload: a capture that stops reading (SIGSTOP) never holds the run up;
# the copies that find no room are dropped, counted and reported, and what
# was written is whole.
cap_start stall || ur_done
cpid=$(ur_prog_pid cap.stall)
kill -STOP "$cpid"
run_pair stall.write ib_write_bw -d uroce0 -x "$g4" -s 64 -n 100000 -- 127.0.0.1
kill -CONT "$cpid"
cap_stop stall
ur_expect_grep cap.stall ' [1-9][0-9]* dropped by processes' "overload: dropped copies reported"
ur_expect_eq "overload: what was written decodes, none malformed" 0 \
	"$(tsk stall -Y '_ws.malformed || !infiniband' | wc -l)"

# A capture that died switched on, and another user's process on the
# capture's socket name: processes connect, find the listener not their
# user's, and send it nothing; the run is not held up.
switch=/dev/shm/uroce-$(id -u)-net$ino.capture
set_switch() {
	python3 -c '
import mmap, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
m = mmap.mmap(fd, 64)
on, session = struct.unpack_from("<II", m, 8)
struct.pack_into("<II", m, 8, int(sys.argv[2]), session + int(sys.argv[2]))
m.close()' "$switch" "$1"
}
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && getent passwd nobody >/dev/null; then
	ur_start squat.listen setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 -c '
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind("\0uroce-capture-0")
s.listen(64)
s.setblocking(False)
print("listening", flush=True)
conns, got = [], 0
while not os.path.exists(sys.argv[1]):
    try:
        c, _ = s.accept()
        c.setblocking(False)
        conns.append(c)
    except BlockingIOError:
        time.sleep(0.05)
    for c in conns:
        try:
            got += len(c.recv(65536))
        except (BlockingIOError, ConnectionError):
            pass
print("connections", len(conns), "bytes", got)' "$UR_TMP/squat.stop"
	for _ in $(seq 50); do grep -q listening "$(ur_out squat.listen)" && break; sleep 0.1; done
	set_switch 1
	run_pair squat.rc ibv_rc_pingpong -d uroce0 -g "$g4" -n 20 -- 127.0.0.1
	set_switch 0
	: > "$UR_TMP/squat.stop"
	ur_wait squat.listen
	ur_expect_grep squat.listen '^connections [1-9][0-9]* bytes 0$' \
		"switched on with another user's listener: processes connect, send nothing"
fi

# -c: stops by itself.
ur_start cap.count "$UROCE" capture -w "$UR_TMP/count.pcapng" -c 7
for _ in $(seq 50); do grep -q capturing "$(ur_out cap.count)" && break; sleep 0.1; done
run_pair count.rc ibv_rc_pingpong -d uroce0 -g "$g4" -n 20 -- 127.0.0.1
ur_wait cap.count
ur_expect_rc cap.count 0 "-c 7 ends the capture"
ur_expect_eq "-c 7: packets in the file" 7 "$(tsk count | wc -l)"

# --- two namespaces ------------------------------------------------------------
export UR_NS=
ur_netns_pair 1500
export UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A
sdev=$(UR_NS=$UR_NS_B ur_dev_of "$UR_IP_B")
gs=$(UR_NS=$UR_NS_B ur_gid_index "$sdev" "::ffff:$UR_IP_B")
gc=$(UR_NS=$UR_NS_A ur_gid_index "$sdev" "::ffff:$UR_IP_A")
ur_expect_eq "one GID index for both sides" "$gs" "$gc"

UR_NS=$UR_NS_A cap_start veth || ur_done
workload veth "$sdev" "$gs" "$UR_IP_B"
cap_stop veth
# UDP: payloads in packets, cut at the path MTU (1024 on a 1500-byte veth):
# a 2 KiB send with immediate is a FIRST and a LAST with immediate.
cap_decoded veth 0 1 2 3 6 7 8 11 12 13 14 15 17 18 19 20 100
sent=$(tsk veth -Y 'frame.p2p_dir == 0' | wc -l)
rcvd=$(tsk veth -Y 'frame.p2p_dir == 1' | wc -l)
ur_expect_eq "veth: sent packets all from $UR_IP_A" "$sent" \
	"$(tsk veth -Y "frame.p2p_dir == 0 && ip.src == $UR_IP_A" | wc -l)"
ur_expect_eq "veth: received packets all from $UR_IP_B" "$rcvd" \
	"$(tsk veth -Y "frame.p2p_dir == 1 && ip.src == $UR_IP_B" | wc -l)"
[ "$sent" -gt 0 ] && [ "$rcvd" -gt 0 ] && ur_pass "veth: $sent sent, $rcvd received" ||
	ur_fail "veth: $sent sent, $rcvd received"
# Each packet once: none recorded both as sent and as received (a
# retransmission is a packet of its own, sent again).
ur_expect_eq "veth: no packet both sent and received" 0 "$(tsk veth -T fields -e ip.src \
	-e infiniband.bth.destqp -e infiniband.bth.psn -e infiniband.bth.opcode -e frame.p2p_dir |
	awk '{ k = $1 " " $2 " " $3 " " $4; d[k] = d[k] $5 } END { for (k in d)
		if (d[k] ~ /0/ && d[k] ~ /1/) n++; print n + 0 }')"

# -i: the server's namespace device, by its interface name; a ring of files.
UR_NS=$UR_NS_B cap_start ring -C 1 -W 3 -i "$UR_IF_B" || ur_done
run_pair veth.ring ib_write_bw -d "$sdev" -x "$gs" -s 65536 -n 100 -- "$UR_IP_B"
cap_stop ring
for f in 0 1 2; do
	[ -s "$UR_TMP/ring.pcapng$f" ] || { ur_fail "ring: file $f missing"; continue; }
	sz=$(stat -c %s "$UR_TMP/ring.pcapng$f")
	t=$(tshark -r "$UR_TMP/ring.pcapng$f" 2>/dev/null | wc -l)
	b=$(tshark -r "$UR_TMP/ring.pcapng$f" -Y '_ws.malformed' 2>/dev/null | wc -l)
	[ "$sz" -le 1000000 ] && [ "$t" -gt 0 ] && [ "$b" = 0 ] &&
		ur_pass "ring: file $f, $sz bytes, $t frames" ||
		ur_fail "ring: file $f, $sz bytes, $t frames, $b malformed"
done
[ -e "$UR_TMP/ring.pcapng3" ] && ur_fail "ring: a fourth file" || ur_pass "ring: three files"

ur_done
