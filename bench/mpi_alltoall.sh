#!/usr/bin/env bash
# Open MPI's MPI_Alltoall across network namespaces, over uroce and over
# UCX's TCP on the same links, side by side in one run: NS namespaces
# (default 8) joined by a bridge, RANKS_PER_NS ranks in each (default 2),
# bench/mpi/bench_mpi_alltoall with SIZE bytes a pair (default 64 KiB),
# every byte checked.  uroce: UCX_TLS=rc_verbs,ud_verbs:aux,self on the
# uroce device of each namespace's link (ranks in one namespace meet over
# uroce's shared memory); TCP: UCX_TLS=tcp,self on that link.  mpirun runs
# in the first namespace and starts the others' daemons through an rsh
# agent that enters them.  Each way runs REPEAT times (default 2),
# alternating.  Needs root (namespaces, /dev/infiniband nodes), openmpi-bin,
# ucx-utils and a build configured with libopenmpi-dev.
#
#   bench/mpi_alltoall.sh [BUILD_DIR]    NS=8 RANKS_PER_NS=2 SIZE=65536 ROUNDS=30 REPEAT=2 MTU=1500
#
# MPI_ENV="VAR=VALUE ..." gives every rank of both ways more environment
# (UCX_RNDV_THRESH=inf, say, to compare UCX's protocols).
#
# Prints markdown rows and a "ratio" line (uroce's aggregate / TCP's).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
uroce=$build/bin/uroce
prog=$build/bin/bench_mpi_alltoall
ns_count=${NS:-8} per_ns=${RANKS_PER_NS:-2} size=${SIZE:-65536}
rounds=${ROUNDS:-30} repeat=${REPEAT:-2}
for tool in mpirun ucx_info ip; do
	command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install openmpi-bin ucx-utils iproute2" >&2; exit 1; }
done
[ -x "$prog" ] || { echo "$prog is not built: apt-get install libopenmpi-dev, then cmake $build" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench/mpi_alltoall.sh needs root (network namespaces)" >&2; exit 1; }

tag=urmpi$$ net=10.95.$((RANDOM % 200))
tmp=$(mktemp -d)
hub=${tag}h
ns() { echo "${tag}n$1"; }
cleanup() {
	for i in $(seq 0 $((ns_count - 1))); do ip netns del "$(ns "$i")" 2>/dev/null || true; done
	ip netns del "$hub" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# The namespaces: each one's link is "mpi0" (one name, so UCX_NET_DEVICES
# is the same for every rank), NET.(i+1) on a bridge in the hub namespace.
ip netns add "$hub"
ip -n "$hub" link add br0 type bridge
ip -n "$hub" link set br0 up
for i in $(seq 0 $((ns_count - 1))); do
	n=$(ns "$i")
	ip netns add "$n"
	ip link add "${tag}v$i" type veth peer name "${tag}p$i"
	ip link set "${tag}v$i" netns "$n"
	ip link set "${tag}p$i" netns "$hub"
	ip -n "$n" link set "${tag}v$i" name mpi0
	ip -n "$n" link set lo up
	ip -n "$n" link set mpi0 mtu "${MTU:-1500}" up
	ip -n "$n" addr add "$net.$((i + 1))/24" dev mpi0
	ip -n "$hub" link set "${tag}p$i" mtu "${MTU:-1500}" master br0 up
done

# The uroce device of mpi0: the one whose GID table holds ::ffff:NET.(i+1),
# the same name in every namespace (each lists lo and mpi0 alike).
dev_of() {
	ip netns exec "$(ns "$1")" "$uroce" run --no-sysfs -- ibv_devinfo -v | awk -v ip="::ffff:$net.$(($1 + 1)),"  '
		/^hca_id:/ { dev = $2 } /GID\[/ && index($0, ip) { print dev; exit }'
}
dev=$(dev_of 0)
for i in $(seq 1 $((ns_count - 1))); do
	d=$(dev_of "$i")
	[ "$d" = "$dev" ] || { echo "namespace $i names its link's device '$d', namespace 0 '$dev'" >&2; exit 1; }
done
[ -n "$dev" ] || { echo "no uroce device with GID ::ffff:$net.1 in $(ns 0)" >&2; exit 1; }
"$uroce" devnodes create "$dev" >/dev/null

# The rsh agent: HOST CMD... runs CMD in the namespace named HOST; the
# first namespace is this host's own name (mpirun runs there).
cat >"$tmp/agent" <<EOF
#!/bin/sh
host=\$1
shift
exec ip netns exec "\$host" sh -c "\$*"
EOF
chmod +x "$tmp/agent"
{
	echo "$(hostname) slots=$per_ns"
	for i in $(seq 1 $((ns_count - 1))); do echo "$(ns "$i") slots=$per_ns"; done
} >"$tmp/hosts"

sent_pkts() {
	ip netns exec "$(ns 1)" "$uroce" devinfo -d "$dev" -c | awk '$1 == "sent_pkts" { print $2 }'
}

# MPI_ENV's variables, and mpirun's -x for each.
extra_env=() extra_x=()
for kv in ${MPI_ENV:-}; do
	extra_env+=("$kv")
	extra_x+=(-x "${kv%%=*}")
done

# way NAME TLS DEVICES: one mpirun; prints "aggregate_MBps alltoall_us".
way() {
	local name=$1 tls=$2 devs=$3 log=$tmp/$1.$RANDOM
	ip netns exec "$(ns 0)" env LD_LIBRARY_PATH="$build/lib" UCX_TLS="$tls" UCX_NET_DEVICES="$devs" \
		UCX_IB_REG_METHODS=rcache,direct "${extra_env[@]}" \
		timeout 600 mpirun --allow-run-as-root --oversubscribe --bind-to none -np $((ns_count * per_ns)) \
		--hostfile "$tmp/hosts" --mca plm_rsh_agent "$tmp/agent" --mca oob_tcp_if_include "$net.0/24" \
		--mca pml ucx --mca osc ucx --mca btl self --mca pml_ucx_tls any --mca pml_ucx_devices any \
		-x UCX_TLS -x UCX_NET_DEVICES -x UCX_IB_REG_METHODS -x LD_LIBRARY_PATH "${extra_x[@]}" \
		"$prog" "$size" "$rounds" >"$log" 2>&1 || true
	local fig
	fig=$(grep '^figure:' "$log" | tail -n 1 || true)
	if [ -z "$fig" ] || ! grep -q ' bad=0$' <<<"$fig"; then
		echo "$name: no clean figure; its output:" >&2
		tail -n 20 "$log" >&2
		echo "0 0"
		return
	fi
	sed -E 's/.*alltoall_us=([0-9.]+) aggregate_MBps=([0-9.]+).*/\2 \1/' <<<"$fig"
}

ranks=$((ns_count * per_ns))
printf '%s namespaces x %s ranks, MPI_Alltoall %s B a pair, %s rounds, link MTU %s, uroce device %s%s\n\n' \
	"$ns_count" "$per_ns" "$size" "$rounds" "${MTU:-1500}" "$dev" "${MPI_ENV:+, $MPI_ENV}"
printf '| way | run | aggregate MB/s | us a round |\n|---|---|---|---|\n'
sum_u=0 sum_t=0 failed=0
before=$(sent_pkts)
for r in $(seq "$repeat"); do
	read -r bu lu < <(way uroce "rc_verbs,ud_verbs:aux,self" "$dev:1")
	read -r bt lt < <(way tcp "tcp,self" mpi0)
	printf '| uroce (rc_verbs) | %s | %s | %s |\n| UCX tcp | %s | %s | %s |\n' "$r" "$bu" "$lu" "$r" "$bt" "$lt"
	# A run pair counts only if both ways gave a clean figure: a failed
	# way's 0 would tilt the ratio.
	if awk -v u="$bu" -v t="$bt" 'BEGIN { exit !(u > 0 && t > 0) }'; then
		sum_u=$(awk -v a="$sum_u" -v b="$bu" 'BEGIN { print a + b }')
		sum_t=$(awk -v a="$sum_t" -v b="$bt" 'BEGIN { print a + b }')
	else
		failed=$((failed + 1))
	fi
done
after=$(sent_pkts)
echo
echo "uroce packets sent from namespace 1 during the runs: $((after - before)) ($ranks ranks)"
awk -v u="$sum_u" -v t="$sum_t" -v f="$failed" 'BEGIN {
	note = f ? sprintf(" (%d run(s) left out: a way gave no clean figure)", f) : ""
	if (u > 0 && t > 0) printf "ratio: uroce / UCX tcp aggregate = %.2f%s\n", u / t, note
	else print "ratio: ? (no run with both ways clean)" }'
