# perftest cases shared by perftest.test.sh (one host, lo) and
# perftest_netns.test.sh (two namespaces).  Sourced after lib.sh.

PT_BW_TOOLS="ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw"
PT_LAT_TOOLS="ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat"
PT_ALL_SIZES=$(s=2; l=$s; while [ $s -lt 8388608 ]; do s=$((s * 2)); l=$l,$s; done; echo $l)

# pt_sizes TOOL default|all: the message sizes TOOL reports, comma-separated.
pt_sizes() {
	case $1:$2 in
	ib_atomic_*) echo 8 ;;
	*_bw:default) echo 65536 ;;
	*_lat:default) echo 2 ;;
	*:all) echo "$PT_ALL_SIZES" ;;
	esac
}

# pt_post_send ARGS...: pt_ok with the device reporting part id 0, one
# perftest does not know, for which it posts through ibv_post_send (as on
# rxe).  (An array cannot be a prefix assignment of a command: a local copy
# carries it.)
pt_post_send() {
	local UR_ENV=(UROCE_VENDOR_PART_ID=0)
	pt_ok "$@"
}

# pt_ok TAG TOOL SDEV CDEV ADDR default|all ARGS...: TOOL's server on SDEV
# (in UR_SNS) and client on CDEV (in UR_CNS, connecting to ADDR), both with
# ARGS, must exit 0 without an error completion, and the client must print a
# numeric result row for every size it ran (the server too when it prints a
# table).  With -n N among ARGS, every row must say N iterations; with
# --report_gbits the bandwidth must be in Gb/sec; perftest must have taken
# its ibv_wr_* path (uroce's part id, 4115, is one it knows), or with
# UROCE_VENDOR_PART_ID=0 in UR_ENV its ibv_post_send path.
pt_ok() {
	local tag=$1 tool=$2 sdev=$3 cdev=$4 addr=$5 which=$6 port kind=bw
	local iters=- qps=1 unit=MB/sec a prev= side bidir=0 ssizes try
	shift 6
	for a in "$@"; do
		[ "$prev" = -n ] && iters=$a
		[ "$prev" = -q ] && qps=$a
		[ "$a" = --report_gbits ] && unit=Gb/sec
		[ "$a" = -b ] && bidir=1
		prev=$a
	done
	# perftest counts the iterations of all QPs together.
	[ "$iters" = - ] || iters=$((iters * qps))
	case $tool in *_lat) kind=lat ;; esac
	for try in $(seq "$UR_CLOCK_TRIES"); do
		port=$(ur_port)
		ur_pair "$tag" "$port" "$tool" -d "$sdev" -p "$port" "$@" \
			-- "$tool" -d "$cdev" -p "$port" "$@" "$addr"
		ur_clock_spoiled "$tag" "$try" || break
	done
	ur_expect_pair_ok "$tag" "${UR_ENV[*]:+${UR_ENV[*]} }$tool $*" || return
	for side in client server; do
		ur_expect_no_grep "$tag.$side" 'Completion with error|Failed status|[Cc]ouldn.t|Unable to|[Ff]ailed to' \
			"$tag: $side reports no error"
		ur_sanitizer_clean "$tag.$side"
	done
	ur_report "$tag: client table" /usr/bin/python3 "$UR_SRC/tests/integ/perftest_table.py" \
		"$(ur_out "$tag.client")" "$kind" "$(pt_sizes "$tool" "$which")" "$iters" "$unit"
	# The passive side of one-way RDMA WRITE/READ bandwidth prints the last
	# size only; the lat servers of READ and atomics print no table.
	ssizes=$(pt_sizes "$tool" "$which")
	case $tool:$bidir in
	ib_write_bw:0 | ib_read_bw:0) ssizes=${ssizes##*,} ;;
	esac
	if grep -q '#bytes' "$(ur_out "$tag.server")"; then
		ur_report "$tag: server table" /usr/bin/python3 "$UR_SRC/tests/integ/perftest_table.py" \
			"$(ur_out "$tag.server")" "$kind" "$ssizes" "$iters" "$unit"
	else
		case $tool in
		ib_read_lat | ib_atomic_lat) ;;
		*) ur_fail "$tag: the server printed no result table"; ur_show "$tag.server" ;;
		esac
	fi
	if [[ " ${UR_ENV[*]} " == *" UROCE_VENDOR_PART_ID=0 "* ]]; then
		ur_expect_grep "$tag.client" 'ibv_wr\* API[[:space:]]*: OFF' "$tag: perftest takes its ibv_post_send path for part 0"
	else
		ur_expect_grep "$tag.client" 'ibv_wr\* API[[:space:]]*: ON' "$tag: perftest takes its ibv_wr_* path"
	fi
}

# pt_suite TAG SDEV CDEV ADDR GID: the matrix, with -x GID on both sides.
# Iteration counts bound the time; defaults run as perftest sets them.  The
# latency programs spend a second or two per size calibrating the CPU clock
# (perftest's own cost, not the device's), so -a runs for those listed in
# PT_LAT_ALL only.
PT_LAT_ALL=${PT_LAT_ALL-ib_send_lat ib_write_lat ib_read_lat}
pt_suite() {
	local t=$1 sdev=$2 cdev=$3 addr=$4 g=$5 tool
	for tool in $PT_BW_TOOLS $PT_LAT_TOOLS; do
		pt_ok "$t.$tool.default" "$tool" "$sdev" "$cdev" "$addr" default -x "$g"
		case $tool in
		ib_atomic_*)   # one size only: compare-and-swap instead of -a
			pt_ok "$t.$tool.cas" "$tool" "$sdev" "$cdev" "$addr" default -x "$g" -A CMP_AND_SWAP -n 500 ;;
		*_bw)
			pt_ok "$t.$tool.all" "$tool" "$sdev" "$cdev" "$addr" all -x "$g" -a -n 20 ;;
		*_lat)
			[[ " $PT_LAT_ALL " != *" $tool "* ]] ||
			pt_ok "$t.$tool.all" "$tool" "$sdev" "$cdev" "$addr" all -x "$g" -a -n 20 ;;
		esac
		pt_post_send "$t.$tool.post-send" "$tool" "$sdev" "$cdev" "$addr" default -x "$g" -n 500
	done
	# -e: perftest waits on one completion channel for both CQs and polls
	# the CQ it expects, whichever CQ the event was for; a reply that
	# overtook its message's ACK left a SEND completion unpolled in the
	# one-entry send CQ, overrun at the next SEND (exit 17 on both sides).
	pt_ok "$t.ib_send_lat.event" ib_send_lat "$sdev" "$cdev" "$addr" default -x "$g" -e -n 2000
	for tool in $PT_BW_TOOLS; do
		pt_ok "$t.$tool.q4" "$tool" "$sdev" "$cdev" "$addr" default -x "$g" -q 4 -n 500
		pt_ok "$t.$tool.bidir" "$tool" "$sdev" "$cdev" "$addr" default -x "$g" -b -n 500
		pt_ok "$t.$tool.gbits" "$tool" "$sdev" "$cdev" "$addr" default -x "$g" --report_gbits -n 500
		# perftest 4.5 refuses --odp with atomics itself ("ODP does not
		# support ATOMICS for now").
		[[ $tool == ib_atomic_* ]] ||
			pt_ok "$t.$tool.odp" "$tool" "$sdev" "$cdev" "$addr" default -x "$g" --odp -n 500
	done
}
