#!/usr/bin/env bash
# ctest-timeout: 300
# uroce's libmlx5.so.1 (src/mlx5dv/) against Debian's (rdma-core 44):
#
#  - every (symbol, version) pair Debian's exports, default and non-default
#    (mlx5dv_init_obj@MLX5_1.0), is exported by uroce's under the same
#    version, and the version nodes chain alike (MLX5_1.1 -> MLX5_1.0, ...);
#  - under `uroce run`, the programs that link libmlx5 load uroce's with
#    nothing unresolved: perftest's ib_write_bw (ldd -r with immediate
#    binding), pyverbs' mlx5 module (python3 imports it) and UCX's
#    libuct_ib (ucx_info -d loads it and still lists rc_verbs on uroce0);
#  - an RC ib_write_bw pair on lo still runs, perftest now on uroce's
#    libmlx5;
#  - progs/mlx5dv_api.c: what a program sees of the library;
#  - perftest's DC mode (ib_write_bw -c DC) runs through it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/abi_lib.sh"
. "$(dirname "$0")/progs_lib.sh"
. "$(dirname "$0")/perftest_cases.sh"

multiarch=$( (dpkg-architecture -qDEB_HOST_MULTIARCH || gcc -print-multiarch) 2>/dev/null)
SYS_MLX5=/lib/${multiarch:-x86_64-linux-gnu}/libmlx5.so.1
URO_MLX5=$UR_BUILD/lib/libmlx5.so.1
URO=$UR_BUILD/bin/uroce
[ -f "$SYS_MLX5" ] || ur_skip "no reference: $SYS_MLX5 is missing (apt-get install ibverbs-providers)"
command -v objdump >/dev/null && command -v readelf >/dev/null ||
	ur_skip "needs objdump and readelf (apt-get install binutils)"
[ -f "$URO_MLX5" ] || { ur_fail "$URO_MLX5 is not built"; ur_done; }
uro_real=$(readlink -f "$URO_MLX5")

# --- exports and version nodes ------------------------------------------------

abi_defs "$SYS_MLX5" '^MLX5_' > "$UR_TMP/reference.defs"
abi_defs "$URO_MLX5" '^MLX5_' > "$UR_TMP/uroce.defs"
n=$(wc -l < "$UR_TMP/reference.defs")
[ "$n" -ge 100 ] || ur_fail "only $n MLX5_* symbols read from $SYS_MLX5"
missing=$(comm -23 "$UR_TMP/reference.defs" "$UR_TMP/uroce.defs")
ur_expect_eq "(version, symbol) pairs of $SYS_MLX5 ($n) missing from uroce's" "" \
	"$(echo $missing)"
ur_expect_eq "pairs uroce's exports beyond the reference" "" \
	"$(echo $(comm -13 "$UR_TMP/reference.defs" "$UR_TMP/uroce.defs"))"
grep -q '^MLX5_1.0 mlx5dv_init_obj HIDDEN$' "$UR_TMP/uroce.defs" &&
	ur_pass "mlx5dv_init_obj@MLX5_1.0 kept beside @@MLX5_1.2" ||
	ur_fail "mlx5dv_init_obj@MLX5_1.0 missing"

abi_nodes "$SYS_MLX5" > "$UR_TMP/reference.nodes"
abi_nodes "$URO_MLX5" > "$UR_TMP/uroce.nodes"
if diff -u "$UR_TMP/reference.nodes" "$UR_TMP/uroce.nodes" > "$UR_TMP/nodes.diff"; then
	ur_pass "version nodes: $(grep -c ' <-' "$UR_TMP/uroce.nodes"), chained as in the reference"
else
	ur_fail "version nodes differ from the reference:"
	sed 's/^/    /' "$UR_TMP/nodes.diff"
fi

# --- loading under uroce run -----------------------------------------------------

# resolves TAG LOG WHAT: LOG (ldd's) maps libmlx5.so.1 to uroce's and
# reports nothing unresolved.
resolves() {
	local to
	to=$(awk '$1 == "libmlx5.so.1" && $2 == "=>" { print $3 }' "$(ur_out "$1")" | head -n1)
	ur_expect_eq "$2: libmlx5.so.1 resolves to" "$uro_real" "$(readlink -f "${to:-none}")"
	ur_expect_no_grep "$1" 'undefined symbol|not found' "$2: nothing unresolved"
}

if command -v ib_write_bw >/dev/null; then
	UR_ENV=(LD_BIND_NOW=1)
	ur_run ldd.perftest "$URO" run -- ldd -r "$(command -v ib_write_bw)"
	UR_ENV=()
	resolves ldd.perftest "ib_write_bw"
else
	ur_log "no perftest (apt-get install perftest): ib_write_bw not checked"
fi

# The process's own map: the module is loaded from uroce's library.
pyverbs_maps='import pyverbs.providers.mlx5.mlx5dv
print("\n".join(sorted({l.split()[-1] for l in open("/proc/self/maps") if "libmlx5" in l})))'
# Python and UCX, run through uroce's tool, keep memory to their exit: under
# ASan their leaks are theirs, not counted.
NOLEAK=()
ur_is_asan && NOLEAK=(ASAN_OPTIONS=detect_leaks=0)
if /usr/bin/python3 -c 'import pyverbs' 2>/dev/null; then
	UR_ENV=("${NOLEAK[@]}")
	ur_run pyverbs "$URO" run -- /usr/bin/python3 -c "$pyverbs_maps"
	UR_ENV=()
	ur_expect_rc pyverbs 0 "python3: import pyverbs.providers.mlx5.mlx5dv"
	ur_expect_eq "pyverbs' mlx5 module maps" "$uro_real" "$(grep libmlx5 "$(ur_out pyverbs)")"
else
	ur_log "no pyverbs (apt-get install python3-pyverbs): its mlx5 module not checked"
fi

uct_ib=$(ls /usr/lib/"${multiarch:-x86_64-linux-gnu}"/ucx/libuct_ib.so.0 2>/dev/null)
if command -v ucx_info >/dev/null && [ -n "$uct_ib" ]; then
	UR_ENV=(LD_BIND_NOW=1)
	ur_run ldd.uct_ib "$URO" run -- ldd -r "$uct_ib"
	UR_ENV=()
	resolves ldd.uct_ib "libuct_ib.so.0"
	# ld.so names each library whose constructor it runs.
	UR_ENV=(LD_DEBUG=files "${NOLEAK[@]}")
	ur_run ucx "$URO" run -- ucx_info -d
	UR_ENV=()
	ur_expect_rc ucx 0 "ucx_info -d"
	ur_expect_grep ucx "calling init: $UR_BUILD/lib/libmlx5\.so\.1" \
		"ucx_info -d: UCX's libuct_ib loads uroce's libmlx5.so.1"
	ur_expect_no_grep ucx "calling init: $SYS_MLX5" "ucx_info -d: and not Debian's"
	if [ -c /dev/infiniband/uverbs-uroce0 ]; then
		ur_expect_grep ucx 'Transport: rc_verbs' "ucx_info -d: rc_verbs still listed"
	fi
else
	ur_log "no UCX (apt-get install ucx-utils): libuct_ib not checked"
fi

# --- perftest and the program -----------------------------------------------------

g4=$(ur_gid_index uroce0 ::ffff:127.0.0.1)
ur_expect_eq "uroce0: GID index of ::ffff:127.0.0.1" 1 "$g4"
if command -v ib_write_bw >/dev/null && [ -n "$g4" ]; then
	pt_ok lo.write_bw ib_write_bw uroce0 uroce0 127.0.0.1 default -x "$g4" -n 2000
fi
prog_run lo.mlx5dv_api mlx5dv_api uroce0 "${g4:-1}"

# perftest's DC mode, on its mlx5dv path (it takes it with the ibv_wr_*
# API, which it uses for uroce's part id, 4115); the rest of DC is
# integ.dc's.
if command -v ib_write_bw >/dev/null && [ -n "$g4" ]; then
	pt_ok lo.dc_write_bw ib_write_bw uroce0 uroce0 127.0.0.1 default -x "$g4" -c DC -n 2000
fi

ur_done
