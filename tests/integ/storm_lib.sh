# Runs tests/integ/progs/storm.c pairs (sourced after lib.sh and
# progs_lib.sh by storm.test.sh and storm_long.test.sh).
#
# storm_case TAG DEV GID ADDR FAULTS CLIENT_ARGS...
#   a storm server in UR_SNS (default UR_NS) and its client in UR_CNS, both
#   with UROCE_FAULTS=FAULTS (none: no faults; the seed is added); every
#   ok/FAIL line of both counts, both must exit 0 with no sanitizer report.
#   The client's goodput (Gb/s) is left in STORM_GBPS.
. "$(dirname "${BASH_SOURCE[0]}")/fault_counters.sh"
STORM=$UR_BUILD/bin/integ_storm
STORM_GBPS=
# Client arguments for a pair that ThreadSanitizer slows past the default
# timeout's 8 x 67 ms (rxctx.test.sh: 32 QPs of 64 KiB messages across
# namespaces, two processes of six threads on 2 cores): a timeout that
# covers it (8 x 268 ms), as a slow peer's user would set.  (The 1000-QP
# cases had it too, for answers the requester dropped after going back:
# fixed, docs/reliability.md; they run with the default again.)
STORM_MANY_QPS=(--timeout 16)
STORM_ENV=()          # more environment for both sides of a case

storm_case() {
	local tag=$1 dev=$2 g=$3 addr=$4 faults=$5 port line
	shift 5
	port=$(ur_port)
	local UR_ENV=()
	[ "$faults" = none ] || UR_ENV=("UROCE_FAULTS=$faults,seed=$port")
	UR_ENV+=("${STORM_ENV[@]}")
	ur_pair "$tag" "$port" "$STORM" "$dev" "$g" -s "$port" \
		-- "$STORM" "$dev" "$g" -c "$addr" "$port" "$@"
	ur_expect_pair_ok "$tag" "$tag: storm $*, faults: $faults"
	ur_report "$tag.server" grep -E '^(ok|FAIL): ' "$(ur_out "$tag.server")"
	ur_report "$tag.client" grep -E '^(ok|FAIL): ' "$(ur_out "$tag.client")"
	ur_sanitizer_clean "$tag.server"
	ur_sanitizer_clean "$tag.client"
	line=$(grep -h '^storm: .* messages on' "$(ur_out "$tag.client")")
	STORM_GBPS=$(printf '%s\n' "$line" | sed -n 's/.*: \([0-9.]*\) Gb\/s.*/\1/p')
	[ -n "$line" ] && ur_log "$tag: ${line#storm: }"
	# How long the host kept each side off the CPU (a timeout's context).
	ur_log "$tag: $(grep -h 'wake-up lag' "$(ur_out "$tag.server")" "$(ur_out "$tag.client")" |
		sed 's/longest wake-up lag of a 1 ms sleeper: //' | paste -sd';' -)"
}

