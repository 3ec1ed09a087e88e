#!/usr/bin/env bash
# Side-by-side figures on this machine, in one run (shared machines drift:
# compare ratios, not absolutes): uroce (unmodified perftest on the software
# device) next to kernel TCP/UDP (qperf), UCX (ucx_perftest) and memcpy.
#
#   bench/compare.sh [BUILD_DIR [BASELINE_BUILD_DIR]]    (default: build)
#
# With a baseline (another build of uroce, say the last release's), every
# uroce figure is taken for both, alternately, and their ratio printed.
# Without one, the same build is taken again with UROCE_SHM=0 (processes of
# the host reached over UDP and unix sockets, not shared memory), and that
# ratio printed.  Then the ratios against the peers measured in the same
# run.  Everything runs on loopback, but for the rows between two network
# namespaces over a veth (bench/veth.sh; as root, COMPARE_VETH=0 skips
# them) and the CPU of an idle process, and the programs that wait on
# completion channels (bench/events.sh; COMPARE_EVENTS=0 skips them), and
# 1 and 8 ib_write_bw pairs at once (bench/pairs.sh; COMPARE_PAIRS=0).
# Prints a markdown table, and the raw
# figures as JSON to $COMPARE_JSON (default: compare.json here).  Then it
# sweeps message sizes (perftest -a on uroce with and without shared
# memory, UCX sm, kernel TCP, memcpy) and plots bandwidth and latency
# against size to $COMPARE_SVG (default compare.svg; its points beside it
# as .tsv); COMPARE_SWEEP=0 skips that.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
base=${2:-}
uroce=$build/bin/uroce
port=$((30000 + RANDOM % 20000))
# shellcheck source=bench/lib.sh
. "$src/bench/lib.sh"
bench_scratch

bench_need qperf ucx_perftest ib_write_bw -- qperf ucx-utils perftest

row() { printf '| %-44s | %14s | %s |\n' "$1" "$2" "$3"; }

gid=$("$uroce" run -- ibv_devinfo -v -d uroce0 | sed -n 's/.*GID\[ *\([0-9]*\)\]:.*::ffff:.*/\1/p' | head -n 1)

# perftest pair on uroce0 with the library of build dir $1; prints the
# client's result line.
perf_pair() {
	local lib=$1/lib prog=$2
	shift 2
	port=$((port + 1))
	LD_LIBRARY_PATH=$lib timeout 120 "$prog" -d uroce0 -x "$gid" -p "$port" "$@" >"$tmp/srv" 2>&1 &
	local spid=$!
	for _ in $(seq 100); do
		ss -ltn "sport = :$port" | grep -q LISTEN && break
		sleep 0.1
	done
	LD_LIBRARY_PATH=$lib timeout 120 "$prog" -d uroce0 -x "$gid" -p "$port" "$@" 127.0.0.1 \
		>"$tmp/cli" 2>&1 || true
	wait "$spid" || true
	grep -E '^ +[0-9]+ +[0-9]+ ' "$tmp/cli" | tail -n 1
}

echo "## Side-by-side, $(date -u +%F), $(nproc) cores, $(uname -r)"
echo
printf '| %-44s | %14s | %s |\n' "what" "figure" "how"
printf '|%s|%s|%s|\n' "----------------------------------------------" "----------------" "---"

# memcpy
"$build/bin/bench_memcpy" 0.3 >"$tmp/memcpy"
row "memcpy, 64 KiB (in cache)" "$(awk '$1==65536{print $2}' "$tmp/memcpy") GB/s" "bench_memcpy (glibc)"
row "ur_memcpy, 64 KiB (uroce's data-path copy)" "$(awk '$1==65536{print $3}' "$tmp/memcpy") GB/s" "bench_memcpy"
row "memcpy, 1 MiB" "$(awk '$1==1048576{print $2}' "$tmp/memcpy") GB/s" "bench_memcpy (glibc)"
row "memcpy, 64 MiB (out of cache)" "$(awk '$1==67108864{print $2}' "$tmp/memcpy") GB/s" "bench_memcpy"

# kernel TCP/UDP
qport=$((port + 500))
qperf --listen_port "$qport" >/dev/null 2>&1 &
pids+=($!)
sleep 0.5
qperf -lp "$qport" -t 3 127.0.0.1 tcp_bw udp_bw tcp_lat udp_lat >"$tmp/qperf" 2>&1 || true
q() { awk -v t="$1" -v k="$2" '$1==t":"{f=1;next} f&&$1==k{print $3, $4; f=0}' "$tmp/qperf"; }
row "kernel TCP bandwidth (qperf tcp_bw)" "$(q tcp_bw bw)" "loopback"
row "kernel UDP bandwidth (qperf udp_bw, recv)" "$(q udp_bw recv_bw)" "loopback"
row "kernel TCP latency (qperf tcp_lat, one way)" "$(q tcp_lat latency)" "loopback"
row "kernel UDP latency (qperf udp_lat, one way)" "$(q udp_lat latency)" "loopback"

# UCX
ucx() {
	local tls=$1 test=$2 size=$3 n=${4:-20000} p=$((port + 600 + RANDOM % 100))
	UCX_TLS=$tls timeout 60 ucx_perftest -p "$p" >/dev/null 2>&1 &
	local spid=$!
	sleep 1
	UCX_TLS=$tls timeout 60 ucx_perftest 127.0.0.1 -p "$p" -t "$test" -s "$size" -n "$n" 2>/dev/null |
		awk '/Final:/{print}' | tail -n 1
	wait "$spid" 2>/dev/null || true
}
u_lat=$(ucx sm,self tag_lat 8 | awk '{print $3}')
u_bw=$(ucx sm,self ucp_put_bw 65536 | awk '{print $(NF-2)}')
u_bw1m=$(ucx sm,self ucp_put_bw 1048576 | awk '{print $(NF-2)}')
# A million messages each: 20 000 took a few milliseconds, mostly start-up.
u_rate=$(ucx sm,self tag_bw 8 1000000 | awk '{print $(NF-1)}')
ut_lat=$(ucx tcp,self tag_lat 8 | awk '{print $3}')
row "UCX shared memory latency, 8 B (one way)" "${u_lat:-?} us" "ucx_perftest -t tag_lat, UCX_TLS=sm,self"
row "UCX shared memory put bandwidth, 64 KiB" "${u_bw:-?} MB/s" "ucx_perftest -t ucp_put_bw"
row "UCX shared memory put bandwidth, 1 MiB" "${u_bw1m:-?} MB/s" "ucx_perftest -t ucp_put_bw"
row "UCX shared memory message rate, 8 B" "${u_rate:-?} msg/s" "ucx_perftest -t tag_bw"
row "UCX TCP latency, 8 B (one way)" "${ut_lat:-?} us" "ucx_perftest -t tag_lat, UCX_TLS=tcp,self"

# uroce: each figure of this build, and of the baseline right after it
# (another build, or this one with UROCE_SHM=0).
# field: the perftest column (4 = average bandwidth, 5 = typical latency).
declare -A fig=()
uroce_row() {
	local key=$1 what=$2 unit=$3 how=$4 field=$5 prog=$6 a b bname
	shift 6
	a=$(perf_pair "$build" "$prog" "$@" | awk -v f="$field" '{print $f}')
	fig[$key]=$a
	if [ -n "$base" ]; then
		b=$(perf_pair "$base" "$prog" "$@" | awk -v f="$field" '{print $f}')
		bname="baseline build"
	else
		b=$(UROCE_SHM=0 perf_pair "$build" "$prog" "$@" | awk -v f="$field" '{print $f}')
		bname="same build, UROCE_SHM=0"
	fi
	fig[$key.base]=$b
	row "uroce $what" "$a $unit" "$how"
	row "  $bname" "$b $unit" "ratio this/that $(awk -v a="$a" -v b="$b" \
		'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "?" }')"
}

uroce_row write64k "RDMA WRITE bandwidth, 64 KiB" MB/s "ib_write_bw, two processes" 4 ib_write_bw -s 65536 -n 5000
uroce_row write1m "RDMA WRITE bandwidth, 1 MiB" MB/s "ib_write_bw" 4 ib_write_bw -s 1048576 -n 500
uroce_row read64k "RDMA READ bandwidth, 64 KiB" MB/s "ib_read_bw" 4 ib_read_bw -s 65536 -n 5000
uroce_row read1m "RDMA READ bandwidth, 1 MiB" MB/s "ib_read_bw" 4 ib_read_bw -s 1048576 -n 500
uroce_row send64k "SEND bandwidth, 64 KiB" MB/s "ib_send_bw" 4 ib_send_bw -s 65536 -n 5000
uroce_row rate8 "SEND message rate, 8 B" Mpps "ib_send_bw -s 8 -n 1000000" 5 ib_send_bw -s 8 -n 1000000
uroce_row sendlat "SEND latency, 2 B (one way, typical)" us "ib_send_lat" 5 ib_send_lat -s 2 -n 5000
uroce_row writelat "WRITE latency, 2 B (one way, typical)" us "ib_write_lat" 5 ib_write_lat -s 2 -n 5000

# An idle process holding a device, a QP and a CQ (ibv_rc_pingpong's
# server, waiting for its client): the CPU it uses in 10 s.
port=$((port + 1))
LD_LIBRARY_PATH=$build/lib timeout 30 ibv_rc_pingpong -d uroce0 -g "$gid" -p "$port" >/dev/null 2>&1 &
idle_pid=$!
pids+=($idle_pid)
sleep 1
t0=$(awk '{ print $14 + $15 }' "/proc/$idle_pid/stat")
sleep 10
t1=$(awk '{ print $14 + $15 }' "/proc/$idle_pid/stat")
kill "$idle_pid" 2>/dev/null || true
fig[idle_ticks_10s]=$((t1 - t0))
row "uroce idle: a device, QP and CQ held, 10 s" "$((t1 - t0)) ticks" "ibv_rc_pingpong server waiting; $(getconf CLK_TCK) ticks = 1 s of a core"

# Between two namespaces over a veth (needs root; COMPARE_VETH=0 skips).
if [ "${COMPARE_VETH:-1}" != 0 ] && [ "$(id -u)" = 0 ]; then
	VETH_OUT=$tmp/veth "$src/bench/veth.sh" "$build" $base || true
	while read -r k v; do fig[$k]=$v; done < "$tmp/veth"
fi

# Pairs at once on one host (bench/pairs.sh; COMPARE_PAIRS=0 skips them).
if [ "${COMPARE_PAIRS:-1}" != 0 ]; then
	PAIRS_OUT=$tmp/pairs "$src/bench/pairs.sh" "$build" || true
	[ -f "$tmp/pairs" ] && while read -r k v; do fig[$k]=$v; done < "$tmp/pairs"
fi

# Programs that wait on completion channels (bench/events.sh: rping, fio's
# rdma engine, ibv_rc_pingpong -e, ib_send_lat -e) next to their busy
# twins; COMPARE_EVENTS=0 skips them.
if [ "${COMPARE_EVENTS:-1}" != 0 ]; then
	EVENTS_OUT=$tmp/events "$src/bench/events.sh" "$build" $base || true
	[ -f "$tmp/events" ] && while read -r k v; do fig[$k]=$v; done < "$tmp/events"
fi

# The issue's ratios, against the peers of this run.
ratio() { awk -v a="$1" -v b="$2" -v m="${3:-1}" 'BEGIN { if (a > 0 && b > 0) printf "%.3f", a * m / b; else print "?" }'; }
mc1m=$(awk '$1==1048576{print $2}' "$tmp/memcpy")
echo
printf '| %-52s | %8s |\n' "ratio (one run)" "figure"
printf '|%s|%s|\n' "------------------------------------------------------" "----------"
printf '| %-52s | %8s |\n' "WRITE 1 MiB / UCX sm put 1 MiB" "$(ratio "${fig[write1m]}" "${u_bw1m:-0}")"
printf '| %-52s | %8s |\n' "WRITE 1 MiB / memcpy 1 MiB" "$(ratio "${fig[write1m]}" "$mc1m" 0.001)"
printf '| %-52s | %8s |\n' "READ 1 MiB / WRITE 1 MiB" "$(ratio "${fig[read1m]}" "${fig[write1m]}")"
printf '| %-52s | %8s |\n' "SEND latency 2 B / UCX sm tag_lat 8 B (lower is better)" "$(ratio "${fig[sendlat]}" "${u_lat:-0}")"
printf '| %-52s | %8s |\n' "SEND rate 8 B / UCX sm tag_bw 8 B" "$(ratio "${fig[rate8]}" "${u_rate:-0}" 1000000)"
if [ -n "${fig[events_rping_us]:-}" ]; then
	printf '| %-52s | %8s |\n' "rping ping / ibv_rc_pingpong -e round trip (lower)" \
		"$(ratio "${fig[events_rping_us]}" "${fig[events_pp_event_us]}")"
	printf '| %-52s | %8s |\n' "ib_send_lat -e / ib_send_lat (lower is better)" \
		"$(ratio "${fig[events_lat_event_us]}" "${fig[events_lat_busy_us]}")"
	printf '| %-52s | %8s |\n' "fio rdma 64 KiB iodepth 16 / ib_write_bw 64 KiB" \
		"$(ratio "${fig[events_fio_mbps]}" "${fig[events_write_mbps]}")"
fi
for m in ${MTUS:-1500 9000}; do
	[ -n "${fig[veth${m}_tcp_gbps]:-}" ] || continue
	printf '| %-52s | %8s |\n' "veth MTU $m: WRITE 64 KiB / kernel TCP" \
		"$(ratio "${fig[veth${m}_write64k_gbps]}" "${fig[veth${m}_tcp_gbps]}")"
	printf '| %-52s | %8s |\n' "veth MTU $m: 4 QPs WRITE 64 KiB / iperf3 -P 4" \
		"$(ratio "${fig[veth${m}_write64k_q4_gbps]:-}" "${fig[veth${m}_tcp_q4_gbps]:-}")"
	printf '| %-52s | %8s |\n' "veth MTU $m: 4 QPs / 1 QP, aggregate" \
		"$(ratio "${fig[veth${m}_write64k_q4_gbps]:-}" "${fig[veth${m}_write64k_gbps]}")"
	printf '| %-52s | %8s |\n' "veth MTU $m: SEND latency 8 B / UDP (lower is better)" \
		"$(ratio "${fig[veth${m}_sendlat_us]}" "${fig[veth${m}_udplat_us]}")"
done

if [ -n "${fig[pairs8_write64k_mbps]:-}" ]; then
	printf '| %-52s | %8s |\n' "one host: 8 pairs / 1 pair, WRITE 64 KiB aggregate" \
		"$(ratio "${fig[pairs8_write64k_mbps]}" "${fig[pairs1_write64k_mbps]}")"
fi

json=${COMPARE_JSON:-compare.json}
{
	printf '{"date":"%s","cores":%s,"memcpy_1m_GBps":"%s","ucx_sm_lat_us":"%s","ucx_sm_put_1m_MBps":"%s","ucx_sm_rate_msgps":"%s","uroce":{' \
		"$(date -u +%FT%TZ)" "$(nproc)" "$mc1m" "${u_lat:-}" "${u_bw1m:-}" "${u_rate:-}"
	sep=
	for k in "${!fig[@]}"; do
		printf '%s"%s":"%s"' "$sep" "$k" "${fig[$k]}"
		sep=,
	done
	printf '}}\n'
} > "$json"
echo
echo "raw figures: $json"

# The sweep: bandwidth and latency against message size for uroce and its
# peers, plotted (COMPARE_SWEEP=0 skips it).
[ "${COMPARE_SWEEP:-1}" = 0 ] && exit 0
svg=${COMPARE_SVG:-compare.svg}
tsv=${svg%.svg}.tsv
: > "$tsv"
point() { [ -n "$4" ] && printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$tsv"; return 0; }

# perftest -a on uroce0: every size's line (size, then column field).
perf_sweep() {
	local series=$1 panel=$2 field=$3 prog=$4
	shift 4
	port=$((port + 1))
	timeout 300 "$prog" -d uroce0 -x "$gid" -p "$port" -a "$@" >"$tmp/srv" 2>&1 &
	local spid=$!
	for _ in $(seq 100); do
		ss -ltn "sport = :$port" | grep -q LISTEN && break
		sleep 0.1
	done
	timeout 300 "$prog" -d uroce0 -x "$gid" -p "$port" -a "$@" 127.0.0.1 >"$tmp/cli" 2>&1 || true
	wait "$spid" || true
	grep -E '^ +[0-9]+ +[0-9]+ ' "$tmp/cli" | awk -v s="$series" -v p="$panel" -v f="$field" \
		'{ printf "%s\t%s\t%s\t%s\n", s, p, $1, $f }' >> "$tsv"
}
export LD_LIBRARY_PATH=$build/lib
perf_sweep "uroce WRITE, shared memory" bw 4 ib_write_bw -n 2000
UROCE_SHM=0 perf_sweep "uroce WRITE, UDP (UROCE_SHM=0)" bw 4 ib_write_bw -n 2000
perf_sweep "uroce SEND, shared memory" lat 5 ib_send_lat -n 1000
UROCE_SHM=0 perf_sweep "uroce SEND, UDP (UROCE_SHM=0)" lat 5 ib_send_lat -n 1000
unset LD_LIBRARY_PATH

for sz in 8 512 4096 32768 262144 1048576 8388608; do
	n=$((268435456 / sz)); [ $n -gt 20000 ] && n=20000; [ $n -lt 50 ] && n=50
	point "UCX sm (put_bw, tag_lat)" bw "$sz" "$(ucx sm,self ucp_put_bw "$sz" | awk '{print $(NF-2)}')"
	[ "$sz" -le 1048576 ] &&
		point "UCX sm (put_bw, tag_lat)" lat "$sz" "$(ucx sm,self tag_lat "$sz" | awk '{print $3}')"
done
awk 'NR > 1 { printf "memcpy (glibc)\tbw\t%s\t%.0f\n", $1, $2 * 1000 }' "$tmp/memcpy" >> "$tsv"
for sz in 8 512 4096 32768 262144 1048576; do
	qperf -lp "$qport" -t 1 -m "$sz" 127.0.0.1 tcp_bw tcp_lat >"$tmp/qp" 2>&1 || true
	point "kernel TCP (qperf)" bw "$sz" "$(awk '$1=="bw" { v=$3; u=$4; m = u ~ /^GB/ ? 1000 : u ~ /^KB/ ? 0.001 : u ~ /^MB/ ? 1 : 0.000001; printf "%.3f", v * m }' "$tmp/qp")"
	point "kernel TCP (qperf)" lat "$sz" "$(awk '$1=="latency" { v=$3; u=$4; m = u ~ /^ms/ ? 1000 : u ~ /^ns/ ? 0.001 : 1; printf "%.3f", v * m }' "$tmp/qp")"
done
python3 "$src/bench/plot_compare.py" "$tsv" "$svg" \
	"uroce and its peers, one run on $(nproc) cores, $(date -u +%F)" && echo "plot: $svg (points: $tsv)"
