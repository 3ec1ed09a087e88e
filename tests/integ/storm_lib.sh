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
STORM_ENV=()          # more environment for both sides of a case

# storm_onfail_script TAG SNS CNS: writes the STORM_ON_FAIL command of a
# case, which storm.c starts at its first failure while the run goes on:
# each side's UDP sockets (queues, drops), its QPs as uroce res qp -d
# lists them (counters, where requester and responder stand, when each
# last received and sent), each storm process's threads (state, where
# they sleep, and a backtrace), their unix sockets' queues and what their
# epoll sets watch (a socket waiting for room is armed for EPOLLOUT), and
# the kernel's UDP counters, into
# TAG.onfail.PID; storm_case shows it when the case fails.
storm_onfail_script() {
	local tag=$1 f side ns
	f=$UR_TMP/$tag.onfail.sh
	{
		echo '#!/bin/bash'
		printf 'exec >> %q.$PPID 2>&1\n' "$UR_TMP/$tag.onfail"
		printf 'echo "=== storm pid $PPID failed; at $(date +%%T.%%N)"\n'
		for side in server client; do
			if [ "$side" = server ]; then ns=$2; else ns=$3; fi
			[ "$side" = client ] && [ "$ns" = "$2" ] && break   # one namespace: once
			ur_ns_prefix "$ns"
			printf '%s() { %s "$@"; }\n' "in_$side" "$(printf '%q ' "${UR_NS_PREFIX[@]}")"
		done
		echo 'sides=$(declare -F | sed -n "s/^declare -f in_//p")'
		echo 'for s in $sides; do echo "--- $s side: ss -uamn"; in_$s ss -uamn; done'
		printf 'for s in $sides; do echo "--- $s side: uroce res qp -d"; in_$s %q res qp -d > /tmp/onfail.$$.$s; cat /tmp/onfail.$$.$s; done\n' "$UR_BUILD/bin/uroce"
		cat <<'EOS'
for s in $sides; do
	for p in $(grep -o " pid [0-9]*" /tmp/onfail.$$.$s | cut -d" " -f3 | sort -u); do
		echo "--- $s side: threads of pid $p (tid comm state utime stime wchan)"
		for t in /proc/$p/task/*; do echo "$(cut -d" " -f1,2,3,14,15 $t/stat) $(cat $t/wchan)"; done
		echo "--- $s side: backtraces of pid $p"
		timeout 20 gdb -p $p -batch -nx -ex "thread apply all bt 12" 2>/dev/null |
			grep -E '^(Thread|#)'
		echo "--- $s side: unix sockets of pid $p (Recv-Q: datagrams queued; full at $(cat /proc/sys/net/unix/max_dgram_qlen))"
		in_$s ss -xamp | grep "pid=$p,"
		echo "--- $s side: what the epoll sets of pid $p watch (tfd: the fd; events: 0x1 in, 0x4 out)"
		for fd in /proc/$p/fd/*; do
			[ "$(readlink "$fd")" = "anon_inode:[eventpoll]" ] || continue
			echo "epoll fd ${fd##*/}:"; grep '^tfd' /proc/$p/fdinfo/${fd##*/}
		done
	done
	rm -f /tmp/onfail.$$.$s
done
for s in $sides; do echo "--- $s side: ss -uamn, again"; in_$s ss -uamn; done
for s in $sides; do echo "--- $s side: Udp in /proc/net/snmp"; in_$s grep '^Udp:' /proc/net/snmp; done
EOS
	} > "$f"
	chmod +x "$f"
	printf '%s' "$f"
}

storm_case() {
	local tag=$1 dev=$2 g=$3 addr=$4 faults=$5 port line
	shift 5
	port=$(ur_port)
	local UR_ENV=()
	[ "$faults" = none ] || UR_ENV=("UROCE_FAULTS=$faults,seed=$port")
	UR_ENV+=("${STORM_ENV[@]}")
	UR_ENV+=("STORM_ON_FAIL=$(storm_onfail_script "$tag" "${UR_SNS-$UR_NS}" "${UR_CNS-$UR_NS}")")
	ur_pair "$tag" "$port" "$STORM" "$dev" "$g" -s "$port" \
		-- "$STORM" "$dev" "$g" -c "$addr" "$port" "$@"
	if ! ur_expect_pair_ok "$tag" "$tag: storm $*, faults: $faults"; then
		for f in "$UR_TMP/$tag".onfail.[0-9]*; do
			[ -s "$f" ] || continue
			ur_log "    --- $tag: both sides at a side's first failure ($f)"
			sed 's/^/    | /' "$f"
		done
	fi
	ur_report "$tag.server" grep -E '^(ok|FAIL): ' "$(ur_out "$tag.server")"
	ur_report "$tag.client" grep -E '^(ok|FAIL): ' "$(ur_out "$tag.client")"
	ur_sanitizer_clean "$tag.server"
	ur_sanitizer_clean "$tag.client"
	line=$(grep -h '^storm: .* messages on' "$(ur_out "$tag.client")")
	STORM_GBPS=$(printf '%s\n' "$line" | sed -n 's/.*: \([0-9.]*\) Gb\/s.*/\1/p')
	[ -n "$line" ] && ur_log "$tag: ${line#storm: }"
	# How long the host kept each side off the CPU (a timeout's context).
	ur_log "$tag: $(grep -h 'wake-up lag' "$(ur_out "$tag.server")" "$(ur_out "$tag.client")" |
		sed 's/longest wake-up lag of a 10 ms sleeper: //' | paste -sd';' -)"
}

