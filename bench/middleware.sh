#!/usr/bin/env bash
# UCX and Open MPI over uroce next to UCX's own shared memory and TCP, in
# one run on this machine (shared machines drift: compare within a run):
#   - ucx_perftest tag_lat (8 B) and ucp_put_bw (1 MiB), client and server
#     processes;
#   - Open MPI (pml ucx), two ranks of tests/integ/mpi/mpi_check.c: ping-pong
#     latency (8 B, half a round trip) and bandwidth (4 MiB).
# uroce: UCX_TLS=rc_verbs,ud_verbs:aux,self on uroce0 (lo); shm:
# UCX_TLS=sm,self; TCP: UCX_TLS=tcp,self on lo.  Needs root for the
# /dev/infiniband nodes (uroce devnodes create), ucx-utils, openmpi-bin and
# a build with integ_mpi_check.  Prints a markdown table.
#
#   bench/middleware.sh [BUILD_DIR]      (default: build)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
uroce=$build/bin/uroce
mpi_prog=$build/bin/integ_mpi_check
port=$((30000 + RANDOM % 20000))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for tool in ucx_perftest mpirun; do
	command -v "$tool" >/dev/null || { echo "missing $tool: apt-get install ucx-utils openmpi-bin" >&2; exit 1; }
done
"$uroce" devnodes create uroce0 >/dev/null ||
	{ echo "UCX needs /dev/infiniband/uverbs-uroce0: run as root" >&2; exit 1; }

# The three ways, as "name|UCX_TLS|UCX_NET_DEVICES".
ways=("uroce (rc_verbs, ud_verbs aux)|rc_verbs,ud_verbs:aux,self|uroce0:1"
      "UCX shared memory|sm,self|all"
      "UCX TCP on lo|tcp,self|lo")

# ucx TLS DEVS TEST ARGS...: the client's "Final:" line of ucx_perftest.
ucx() {
	local tls=$1 devs=$2 test=$3
	shift 3
	port=$((port + 1))
	UCX_TLS=$tls UCX_NET_DEVICES=$devs LD_LIBRARY_PATH=$build/lib \
		timeout 120 ucx_perftest -p "$port" -t "$test" "$@" >"$tmp/srv" 2>&1 &
	local spid=$!
	for _ in $(seq 100); do
		ss -ltn "sport = :$port" | grep -q LISTEN && break
		sleep 0.1
	done
	UCX_TLS=$tls UCX_NET_DEVICES=$devs LD_LIBRARY_PATH=$build/lib \
		timeout 120 ucx_perftest 127.0.0.1 -p "$port" -t "$test" "$@" >"$tmp/cli" 2>&1 || true
	wait "$spid" || true
	grep '^Final:' "$tmp/cli" || echo "Final: failed"
}

mpi() {
	local tls=$1 devs=$2
	LD_LIBRARY_PATH=$build/lib UCX_TLS=$tls UCX_NET_DEVICES=$devs \
		timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 \
		--mca pml ucx --mca osc ucx \
		--mca btl self -x UCX_TLS -x UCX_NET_DEVICES -x LD_LIBRARY_PATH \
		"$mpi_prog" 300 2>&1 | grep '^figure:' || echo "figure: failed"
}

echo "## UCX and Open MPI, $(date -u +%F), $(nproc) cores, $(uname -r)"
echo
echo "| transport | UCX tag_lat 8 B (us, median) | UCX ucp_put_bw 1 MiB (MB/s) | MPI ping-pong 8 B (us) | MPI ping-pong 4 MiB (MB/s) |"
echo "|---|---|---|---|---|"
for w in "${ways[@]}"; do
	IFS='|' read -r name tls devs <<<"$w"
	lat=$(ucx "$tls" "$devs" tag_lat -n 10000 -w 1000 | awk '{print $3}')
	bw=$(ucx "$tls" "$devs" ucp_put_bw -s 1048576 -n 200 -w 20 | awk '{print $6}')
	fig=$(mpi "$tls" "$devs")
	mlat=$(sed -n 's/.*pingpong_8B_us=\([0-9.]*\).*/\1/p' <<<"$fig")
	mbw=$(sed -n 's/.*pingpong_4MiB_MBps=\([0-9.]*\).*/\1/p' <<<"$fig")
	echo "| $name | ${lat:-failed} | ${bw:-failed} | ${mlat:-failed} | ${mbw:-failed} |"
done
