#!/usr/bin/env bash
# Unmodified ibv_rc_pingpong between two network namespaces joined by a
# 1500-byte veth (a stand-in for two hosts: packets go to the peer's UDP
# 4791 through the veth), server in one, client in the other, with the GID
# index of each side's IPv4 address:
#  - the same working cases as on one host (plain 4 KiB x 10000, 1 B, -e,
#    -N, -c, 64 KiB, 1 MiB, -e -N -c, the IPv6 GID);
#  - faithful failures, each quick (no hang) with the library's error naming
#    the fix: without -g, and -m 4096 (path MTU above the 1024-byte active MTU
#    of a 1500-byte interface: rxe refuses it at RTR too).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rc_pingpong_cases.sh"
UR_TIMEOUT=300

ur_netns_server_client 1500
g6s=$(UR_NS=$UR_NS_B ur_gid_index "$sdev" "$(/usr/bin/python3 -c 'import ipaddress,sys; print(ipaddress.ip_address(sys.argv[1]).compressed)' "$UR_IP6_B")")
ur_expect_eq "server: GID index of ::ffff:$UR_IP_B" 1 "$gs"
ur_expect_eq "client: GID index of ::ffff:$UR_IP_A" 1 "$gc"
ur_expect_eq "server: GID index of $UR_IP6_B" 2 "$g6s"
[ "$gs" = "$gc" ] || ur_done   # ibv_rc_pingpong takes one -g for both sides

rc_pp_suite veth "$sdev" "$cdev" "$UR_IP_B" "$gs" "$g6s"

rc_pp_fails veth.no-gid "$sdev" "$cdev" "$UR_IP_B" 'no GRH.*GID index'
rc_pp_fails veth.mtu4096 "$sdev" "$cdev" "$UR_IP_B" \
	'path MTU 4096 exceeds the port.s active MTU 1024 .*use an MTU of 1024 or less' -g "$gs" -m 4096

ur_done
