# Reading a shared library's ABI with binutils (sourced by the ABI tests:
# abi_symbols.test.sh, mlx5dv_abi.test.sh).
#
#   abi_nodes LIB   "NODE <- PARENT..." per version definition ("NODE <-"
#                   if it has none), plus "BASE soname"; sorted
#   abi_defs LIB RE "VERSION NAME DEFAULT|HIDDEN" for every definition
#                   whose version matches the ERE RE (objdump -T shows a
#                   hidden, non-default version in parentheses); sorted

abi_nodes() {
	readelf -V --wide "$1" | awk '
		/^Version definition/ { on = 1; next }
		/^Version (needs|symbols)/ { on = 0 }
		!on { next }
		/Flags: BASE/ { sub(/.*Name: /, ""); print "BASE", $0; cur = ""; next }
		/Name: / { flush(); sub(/.*Name: /, ""); cur = $0; par = ""; next }
		/Parent [0-9]+: / { sub(/.*Parent [0-9]+: /, ""); par = par " " $0; next }
		function flush() { if (cur != "") print cur " <-" par }
		END { flush() }' | sort
}

abi_defs() {
	objdump -T "$1" | awk -v re="$2" '
		NF < 3 || /\*UND\*/ || /\*ABS\*/ { next }
		{ v = $(NF-1); kind = "DEFAULT" }
		v ~ /^\(/ { gsub(/[()]/, "", v); kind = "HIDDEN" }
		v ~ re { print v, $NF, kind }' | sort -u
}
