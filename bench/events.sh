#!/usr/bin/env bash
# Programs that wait on completion channels, next to their busy-polling
# twins, on one host (lo), in one run:
#   rping -C N -S 64 (rdma_cm, a completion-channel thread a side): time a ping
#   ibv_rc_pingpong -e -s 64 against ibv_rc_pingpong -s 64: a round trip
#   ib_send_lat -e against ib_send_lat: typical one-way latency
#   fio's rdma engine (64 KiB WRITEs, iodepth 16) against ib_write_bw 64 KiB
#
#   bench/events.sh [BUILD_DIR [BASELINE_BUILD_DIR]]    (default: build)
#
# With a baseline build every figure is taken for both, one after the
# other, and their ratio printed.  EVENTS_OUT=FILE also writes "key value"
# lines (bench/compare.sh reads them).  Needs rdmacm-utils, ibverbs-utils,
# perftest and fio (Debian's, with its rdma engine).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
base=${2:+$(cd "$2" && pwd)}
port=$((20000 + RANDOM % 20000))
# shellcheck source=bench/lib.sh
. "$src/bench/lib.sh"
bench_scratch
bench_need rping ibv_rc_pingpong ib_send_lat fio -- rdmacm-utils ibverbs-utils perftest fio
gid=$(LD_LIBRARY_PATH=$build/lib ibv_devinfo -v -d uroce0 |
	sed -n 's/.*GID\[ *\([0-9]*\)\]:.*::ffff:.*/\1/p' | head -n 1)
rping_n=${EVENTS_RPING_N:-2000}

# wait_port PORT [udp]: until something listens there (10 s at most).
wait_port() {
	local opt=-ltn
	[ "${2:-}" = udp ] && opt=-lun
	for _ in $(seq 100); do
		ss $opt "sport = :$1" | grep -q ":$1" && return 0
		sleep 0.1
	done
}

# Each figure: FIGURE_FN LIBDIR prints one number.
rping_us() {
	port=$((port + 1))
	LD_LIBRARY_PATH=$1 timeout 120 rping -s -a 127.0.0.1 -p "$port" -C "$rping_n" -S 64 \
		>/dev/null 2>&1 &
	local spid=$!
	wait_port "$port"
	local t0 t1
	t0=$(date +%s%N)
	LD_LIBRARY_PATH=$1 timeout 120 rping -c -a 127.0.0.1 -p "$port" -C "$rping_n" -S 64 -V \
		>/dev/null 2>&1 || { wait "$spid" || true; echo "?"; return; }
	t1=$(date +%s%N)
	wait "$spid" || true
	awk -v d=$((t1 - t0)) -v n="$rping_n" 'BEGIN { printf "%.1f", d / n / 1000 }'
}

# pingpong_us LIBDIR ARGS...: ibv_rc_pingpong's usec/iter (a round trip).
pingpong_us() {
	local lib=$1
	shift
	port=$((port + 1))
	LD_LIBRARY_PATH=$lib timeout 120 ibv_rc_pingpong -d uroce0 -g "$gid" -p "$port" "$@" \
		>/dev/null 2>&1 &
	local spid=$!
	wait_port "$port"
	LD_LIBRARY_PATH=$lib timeout 120 ibv_rc_pingpong -d uroce0 -g "$gid" -p "$port" "$@" 127.0.0.1 \
		2>/dev/null | awk '/usec\/iter/ { print $(NF-1) }'
	wait "$spid" || true
}
pp_event_us() { pingpong_us "$1" -e -s 64 -n 5000; }
pp_busy_us() { pingpong_us "$1" -s 64 -n 20000; }

# perftest LIBDIR FIELD PROG ARGS...: a field of the client's result line.
perftest() {
	local lib=$1 field=$2 prog=$3
	shift 3
	port=$((port + 1))
	LD_LIBRARY_PATH=$lib timeout 120 "$prog" -d uroce0 -x "$gid" -p "$port" "$@" >/dev/null 2>&1 &
	local spid=$!
	wait_port "$port"
	LD_LIBRARY_PATH=$lib timeout 120 "$prog" -d uroce0 -x "$gid" -p "$port" "$@" 127.0.0.1 2>/dev/null |
		grep -E '^ +[0-9]+ +[0-9]+ ' | tail -n 1 | awk -v f="$field" '{ print $f }'
	wait "$spid" || true
}
lat_event_us() { perftest "$1" 5 ib_send_lat -s 8 -n 5000 -e; }
lat_busy_us() { perftest "$1" 5 ib_send_lat -s 8 -n 5000; }
write_bw_mbps() { perftest "$1" 4 ib_write_bw -s 65536 -n 5000; }

# fio's rdma engine: a receiver (rw=read) and a sender of 64 KiB WRITEs.
fio_mbps() {
	local lib=$1 depth=${FIO_DEPTH:-16}
	port=$((port + 1))
	LD_LIBRARY_PATH=$lib timeout 120 fio --thread --output-format=terse --name=srv --ioengine=rdma \
		--port="$port" --rw=read --bs=64k --size=2g --iodepth="$depth" >/dev/null 2>&1 &
	local spid=$!
	wait_port "$port"
	# Terse (version 3) field 48: the WRITE bandwidth in KiB/s.  Parsed
	# without python, which a bare machine may lack.
	LD_LIBRARY_PATH=$lib timeout 120 fio --thread --output-format=terse --name=cli --ioengine=rdma \
		--hostname=127.0.0.1 --port="$port" --verb=write --rw=write --bs=64k --size=2g \
		--iodepth="$depth" 2>/dev/null |
		awk -F';' '$1 == 3 && NF > 48 { v = $48 * 1024 / 1e6 } END { if (v > 0) printf "%.0f\n", v; else print "?" }' || true
	wait "$spid" || true
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "?" }'; }
row() { printf '| %-46s | %10s | %10s | %s |\n' "$1" "$2" "$3" "$4"; }
declare -A fig=()
# measure KEY FN: this build's figure, then the baseline's.
measure() {
	fig[$1]=$("$2" "$build/lib")
	[ -n "$base" ] && fig[$1.base]=$("$2" "$base/lib")
	return 0
}

measure rping_us rping_us
measure pp_event_us pp_event_us
measure pp_busy_us pp_busy_us
measure lat_event_us lat_event_us
measure lat_busy_us lat_busy_us
measure fio_mbps fio_mbps
measure write_mbps write_bw_mbps

echo "## Event-driven programs, $(date -u +%F), $(nproc) cores, one host (lo)"
echo
row "figure" "this build" "baseline" "ratio this/baseline"
row "---" "---" "---" "---"
for k in rping_us pp_event_us pp_busy_us lat_event_us lat_busy_us fio_mbps write_mbps; do
	case $k in
	rping_us) what="rping -S 64, a ping (us)" ;;
	pp_event_us) what="ibv_rc_pingpong -e -s 64, round trip (us)" ;;
	pp_busy_us) what="ibv_rc_pingpong -s 64 (busy), round trip (us)" ;;
	lat_event_us) what="ib_send_lat -e 8 B, typical (us)" ;;
	lat_busy_us) what="ib_send_lat 8 B (busy), typical (us)" ;;
	fio_mbps) what="fio rdma 64 KiB WRITE, iodepth ${FIO_DEPTH:-16} (MB/s)" ;;
	write_mbps) what="ib_write_bw 64 KiB (MB/s)" ;;
	esac
	b=${fig[$k.base]:-}
	row "$what" "${fig[$k]:-?}" "${b:--}" "$([ -n "$b" ] && ratio "${fig[$k]}" "$b" || echo -)"
done
echo
row "ratio (this build)" "figure" "target" ""
row "---" "---" "---" ""
row "rping ping / ibv_rc_pingpong -e round trip" "$(ratio "${fig[rping_us]}" "${fig[pp_event_us]}")" "<= 5" ""
row "ibv_rc_pingpong -e / busy" "$(ratio "${fig[pp_event_us]}" "${fig[pp_busy_us]}")" "" ""
row "ib_send_lat -e / busy" "$(ratio "${fig[lat_event_us]}" "${fig[lat_busy_us]}")" "" ""
row "fio rdma / ib_write_bw, 64 KiB" "$(ratio "${fig[fio_mbps]}" "${fig[write_mbps]}")" ">= 0.5" ""
if [ -n "${EVENTS_OUT:-}" ]; then
	for k in "${!fig[@]}"; do echo "events_$k ${fig[$k]}"; done > "$EVENTS_OUT"
fi
