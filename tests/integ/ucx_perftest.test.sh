#!/usr/bin/env bash
# ctest-timeout: 600
# Unmodified ucx_perftest (Debian's ucx-utils) over uroce: tag_lat, tag_bw,
# ucp_put_bw and ucp_get over UCX_TLS=rc_verbs,ud_verbs:aux,self (RC for
# data, UD for UCX's wire-up) and over ud_verbs,self alone, with UCX's UD
# destination-GID check on (no UCX_UD_ETH_DGID_CHECK override: it reads the
# L3 type from wc.sl).  On one host (uroce0, lo) and between two namespaces
# joined by a veth (uroce1; the sanitizer builds run RC only there).
# Then UCT's am_lat over rc_verbs as README.md runs it (ucx_perftest's -x
# and -d, under uroce run, no environment).
# Each run: both sides exit 0, final figures, no UCX or uroce error.
# Few iterations: figures are bench/'s business.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ucx_lib.sh"
UR_TIMEOUT=120

# ucx_suite WHERE DEV SERVER_IP TLS...: the four tests over each TLS set.
ucx_suite() {
	local where=$1 dev=$2 ip=$3 tls short
	shift 3
	for tls in "$@"; do
		short=${tls%%,*}
		ucx_perf "$where.$short.tag_lat" "$tls" "$dev" "$ip" tag_lat -n 2000 -w 100
		ucx_perf "$where.$short.tag_bw" "$tls" "$dev" "$ip" tag_bw -s 65536 -n 200 -w 20
		ucx_perf "$where.$short.put_bw" "$tls" "$dev" "$ip" ucp_put_bw -s 1048576 -n 20 -w 2
		ucx_perf "$where.$short.get" "$tls" "$dev" "$ip" ucp_get -s 65536 -n 100 -w 10
	done
}

ucx_need uroce0 uroce1
ucx_suite lo uroce0 127.0.0.1 rc_verbs,ud_verbs:aux,self ud_verbs,self

# As README.md runs it: UCT's am_lat over rc_verbs on uroce0, transport and
# device from ucx_perftest's own -x and -d, under uroce run, no setting.
port=$(ur_port)
UR_ENV=()
ur_pair readme.am_lat "$port" \
	"$UR_BUILD/bin/uroce" run ucx_perftest -t am_lat -x rc_verbs -d uroce0:1 -n 2000 -p "$port" -- \
	"$UR_BUILD/bin/uroce" run ucx_perftest -t am_lat -x rc_verbs -d uroce0:1 -n 2000 -p "$port" 127.0.0.1
ur_expect_pair_ok readme.am_lat "uroce run -- ucx_perftest -t am_lat -x rc_verbs -d uroce0:1, no setting" &&
	ur_expect_grep readme.am_lat.client '^Final: +2000 ' "readme.am_lat: final figures"
ur_expect_no_grep readme.am_lat.client 'UCX +(ERROR|WARN)|uroce (error|warning)' \
	"readme.am_lat: client: no UCX or uroce error"

# The sanitizer builds rerun the veth half with RC (UD as its wire-up)
# only: the same library paths as on lo, in less CI time.
veth_tls=(rc_verbs,ud_verbs:aux,self ud_verbs,self)
if ur_is_asan || ur_is_tsan; then
	veth_tls=(rc_verbs,ud_verbs:aux,self)
fi
ur_netns_pair 1500
export UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A
ucx_suite veth uroce1 "$UR_IP_B" "${veth_tls[@]}"

ur_done
