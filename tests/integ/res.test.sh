#!/usr/bin/env bash
# uroce res: the host's processes' objects, against what a program knows it
# made (progs/res_set.c: 2 CQs of 64 and 200 entries; RC in RTS with known
# PSNs and peer, UD in RTR, UC in INIT, of known depths; MRs of 4 KiB and
# 64 KiB with their access; an rdma_cm id listening on a known port):
#  - `uroce res -j -d qp|cq|mr|cm_id pid PID` shows exactly those, with the
#    program's pid and comm, types, states, PSNs, depths, lengths, access,
#    zero counters (res_check.py); in a namespace of the test's own (root)
#    the summary's counts are the program's alone;
#  - the text form: rdma's line for one QP (filter lqpn), `link DEV` and a
#    pid nobody has filtering;
#  - a stopped process is reported as not answering while the others are
#    shown; an unknown object kind is a usage error;
#  - (root) a process of another user answers its owner and root, not a
#    third user;
#  - once the program has exited, nothing of it is left;
#  - per-QP counters move: ibv_rc_pingpong with the fault injector on
#    (UROCE_FAULTS loss) shows retransmits and NAKs on its QPs while it runs.
# ctest-timeout: 300
# ctest-labels: tsan
. "$(dirname "$0")/lib.sh"
UR_TIMEOUT=120

UROCE=$UR_BUILD/bin/uroce
exact=
if [ "$(id -u)" = 0 ] && ur_netns_private; then
	UR_NS=$UR_NS_P          # abstract sockets are per namespace: only ours
	exact=exact
fi
res() { ur_nsexec "$UR_NS" "$UROCE" res "$@"; }

g4=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
[ -n "$g4" ] || { ur_fail "uroce0 has no GID for 127.0.0.1"; ur_done; }
port=$(ur_port)
done_file=$UR_TMP/res_set.done
ur_start set "$UR_BUILD/bin/integ_res_set" uroce0 "$g4" "$port" "$done_file"
for _ in $(seq 200); do
	grep -q '^made ' "$(ur_out set)" && break
	kill -0 "${UR_PID[set]}" 2>/dev/null || break
	sleep 0.05
done
if ! grep -q '^made ' "$(ur_out set)"; then
	ur_fail "integ_res_set did not make its objects"
	ur_show set
	ur_done
fi
pid=$(sed -n 's/^made {"pid":\([0-9]*\).*/\1/p' "$(ur_out set)")

# --- JSON, against what the program made --------------------------------
dir=$UR_TMP/res
mkdir -p "$dir"
for kind in qp cq mr cm_id; do
	res -j -d "$kind" pid "$pid" > "$dir/$kind.json"
done
res -j > "$dir/summary.json"
ur_report json python3 "$(dirname "$0")/res_check.py" "$(ur_out set)" "$dir" $exact

# --- text ----------------------------------------------------------------
rc_qpn=$(sed -n 's/.*"lqpn":\([0-9]*\),"type":"RC".*/\1/p' "$(ur_out set)")
line=$(res qp lqpn "$rc_qpn")
case $line in
"link uroce0/1 lqpn $rc_qpn rqpn "*" type RC state RTS rq-psn 1000 sq-psn 2000 "*"pid $pid comm integ_res_set")
	ur_pass "text: rdma's line for QP $rc_qpn: $line" ;;
*) ur_fail "text: QP $rc_qpn's line is not rdma's form: '$line'" ;;
esac
ur_expect_eq "text: one line for lqpn $rc_qpn" 1 "$(printf '%s\n' "$line" | grep -c .)"
ur_expect_eq "text: link uroce0 filter, the program's QPs" 3 \
	"$(res qp link uroce0 pid "$pid" | grep -c "comm integ_res_set")"
ur_expect_eq "text: dev uroce0 filter, the program's CQs" 2 \
	"$(res cq dev uroce0 pid "$pid" | grep -c "^dev uroce0 cqn ")"
ur_expect_eq "text: a pid nobody has, nothing" "" "$(res qp pid 999999999)"
ur_expect_eq "text: access only with -d" "0 2" \
	"$(res mr pid "$pid" | grep -c access) $(res -d mr pid "$pid" | grep -c access)"
res mr pid "$pid" >/dev/null 2>&1
res bogus > /dev/null 2>&1
ur_expect_eq "an unknown object kind: usage error" 2 "$?"

# --- a process that does not answer --------------------------------------
kill -STOP "$(ur_prog_pid set)"
t0=$SECONDS
out=$(res -t 300 qp 2>&1)
kill -CONT "$(ur_prog_pid set)"
case $out in
*"did not answer within 300 ms"*) ur_pass "a stopped process is said not to answer (in $((SECONDS - t0)) s)" ;;
*) ur_fail "a stopped process: expected 'did not answer', saw '$out'" ;;
esac

# --- gone with the program -----------------------------------------------
: > "$done_file"
ur_wait set
ur_expect_rc set 0 "integ_res_set destroyed its objects and exited"
ur_expect_eq "after exit: none of its QPs, CQs, MRs, ids" "[] [] [] []" \
	"$(for k in qp cq mr cm_id; do res -j "$k" pid "$pid"; done | tr '\n' ' ' | sed 's/ $//')"

# --- another user's process -----------------------------------------------
# It answers its owner and root, and refuses a third user.
if [ "$(id -u)" = 0 ] && command -v runuser >/dev/null && id nobody >/dev/null 2>&1 &&
   id daemon >/dev/null 2>&1; then
	other_done=$UR_TMP/res_set.other.done
	ur_start other runuser -u nobody -- env "LD_LIBRARY_PATH=$UR_BUILD/lib" \
		"$UR_BUILD/bin/integ_res_set" uroce0 "$g4" "$(ur_port)" "$other_done"
	for _ in $(seq 200); do
		grep -q '^made ' "$(ur_out other)" && break
		kill -0 "${UR_PID[other]}" 2>/dev/null || break
		sleep 0.05
	done
	opid=$(sed -n 's/^made {"pid":\([0-9]*\).*/\1/p' "$(ur_out other)")
	if [ -n "$opid" ]; then
		count() { ur_nsexec "$UR_NS" runuser -u "$1" -- "$UROCE" res qp pid "$opid" | grep -c "comm integ_res_set"; }
		ur_expect_eq "another user's process: root sees its QPs" 3 \
			"$(res qp pid "$opid" | grep -c "comm integ_res_set")"
		ur_expect_eq "another user's process: its owner sees its QPs" 3 "$(count nobody)"
		ur_expect_eq "another user's process: a third user sees nothing" 0 "$(count daemon)"
	else
		ur_fail "integ_res_set as nobody did not make its objects"
		ur_show other
	fi
	: > "$other_done"
	ur_wait other
	ur_expect_rc other 0 "integ_res_set as nobody exited"
fi

# --- per-QP counters under loss ------------------------------------------
port=$(ur_port)
UR_ENV=("UROCE_FAULTS=loss=0.05,seed=11")
ur_start pp.server ibv_rc_pingpong -d uroce0 -g "$g4" -p "$port" -n 20000
if UR_NS=$UR_NS ur_wait_listen "$port" "${UR_PID[pp.server]}"; then
	ur_start pp.client ibv_rc_pingpong -d uroce0 -g "$g4" -p "$port" -n 20000 127.0.0.1
	seen= first= shown=
	for _ in $(seq 100); do
		seen=$(res -j qp comm ibv_rc_pingpong | python3 -c '
import json, sys
q = json.load(sys.stdin)
print(len(q), sum(o["retrans"] for o in q), sum(o["naks"] for o in q))')
		first=${first:-$seen}
		set -- $seen
		[ "${1:-0}" = 2 ] && [ "${2:-0}" -gt 0 ] && [ "${3:-0}" -gt 0 ] && break
		sleep 0.1
	done
	set -- $seen
	if [ "${1:-0}" = 2 ] && [ "${2:-0}" -gt 0 ] && [ "${3:-0}" -gt 0 ]; then
		ur_pass "ibv_rc_pingpong under 5 % loss: its 2 QPs show $2 retransmits, $3 NAKs"
	else
		client_alive=no
		kill -0 "${UR_PID[pp.client]}" 2>/dev/null && client_alive=yes
		ur_fail "ibv_rc_pingpong under 5 % loss: expected 2 QPs with retransmits and NAKs, saw '$seen' (QPs retrans naks), first '$first'; client still running: $client_alive"
		shown=1
	fi
	ur_stop pp.client
fi
ur_stop pp.server
# What the pair printed tells a dead peer (an error, a sanitizer report) from
# a slow one.
if [ -n "${shown:-}" ]; then ur_show pp.client; ur_show pp.server; fi
ur_sanitizer_clean pp.client
ur_sanitizer_clean pp.server
unset UR_ENV
ur_done
