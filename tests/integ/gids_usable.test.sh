#!/usr/bin/env bash
# Every GID that `ibv_devinfo -v` lists works as a source, with unmodified
# ibv_rc_pingpong -g N and ibv_ud_pingpong -g N (both sides the same index):
#  - uroce0 on lo: GID 0 (lo has no link-local address: a copy of ::1),
#    ::ffff:127.0.0.1 and ::1, each working;
#  - a veth between two namespaces: GID 0 is the interface's own link-local
#    EUI-64 address (once past duplicate address detection), then IPv4, then
#    IPv6, each working across the veth.
# ctest-timeout: 300
. "$(dirname "$0")/lib.sh"
UR_TIMEOUT=60

# gids TAG DEV: the indexes ibv_devinfo -v lists for DEV (in UR_NS).
gids() {
	ur_run "$1" ibv_devinfo -v -d "$2" >/dev/null
	sed -n 's/^[[:space:]]*GID\[ *\([0-9]*\)\]:.*/\1/p' "$(ur_out "$1")"
}

# each_gid TAG SDEV CDEV ADDR SIZE IDX...: both pingpongs on every index.
each_gid() {
	local tag=$1 sdev=$2 cdev=$3 addr=$4 size=$5 g port
	shift 5
	for g in "$@"; do
		port=$(ur_port)
		ur_pair "$tag.rc.g$g" "$port" ibv_rc_pingpong -d "$sdev" -p "$port" -g "$g" -n 100 \
			-- ibv_rc_pingpong -d "$cdev" -p "$port" -g "$g" -n 100 "$addr"
		ur_expect_pair_ok "$tag.rc.g$g" "$tag: ibv_rc_pingpong -g $g"
		ur_expect_grep "$tag.rc.g$g.client" "^100 iters in" "$tag: rc -g $g: 100 iterations"
		port=$(ur_port)
		ur_pair "$tag.ud.g$g" "$port" ibv_ud_pingpong -d "$sdev" -p "$port" -g "$g" -s "$size" -n 100 \
			-- ibv_ud_pingpong -d "$cdev" -p "$port" -g "$g" -s "$size" -n 100 "$addr"
		ur_expect_pair_ok "$tag.ud.g$g" "$tag: ibv_ud_pingpong -g $g"
		ur_expect_grep "$tag.ud.g$g.client" "^100 iters in" "$tag: ud -g $g: 100 iterations"
	done
}

# --- lo ------------------------------------------------------------------------
mapfile -t lo_gids < <(gids lo.devinfo uroce0)
ur_expect_eq "uroce0 (lo) lists GIDs" "0 1 2" "${lo_gids[*]}"
ur_expect_no_grep lo.devinfo 'fe80:' "uroce0 (lo) lists no link-local GID (lo has none)"
ur_expect_grep lo.devinfo 'GID\[ *0\]:[[:space:]]+::1, RoCE v2' "uroce0 (lo): GID 0 is ::1"
each_gid lo uroce0 uroce0 127.0.0.1 2048 "${lo_gids[@]}"

# --- a veth between two namespaces ---------------------------------------------
ur_netns_pair 1500
for ns in "$UR_NS_A" "$UR_NS_B"; do   # link-local past DAD, so usable
	for _ in $(seq 50); do
		ur_ip "$ns" -6 addr show scope link | grep -q 'fe80' &&
			! ur_ip "$ns" -6 addr show tentative | grep -q inet6 && break
		sleep 0.1
	done
done
sdev=$(UR_NS=$UR_NS_A ur_dev_of "$UR_IP_A")
cdev=$(UR_NS=$UR_NS_B ur_dev_of "$UR_IP_B")
mapfile -t va_gids < <(UR_NS=$UR_NS_A gids veth.a.devinfo "$sdev")
mapfile -t vb_gids < <(UR_NS=$UR_NS_B gids veth.b.devinfo "$cdev")
ur_expect_eq "veth: GIDs listed (link-local, IPv4, IPv6)" "0 1 2" "${va_gids[*]}"
ur_expect_eq "veth: the peer lists the same indexes" "${va_gids[*]}" "${vb_gids[*]}"
UR_SNS=$UR_NS_A UR_CNS=$UR_NS_B each_gid veth "$sdev" "$cdev" "$UR_IP_A" 512 "${va_gids[@]}"

ur_done
