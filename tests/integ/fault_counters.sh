# Device counters against the fault injector (sourced after lib.sh by
# storm_lib.sh and faults.test.sh).  The injector (UROCE_FAULTS) counts
# what it did to received packets on the device they were going to
# (injected_loss, _reorder, _dup, _corrupt); the other counters must agree.
FAULT_COUNTERS="injected_loss injected_reorder injected_dup injected_corrupt icrc_errors malformed duplicate_request"

# fault_counters ARRAY: uroce0's counters (the host's totals, in UR_NS) into
# the associative array ARRAY.
fault_counters() {
	local -n into=$1
	local name value
	while read -r name value; do
		into[$name]=$value
	done < <("$UR_BUILD/bin/uroce" devinfo -d uroce0 -c |
		awk -v want=" $FAULT_COUNTERS " 'index(want, " " $1 " ") { print $1, $2 }')
}

# fault_reconcile BEFORE: since the counters read BEFORE, every kind of fault
# was injected, every corrupted packet was dropped by the ICRC check and
# none got past it to the parser, and duplicates were recognised.  (A
# process's last snapshot of its counters may fall between the two counts
# of one packet: a difference of a few is allowed, not more.)
fault_reconcile() {
	local -n was=$1
	local -A now=() d=()
	local name
	fault_counters now
	for name in $FAULT_COUNTERS; do
		d[$name]=$(( ${now[$name]:-0} - ${was[$name]:-0} ))
	done
	ur_log "uroce0 counters since: $(for name in $FAULT_COUNTERS; do printf '%s +%s ' "$name" "${d[$name]}"; done)"
	for name in injected_loss injected_reorder injected_dup injected_corrupt duplicate_request; do
		if [ "${d[$name]}" -gt 0 ]; then
			ur_pass "uroce0: $name grew by ${d[$name]}"
		else
			ur_fail "uroce0: $name did not grow (+${d[$name]}): were faults injected and counted?"
		fi
	done
	local gap=$(( d[injected_corrupt] - d[icrc_errors] ))
	if [ "${gap#-}" -le 5 ]; then
		ur_pass "uroce0: every injected corruption was an ICRC error (${d[injected_corrupt]} injected, ${d[icrc_errors]} caught)"
	else
		ur_fail "uroce0: ${d[injected_corrupt]} corruptions injected but ${d[icrc_errors]} ICRC errors counted"
	fi
	ur_expect_eq "uroce0: packets that failed to parse (none got past the ICRC)" 0 "${d[malformed]}"
}
