#!/usr/bin/env bash
# ctest-timeout: 600
# Unmodified ucx_perftest (Debian's ucx-utils) over uroce: tag_lat, tag_bw,
# ucp_put_bw and ucp_get over UCX_TLS=rc_verbs,ud_verbs:aux,self (RC for
# data, UD for UCX's wire-up) and over ud_verbs,self alone, with UCX's UD
# destination-GID check on (no UCX_UD_ETH_DGID_CHECK override: it reads the
# L3 type from wc.sl).  On one host (uroce0, lo) and between two namespaces
# joined by a veth (uroce1).  Each run: both sides exit 0, final figures,
# no UCX or uroce error.  Few iterations: figures are bench/'s business.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ucx_lib.sh"
UR_TIMEOUT=120

ucx_suite() {
	local where=$1 dev=$2 ip=$3 tls short
	for tls in rc_verbs,ud_verbs:aux,self ud_verbs,self; do
		short=${tls%%,*}
		ucx_perf "$where.$short.tag_lat" "$tls" "$dev" "$ip" tag_lat -n 2000 -w 100
		ucx_perf "$where.$short.tag_bw" "$tls" "$dev" "$ip" tag_bw -s 65536 -n 200 -w 20
		ucx_perf "$where.$short.put_bw" "$tls" "$dev" "$ip" ucp_put_bw -s 1048576 -n 20 -w 2
		ucx_perf "$where.$short.get" "$tls" "$dev" "$ip" ucp_get -s 65536 -n 100 -w 10
	done
}

ucx_need uroce0 uroce1
ucx_suite lo uroce0 127.0.0.1

ur_netns_pair 1500
export UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A
ucx_suite veth uroce1 "$UR_IP_B"

ur_done
