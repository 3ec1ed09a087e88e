# Two network namespaces joined by a veth pair (MTU 1500, or $MTU), for the
# bench scripts that compare uroce across a link (loss.sh, reorder.sh,
# veth.sh).  Sourced after they set uroce (the tool) and NET (the /24's
# first three octets):
#   nsa, nsb     the namespaces, NET.1 in A and NET.2 in B;
#   tmp, pids    a scratch directory and the background pids, both cleaned
#                up, with the namespaces, when the script exits;
#   dev_gid_of NS IP   "-d DEVICE -x INDEX" of the uroce GID ::ffff:IP in NS;
#   perftest_pair BUILD PROG ARGS...   one perftest pair, server in B (with
#                $gb, the caller's dev_gid_of B), client in A ($ga), with
#                BUILD's library; prints the client's last result line.
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

perftest_pair() {
	local lib=$1/lib prog=$2 port=$((20000 + RANDOM % 10000))
	shift 2
	# shellcheck disable=SC2086
	ip netns exec "$nsb" env LD_LIBRARY_PATH="$lib" timeout 60 "$prog" $gb -p "$port" "$@" \
		>"$tmp/srv" 2>&1 &
	pids+=($!)
	sleep 1
	# shellcheck disable=SC2086
	ip netns exec "$nsa" env LD_LIBRARY_PATH="$lib" timeout 60 "$prog" $ga -p "$port" "$@" \
		"$NET.2" >"$tmp/cli" 2>&1 || true
	wait "${pids[-1]}" 2>/dev/null || true
	grep -E '^ +[0-9]+ +[0-9]+ ' "$tmp/cli" | tail -n 1
}
