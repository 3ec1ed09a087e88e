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
# device: these runs leave uroce0 out with UROCE_DEVICES, as README.md says.
# Without it fi_info answers -61, and `uroce run` says what to do.
. "$(dirname "$0")/lib.sh"
UR_TIMEOUT=90

command -v fi_info >/dev/null && command -v fi_pingpong >/dev/null ||
	ur_skip "needs libfabric's tools (apt-get install libfabric-bin)"

ur_netns_pair 1500

# Every interface a device, uroce0 on lo among them: no MSG device, and the
# hint naming UROCE_DEVICES with this namespace's interface.
UR_ENV=(UROCE_DEVICES=)
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
