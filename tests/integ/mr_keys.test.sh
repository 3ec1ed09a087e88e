#!/usr/bin/env bash
# ctest-timeout: 300
# ctest-labels: reliability
# Memory keys come from the CSPRNG (tests/integ/progs/mr_keys.c): thousands
# of registrations and type 1 binds through the verbs follow no pattern, a
# window's previous key is refused after a bind; and two processes started
# one after the other begin with different keys (a counter would give both
# the same first rkey, 0x00000100 before keys were drawn at random), each
# below 2^24 as a NIC's first keys are.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/progs_lib.sh"

g4=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
prog_run run1 mr_keys uroce0 "${g4:-1}"
prog_run run2 mr_keys uroce0 "${g4:-1}" regs
k1=$(sed -n 's/^first rkey //p' "$(ur_out run1)")
k2=$(sed -n 's/^first rkey //p' "$(ur_out run2)")
if [ -n "$k1" ] && [ -n "$k2" ] && [ "$k1" != "$k2" ]; then
	ur_pass "two processes' first rkeys differ: $k1, $k2"
else
	ur_fail "two processes' first rkeys: '$k1' and '$k2' (expected two different keys)"
fi
if [ -n "$k1" ] && [ -n "$k2" ] && [ $((k1)) -lt $((1 << 24)) ] && [ $((k2)) -lt $((1 << 24)) ]; then
	ur_pass "both first rkeys fit in 24 bits (a %06x field holds them)"
else
	ur_fail "first rkeys '$k1' and '$k2': expected both below 0x1000000"
fi
ur_done
