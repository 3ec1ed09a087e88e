#!/usr/bin/env bash
# ctest-timeout: 240
# `uroce pingpong`, server and client processes:
#  - on one host (lo): every operation on RC with --validate at 1 B, 4 KiB
#    and 64 KiB (send and write also at 1 MiB), the UC and UD ones, --events
#    and --inline once: both sides exit 0, report every iteration and say
#    every message was validated;
#  - across two namespaces joined by a veth (no -d, no -g: each side finds
#    the device and GID that reach the other): send, write-imm, read, cas
#    on RC, write on UC, send-imm on UD; an MTU mismatch (1500 vs 9000
#    bytes): automatic MTU works, -m 4096 fails on both sides naming it;
#  - failures: an IPv6 GID index against an IPv4 peer (and the reverse)
#    names the index that reaches the peer and exits 1; no server exits 1 saying so; a refused op/QP
#    combination, an unknown option and a bad size exit 2; mismatched
#    options on both sides exit 1 naming both.
. "$(dirname "$0")/lib.sh"
UR_TIMEOUT=60
U=$UR_BUILD/bin/uroce

# pp_ok TAG ITERS ARGS...: a pair on lo with ARGS on both sides.
pp_ok() {
	local tag=$1 iters=$2 port
	shift 2
	port=$(ur_port)
	ur_pair "$tag" "$port" "$U" pingpong -p "$port" -n "$iters" "$@" \
		-- "$U" pingpong -p "$port" -n "$iters" "$@" 127.0.0.1
	pp_check "$tag" "$iters" "$*"
}

# pp_check TAG ITERS WHAT: both sides of pair TAG finished all iterations,
# and validated when asked to.
pp_check() {
	local tag=$1 iters=$2 what=$3
	ur_expect_pair_ok "$tag" "pingpong $what" || return
	ur_expect_grep "$tag.client" "^$iters iters in [0-9.]+ seconds = [0-9.]+ usec/iter" \
		"$tag: client ran $iters iterations"
	ur_expect_grep "$tag.client" "^  remote address: LID 0x0000, QPN 0x[0-9a-f]{6}, PSN 0x[0-9a-f]{6}, GID " \
		"$tag: client prints the remote address"
	case $what in
	*--validate*)
		case $what in
		*read*) ur_expect_grep "$tag.client" "^validated: $iters messages" "$tag: client validated all" ;;
		*cas*|*faa*)
			ur_expect_grep "$tag.client" "^validated: $iters atomic results" "$tag: client checked every result"
			ur_expect_grep "$tag.server" "^validated: 1 final atomic word" "$tag: server checked the final word" ;;
		*)
			ur_expect_grep "$tag.client" "^validated: $iters messages" "$tag: client validated all"
			ur_expect_grep "$tag.server" "^validated: $iters messages" "$tag: server validated all" ;;
		esac ;;
	esac
}

# --- one host -----------------------------------------------------------------
for op in send send-imm write write-imm read; do
	pp_ok "rc.$op.1" 200 --op "$op" -s 1 --validate
	pp_ok "rc.$op.4k" 200 --op "$op" -s 4096 --validate
	pp_ok "rc.$op.64k" 50 --op "$op" -s 65536 --validate
done
pp_ok rc.send.1m 10 --op send -s 1048576 --validate
pp_ok rc.write.1m 10 --op write -s 1048576 --validate
pp_ok rc.read.1m 10 --op read -s 1048576 --validate
pp_ok rc.cas 500 --op cas --validate
pp_ok rc.faa 500 --op faa --validate
pp_ok rc.events 200 --op send-imm -s 4096 --validate --events
pp_ok rc.inline 200 --op write -s 64 --validate --inline
for op in send send-imm write write-imm; do
	pp_ok "uc.$op" 200 --qp uc --op "$op" -s 4096 --validate
done
pp_ok uc.64k 50 --qp uc --op write-imm -s 65536 --validate
pp_ok ud.send 200 --qp ud --op send -s 1024 --validate
pp_ok ud.send-imm.4k 200 --qp ud --op send-imm -s 4096 --validate --events

# --- failures -------------------------------------------------------------------
port=$(ur_port)
UR_TIMEOUT=30 ur_pair gidfam "$port" "$U" pingpong -p "$port" -g 1 \
	-- "$U" pingpong -p "$port" -g 2 127.0.0.1
ur_expect_rc gidfam.server 1 "server -g 1, client -g 2: server exits 1"
ur_expect_rc gidfam.client 1 "server -g 1, client -g 2: client exits 1"
ur_expect_grep gidfam.client "failed to modify QP to RTR: Invalid argument; GID index 2 \(::1\) does not reach the peer 127.0.0.1, GID index 1 \(uroce0, lo\) does: use -g 1" \
	"client -g 2 (IPv6) to an IPv4 peer: names GID index 1"
ur_expect_grep gidfam.server "GID index 0 \(uroce0, lo\) does: use -g 0" \
	"server -g 1 (IPv4) to an IPv6 peer: names GID index 0 (lo's copy of ::1)"

port=$(ur_port)
ur_run noserver "$U" pingpong -p "$port" 127.0.0.1
ur_expect_rc noserver 1 "no server: exit 1"
ur_expect_grep noserver "^no server at 127.0.0.1:$port: connection refused; start \`uroce pingpong\`" \
	"no server: says so and what to start"

ur_run uc-read "$U" pingpong --qp uc --op read 127.0.0.1
ur_expect_rc uc-read 2 "--qp uc --op read: exit 2"
ur_expect_grep uc-read "UC carries SEND and RDMA WRITE only" "--qp uc --op read: says why"
ur_run ud-write "$U" pingpong --qp ud --op write
ur_expect_rc ud-write 2 "--qp ud --op write: exit 2"
ur_run ud-big "$U" pingpong --qp ud -s 8192
ur_expect_rc ud-big 2 "--qp ud -s 8192: exit 2"
ur_expect_grep ud-big "one packet" "--qp ud -s 8192: says a UD message is one packet"
ur_run badopt "$U" pingpong --bogus
ur_expect_rc badopt 2 "unknown option: exit 2"
ur_run badop "$U" pingpong --op swap
ur_expect_rc badop 2 "unknown --op: exit 2"
ur_run cas-size "$U" pingpong --op cas -s 16
ur_expect_rc cas-size 2 "--op cas -s 16: exit 2"
ur_run help "$U" pingpong --help
ur_expect_rc help 0 "--help: exit 0"
ur_expect_grep help "^examples:" "--help shows examples"

port=$(ur_port)
UR_TIMEOUT=30 ur_pair mismatch "$port" "$U" pingpong -p "$port" --op write \
	-- "$U" pingpong -p "$port" --op send 127.0.0.1
ur_expect_rc mismatch.client 1 "mismatched --op: client exits 1"
ur_expect_rc mismatch.server 1 "mismatched --op: server exits 1"
ur_expect_grep mismatch.client "the peer runs with --qp rc --op write .*this side with --qp rc --op send" \
	"mismatched --op: the client names both"

# --- two namespaces ----------------------------------------------------------------
ur_netns_pair
for c in "rc send 4096" "rc write-imm 65536" "rc read 65536" "rc cas 8" "uc write 4096" "ud send-imm 1024"; do
	set -- $c
	tag=ns.$1.$2
	port=$(ur_port)
	args=(--qp "$1" --op "$2" --validate -n 100)
	[ "$2" = cas ] || args+=(-s "$3")
	UR_SNS=$UR_NS_A UR_CNS=$UR_NS_B ur_pair "$tag" "$port" \
		"$U" pingpong -p "$port" "${args[@]}" -- "$U" pingpong -p "$port" "${args[@]}" "$UR_IP_A"
	pp_check "$tag" 100 "${args[*]}"
	ur_expect_grep "$tag.client" "^  local address:  .*GID ::ffff:$UR_IP_B" "$tag: the client chose the veth's GID"
done

# MTU mismatch: B's veth carries 9000 bytes (active MTU 4096), A's 1500
# (active MTU 1024).  Automatic: the smaller is used.  -m 4096: B names
# the peer's limit, A its own; both exit 1.
ur_ip "$UR_NS_B" link set dev "$UR_IF_B" mtu 9000
port=$(ur_port)
UR_SNS=$UR_NS_A UR_CNS=$UR_NS_B ur_pair ns.mtu.auto "$port" "$U" pingpong -p "$port" -s 65536 -n 50 --validate \
	-- "$U" pingpong -p "$port" -s 65536 -n 50 --validate "$UR_IP_A"
pp_check ns.mtu.auto 50 "--validate (MTU 1024 vs 4096)"
port=$(ur_port)
UR_TIMEOUT=30 UR_SNS=$UR_NS_A UR_CNS=$UR_NS_B ur_pair ns.mtu.4096 "$port" "$U" pingpong -p "$port" -m 4096 \
	-- "$U" pingpong -p "$port" -m 4096 "$UR_IP_A"
ur_expect_rc ns.mtu.4096.client 1 "-m 4096 towards a 1500-byte link: client exits 1"
ur_expect_rc ns.mtu.4096.server 1 "-m 4096 on a 1500-byte link: server exits 1"
ur_expect_grep ns.mtu.4096.client "MTU mismatch: -m 4096, but the peer's port carries at most 1024 .*use -m 1024" \
	"-m 4096: the client names the peer's MTU"
ur_expect_grep ns.mtu.4096.server "MTU 4096 is more than uroce[0-9]+ port 1 carries \(active MTU 1024" \
	"-m 4096: the server names its own MTU"

ur_done
