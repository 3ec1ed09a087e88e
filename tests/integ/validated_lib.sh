# `uroce pingpong --validate` pairs on lo, shared by faults.test.sh and
# ooo.test.sh.  Sourced after lib.sh; the caller sets UR_ENV (the faults).
#
# validated_pair TAG ITERS WHAT ARGS...: a validated server and client with
# ARGS, both exit 0, and every message (SEND/WRITE: both sides; READ: the
# client) or atomic result (and the server's final word: each atomic
# executed once) checked, and ITERS iterations reported.
validated_pair() {
	local tag=$1 iters=$2 what=$3 port
	shift 3
	port=$(ur_port)
	ur_pair "$tag" "$port" "$UR_BUILD/bin/uroce" pingpong -p "$port" -n "$iters" --validate "$@" \
		-- "$UR_BUILD/bin/uroce" pingpong -p "$port" -n "$iters" --validate "$@" 127.0.0.1
	ur_expect_pair_ok "$tag" "pingpong $what" || return
	case $* in
	*read*) ur_expect_grep "$tag.client" "^validated: $iters messages" "$tag: every READ's bytes" ;;
	*cas*|*faa*)
		ur_expect_grep "$tag.client" "^validated: $iters atomic results" "$tag: every atomic's result"
		ur_expect_grep "$tag.server" "^validated: 1 final atomic word" \
			"$tag: the final word: each atomic executed once" ;;
	*)
		ur_expect_grep "$tag.client" "^validated: $iters messages" "$tag: client: every message once, in order"
		ur_expect_grep "$tag.server" "^validated: $iters messages" "$tag: server: every message once, in order" ;;
	esac
	ur_expect_grep "$tag.client" "^$iters iters in [0-9.]+ seconds" "$tag: $iters iterations"
}
