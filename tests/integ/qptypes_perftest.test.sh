#!/bin/bash
# ctest-labels: repeat
# perftest, unmodified, on UD, UC, SRQ and UD multicast: two processes on
# one host (uroce0) and across two network namespaces (veth, MTU 1500).
#
# Asserts: server and client exit 0 and print their result row (perftest
# exits non-zero on any error completion, failed post or QP transition).
#   ib_send_bw / ib_send_lat -c UD     datagrams of a full path MTU
#   ib_send_bw / ib_send_lat -c UC     unreliable connected sends
#   ib_write_bw -c UC                  RDMA WRITE without ACKs
#   ib_send_bw --use-srq (RC), 1 and 4 QPs on one SRQ
#   ib_send_bw -c UD -g -M <v4-mapped group>   multicast: the client sends
#       to the group, the server's QP is attached to it
# and that without -M (perftest's default group is an IPv6 MGID) perftest
# itself refuses an IPv4 GID ("Incompatibility issue with GID types"): the
# GID types are compared by family, so an IPv4 GID needs a v4-mapped MGID.
#
# UC and UD have no flow control.  On one host uroce pushes back (local
# peers share a unix socket that blocks the sender), so nothing is lost;
# across hosts, as on any Ethernet, a receiver slower than its sender loses
# messages, and perftest's send_bw server then waits for them forever (it
# assumes a lossless fabric).  Across the namespaces the UC/UD send_bw runs
# therefore use perftest's own software rate limiter (2 Gb/s), as one would
# on a lossy network.
. "$(dirname "$0")/qptypes_lib.sh"

UR_TIMEOUT=90      # a run takes seconds; a hang is killed sooner than the default

ROW='^ +[0-9]+ +[0-9]+ +[0-9.]+'      # "#bytes #iterations ..." result row

# pt TAG NAME PORT SERVER_IP ARGS...: one perftest pair, server and client
# with the same arguments.
pt() {
	local tag=$1 name=$2 port=$3 ip=$4 try
	shift 4
	for try in $(seq "$UR_CLOCK_TRIES"); do
		ur_pair "$tag.$name" "$port" "$@" -p "$port" -- "$@" -p "$port" "$ip"
		ur_clock_spoiled "$tag.$name" "$try" || break
		port=$(ur_port)
	done
	qt_expect_pair "$tag.$name" "$tag: $* ($name)" &&
	ur_expect_grep "$tag.$name.client" "$ROW" "$tag: $name client result row"
}

run_set() {
	local tag=$1 dev=$2 gidx=$3 ip=$4 mtu=$5 group p
	local c=(-d "$dev" -x "$gidx") lim=()
	[ "$tag" = netns ] && lim=(--rate_limit=2 --rate_limit_type=SW)

	pt "$tag" ud-send-bw "$(ur_port)" "$ip" ib_send_bw "${c[@]}" -c UD -n 3000 "${lim[@]}"
	pt "$tag" ud-send-bw-all "$(ur_port)" "$ip" ib_send_bw "${c[@]}" -c UD -a -n 200 "${lim[@]}"
	pt "$tag" ud-send-lat "$(ur_port)" "$ip" ib_send_lat "${c[@]}" -c UD -n 500 -s "$mtu"
	pt "$tag" ud-send-bw-2qp "$(ur_port)" "$ip" ib_send_bw "${c[@]}" -c UD -q 2 -n 1000 "${lim[@]}"
	pt "$tag" uc-send-bw "$(ur_port)" "$ip" ib_send_bw "${c[@]}" -c UC -n 3000 "${lim[@]}"
	pt "$tag" uc-send-lat "$(ur_port)" "$ip" ib_send_lat "${c[@]}" -c UC -n 500
	pt "$tag" uc-send-lat-big "$(ur_port)" "$ip" ib_send_lat "${c[@]}" -c UC -n 200 -s 65536
	pt "$tag" uc-write-bw "$(ur_port)" "$ip" ib_write_bw "${c[@]}" -c UC -n 3000
	pt "$tag" uc-write-bw-all "$(ur_port)" "$ip" ib_write_bw "${c[@]}" -c UC -a -n 100
	pt "$tag" uc-write-lat "$(ur_port)" "$ip" ib_write_lat "${c[@]}" -c UC -n 500
	pt "$tag" srq-send-bw "$(ur_port)" "$ip" ib_send_bw "${c[@]}" --use-srq -n 3000
	pt "$tag" srq-send-bw-4qp "$(ur_port)" "$ip" ib_send_bw "${c[@]}" --use-srq -q 4 -n 2000
	pt "$tag" srq-send-lat "$(ur_port)" "$ip" ib_send_lat "${c[@]}" --use-srq -n 500

	# Multicast: a group of our own per run, v4-mapped like the GIDs.
	group="0:0:0:0:0:0:0:0:0:0:255:255:239:83:$(( $$ % 250 )):$(( RANDOM % 250 + 1 ))"
	pt "$tag" mcast-send-bw "$(ur_port)" "$ip" ib_send_bw "${c[@]}" -c UD -g -M "$group" -n 1000
	pt "$tag" mcast-send-lat "$(ur_port)" "$ip" ib_send_lat "${c[@]}" -c UD -g -M "$group" -n 300
	# Without -M: perftest's own GID-type check refuses IPv4 GIDs.
	p=$(ur_port)
	ur_pair "$tag.mcast-v6group" "$p" ib_send_bw "${c[@]}" -c UD -g -n 10 -p "$p" -- \
		ib_send_bw "${c[@]}" -c UD -g -n 10 -p "$p" "$ip"
	ur_expect_grep "$tag.mcast-v6group.client" 'Incompatibility issue with GID types' \
		"$tag: perftest refuses its default (IPv6) MGID with an IPv4 GID, by itself"
}

# One host: two processes in a network namespace of their own (lo only),
# so that no other uroce process of the machine (another build serving
# port 4791, another registry version) takes part; then two namespaces.
qt_topologies
ur_log "--- one host ($QT_HOST_DEV, lo)"
UR_SNS=$QT_NS_S UR_CNS=$QT_NS_S run_set host "$QT_HOST_DEV" "$QT_HOST_GID" "$QT_HOST_IP" 4096
ur_log "--- two network namespaces (veth, MTU 1500)"
UR_SNS=$UR_NS_A UR_CNS=$UR_NS_B run_set netns "$QT_NET_DEV" "$QT_NET_GID" "$QT_NET_IP" 1024

ur_done
