# Two network namespaces joined by a veth pair (MTU 1500, or $MTU), for the
# bench scripts that compare uroce across a link (loss.sh, reorder.sh,
# veth.sh).  Sourced after they set uroce (the tool) and NET (the /24's
# first three octets):
#   nsa, nsb     the namespaces, NET.1 in A and NET.2 in B;
#   tmp, pids    a scratch directory and the background pids, both cleaned
#                up, with the namespaces, when the script exits;
#   dev_gid_of NS IP   "-d DEVICE -x INDEX" of the uroce GID ::ffff:IP in NS.
tag=urbn$$
nsa=${tag}a nsb=${tag}b
tmp=$(mktemp -d)
pids=()

cleanup() {
	for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
	ip netns del "$nsa" 2>/dev/null || true
	ip netns del "$nsb" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

ip netns add "$nsa"
ip netns add "$nsb"
ip link add "${tag}x" type veth peer name "${tag}y"
ip link set "${tag}x" netns "$nsa"
ip link set "${tag}y" netns "$nsb"
ip -n "$nsa" addr add "$NET.1/24" dev "${tag}x"
ip -n "$nsb" addr add "$NET.2/24" dev "${tag}y"
for n in "$nsa" "$nsb"; do ip -n "$n" link set lo up; done
ip -n "$nsa" link set "${tag}x" mtu "${MTU:-1500}"
ip -n "$nsb" link set "${tag}y" mtu "${MTU:-1500}"
ip -n "$nsa" link set "${tag}x" up
ip -n "$nsb" link set "${tag}y" up

dev_gid_of() {
	ip netns exec "$1" "$uroce" run -- ibv_devinfo -v | awk -v ip="::ffff:$2," '
		/^hca_id:/ { dev = $2 }
		/GID\[/ && index($0, ip) { g = $0; sub(/.*GID\[ */, "", g); sub(/\].*/, "", g)
					    print "-d " dev " -x " g; exit }'
}
