#!/usr/bin/env bash
# ctest-timeout: 180
# The inspection subcommands of the uroce tool against the interfaces and
# against Debian's ibv_devinfo, on this host and in a namespace pair:
#  - devices lists uroce devices with GUIDs; netdev maps each device to the
#    interface its GIDs are on; the GID table holds a RoCE v2 GID for every
#    address `ip -j addr` shows, GID 0 the EUI-64 link-local entry on an
#    interface that has a link-local address (on one without, such as a
#    tap with no carrier, a copy of its first address); link shows a port
#    ACTIVE exactly when its interface is up with carrier;
#  - devinfo -v prints exactly what ibv_devinfo -v prints; -c adds counters
#    that move when traffic flows;
#  - gid --ip PEER names the index whose GID is the local address routed
#    towards PEER, usable as ibv_rc_pingpong's -g; GID<->IP conversion;
#  - link add/delete round-trip through a devices file;
#  - errors: unknown device, malformed GID, bad arguments, exit codes 1 / 2;
#  - run: UCX_IB_REG_METHODS=rcache,direct unless set; a UCX program told in
#    one line when the /dev/infiniband node of a device it names is missing
#    (or, as root in a mount namespace of its own, when there is none).
. "$(dirname "$0")/lib.sh"

UROCE=$UR_BUILD/bin/uroce
CHECK="/usr/bin/python3 $UR_SRC/tests/integ/tool_inspect_check.py"

check() {   # check TAG SUBCHECK ARGS...: the python checker's verdicts
	local tag=$1 line
	shift
	while IFS= read -r line; do
		case $line in
		ok:*) ur_pass "$tag: ${line#ok: }" ;;
		FAIL:*) ur_fail "$tag: ${line#FAIL: }" ;;
		*) [ -n "$line" ] && ur_log "    $line" ;;
		esac
	done < <($CHECK "$@" 2>&1)
}

inspect_here() {   # inspect_here TAG: UR_NS's tables against its interfaces
	local tag=$1
	ip ${UR_NS:+-n "$UR_NS"} -j addr show > "$UR_TMP/$tag.ip.json"
	ur_run "$tag.gid" "$UROCE" gid
	ur_expect_rc "$tag.gid" 0 "$tag: uroce gid"
	check "$tag" gid "$UR_TMP/$tag.ip.json" "$(ur_out "$tag.gid")"
	ur_run "$tag.netdev" "$UROCE" netdev
	ur_expect_rc "$tag.netdev" 0 "$tag: uroce netdev"
	check "$tag" netdev "$(ur_out "$tag.gid")" "$(ur_out "$tag.netdev")"
	ur_run "$tag.devinfo" "$UROCE" devinfo -v
	ur_run "$tag.ibv_devinfo" ibv_devinfo -v
	check "$tag" devinfo "$(ur_out "$tag.devinfo")" "$(ur_out "$tag.ibv_devinfo")"
	ur_run "$tag.link" "$UROCE" link
	check "$tag" link "$UR_TMP/$tag.ip.json" "$(ur_out "$tag.link")"
	ur_expect_grep "$tag.link" '^link uroce[0-9]+/1 state ACTIVE physical_state LINK_UP netdev lo$' \
		"$tag: link shows the loopback device ACTIVE"
}

# --- this host ----------------------------------------------------------------

ur_run host.devices "$UROCE" devices
ur_expect_rc host.devices 0 "uroce devices"
ur_expect_grep host.devices '^[[:space:]]+uroce0[[:space:]]+[0-9a-f]{16}$' "devices lists uroce0 with its GUID"
inspect_here host

ur_run host.route "$UROCE" gid --ip 127.0.0.1
ur_expect_grep host.route '^uroce0 port 1 GID index 1 \(::ffff:127\.0\.0\.1, RoCE v2, lo\) reaches 127\.0\.0\.1$' \
	"gid --ip 127.0.0.1: uroce0 index 1"
ur_run host.conv1 "$UROCE" gid --gid ::ffff:10.1.2.3
ur_expect_grep host.conv1 '^10\.1\.2\.3$' "gid --gid ::ffff:10.1.2.3 is 10.1.2.3"
ur_run host.conv2 "$UROCE" gid --ip 10.1.2.3 --convert
ur_expect_grep host.conv2 '^::ffff:10\.1\.2\.3$' "gid --ip 10.1.2.3 --convert is ::ffff:10.1.2.3"
ur_run host.conv3 "$UROCE" gid --gid fd00::1:2
ur_expect_grep host.conv3 '^fd00::1:2$' "an IPv6 GID is its own address"

# errors
ur_run err.dev "$UROCE" devinfo -d nosuchdev
ur_expect_rc err.dev 1 "devinfo -d nosuchdev"
ur_expect_grep err.dev "device 'nosuchdev' not found" "devinfo names the missing device"
ur_run err.gid "$UROCE" gid --gid 1.2.3.4.5
ur_expect_rc err.gid 2 "gid --gid 1.2.3.4.5"
ur_expect_grep err.gid "is not a GID" "a malformed GID is named"
ur_run err.opt "$UROCE" gid --bogus
ur_expect_rc err.opt 2 "gid --bogus"
ur_run err.cmd "$UROCE" frobnicate
ur_expect_rc err.cmd 2 "an unknown command"
ur_run err.port "$UROCE" devinfo -i 7
ur_expect_rc err.port 1 "devinfo -i 7 (no such port)"
ur_run help "$UROCE" gid --help
ur_expect_rc help 0 "gid --help"
ur_expect_grep help '^examples:' "gid --help shows examples"

# uroce run: what UCX needs on uroce.  uroce42 has no node: devnodes and
# tmpfiles.d make uroce0..uroce7.  ucx_probe and mpirun stand for UCX's
# tools and Open MPI's launcher: the hint goes by the program's name.
for p in ucx_probe mpirun; do
	printf '#!/bin/sh\nexit 0\n' > "$UR_TMP/$p"
	chmod +x "$UR_TMP/$p"
done
ur_run run.reg "$UROCE" run -- sh -c 'echo "reg=$UCX_IB_REG_METHODS"'
ur_expect_grep run.reg '^reg=rcache,direct$' "uroce run: UCX_IB_REG_METHODS=rcache,direct when unset"
UR_ENV=(UCX_IB_REG_METHODS=odp,direct)
ur_run run.reg_set "$UROCE" run -- sh -c 'echo "reg=$UCX_IB_REG_METHODS"'
ur_expect_grep run.reg_set '^reg=odp,direct$' "uroce run: UCX_IB_REG_METHODS kept when set"
UR_ENV=(UCX_NET_DEVICES=uroce42:1)
ur_run run.hint "$UROCE" run -- "$UR_TMP/ucx_probe"
ur_expect_grep run.hint "^uroce run: /dev/infiniband/uverbs-uroce42 is missing: .*'sudo uroce devnodes create'" \
	"uroce run: a UCX program on a device without a node is told what to do"
ur_run run.hint_mpi "$UROCE" run -- "$UR_TMP/mpirun"
ur_expect_grep run.hint_mpi 'uverbs-uroce42 is missing' "uroce run: mpirun too"
ur_run run.nohint "$UROCE" run -- true
ur_expect_no_grep run.nohint 'uroce run:' "uroce run: no hint for a program without UCX"
UR_ENV=()
if [ "$(id -u)" = 0 ] && [ -d /dev/infiniband ]; then
	ur_run run.nonode unshare -m sh -c "mount -t tmpfs none /dev/infiniband && exec '$UROCE' run -- '$UR_TMP/ucx_probe'"
	ur_expect_grep run.nonode "^uroce run: no /dev/infiniband/uverbs-uroce\\* node: .*'sudo uroce devnodes create'" \
		"uroce run: a UCX program with no node at all is told what to do"
fi

# --- link add/delete through a devices file -----------------------------------

ur_netns_pair 1500
devfile=$UR_TMP/devices
in_a() {   # in_a CMD...: CMD in namespace A with the test's devices file
	local UR_ENV=("UROCE_DEVICES_FILE=$devfile")
	UR_NS=$UR_NS_A "$@"
}
in_a ur_run link.add "$UROCE" link add myroce netdev "$UR_IF_A"
ur_expect_rc link.add 0 "link add myroce netdev $UR_IF_A"
in_a ur_run link.list "$UROCE" devices
ur_expect_grep link.list '^[[:space:]]+myroce[[:space:]]' "the added device exists"
ur_expect_no_grep link.list 'uroce0' "only listed devices exist while the file lists some"
in_a ur_run link.netdev "$UROCE" netdev
ur_expect_grep link.netdev "^myroce port 1 ==> $UR_IF_A \(Up\)$" "myroce sits on $UR_IF_A"
in_a ur_run link.dup "$UROCE" link add myroce netdev lo
ur_expect_rc link.dup 1 "adding myroce twice"
in_a ur_run link.badif "$UROCE" link add other netdev nosuchif0
ur_expect_rc link.badif 1 "link add on a missing interface"
ur_expect_grep link.badif "no network interface 'nosuchif0'" "the missing interface is named"
in_a ur_run link.del "$UROCE" link delete myroce
ur_expect_rc link.del 0 "link delete myroce"
in_a ur_run link.after "$UROCE" devices
ur_expect_no_grep link.after 'myroce' "the deleted device is gone"
ur_expect_grep link.after 'uroce0' "an empty devices file means automatic devices again"
in_a ur_run link.del2 "$UROCE" link delete myroce
ur_expect_rc link.del2 1 "deleting a device that is not there"

# --- namespaces: tables, the index for the peer, and that index working ---------

UR_NS=$UR_NS_A inspect_here nsA
UR_NS=$UR_NS_A ur_run ns.route "$UROCE" gid --ip "$UR_IP_B" -q
idx=$(tr -d '[:space:]' < "$(ur_out ns.route)")
dev=$(UR_NS=$UR_NS_A ur_dev_of "$UR_IP_A")
want=$(UR_NS=$UR_NS_A ur_gid_index "$dev" "::ffff:$UR_IP_A")
ur_expect_eq "gid --ip $UR_IP_B -q: the index of ::ffff:$UR_IP_A on $dev" "$want" "$idx"
UR_NS=$UR_NS_A ur_run ns.route6 "$UROCE" gid -d "$dev" --ip "$UR_IP6_B" -q
want6=$(UR_NS=$UR_NS_A ur_gid_index "$dev" "$UR_IP6_A")
ur_expect_eq "gid --ip $UR_IP6_B -q: the index of $UR_IP6_A" "$want6" "$(tr -d '[:space:]' < "$(ur_out ns.route6)")"
UR_NS=$UR_NS_A ur_run ns.wrongdev "$UROCE" gid -d uroce0 --ip "$UR_IP_B"
ur_expect_rc ns.wrongdev 1 "gid -d uroce0 (lo) --ip $UR_IP_B"
ur_expect_grep ns.wrongdev "use $dev GID index $want" "names the device and index that reach the peer"

# the index it gave works for an unmodified ibv_rc_pingpong across the veth
bdev=$(UR_NS=$UR_NS_B ur_dev_of "$UR_IP_B")
UR_NS=$UR_NS_B ur_run ns.routeB "$UROCE" gid --ip "$UR_IP_A" -q
bidx=$(tr -d '[:space:]' < "$(ur_out ns.routeB)")
UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A ur_pair pp 18611 ibv_rc_pingpong -p 18611 -d "$bdev" -g "$bidx" -n 100 \
	-- ibv_rc_pingpong -p 18611 -d "$dev" -g "$idx" -n 100 "$UR_IP_B"
ur_expect_pair_ok pp "ibv_rc_pingpong with the indexes uroce gid chose"

# counters move with traffic
UR_NS=$UR_NS_A ur_run ns.cnt "$UROCE" devinfo -d "$dev" -c
sent=$(awk '$1 == "sent_pkts" { print $2 }' "$(ur_out ns.cnt)")
sends=$(awk '$1 == "rdma_sends" { print $2 }' "$(ur_out ns.cnt)")
if [ "${sent:-0}" -ge 200 ] && [ "${sends:-0}" -ge 100 ]; then
	ur_pass "devinfo -c: sent_pkts $sent, rdma_sends $sends after 100 ping-pongs"
else
	ur_fail "devinfo -c: sent_pkts '${sent:-}' rdma_sends '${sends:-}' after 100 ping-pongs"
	ur_show ns.cnt
fi
ur_done
