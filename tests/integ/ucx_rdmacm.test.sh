#!/usr/bin/env bash
# ctest-timeout: 300
# UCX's rdmacm connection manager over uroce's librdmacm.so.1: Debian's
# unmodified io_demo (ucx-utils) listens on a port through UCX's rdmacm CM
# (UCX_SOCKADDR_TLS_PRIORITY=rdmacm: no other CM may serve), the client
# connects to the server's IP address, then 200 reads and writes of
# 1 KiB..64 KiB run over rc_verbs (ud_verbs for UCX's wire-up) with io_demo's
# data integrity check (-q), then over ud_verbs alone (UCX's own
# reliability over datagrams; ucx_perftest, which has no data check, runs
# the same transports).  On one host (uroce0) and between two namespaces
# (uroce1).  The client exits 0 with "status 'OK'" and counts
# its reads and writes; neither side prints a UCX or uroce error.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdmacm_lib.sh"
. "$(dirname "$0")/ucx_lib.sh"
UR_TIMEOUT=120

command -v io_demo >/dev/null || ur_skip "needs UCX's io_demo (apt-get install ucx-utils)"
ucx_need uroce0 uroce1

# io_pair NAME DEV SERVER_IP [TLS]
io_pair() {
	local name=$1 dev=$2 ip=$3 tls=${4:-rc_verbs,ud_verbs:aux,self} port
	port=$(ur_port)
	local UR_ENV=("${UCX_ENV[@]}" UCX_SOCKADDR_TLS_PRIORITY=rdmacm
		      "UCX_TLS=$tls" "UCX_NET_DEVICES=$dev:1")
	# The server serves until stopped; only the client's exit counts.
	CM_STOP_SERVER=1 cm_pair "$name" io_demo -p "$port" -q -d 1024:65536 -- \
		io_demo -p "$port" -q -i 200 -d 1024:65536 -o read,write "$ip"
	ur_expect_rc "$name.client" 0 "$name: io_demo client over UCX's rdmacm CM on $dev, UCX_TLS=$tls"
	ur_expect_grep "$name.client" "Client exit with status 'OK'" "$name: the client's run completed"
	# io_demo prints what completed since its last line, once a second: a
	# slow connection splits the 200 over two lines.
	local ops
	ops=$(sed -n 's/.*\[DEMO\] total min:[0-9]* max:[0-9]* total:\([0-9]*\) | read .* | write .*/\1/p' \
		"$(ur_out "$name.client")" | awk '{ n += $1 } END { print n + 0 }')
	ur_expect_eq "$name: reads and writes completed, data checked (io_demo -q)" 200 "$ops"
	ur_expect_no_grep "$name.client" 'UCX +(ERROR|WARN)|uroce (error|warning)|Assertion' \
		"$name: client: no UCX or uroce error"
	ur_expect_no_grep "$name.server" 'UCX +(ERROR|WARN)|uroce (error|warning)|Assertion' \
		"$name: server: no UCX or uroce error"
	ur_sanitizer_clean "$name.client"
}

io_pair lo uroce0 127.0.0.1
io_pair lo.ud uroce0 127.0.0.1 ud_verbs,self
ur_netns_pair 1500
UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A io_pair veth uroce1 "$UR_IP_B"
UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A io_pair veth.ud uroce1 "$UR_IP_B" ud_verbs,self
ur_done
