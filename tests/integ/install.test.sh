#!/usr/bin/env bash
# ctest-timeout: 300
# The install (cmake/Install.cmake): `cmake --install` of this build into a
# temporary prefix puts uroce in bin/, its libibverbs.so.1, librdmacm.so.1
# and libmlx5.so.1 in the private lib/uroce/ only, and the man pages where
# man finds them; from there `uroce run -- ibv_devinfo` sees uroce0, `uroce
# run` gives rdma_cm programs the installed librdmacm.so.1 (ucmatose
# connects on lo through it) and perftest the installed libmlx5.so.1, a
# plain ibv_devinfo still gets
# the system's library (the install shadows nothing), and the opt-in
# env.sh gives uroce's; lib/tmpfiles.d/uroce.conf makes the /dev/infiniband
# nodes of uroce0..uroce7 (systemd-tmpfiles --root, as root).  Then `cpack -G DEB` makes a package with the same
# files under /usr, whose extracted uroce runs the same way (normal build
# only: the sanitizer builds add nothing to it).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdmacm_lib.sh"

prefix=$UR_TMP/prefix
# Programs here get no library path from the harness: only the install's.
UR_ENV=(LD_LIBRARY_PATH=)

ur_run install cmake --install "$UR_BUILD" --prefix "$prefix"
ur_expect_rc install 0 "cmake --install --prefix $prefix"
for f in bin/uroce lib/uroce/libibverbs.so.1 lib/uroce/librdmacm.so.1 lib/uroce/libmlx5.so.1 share/man/man1/uroce.1 share/man/man1/uroce-run.1 \
	 share/uroce/env.sh share/uroce/ld.so.conf.d/uroce.conf lib/tmpfiles.d/uroce.conf; do
	if [ -e "$prefix/$f" ]; then ur_pass "installed $f"; else ur_fail "missing $f"; fi
done
leaked=$(find "$prefix" \( -name 'libibverbs*' -o -name 'librdmacm*' -o -name 'libmlx5*' \) -not -path "$prefix/lib/uroce/*")
ur_expect_eq "libibverbs, librdmacm or libmlx5 outside the private lib/uroce/" "" "$leaked"
if command -v man >/dev/null; then
	ur_expect_eq "man finds uroce(1) in the prefix" "$prefix/share/man/man1/uroce.1" \
		"$(MANPATH=$prefix/share/man man -w uroce 2>&1)"
fi

if [ "$(id -u)" = 0 ] && command -v systemd-tmpfiles >/dev/null; then
	root=$UR_TMP/tmpfiles-root
	mkdir -p "$root"
	ur_run inst.tmpfiles systemd-tmpfiles --create --root="$root" "$prefix/lib/tmpfiles.d/uroce.conf"
	ur_expect_rc inst.tmpfiles 0 "systemd-tmpfiles --create the installed tmpfiles.d/uroce.conf"
	nodes=$(for i in 0 1 2 3 4 5 6 7; do
		stat -c '%n %F %t:%T %a' "$root/dev/infiniband/uverbs-uroce$i" 2>&1 | sed "s|^$root||"
	done)
	ur_expect_eq "tmpfiles.d: the null device as uverbs-uroce0..7, mode 0666" \
		"$(for i in 0 1 2 3 4 5 6 7; do echo "/dev/infiniband/uverbs-uroce$i character special file 1:3 666"; done)" \
		"$nodes"
fi

ur_run inst.run "$prefix/bin/uroce" run -- ibv_devinfo
ur_expect_rc inst.run 0 "installed uroce run -- ibv_devinfo"
ur_expect_grep inst.run '^hca_id:[[:space:]]+uroce0$' "installed uroce run: ibv_devinfo sees uroce0"
ur_run inst.devices "$prefix/bin/uroce" devices
ur_expect_grep inst.devices '^ +uroce0 ' "installed uroce devices lists uroce0 (its own library)"
if command -v ucmatose >/dev/null; then
	ur_run inst.ldd "$prefix/bin/uroce" run -- ldd "$(command -v ucmatose)"
	ur_expect_grep inst.ldd "librdmacm\.so\.1 => $prefix/lib/uroce/librdmacm\.so\.1" \
		"installed uroce run: rdma_cm programs load the installed librdmacm.so.1"
	ur_expect_grep inst.ldd "libibverbs\.so\.1 => $prefix/lib/uroce/libibverbs\.so\.1" \
		"installed uroce run: and the installed libibverbs.so.1"
	port=$(ur_port)
	cm_pair inst.ucmatose "$prefix/bin/uroce" run ucmatose -p "$port" -c 2 -- \
		"$prefix/bin/uroce" run ucmatose -s 127.0.0.1 -p "$port" -c 2
	ur_expect_pair_ok inst.ucmatose "installed uroce run: ucmatose -c 2 on lo" &&
		ur_expect_grep inst.ucmatose.client '^return status 0' "ucmatose client: return status 0"
fi
if command -v ib_write_bw >/dev/null; then
	ur_run inst.ldd.mlx5 "$prefix/bin/uroce" run -- ldd "$(command -v ib_write_bw)"
	ur_expect_grep inst.ldd.mlx5 "libmlx5\.so\.1 => $prefix/lib/uroce/libmlx5\.so\.1" \
		"installed uroce run: perftest loads the installed libmlx5.so.1"
fi
ur_run inst.plain ibv_devinfo
ur_expect_no_grep inst.plain 'uroce0' "plain ibv_devinfo after the install: the system's library, no uroce0"
ur_run inst.env bash -c ". '$prefix/share/uroce/env.sh' && exec ibv_devinfo"
ur_expect_grep inst.env '^hca_id:[[:space:]]+uroce0$' "after . env.sh, ibv_devinfo sees uroce0"

if ur_is_asan || ur_is_tsan; then
	ur_done
fi
if ! command -v cpack >/dev/null || ! command -v dpkg-deb >/dev/null; then
	ur_log "no cpack/dpkg-deb: the Debian package is not checked"
	ur_done
fi
(cd "$UR_BUILD" && cpack -G DEB -B "$UR_TMP/deb") > "$UR_TMP/cpack.out" 2>&1
deb=$(ls "$UR_TMP"/deb/uroce_*.deb 2>/dev/null | head -n1)
if [ -n "$deb" ]; then
	ur_pass "cpack -G DEB: $(basename "$deb")"
	contents=$(dpkg-deb -c "$deb" | awk '{ print $6 }')
	for f in ./usr/bin/uroce ./usr/lib/uroce/libibverbs.so.1 ./usr/lib/uroce/librdmacm.so.1 \
		 ./usr/lib/uroce/libmlx5.so.1 \
		 ./usr/share/man/man1/uroce.1 \
		 ./usr/share/uroce/env.sh ./usr/lib/tmpfiles.d/uroce.conf; do
		if grep -qxF "$f" <<<"$contents"; then ur_pass "package holds $f"; else ur_fail "package lacks $f"; fi
	done
	ur_expect_eq "package: libibverbs, librdmacm and libmlx5 only in usr/lib/uroce/" "" \
		"$(grep -E 'libibverbs|librdmacm|libmlx5' <<<"$contents" | grep -v '^./usr/lib/uroce/')"
	if dpkg-deb -I "$deb" postinst 2>/dev/null | grep -q 'systemd-tmpfiles --create uroce.conf'; then
		ur_pass "package: postinst makes the nodes at install (systemd-tmpfiles --create uroce.conf)"
	else
		ur_fail "package: no postinst running systemd-tmpfiles --create uroce.conf"
	fi
	dpkg-deb -x "$deb" "$UR_TMP/debroot"
	ur_run deb.run "$UR_TMP/debroot/usr/bin/uroce" run -- ibv_devinfo
	ur_expect_grep deb.run '^hca_id:[[:space:]]+uroce0$' "the package's uroce run -- ibv_devinfo sees uroce0"
else
	ur_fail "cpack -G DEB made no package: $(tail -n 5 "$UR_TMP/cpack.out")"
fi

ur_done
