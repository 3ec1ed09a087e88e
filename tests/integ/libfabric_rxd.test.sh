#!/usr/bin/env bash
# ctest-timeout: 300
# Unmodified libfabric (Debian's libfabric-bin) over uroce:
#  - `fi_info -p verbs` lists uroce0's datagram domain (its MSG domain
#    comes and goes with libfabric's rdma_cm address lookups), and its
#    probing of the limits prints no uroce error or warning (it creates QPs
#    asking for more and more inline data until one is refused);
#  - fi_pingpong over "verbs;ofi_rxd" (RDM over verbs datagrams) with data
#    integrity checks (-c): 8 B on lo (uroce0), 8 B and 64 KiB between two
#    namespaces joined by a veth, on uroce1 (GID 0, the one libfabric uses, is the veth's
#    link-local address).
# libfabric's verbs MSG endpoints and ofi_rxm: libfabric_msg.test.sh.
. "$(dirname "$0")/lib.sh"
UR_TIMEOUT=60

command -v fi_info >/dev/null && command -v fi_pingpong >/dev/null ||
	ur_skip "needs libfabric's tools (apt-get install libfabric-bin)"

ur_run info fi_info -p verbs
ur_expect_rc info 0 "fi_info -p verbs"
ur_expect_grep info 'domain: uroce0-dgram$' "fi_info lists uroce0-dgram (verbs datagrams)"
ur_expect_no_grep info '^uroce (error|warning)' "fi_info's limit probing prints no uroce error or warning"

# On lo (uroce0, GID 0 a copy of ::1): one size.
port=$(ur_port)
ur_pair lo.rxd "$port" fi_pingpong -p "verbs;ofi_rxd" -e rdm -d uroce0-dgram -c -I 100 -S 8 -B "$port" -- \
	fi_pingpong -p "verbs;ofi_rxd" -e rdm -d uroce0-dgram -c -I 100 -S 8 -P "$port" 127.0.0.1
ur_expect_pair_ok lo.rxd "fi_pingpong verbs;ofi_rxd rdm, 8 B, data checked, uroce0 on lo" &&
	ur_expect_grep lo.rxd.client "^8 +100 +=100 " "lo.rxd: 100 transfers acknowledged"
ur_sanitizer_clean lo.rxd.client
ur_sanitizer_clean lo.rxd.server

ur_netns_pair 1500
export UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A
for size in 8 65536; do
	label=$size
	[ "$size" = 65536 ] && label=64k    # fi_pingpong's way of printing it
	port=$(ur_port)
	ur_pair "rxd.$size" "$port" fi_pingpong -p "verbs;ofi_rxd" -e rdm -d uroce1-dgram -c \
		-I 200 -S "$size" -B "$port" -- \
		fi_pingpong -p "verbs;ofi_rxd" -e rdm -d uroce1-dgram -c -I 200 -S "$size" -P "$port" "$UR_IP_B"
	ur_expect_pair_ok "rxd.$size" "fi_pingpong verbs;ofi_rxd rdm, $size B, data checked, uroce1 across namespaces" &&
		ur_expect_grep "rxd.$size.client" "^$label +200 +=200 " "rxd.$size: 200 transfers of $size B acknowledged"
	ur_expect_no_grep "rxd.$size.client" '^uroce (error|warning)' "rxd.$size: client: no uroce error"
	ur_sanitizer_clean "rxd.$size.client"
	ur_sanitizer_clean "rxd.$size.server"
done

ur_done
