# Running the verbs test programs of tests/integ/progs (sourced after lib.sh).
#
# prog_run TAG PROG DEV GID [CASE...]: runs $UR_BUILD/bin/integ_PROG on DEV
# with GID index GID (in UR_NS); every "ok:"/"FAIL:" line it prints counts
# as a check; it must exit 0 with no sanitizer report (leaks included: the
# programs free everything, so a leak is the library's).
prog_run() {
	local tag=$1 name=$2 prog=$UR_BUILD/bin/integ_$2 dev=$3 gid=$4
	shift 4
	if [ ! -x "$prog" ]; then
		ur_fail "$tag: $prog is not built"
		return 1
	fi
	ur_run "$tag" "$prog" "$dev" "$gid" "$@"
	ur_report "$tag" grep -E '^(ok|FAIL): ' "$(ur_out "$tag")"
	ur_expect_rc "$tag" 0 "$tag: integ_$name $dev $gid $*"
	ur_sanitizer_clean "$tag"
}

# prog_lo_gids: g4 and g6, uroce0's GID indexes of ::ffff:127.0.0.1 and
# ::1, each expected (1 and 2).
prog_lo_gids() {
	g4=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
	g6=$(ur_gid_index uroce0 ::1)
	ur_expect_eq "uroce0: GID index of ::ffff:127.0.0.1" 1 "$g4"
	ur_expect_eq "uroce0: GID index of ::1" 2 "$g6"
}
