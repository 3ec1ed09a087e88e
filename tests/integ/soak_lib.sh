# The soak (sourced after lib.sh, progs_lib.sh and storm_lib.sh by
# soak.test.sh and soak_long.test.sh).
#
# soak_run SECONDS: for SECONDS, all at once, every process with uroce's
# fault injector at 1 % loss (with 5 % reordering, 1 % duplication, 0.1 %
# corruption): RC random messages of every operation on lo, busy-polling
# (integ_storm); the same across two namespaces with the server sleeping on
# a completion channel; 64 RC QPs of one pair; UC and UD streams on lo
# (integ_dgram).  Ten processes.  Each pair must end within a minute of
# the deadline (no stall) with every check passed: RC every message
# exactly once and intact, UC/UD every message delivered intact or counted
# lost; no sanitizer report (the ASan stage makes it a leak check).  Then
# uroce0's counters (the pairs on lo) are reconciled with what the
# injector says it did, and packets sent with packets received plus
# counted drops (fault_reconcile).
soak_run() {
	local secs=$1 f="loss=0.01,reorder=0.05,dup=0.01,corrupt=0.001" g tag port own=""
	local -a tags=()
	local -A before=()
	# The pairs on lo in a namespace of their own where one can be made:
	# uroce0's counters, reconciled below, are those of every uroce process
	# of the namespace, and another test's traffic beside this one (two
	# suites looped at once) joined them (6196 and -354 apart).
	ur_netns_new own ||
		ur_log "in this namespace ($UR_NETNS_WHY): the counters are shared with the host's other uroce processes; run it alone"
	g=$(UR_NS=$own ur_gid_index uroce0 ::ffff:127.0.0.1)
	ur_expect_eq "uroce0: GID index of ::ffff:127.0.0.1" 1 "$g"
	[ -n "$g" ] || return 1
	ur_netns_pair 1500
	UR_TIMEOUT=$((secs + 120))
	UR_NS=$own fault_counters before

	# soak_start TAG NS_SERVER NS_CLIENT PROG DEV GID ADDR CLIENT_ARGS...
	soak_start() {
		local tag=$1 sns=$2 cns=$3 prog=$4 dev=$5 gid=$6 addr=$7 port
		shift 7
		port=$(UR_NS=$sns ur_port)
		local UR_ENV=("UROCE_FAULTS=$f,seed=$port")
		UR_NS=$sns ur_start "$tag.server" "$prog" "$dev" "$gid" -s "$port"
		if ! UR_NS=$sns ur_wait_listen "$port" "${UR_PID[$tag.server]}"; then
			ur_fail "$tag: the server did not listen"
			ur_show "$tag.server"
			return 1
		fi
		UR_NS=$cns ur_start "$tag.client" "$prog" "$dev" "$gid" -c "$addr" "$port" "$@"
		tags+=("$tag")
	}
	soak_start rc.poll "$own" "$own" "$STORM" uroce0 "$g" 127.0.0.1 --seconds "$secs" \
		--max-size 65536 --seed 21
	soak_start rc.events "$UR_NS_B" "$UR_NS_A" "$STORM" uroce1 1 "$UR_IP_B" --seconds "$secs" \
		--max-size 65536 --events --seed 22
	soak_start rc.qps64 "$own" "$own" "$STORM" uroce0 "$g" 127.0.0.1 --seconds "$secs" --qps 64 \
		--max-size 4096 --depth 4 --seed 23
	soak_start uc "$own" "$own" "$UR_BUILD/bin/integ_dgram" uroce0 "$g" 127.0.0.1 --type uc \
		--seconds "$secs" --qps 4 --max-size 4096 --seed 24
	soak_start ud "$own" "$own" "$UR_BUILD/bin/integ_dgram" uroce0 "$g" 127.0.0.1 --type ud \
		--seconds "$secs" --qps 4 --max-size 1024 --seed 25
	for tag in "${tags[@]}"; do
		ur_wait "$tag.client"
		ur_wait "$tag.server"
		ur_expect_pair_ok "$tag" "$tag: ${secs} s under faults, ended (no stall)"
		ur_report "$tag.server" grep -E '^(ok|FAIL): ' "$(ur_out "$tag.server")"
		ur_report "$tag.client" grep -E '^(ok|FAIL): ' "$(ur_out "$tag.client")"
		ur_sanitizer_clean "$tag.server"
		ur_sanitizer_clean "$tag.client"
		grep -h '^\(storm\|dgram\): .* messages on' "$(ur_out "$tag.client")" |
			sed "s/^[a-z]*: /$tag: /"
	done
	UR_NS=$own fault_reconcile before
}

