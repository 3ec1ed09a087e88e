#!/usr/bin/env bash
# ctest-timeout: 900
# ctest-labels: tsan
# DC through uroce's libmlx5.so.1.  integ_dc: one DCI reaches two DCTs by
# turns, every byte checked, a wrong key and a bad rkey refused, a full DCT
# making room; again with the fault injector on (5 % loss with reordering,
# duplication and corruption; 20 % loss).  Two DCT server processes and
# one client process whose one DCI reaches both (integ_dc serve / reach), on
# lo and across two namespaces.  Then
# unmodified perftest -c DC, as it is (no setting: it takes its ibv_wr_*
# path, the one with DC, for uroce's part id): ib_write_bw --qp=2 -a, ib_read_bw,
# ib_send_bw and ib_write_lat on one host; two DCT servers at once, each
# with its client; and ib_write_bw/ib_read_bw/ib_send_bw across two
# network namespaces.  Under ThreadSanitizer only integ_dc's runs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/perftest_cases.sh"
. "$(dirname "$0")/progs_lib.sh"
. "$(dirname "$0")/fault_counters.sh"
UR_TIMEOUT=240
# The device as it is: perftest's DC needs no setting.
unset UROCE_VENDOR_PART_ID

prog_run lo.dc dc uroce0 1

# Under loss, reordering, duplication and corruption (UROCE_FAULTS), every
# byte still checked: DC's reliability is RC's.
declare -A before=() after=()
fault_counters before
UR_ENV=(UROCE_FAULTS=loss=0.05,reorder=0.05,dup=0.02,corrupt=0.01,seed=7)
prog_run lo.dc_faults dc uroce0 1 two_targets bad_rkey
UR_ENV=(UROCE_FAULTS=loss=0.2,seed=8)
prog_run lo.dc_loss20 dc uroce0 1 two_targets
UR_ENV=()
fault_counters after
for c in injected_loss injected_reorder injected_dup injected_corrupt; do
	ur_expect_eq "$c moved during the faulted DC runs" 1 \
		"$(( ${after[$c]:-0} > ${before[$c]:-0} ))"
done

# dc_two_servers TAG SDEV CDEV ADDR: two DCT server processes (in UR_SNS)
# and one client process (in UR_CNS) whose one DCI writes to, reads from and
# sends to both by turns; every side checks what arrived.
dc_two_servers() {
	local tag=$1 sdev=$2 cdev=$3 addr=$4 p1 p2 gs gc side
	gs=$(UR_NS=${UR_SNS:-} ur_gid_index "$sdev" "::ffff:$addr")
	gc=$(UR_NS=${UR_CNS:-} ur_gid_index "$cdev" "::ffff:${5:-$addr}")
	p1=$(ur_port); p2=$(ur_port)
	UR_NS=${UR_SNS:-} ur_start "$tag.s1" "$UR_BUILD/bin/integ_dc" "$sdev" "$gs" serve "$p1" 0xffeeddcc
	UR_NS=${UR_SNS:-} ur_start "$tag.s2" "$UR_BUILD/bin/integ_dc" "$sdev" "$gs" serve "$p2" \
		0x0badc0de00c0ffee
	UR_NS=${UR_SNS:-} ur_wait_listen "$p1" "$(ur_prog_pid "$tag.s1")" || ur_fail "$tag.s1 listens"
	UR_NS=${UR_SNS:-} ur_wait_listen "$p2" "$(ur_prog_pid "$tag.s2")" || ur_fail "$tag.s2 listens"
	UR_NS=${UR_CNS:-} ur_run "$tag.c" "$UR_BUILD/bin/integ_dc" "$cdev" "$gc" reach "$addr" "$p1" "$p2"
	for side in c s1 s2; do
		ur_wait "$tag.$side"
		ur_report "$tag.$side" grep -E '^(ok|FAIL): ' "$(ur_out "$tag.$side")"
		ur_expect_rc "$tag.$side" 0 "$tag.$side: $(ur_cmdline_of "$tag.$side")"
	done
}

g=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
dc_two_servers lo.two_processes uroce0 uroce0 127.0.0.1
# perftest's runs (single-threaded clients on the same library paths as
# the programs above) are left out under ThreadSanitizer, where they took
# 90 of the test's 130 s: the programs' cases and the two processes on
# both links are what that build is for.
if ! ur_is_tsan; then
	pt_ok lo.write_qp2 ib_write_bw uroce0 uroce0 127.0.0.1 all -x "$g" -c DC -q 2 -a -n 50
	pt_ok lo.read ib_read_bw uroce0 uroce0 127.0.0.1 default -x "$g" -c DC -n 500
	pt_ok lo.read_all ib_read_bw uroce0 uroce0 127.0.0.1 all -x "$g" -c DC -a -n 20
	pt_ok lo.send ib_send_bw uroce0 uroce0 127.0.0.1 default -x "$g" -c DC -n 500
	pt_ok lo.write_lat ib_write_lat uroce0 uroce0 127.0.0.1 default -x "$g" -c DC -n 200

	# Told to report a part id perftest does not know, perftest asks
	# ibv_create_qp for an IBV_QPT_DRIVER QP (it would then post with
	# ibv_post_send, which cannot name a DC target): refused, and the message
	# names the way that works.
	p=$(ur_port)
	UR_ENV=(UROCE_VENDOR_PART_ID=0)
	ur_pair lo.part0 "$p" ib_write_bw -d uroce0 -x "$g" -c DC -p "$p" \
		-- ib_write_bw -d uroce0 -x "$g" -c DC -p "$p" 127.0.0.1
	UR_ENV=()
	for side in client server; do
		ur_expect_fail_fast "lo.part0.$side" "ib_write_bw -c DC, part id 0: the $side fails at once"
		ur_expect_grep "lo.part0.$side" 'IBV_QPT_DRIVER.*mlx5dv_create_qp.*UROCE_VENDOR_PART_ID' \
			"lo.part0.$side: the error says how DC QPs are made"
	done

	# Two DCT servers (as in the notes: two processes, one port each), both
	# served at once; made again when perftest could not time itself.
	for try in $(seq "$UR_CLOCK_TRIES"); do
		p1=$(ur_port); p2=$(ur_port)
		ur_start two1.server ib_write_bw -d uroce0 -x "$g" -c DC --qp=2 -n 2000 -s 65536 -p "$p1"
		ur_start two2.server ib_write_bw -d uroce0 -x "$g" -c DC --qp=2 -n 2000 -s 65536 -p "$p2"
		ur_wait_listen "$p1" "$(ur_prog_pid two1.server)" || ur_fail "two1.server listens on $p1"
		ur_wait_listen "$p2" "$(ur_prog_pid two2.server)" || ur_fail "two2.server listens on $p2"
		ur_start two1.client ib_write_bw -d uroce0 -x "$g" -c DC --qp=2 -n 2000 -s 65536 -p "$p1" 127.0.0.1
		ur_start two2.client ib_write_bw -d uroce0 -x "$g" -c DC --qp=2 -n 2000 -s 65536 -p "$p2" 127.0.0.1
		for t in two1.client two2.client two1.server two2.server; do
			ur_wait "$t"
		done
		spoiled=0
		ur_clock_spoiled two1 "$try" && spoiled=1
		ur_clock_spoiled two2 "$try" && spoiled=1
		[ $spoiled = 1 ] || break
	done
	for t in two1.client two2.client two1.server two2.server; do
		ur_expect_rc "$t" 0 "$t: ib_write_bw -c DC exits 0 with another DCT server beside it"
		ur_expect_grep "$t" '^ *65536 +4000 ' "$t: a result row for 2 QPs x 2000 WRITEs of 64 KiB"
	done
fi

ur_netns_pair 1500
export UR_SNS=$UR_NS_B UR_CNS=$UR_NS_A
gs=$(UR_NS=$UR_NS_B ur_gid_index uroce1 "::ffff:$UR_IP_B")
dc_two_servers veth.two_processes uroce1 uroce1 "$UR_IP_B" "$UR_IP_A"
if ! ur_is_tsan; then
	pt_ok veth.write ib_write_bw uroce1 uroce1 "$UR_IP_B" all -x "$gs" -c DC -q 2 -a -n 20
	pt_ok veth.read ib_read_bw uroce1 uroce1 "$UR_IP_B" default -x "$gs" -c DC -n 300
	pt_ok veth.send ib_send_bw uroce1 uroce1 "$UR_IP_B" default -x "$gs" -c DC -n 300
fi

ur_done
