#!/usr/bin/env bash
# ctest-timeout: 300
# Unmodified libfabric (Debian's libfabric-bin) over uroce's verbs MSG
# endpoints, which libfabric connects through rdma_cm (uroce's
# librdmacm.so.1):
#  - `fi_info -p "verbs;ofi_rxm"` with no address lists uroce1, and
#    `fi_info -p verbs -t FI_EP_MSG` lists it too;
#  - fi_pingpong over `verbs` MSG endpoints (RC QPs) and over
#    `verbs;ofi_rxm` (RDM over MSG: eager, segmented and rendezvous sizes),
#    data checked (-c), in one namespace (both processes on one host) and
#    between two namespaces joined by a veth.
# libfabric skips lo for MSG endpoints, and learns which devices it may use
# by binding "localhost": it keeps the device that holds the address, all
# when none does, as with the kernel's rdma_cm. uroce0 is on lo and holds
# the loopback addresses, so libfabric would keep it alone and find no MSG
# device.  `uroce run` leaves it out for such a program, with no setting
# (UROCE_DEVICES_SKIP=lo: the other devices keep their names): fi_info and
# an fi_pingpong pair run that way, as README.md shows them.  Where the
# user's UROCE_DEVICES names lo, fi_info answers -61 and `uroce run` says
# what to do.  The other runs here leave uroce0 out with UROCE_DEVICES.
. "$(dirname "$0")/lib.sh"
UR_TIMEOUT=90

command -v fi_info >/dev/null && command -v fi_pingpong >/dev/null ||
	ur_skip "needs libfabric's tools (apt-get install libfabric-bin)"

ur_netns_pair 1500

# As README.md runs them: every interface a device, uroce0 on lo among
# them, and `uroce run` leaves uroce0 out for the program on its own.
UR_ENV=(UROCE_DEVICES= UROCE_DEVICES_SKIP=)
UR_NS=$UR_NS_A ur_run info.run "$UR_BUILD/bin/uroce" run -- fi_info -p "verbs;ofi_rxm"
ur_expect_rc info.run 0 "uroce run -- fi_info -p 'verbs;ofi_rxm', no setting"
ur_expect_grep info.run 'domain: uroce1$' "uroce run -- fi_info: uroce1, named as ever"
ur_expect_no_grep info.run 'domain: uroce0$' "uroce run -- fi_info: uroce0 left out"
ur_expect_no_grep info.run '^uroce run:' "uroce run -- fi_info: nothing to say"
port=$(ur_port)
UR_SNS=$UR_NS_A UR_CNS=$UR_NS_A ur_pair run.rxm "$port" \
	"$UR_BUILD/bin/uroce" run fi_pingpong -p "verbs;ofi_rxm" -e rdm -c -I 100 -S 65536 -B "$port" -- \
	"$UR_BUILD/bin/uroce" run fi_pingpong -p "verbs;ofi_rxm" -e rdm -c -I 100 -S 65536 -P "$port" "$UR_IP_A"
ur_expect_pair_ok run.rxm "uroce run -- fi_pingpong verbs;ofi_rxm, 64 KiB, data checked, no setting" &&
	ur_expect_grep run.rxm.client "^64k +100 +=100 " "run.rxm: 100 transfers of 64 KiB acknowledged"
# Told to keep uroce0 (UROCE_DEVICES names lo): no MSG device, and the
# hint naming UROCE_DEVICES with this namespace's interface.
UR_ENV=("UROCE_DEVICES=uroce0:lo,uroce1:$UR_IF_A")
UR_NS=$UR_NS_A ur_run info.lo "$UR_BUILD/bin/uroce" run -- fi_info -p "verbs;ofi_rxm"
ur_expect_fail_fast info.lo "fi_info -p 'verbs;ofi_rxm' with uroce0 on lo finds nothing"
ur_expect_grep info.lo "^uroce run: libfabric's verbs MSG endpoints .*UROCE_DEVICES=uroce1:$UR_IF_A\$" \
	"uroce run: the hint names UROCE_DEVICES=uroce1:$UR_IF_A"
UR_ENV=("UROCE_DEVICES=uroce1:$UR_IF_A,uroce1:$UR_IF_B")
UR_NS=$UR_NS_A ur_run info.nohint "$UR_BUILD/bin/uroce" run -- fi_info -p "verbs;ofi_rxm"
ur_expect_no_grep info.nohint '^uroce run:' "uroce run: no hint with lo left out"

UR_NS=$UR_NS_A ur_run info.rxm fi_info -p "verbs;ofi_rxm"
ur_expect_rc info.rxm 0 "fi_info -p 'verbs;ofi_rxm' with no address"
ur_expect_grep info.rxm 'domain: uroce1$' "fi_info lists verbs;ofi_rxm on uroce1"
ur_expect_no_grep info.rxm '^uroce (error|warning)' "fi_info: no uroce error or warning"
UR_NS=$UR_NS_A ur_run info.msg fi_info -p verbs -t FI_EP_MSG
ur_expect_grep info.msg 'domain: uroce1$' "fi_info -p verbs -t FI_EP_MSG lists uroce1"

# pingpong NAME PROVIDER EP SERVER_NS CLIENT_NS SERVER_IP SIZE...
pingpong() {
	local name=$1 prov=$2 ep=$3 sns=$4 cns=$5 ip=$6 size label port
	shift 6
	for size in "$@"; do
		case $size in
		4096) label=4k ;;
		65536) label=64k ;;
		1048576) label=1m ;;
		*) label=$size ;;
		esac
		port=$(ur_port)
		UR_SNS=$sns UR_CNS=$cns ur_pair "$name.$size" "$port" \
			fi_pingpong -p "$prov" -e "$ep" -c -I 100 -S "$size" -B "$port" -- \
			fi_pingpong -p "$prov" -e "$ep" -c -I 100 -S "$size" -P "$port" "$ip"
		ur_expect_pair_ok "$name.$size" "fi_pingpong $prov $ep, $size B, data checked ($name)" &&
			ur_expect_grep "$name.$size.client" "^$label +100 +=100 " \
				"$name.$size: 100 transfers of $size B acknowledged"
		ur_expect_no_grep "$name.$size.client" '^uroce (error|warning)' "$name.$size: client: no uroce error"
		ur_expect_no_grep "$name.$size.server" '^uroce (error|warning)' "$name.$size: server: no uroce error"
		ur_sanitizer_clean "$name.$size.client"
		ur_sanitizer_clean "$name.$size.server"
	done
}

# One host: both processes in namespace A, the client to A's own address.
pingpong host.msg verbs msg "$UR_NS_A" "$UR_NS_A" "$UR_IP_A" 8 65536
pingpong host.rxm "verbs;ofi_rxm" rdm "$UR_NS_A" "$UR_NS_A" "$UR_IP_A" 8 65536
# Two hosts: the server in B, the client in A.
pingpong netns.msg verbs msg "$UR_NS_B" "$UR_NS_A" "$UR_IP_B" 8 65536 1048576
pingpong netns.rxm "verbs;ofi_rxm" rdm "$UR_NS_B" "$UR_NS_A" "$UR_IP_B" 8 4096 65536 1048576

ur_done
