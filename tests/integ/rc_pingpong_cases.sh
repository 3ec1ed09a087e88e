# ibv_rc_pingpong cases shared by rc_pingpong.test.sh (one host, lo) and
# rc_pingpong_netns.test.sh (two namespaces).  Sourced after lib.sh.
#
# rc_pp_ok TAG SDEV CDEV ADDR ARGS...: a server on SDEV (in UR_SNS) and a
# client on CDEV (in UR_CNS) connecting to ADDR, both with ARGS, must both
# exit 0 and report the iterations they were asked for.
rc_pp_ok() {
	local tag=$1 sdev=$2 cdev=$3 addr=$4 port iters=1000 a prev=
	shift 4
	for a in "$@"; do
		[ "$prev" = -n ] && iters=$a
		prev=$a
	done
	port=$(ur_port)
	ur_pair "$tag" "$port" ibv_rc_pingpong -d "$sdev" -p "$port" "$@" \
		-- ibv_rc_pingpong -d "$cdev" -p "$port" "$@" "$addr"
	ur_expect_pair_ok "$tag" "ibv_rc_pingpong $*" || return
	ur_expect_grep "$tag.client" "^$iters iters in [0-9.]+ seconds" "$tag: client completed $iters iterations"
	ur_expect_grep "$tag.server" "^$iters iters in [0-9.]+ seconds" "$tag: server completed $iters iterations"
	ur_expect_no_grep "$tag.client" "invalid data|Failed status|parse WC failed" "$tag: client saw no bad completion or data"
	ur_expect_no_grep "$tag.server" "invalid data|Failed status|parse WC failed" "$tag: server saw no bad completion or data"
	ur_sanitizer_clean "$tag.server"
	ur_sanitizer_clean "$tag.client"
}

# rc_pp_fails TAG SDEV CDEV ADDR ERE ARGS...: the pair must fail, quickly and
# on its own (no hang), the server printing "Failed to modify QP to RTR"
# and the library's error matching ERE (the reason and its fix).
rc_pp_fails() {
	local tag=$1 sdev=$2 cdev=$3 addr=$4 ere=$5 port
	shift 5
	port=$(ur_port)
	UR_TIMEOUT=30 ur_pair "$tag" "$port" ibv_rc_pingpong -d "$sdev" -p "$port" "$@" \
		-- ibv_rc_pingpong -d "$cdev" -p "$port" "$@" "$addr"
	ur_expect_fail_fast "$tag.server" "$tag: server (ibv_rc_pingpong ${*:-without -g})"
	ur_expect_fail_fast "$tag.client" "$tag: client (ibv_rc_pingpong ${*:-without -g} $addr)"
	ur_expect_grep "$tag.server" "Failed to modify QP to RTR" "$tag: the server cannot move its QP to RTR"
	ur_expect_grep "$tag.server" "uroce error: .*$ere" "$tag: the library says why and how to fix it"
	ur_sanitizer_clean "$tag.server"
	ur_sanitizer_clean "$tag.client"
}

# rc_pp_suite TAG SDEV CDEV ADDR GID4 GID6: the working cases with the IPv4
# GID index GID4 (and one with the IPv6 GID index GID6).
rc_pp_suite() {
	local t=$1 sdev=$2 cdev=$3 addr=$4 g=$5 g6=$6
	rc_pp_ok "$t.plain" "$sdev" "$cdev" "$addr" -g "$g" -n 10000
	rc_pp_ok "$t.s1" "$sdev" "$cdev" "$addr" -g "$g" -s 1 -n 10000
	rc_pp_ok "$t.events" "$sdev" "$cdev" "$addr" -g "$g" -e -n 2000
	rc_pp_ok "$t.newsend" "$sdev" "$cdev" "$addr" -g "$g" -N -n 2000
	rc_pp_ok "$t.check" "$sdev" "$cdev" "$addr" -g "$g" -c -n 2000
	rc_pp_ok "$t.s64k" "$sdev" "$cdev" "$addr" -g "$g" -s 65536 -n 1000
	rc_pp_ok "$t.s1m" "$sdev" "$cdev" "$addr" -g "$g" -s 1048576 -n 100
	rc_pp_ok "$t.s1m-e-N-c" "$sdev" "$cdev" "$addr" -g "$g" -s 1048576 -e -N -c -n 50
	rc_pp_ok "$t.ipv6" "$sdev" "$cdev" "$addr" -g "$g6" -n 1000
}
