# UCX on uroce (sourced after lib.sh by tests/integ/ucx_*.test.sh).
#
# UCX lists an RDMA device only if /dev/infiniband/<dev_name> is a character
# device it may read and write (`uroce devnodes`).  ucx_need DEVICE...
# skips the test without ucx-utils, makes the nodes of the DEVICEs when
# root (they are harmless and stay until reboot), and skips when they are
# missing and cannot be made.
ucx_need() {
	local d made=()
	command -v ucx_info >/dev/null && command -v ucx_perftest >/dev/null ||
		ur_skip "needs UCX's tools (apt-get install ucx-utils)"
	for d in "$@"; do
		[ -c "/dev/infiniband/uverbs-$d" ] && continue
		[ "$(id -u)" = 0 ] ||
			ur_skip "/dev/infiniband/uverbs-$d is missing: run 'sudo uroce devnodes create $*' once"
		made+=("$d")
	done
	[ ${#made[@]} -gt 0 ] || return 0
	# The nodes stay (as scripts/test's do): UCX tests run side by side,
	# and one removing at its exit what another still needs fails that one.
	"$UR_BUILD/bin/uroce" devnodes create "${made[@]}" >/dev/null ||
		ur_fail "uroce devnodes create ${made[*]} (as root)"
}

# UCX's memory hooks patch the allocator; under ASan they fight its
# interceptors, so the sanitizer builds run UCX without them.  Without
# memory events UCX 1.13 has no registration cache and falls back to its
# implicit on-demand region, whose teardown crashes UCX itself
# (uct_ib_md_release_reg_method passes a memory handle where
# uct_ib_mem_dereg takes its parameters; UCX removed the method in 1.14):
# direct registration instead (README.md; `uroce run` sets it, the harness
# runs programs without it).
UCX_ENV=()
if ur_is_asan || ur_is_tsan; then
	UCX_ENV+=(UCX_MEM_MALLOC_HOOKS=no UCX_MEM_EVENTS=no UCX_IB_REG_METHODS=rcache,direct)
fi

# ucx_perf TAG TLS DEV SERVER_IP TEST ARGS...: ucx_perftest TEST between a
# server (UR_SNS) and a client (UR_CNS) on DEV over UCX_TLS=TLS; both must
# exit 0 and the client print its final figures.
ucx_perf() {
	local tag=$1 tls=$2 dev=$3 ip=$4 test=$5 port
	shift 5
	port=$(ur_port)
	local UR_ENV=("${UCX_ENV[@]}" "UCX_TLS=$tls" "UCX_NET_DEVICES=$dev:1")
	ur_pair "$tag" "$port" ucx_perftest -p "$port" -t "$test" "$@" -- \
		ucx_perftest "$ip" -p "$port" -t "$test" "$@"
	ur_expect_pair_ok "$tag" "$tag: ucx_perftest -t $test $* over $tls on $dev" &&
		ur_expect_grep "$tag.client" '^Final: +[0-9]+ ' "$tag: final figures"
	ur_expect_no_grep "$tag.client" 'UCX +(ERROR|WARN)|uroce (error|warning)' "$tag: client: no UCX or uroce error"
	ur_expect_no_grep "$tag.server" 'UCX +(ERROR|WARN)|uroce (error|warning)' "$tag: server: no UCX or uroce error"
	ur_sanitizer_clean "$tag.client"
	ur_sanitizer_clean "$tag.server"
}
