#!/usr/bin/env bash
# ABI conformance of uroce's libibverbs.so.1 against the system's rdma-core
# libibverbs (Debian's rdma-core 44), for the programs that run on uroce.
#
#  (a) every default-version symbol the system library exports is exported by
#      uroce under the same version, and the version nodes form the same
#      chain (IBVERBS_1.1 -> IBVERBS_1.0, ..., IBVERBS_PRIVATE_34 alone);
#  (b) every libibverbs symbol imported by the client binaries and libraries
#      below is exported by uroce with the version they ask for;
#  (d) uroce's librdmacm.so.1 exports every default-version symbol of the
#      system's librdmacm.so.1 under the same version nodes, chained alike;
#  (c) with LD_LIBRARY_PATH at uroce's build and immediate binding, the
#      dynamic loader resolves libibverbs.so.1 to uroce's and reports no
#      undefined libibverbs symbol and no missing version for any of them.
#
# Any missing symbol fails the test; the list printed at the end (also left
# in $UROCE_BUILD/abi_symbols/missing.txt) is what remains to implement.
#
# Environment: UROCE_BUILD (build directory, set by CTest).  The tools and
# clients come from binutils, ibverbs-utils, perftest, python3-pyverbs,
# librdmacm1 and ibverbs-providers; as root the test installs what is
# missing with apt-get, otherwise it prints the command and fails.
set -u
set -o pipefail
. "$(dirname "$0")/abi_lib.sh"

BUILD=${UROCE_BUILD:?UROCE_BUILD must point at the build directory}
UROCE_LIB=$BUILD/lib/libibverbs.so.1
OUT=$BUILD/abi_symbols
rm -rf "$OUT" && mkdir -p "$OUT" || exit 1

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
note() { echo "--- $*"; }

# --- tools and clients ----------------------------------------------------

# need_pkg PACKAGE PATH...: install PACKAGE if any PATH is missing.
missing_pkgs=()
need_pkg() {
	local pkg=$1 p
	shift
	for p in "$@"; do
		if [ ! -e "$p" ] && ! command -v "$p" >/dev/null 2>&1; then
			missing_pkgs+=("$pkg")
			return
		fi
	done
}

multiarch=$( (dpkg-architecture -qDEB_HOST_MULTIARCH || gcc -print-multiarch) 2>/dev/null)
multiarch=${multiarch:-x86_64-linux-gnu}
libdir=/usr/lib/$multiarch
[ -d "$libdir" ] || libdir=/lib/$multiarch

utils=(ibv_devices ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong
       ibv_srq_pingpong ibv_xsrq_pingpong ibv_asyncwatch)
pyverbs_dir=/usr/lib/python3/dist-packages/pyverbs

need_pkg binutils objdump readelf
need_pkg ibverbs-utils "${utils[@]}"
need_pkg perftest ib_write_bw
need_pkg python3-pyverbs "$pyverbs_dir"
need_pkg libibverbs1 "$libdir/libibverbs.so.1"
need_pkg librdmacm1 "$libdir/librdmacm.so.1"
need_pkg ibverbs-providers "$libdir/libmlx5.so.1" "$libdir/libefa.so.1"

if [ ${#missing_pkgs[@]} -gt 0 ]; then
	note "installing ${missing_pkgs[*]}"
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
		export DEBIAN_FRONTEND=noninteractive
		apt-get install -y --no-install-recommends "${missing_pkgs[@]}" ||
			{ apt-get update && apt-get install -y --no-install-recommends "${missing_pkgs[@]}"; } ||
			{ echo "FAIL: apt-get could not install ${missing_pkgs[*]}"; exit 1; }
	else
		echo "FAIL: missing packages; install them with:"
		echo "  sudo apt-get install ${missing_pkgs[*]}"
		exit 1
	fi
fi

[ -f "$UROCE_LIB" ] || { echo "FAIL: $UROCE_LIB not built"; exit 1; }

# The system's libibverbs: the multiarch one, or what ldconfig knows, but
# never uroce's own (should it have been installed system-wide).
uroce_real=$(readlink -f "$UROCE_LIB")
SYS_LIB=
for c in "$libdir/libibverbs.so.1" \
	 $(ldconfig -p 2>/dev/null | awk '/^\tlibibverbs\.so\.1 / {print $NF}'); do
	if [ -f "$c" ] && [ "$(readlink -f "$c")" != "$uroce_real" ]; then
		SYS_LIB=$c
		break
	fi
done
[ -n "$SYS_LIB" ] || { echo "FAIL: no system libibverbs.so.1 found"; exit 1; }
note "reference: $SYS_LIB"
note "uroce:     $UROCE_LIB"

# The clients: ibverbs-utils, perftest's ib_*, librdmacm, the providers
# perftest links, and pyverbs' extension modules.
is_elf() { [ "$(head -c4 "$1" 2>/dev/null | tr -d '\0')" = $'\x7fELF' ]; }
clients=()
for u in "${utils[@]}"; do
	clients+=("$(command -v "$u")")
done
perftest_bins=$(dpkg -L perftest 2>/dev/null | grep -E '/bin/ib_[^/]*$')
[ -n "$perftest_bins" ] || perftest_bins=$(ls /usr/bin/ib_*_bw /usr/bin/ib_*_lat 2>/dev/null)
for b in $perftest_bins; do
	is_elf "$b" && clients+=("$b")
done
clients+=("$libdir/librdmacm.so.1" "$libdir/libmlx5.so.1" "$libdir/libefa.so.1")
while IFS= read -r m; do
	clients+=("$m")
done < <(find "$pyverbs_dir" -name '*.so' | sort)
for c in "${clients[@]}"; do
	if [ -z "$c" ] || ! is_elf "$c"; then
		fail "client ${c:-(unnamed)} missing or not ELF"
	fi
done
note "${#clients[@]} clients"

# --- symbol tables --------------------------------------------------------

# defined LIB: "VERSION NAME DEFAULT|HIDDEN" for every libibverbs-versioned
# definition.
defined() { abi_defs "$1" '^IBVERBS_'; }

# imported FILE: "VERSION NAME" for every undefined libibverbs-versioned symbol.
imported() {
	objdump -T "$1" | awk '
		NF >= 3 && /\*UND\*/ && $(NF-1) ~ /^\(?IBVERBS_/ {
			v = $(NF-1); gsub(/[()]/, "", v); print v, $NF
		}' | sort -u
}

defined "$SYS_LIB" > "$OUT/reference.defs" || { echo "FAIL: objdump $SYS_LIB"; exit 1; }
defined "$UROCE_LIB" > "$OUT/uroce.defs" || { echo "FAIL: objdump $UROCE_LIB"; exit 1; }
awk '$3 == "DEFAULT" {print $1, $2}' "$OUT/reference.defs" | sort -u > "$OUT/reference.default"
awk '$3 == "DEFAULT" {print $1, $2}' "$OUT/uroce.defs" | sort -u > "$OUT/uroce.default"
awk '{print $1, $2}' "$OUT/uroce.defs" | sort -u > "$OUT/uroce.any"
[ -s "$OUT/reference.default" ] || { echo "FAIL: no IBVERBS_* symbols in $SYS_LIB"; exit 1; }

# where NAME: the versions uroce exports NAME under, for hints.
where() {
	awk -v n="$1" '$2 == n {
		printf "%s%s%s", sep, $1, ($3 == "HIDDEN" ? " (non-default)" : ""); sep = ", "
	}' "$OUT/uroce.defs"
}

# --- (a) exports and version nodes ----------------------------------------

note "(a) default-version exports of $(basename "$SYS_LIB")"
comm -23 "$OUT/reference.default" "$OUT/uroce.default" > "$OUT/missing.a"
while read -r ver name; do
	w=$(where "$name")
	echo "  missing: $name@@$ver${w:+ (uroce exports it under $w)}"
done < "$OUT/missing.a"
n=$(wc -l < "$OUT/missing.a")
echo "  $(wc -l < "$OUT/reference.default") reference symbols, $n missing"
[ "$n" = 0 ] || fail "(a) $n default-version symbols missing"

extra=$(comm -13 "$OUT/reference.default" "$OUT/uroce.default")
[ -z "$extra" ] || { echo "  note: exported by uroce only:"; echo "$extra" | sed 's/^/    /'; }

abi_nodes "$SYS_LIB" > "$OUT/reference.nodes"
# UROCE_PRIVATE_1 is uroce's own node, for its librdmacm.so.1 (cm_abi.h).
abi_nodes "$UROCE_LIB" | grep -v '^UROCE_PRIVATE_' > "$OUT/uroce.nodes"
if ! diff -u "$OUT/reference.nodes" "$OUT/uroce.nodes" > "$OUT/nodes.diff"; then
	sed 's/^/  /' "$OUT/nodes.diff"
	fail "(a) version nodes differ from the reference"
else
	echo "  version nodes: $(grep -c ' <-' "$OUT/uroce.nodes") defined, chained as in the reference"
fi
[ "$(grep -c ' <-' "$OUT/reference.nodes")" -ge 2 ] || fail "(a) could not read the reference's version nodes"

# --- (b) what the clients import ------------------------------------------

note "(b) libibverbs imports of the clients"
: > "$OUT/imports"
for c in "${clients[@]}"; do
	imported "$c" | sed "s|\$| $c|" >> "$OUT/imports"
done
[ -s "$OUT/imports" ] || fail "(b) no libibverbs imports found: clients not read"
awk '{print $1, $2}' "$OUT/imports" | sort -u > "$OUT/imports.syms"
comm -23 "$OUT/imports.syms" "$OUT/uroce.any" > "$OUT/missing.b"
while read -r ver name; do
	users=$(awk -v v="$ver" -v n="$name" '$1 == v && $2 == n {print $3}' "$OUT/imports" |
		xargs -n1 basename | sort -u)
	w=$(where "$name")
	echo "  missing: $name@$ver${w:+ (uroce exports it under $w)}, needed by $(echo "$users" | wc -l): $(echo "$users" | head -4 | tr '\n' ' ')$( [ "$(echo "$users" | wc -l)" -gt 4 ] && echo ...)"
done < "$OUT/missing.b"
n=$(wc -l < "$OUT/missing.b")
echo "  $(wc -l < "$OUT/imports.syms") distinct imports from ${#clients[@]} clients, $n missing"
[ "$n" = 0 ] || fail "(b) $n imported symbols missing"

# --- (d) librdmacm.so.1 ------------------------------------------------------

note "(d) default-version exports of librdmacm.so.1"
cm_defaults() {
	objdump -T "$1" | awk 'NF >= 3 && !/\*UND\*/ && !/\*ABS\*/ && $(NF-1) ~ /^RDMACM_/ {
		print $(NF-1), $NF }' | sort -u
}
UROCE_CM_LIB=$BUILD/lib/librdmacm.so.1
if [ -f "$UROCE_CM_LIB" ]; then
	cm_defaults "$libdir/librdmacm.so.1" > "$OUT/rdmacm.reference.default"
	cm_defaults "$UROCE_CM_LIB" > "$OUT/rdmacm.uroce.default"
	comm -23 "$OUT/rdmacm.reference.default" "$OUT/rdmacm.uroce.default" > "$OUT/rdmacm.missing"
	sed 's/^/  missing: /' "$OUT/rdmacm.missing"
	echo "  $(wc -l < "$OUT/rdmacm.reference.default") reference symbols, $(wc -l < "$OUT/rdmacm.missing") missing"
	[ -s "$OUT/rdmacm.missing" ] && fail "(d) librdmacm symbols missing"
	[ -s "$OUT/rdmacm.reference.default" ] || fail "(d) no RDMACM_* symbols in the system's librdmacm"
	abi_nodes "$libdir/librdmacm.so.1" > "$OUT/rdmacm.reference.nodes"
	abi_nodes "$UROCE_CM_LIB" > "$OUT/rdmacm.uroce.nodes"
	if ! diff -u "$OUT/rdmacm.reference.nodes" "$OUT/rdmacm.uroce.nodes" > "$OUT/rdmacm.nodes.diff"; then
		sed 's/^/  /' "$OUT/rdmacm.nodes.diff"
		fail "(d) librdmacm version nodes differ from the reference"
	fi
else
	fail "(d) $UROCE_CM_LIB not built"
fi

# --- (c) the dynamic loader's view ----------------------------------------

note "(c) LD_LIBRARY_PATH=$BUILD/lib LD_BIND_NOW=1 ldd -r"
: > "$OUT/missing.c"
bad_clients=0
for c in "${clients[@]}"; do
	log=$OUT/ldd.$(basename "$c").log
	LD_LIBRARY_PATH=$BUILD/lib LD_BIND_NOW=1 ldd -r "$c" > "$log" 2>&1
	resolved=$(awk '$1 == "libibverbs.so.1" && $2 == "=>" {print $3}' "$log" | head -1)
	problems=$(grep -E "undefined symbol: [^ ,]+, version IBVERBS_|version \`IBVERBS_[^']*' not found" "$log")
	if [ -n "$resolved" ] && [ "$(readlink -f "$resolved")" != "$uroce_real" ]; then
		fail "(c) $(basename "$c"): libibverbs.so.1 resolves to $resolved, not uroce's"
		continue
	fi
	if [ -z "$resolved" ]; then
		# fine for a module that uses nothing of libibverbs
		if awk -v c="$c" '$3 == c {found = 1} END {exit !found}' "$OUT/imports"; then
			fail "(c) $(basename "$c"): imports libibverbs symbols, but ldd shows no libibverbs.so.1"
		fi
		continue
	fi
	if [ -n "$problems" ]; then
		bad_clients=$((bad_clients + 1))
		echo "$problems" | sed -nE 's/.*undefined symbol: ([^ ,]+), version (IBVERBS_[A-Za-z0-9_.]+).*/\2 \1/p' >> "$OUT/missing.c"
		echo "$problems" | grep -o "version \`IBVERBS_[^']*' not found" | sed "s/^/VERSION /" >> "$OUT/missing.c"
		echo "  $(basename "$c"): $(echo "$problems" | wc -l) unresolved"
	fi
done
sort -u -o "$OUT/missing.c" "$OUT/missing.c"
n=$(wc -l < "$OUT/missing.c")
echo "  ${#clients[@]} clients checked, $bad_clients with unresolved libibverbs symbols ($n distinct)"
[ "$n" = 0 ] || fail "(c) the loader reports $n unresolved libibverbs symbols/versions"

# --- summary ----------------------------------------------------------------

cat "$OUT/missing.a" "$OUT/missing.b" <(grep -v '^VERSION' "$OUT/missing.c") |
	sort -u > "$OUT/missing.txt"
if [ "$failures" -gt 0 ]; then
	echo
	echo "=== $(wc -l < "$OUT/missing.txt") symbols missing from uroce (VERSION NAME):"
	sed 's/^/  /' "$OUT/missing.txt"
	echo "=== abi_symbols: FAILED ($failures checks); details in $OUT"
	exit 1
fi
echo "=== abi_symbols: OK"
