#!/usr/bin/env bash
# Debian's unmodified perftest connecting through rdma_cm (-R) over uroce's
# librdmacm.so.1 on one host (uroce0 on lo): ib_write_bw, ib_send_bw,
# ib_read_bw, ib_read_lat and ib_send_lat with -R.  Each pair exits 0 and
# prints its result row (the 65536-byte bandwidth row or the 2-byte latency
# row with its iteration count); the two sides agree on each other's QPN
# (the CM's REQ and REP carried them).
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
ur_done
