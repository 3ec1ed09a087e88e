#!/usr/bin/env bash
# Programs that wait on completion channels, on one host (uroce0 on lo): each
# ends, and moves what it should (speed is bench/events.sh's, not asserted):
#  - fio's rdma engine (rdma_cm; a completion channel it blocks on between
#    polls): 64 KiB RDMA WRITEs and RDMA READs at iodepth 16, 256 MiB each,
#    both sides exit 0 with err=0 and the client's whole size moved;
#  - ibv_rc_pingpong -e -c (completion events, every received buffer
#    checked) at 64 B and 64 KiB;
#  - ibv_ud_pingpong -e -c (UD, events, checked).
# rping -V (events, data checked) is integ.rdmacm_rping's; ib_send_lat -e is
# integ.perftest's.
# ctest-timeout: 300
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdmacm_lib.sh"
command -v fio >/dev/null || ur_skip "fio missing (apt-get install fio)"
UR_TIMEOUT=90
gid=$(ur_gid_index uroce0 ::ffff:127.0.0.1)

# fio_pair NAME VERB: a receiver (rw=read: fio's rdma server) and a client
# moving 256 MiB of 64 KiB VERB operations.
fio_pair() {
	local name=$1 verb=$2 port
	port=$(ur_port)
	CM_PORT=$port cm_pair "$name" \
		fio --thread --name=srv --ioengine=rdma --port="$port" --rw=read --bs=64k --size=256m \
		--iodepth=16 \
		-- fio --thread --name=cli --ioengine=rdma --hostname=127.0.0.1 --port="$port" \
		--verb="$verb" --rw=write --bs=64k --size=256m --iodepth=16
	ur_expect_pair_ok "$name" "fio rdma --verb=$verb, 64 KiB, iodepth 16"
	ur_expect_grep "$name.client" 'err= 0' "fio --verb=$verb: client err=0"
	ur_expect_grep "$name.server" 'err= 0' "fio --verb=$verb: server err=0"
	ur_expect_grep "$name.client" 'io=256MiB' "fio --verb=$verb: the client moved 256 MiB"
}
fio_pair fio_write write
fio_pair fio_read read

for size in 64 65536; do
	port=$(ur_port)
	ur_pair "pp$size" "$port" \
		ibv_rc_pingpong -d uroce0 -g "$gid" -p "$port" -e -c -s "$size" -n 500 \
		-- ibv_rc_pingpong -d uroce0 -g "$gid" -p "$port" -e -c -s "$size" -n 500 127.0.0.1
	ur_expect_pair_ok "pp$size" "ibv_rc_pingpong -e -c -s $size -n 500"
	ur_expect_grep "pp$size.client" '500 iters in' "ibv_rc_pingpong -e -s $size: 500 iterations"
done

port=$(ur_port)
ur_pair ud "$port" \
	ibv_ud_pingpong -d uroce0 -g "$gid" -p "$port" -e -c -s 1024 -n 500 \
	-- ibv_ud_pingpong -d uroce0 -g "$gid" -p "$port" -e -c -s 1024 -n 500 127.0.0.1
ur_expect_pair_ok ud "ibv_ud_pingpong -e -c -s 1024 -n 500"
ur_done
