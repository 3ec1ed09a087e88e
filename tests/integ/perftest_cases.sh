# perftest cases shared by perftest.test.sh (one host) and
# perftest_netns.test.sh (two namespaces).  Sourced after lib.sh.

PT_BW=(ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw)
PT_LAT=(ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat)
PT_ALL_SIZES=$(for ((i = 1; i <= 23; i++)); do printf '%d ' $((1 << i)); done)

# pt_default_size PROG: the message size perftest uses without -s.
pt_default_size() {
	case $1 in
	ib_atomic_*) echo 8 ;;
	*_bw) echo 65536 ;;
	*) echo 2 ;;
	esac
}

# pt_run TAG SDEV CDEV ADDR GIDX PROG ARGS...: a perftest pair (server on
# SDEV in UR_SNS, client on CDEV in UR_CNS connecting to ADDR) must both exit
# 0, and the client must print a numeric result row for every size it
# measured: all of 2..8 MiB with -a, else the default size.
pt_run() {
	local tag=$1 sdev=$2 cdev=$3 addr=$4 g=$5 prog=$6 port sizes s missing=
	shift 6
	port=$(ur_port)
	ur_pair "$tag" "$port" "$prog" -d "$sdev" -x "$g" -p "$port" "$@" \
		-- "$prog" -d "$cdev" -x "$g" -p "$port" "$@" "$addr"
	ur_expect_pair_ok "$tag" "$prog $*" || return
	sizes=$(pt_default_size "$prog")
	case " $* " in *" -a "*) sizes=$PT_ALL_SIZES ;; esac
	for s in $sizes; do
		grep -Eq "^ *$s +[0-9]+ +[0-9]+(\.[0-9]+)? +[0-9]+(\.[0-9]+)? " "$(ur_out "$tag.client")" ||
			missing="$missing $s"
	done
	if [ -z "$missing" ]; then
		ur_pass "$tag: numeric result rows for sizes $(echo $sizes | sed 's/ .* / .. /')"
	else
		ur_fail "$tag: no numeric result row for sizes:$missing"
		ur_show "$tag.client" 40
	fi
	ur_expect_no_grep "$tag.client" 'Completion with error|Failed status|[Ee]rror' "$tag: client reports no error"
	ur_expect_no_grep "$tag.server" 'Completion with error|Failed status|[Ee]rror' "$tag: server reports no error"
	ur_sanitizer_clean "$tag.server"
	ur_sanitizer_clean "$tag.client"
}

# pt_matrix TAG SDEV CDEV ADDR GIDX [full]: every program with its defaults and
# -a; with "full", bandwidth tests also with -q 4, -b and --report_gbits.
pt_matrix() {
	local t=$1 sdev=$2 cdev=$3 addr=$4 g=$5 full=${6:-} p
	for p in "${PT_BW[@]}" "${PT_LAT[@]}"; do
		pt_run "$t.$p" "$sdev" "$cdev" "$addr" "$g" "$p"
		case $p in
		ib_atomic_*) ;;                     # fixed 8-byte messages: no -a
		*) pt_run "$t.$p.all" "$sdev" "$cdev" "$addr" "$g" "$p" -a -n 20 ;;
		esac
	done
	for p in "${PT_BW[@]}"; do
		if [ -n "$full" ]; then
			pt_run "$t.$p.q4" "$sdev" "$cdev" "$addr" "$g" "$p" -q 4
			pt_run "$t.$p.bidir" "$sdev" "$cdev" "$addr" "$g" "$p" -b
			pt_run "$t.$p.gbits" "$sdev" "$cdev" "$addr" "$g" "$p" --report_gbits
		else
			pt_run "$t.$p.q4-bidir-gbits" "$sdev" "$cdev" "$addr" "$g" "$p" -q 4 -b --report_gbits
		fi
	done
}

# pt_wr_api TAG SDEV CDEV ADDR GIDX: with UROCE_VENDOR_PART_ID=4115 (ConnectX-4)
# perftest takes its ibv_create_qp_ex + ibv_wr_* path; every program must
# say so ("ibv_wr* API : ON") and pass as above.
pt_wr_api() {
	local t=$1 sdev=$2 cdev=$3 addr=$4 g=$5 p
	# an array cannot be a one-command prefix assignment: local scopes it
	local UR_ENV=(UROCE_VENDOR_PART_ID=4115)
	for p in "${PT_BW[@]}" "${PT_LAT[@]}"; do
		pt_run "$t.$p" "$sdev" "$cdev" "$addr" "$g" "$p"
		ur_expect_grep "$t.$p.client" 'ibv_wr\* API *: ON' "$t.$p: perftest uses the ibv_wr_* API"
	done
}
