#!/usr/bin/env bash
# Debian's unmodified perftest connecting through rdma_cm (-R) over uroce's
# librdmacm.so.1 on one host (uroce0 on lo): ib_write_bw, ib_send_bw,
# ib_read_bw, ib_read_lat and ib_send_lat with -R.  Each pair exits 0 and
# prints its result row (the 65536-byte bandwidth row or the 2-byte latency
# row with its iteration count); the two sides agree on each other's QPN
# (the CM's REQ and REP carried them).  Then ib_write_bw -R between two
# network namespaces.
#
# perftest -R tells its peer to connect the test QPs and only then listens
# for them: on a loaded host the client's REQ could arrive first, be turned
# away (REJECTED, invalid service ID), and the client, started again by
# cm_pair, met the server's second listener with its first connection; the
# pair hung.  The CM now asks again for a moment before taking that answer
# (src/cm/cm.h, UR_CM_LISTEN_GRACE_NS); this test ran 11 of 11 times clean
# beside three busy loops on two cores, against 1 of 3 before.
# ctest-timeout: 300
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdmacm_lib.sh"
UR_TIMEOUT=60

# perftest prints "local address: ... QPN 0x..." and "remote address: ...
# QPN 0x...": each side's remote QPN is the other's local one.
qpns_agree() {
	local s c
	s=$(grep -Eo 'local address: .*QPN 0x[0-9a-f]+' "$(ur_out "$1.server")" | grep -Eo '0x[0-9a-f]+$')
	c=$(grep -Eo 'remote address: .*QPN 0x[0-9a-f]+' "$(ur_out "$1.client")" | grep -Eo '0x[0-9a-f]+$')
	if [ -z "$s" ]; then
		ur_fail "$1: the server printed no local QPN"
		return
	fi
	ur_expect_eq "$1: the client's remote QPN is the server's" "$s" "$c"
}

for t in ib_write_bw ib_send_bw ib_read_bw; do
	port=$(ur_port)
	cm_pair "$t" "$t" -R -p "$port" -n 500 -- "$t" -R -p "$port" -n 500 127.0.0.1
	ur_expect_pair_ok "$t" "$t -R -n 500"
	ur_expect_grep "$t.client" '^ 65536 +500 ' "$t -R: the 64 KiB row"
	qpns_agree "$t"
done
for t in ib_read_lat ib_send_lat; do
	port=$(ur_port)
	cm_pair "$t" "$t" -R -p "$port" -n 200 -- "$t" -R -p "$port" -n 200 127.0.0.1
	ur_expect_pair_ok "$t" "$t -R -n 200"
	ur_expect_grep "$t.client" '^ 2 +200 ' "$t -R: the 2-byte row"
	qpns_agree "$t"
done

ur_netns_pair 1500
port=$(ur_port)
UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A cm_pair wbw ib_write_bw -R -p "$port" -n 500 \
	-- ib_write_bw -R -p "$port" -n 500 "$UR_IP_B"
ur_expect_pair_ok wbw "ib_write_bw -R between namespaces"
ur_expect_grep wbw.client '^ 65536 +500 ' "ib_write_bw -R between namespaces: the 64 KiB row"
ur_done
