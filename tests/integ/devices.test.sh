#!/usr/bin/env bash
# Devices, ports and GID tables as unmodified ibv_devices / ibv_devinfo show
# them, against what the interfaces say (ip -j addr):
#  - on this host: one device per interface with an address, uroce0 on lo
#    with ::ffff:127.0.0.1 at GID index 1, active_mtu 4096;
#  - in namespaces configured here with known addresses: a 1500-byte veth
#    (active_mtu 1024) and a 9000-byte one (4096), each with two IPv4
#    addresses (one with a label) and an IPv6 address; GID 0 the EUI-64
#    link-local entry (lo has no link-local address: its GID 0 is a copy of
#    GID 1), then the IPv4 entries, then the IPv6 ones, all RoCE v2;
#    an interface taken down shows PORT_DOWN;
#  - `uroce run` is the same as LD_LIBRARY_PATH.
. "$(dirname "$0")/lib.sh"

check_ns() {   # check_ns TAG: devinfo of UR_NS against its ip addr
	local tag=$1
	ur_ip "$UR_NS" -j addr show > "$UR_TMP/$tag.ip.json"
	ur_run "$tag.devinfo" ibv_devinfo -v
	ur_expect_rc "$tag.devinfo" 0 "$tag: ibv_devinfo -v" || return
	ur_report "$tag" /usr/bin/python3 "$UR_SRC/tests/integ/devinfo_expect.py" \
		"$UR_TMP/$tag.ip.json" "$(ur_out "$tag.devinfo")"
}

# --- this host ----------------------------------------------------------------

ur_run host.devices ibv_devices
ur_expect_rc host.devices 0 "ibv_devices"
ur_expect_grep host.devices '^[[:space:]]+uroce0[[:space:]]+[0-9a-f]{16}$' "ibv_devices lists uroce0 with its node GUID"

ur_run host.gid ibv_devinfo -v -d uroce0
ur_expect_grep host.gid 'GID\[ *1\]:[[:space:]]+::ffff:127\.0\.0\.1, RoCE v2' "uroce0 is lo: GID 1 is ::ffff:127.0.0.1"
ur_expect_grep host.gid 'active_mtu:[[:space:]]+4096 \(5\)' "uroce0 (lo, MTU 65536): active_mtu 4096"
ur_expect_grep host.gid 'state:[[:space:]]+PORT_ACTIVE \(4\)' "uroce0: PORT_ACTIVE"
ur_expect_grep host.gid 'link_layer:[[:space:]]+Ethernet' "uroce0: link layer Ethernet"
check_ns host

# uroce run: the tool puts the library first, like LD_LIBRARY_PATH.
# Under ASan the exec'd (uninstrumented) program needs the runtime preloaded.
run_pre=()
if ur_is_asan; then
	run_pre=(env "LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
		 "ASAN_OPTIONS=detect_leaks=0")
fi
if "${run_pre[@]}" "$UR_BUILD/bin/uroce" run -- ibv_devices > "$UR_TMP/uroce-run.out" 2>&1 &&
   grep -q uroce0 "$UR_TMP/uroce-run.out"; then
	ur_pass "uroce run -- ibv_devices lists uroce0"
else
	ur_fail "uroce run -- ibv_devices: $(head -5 "$UR_TMP/uroce-run.out")"
fi

# --- namespaces with known addresses ------------------------------------------

ur_netns_pair 1500
ns15=$UR_NS_A if15=$UR_IF_A
ur_ip "$ns15" addr add 10.79.101.7/24 dev "$if15" label "$if15:al" || ur_fail "add a labelled address"
UR_NS=$ns15 check_ns ns1500
UR_NS=$ns15 ur_run ns1500.expect ibv_devinfo -v -d uroce1
UR_NS=$ns15 ur_expect_grep ns1500.expect 'active_mtu:[[:space:]]+1024 \(3\)' "1500-byte veth: active_mtu 1024"
ur_expect_grep ns1500.expect "GID\[ *1\]:[[:space:]]+::ffff:$UR_IP_A, RoCE v2" "veth: GID 1 is its first IPv4 address"
ur_expect_grep ns1500.expect "GID\[ *2\]:[[:space:]]+::ffff:10\.79\.101\.7, RoCE v2" "veth: GID 2 is its labelled IPv4 address"
ur_expect_grep ns1500.expect "GID\[ *3\]:[[:space:]]+$(/usr/bin/python3 -c "import ipaddress,sys;print(ipaddress.ip_address(sys.argv[1]).compressed)" "$UR_IP6_A"), RoCE v2" "veth: GID 3 is its IPv6 address"
UR_NS=$ns15 ur_run ns1500.devices ibv_devices
ur_expect_no_grep ns1500.devices ':al' "the labelled address is not a device of its own"

ur_netns_pair 9000
ns90=$UR_NS_A
UR_NS=$ns90 check_ns ns9000
UR_NS=$ns90 ur_run ns9000.expect ibv_devinfo -v -d uroce1
ur_expect_grep ns9000.expect 'active_mtu:[[:space:]]+4096 \(5\)' "9000-byte veth: active_mtu 4096"

# An interface without carrier: the port is down.
ur_ip "$UR_NS_B" link set "$UR_IF_B" down
for _ in $(seq 50); do
	[ "$(ur_operstate "$ns90" "$UR_IF_A")" != up ] && break
	sleep 0.1
done
UR_NS=$ns90 check_ns ns9000-peer-down
UR_NS=$ns90 ur_run ns9000.down ibv_devinfo -v -d uroce1
ur_expect_grep ns9000.down 'state:[[:space:]]+PORT_DOWN \(1\)' "veth whose peer is down: PORT_DOWN"

ur_done
