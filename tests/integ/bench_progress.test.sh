#!/usr/bin/env bash
# ctest-timeout: 300
# The progress issue's table travels (bench/bundle.sh, bench/progress.sh):
#  - the bundle packs, and every program in it, and uroce, finds each
#    library it loads in the bundle or in the C library (nothing else of
#    this machine's);
#  - its run.sh, in a mount namespace where the Debian programs it carries
#    are hidden (/dev/null mounted over each), prints the table with a
#    figure and a ratio in every row it ran (short runs: one MTU, 1 s
#    figures, 2 pairs), so no row fell back on this machine's programs;
#  - and cleans up: no namespace of its own left.
. "$(dirname "$0")/lib.sh"
ur_need_root
ur_is_asan && ur_skip "the bundle carries the build's libraries; an ASan build's need its runtime preloaded"
ur_is_tsan && ur_skip "the bundle carries the build's libraries; a TSan build's need its runtime preloaded"
for t in ib_write_bw ib_send_lat ibv_rc_pingpong rping fio iperf3 qperf ss unshare; do
	command -v "$t" >/dev/null || ur_skip "needs $t (apt-get install perftest ibverbs-utils rdmacm-utils fio iperf3 qperf util-linux)"
done
UR_TIMEOUT=240
B=$UR_TMP/bundle

# --- packing ------------------------------------------------------------------------
UR_ENV=(XZ_OPT=-0)
ur_run pack "$UR_SRC/bench/bundle.sh" "$UR_BUILD" "$UR_TMP/b.tar.xz"
UR_ENV=()
ur_expect_grep pack "b\.tar\.xz: .* unpacked" "the bundle packs"
mkdir -p "$B" && tar -xJf "$UR_TMP/b.tar.xz" -C "$B" || ur_fail "the bundle unpacks"
D=$B/uroce-bench
[ -x "$D/run.sh" ] && ur_pass "run.sh is there" || ur_fail "no run.sh in the bundle"

# --- libraries: the bundle's or the C library's ---------------------------------------
foreign=$(for f in "$D"/tools/real/* "$D/build/bin/uroce"; do
	LD_LIBRARY_PATH=$D/build/lib:$D/tools/lib ldd "$f" 2>&1 | awk -v f="${f##*/}" -v d="$D" '
		/not found/ { print f ": " $1 " not found"; next }
		/=> \// && index($3, d) != 1 && $3 !~ /\/(libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|ld-linux[^\/]*)\.so/ {
			print f ": " $3 }'
done)
ur_expect_eq "every library found in the bundle or the C library" "" "$foreign"

# --- the table, with Debian's programs hidden -----------------------------------------
hide=
for t in ib_write_bw ib_send_lat ibv_devinfo ibv_rc_pingpong rping fio iperf3 qperf ip ss; do
	hide="$hide mount --bind /dev/null $(command -v "$t") &&"
done
ur_run table unshare -m sh -c "$hide env -u LD_LIBRARY_PATH PROGRESS_SECS=1 PROGRESS_PAIRS=2 \
	PROGRESS_RPING_N=200 PROGRESS_MTUS=1500 PROGRESS_IDLE_SECS=2 $D/run.sh"
ur_expect_rc table 0 "run.sh"
ur_expect_grep table "^\| figure \| uroce \| peer, same run \| ratio \| target \| met \|$" "the table's header"
num='[0-9]+(\.[0-9]+)?'
for what in "veth MTU 1500, .ib_write_bw. 64 KiB 1 QP / iperf3 1 stream" "veth MTU 1500, .-q 4. / .iperf3 -P 4." \
	"veth MTU 1500, 4 QPs / 1 QP aggregate" "one host, 2 pairs / 1 pair aggregate \\(.ib_write_bw. 64 KiB\\)" \
	".rping -C 200 -S 64. a ping / .ibv_rc_pingpong -e -s 64. round trip" \
	"fio rdma 64 KiB iodepth 16 / .ib_write_bw. 64 KiB"; do
	ur_expect_grep table "^\| $what \| $num [A-Za-z/]+ \| $num [A-Za-z/]+ \| $num \| [<>]= $num \| (yes|no) \|$" \
		"row: ${what//[.\\]/}"
done
ur_expect_grep table "^\| idle process with device, QP and CQ, 2 s \| [0-9]+ ticks \| - \| $num % of a core" "row: idle"
ur_expect_grep table "^\| veth MTU 1500, .ib_send_lat. 8 B busy, typical \| $num us \| qperf udp_lat $num us" \
	"row: veth latency"
ur_expect_no_grep table "Permission denied|No such file|command not found" \
	"no program of this machine's was needed"
ur_expect_eq "no namespace of the bench left" "" "$(ip netns list | grep -E '^urbn[0-9]+[ab]\b' || true)"
ur_done
