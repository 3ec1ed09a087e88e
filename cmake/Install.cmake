# Install rules and the Debian package (cmake --install; cpack -G DEB).
#
#   PREFIX/bin/uroce                      the tool, on the PATH
#   PREFIX/lib/uroce/libibverbs.so.1      uroce's libraries, in a directory of
#   PREFIX/lib/uroce/librdmacm.so.1       its own that no search path names:
#   PREFIX/lib/uroce/libmlx5.so.1         they never shadow the system's
#                                         libibverbs, librdmacm and libmlx5
#                                         unless asked, by `uroce run` or the
#                                         opt-in files below
#   PREFIX/share/man/man1/uroce*.1        man pages (`man uroce`)
#   PREFIX/share/uroce/env.sh             `. env.sh`: this shell's programs
#                                         get uroce's library (opt-in)
#   PREFIX/share/uroce/ld.so.conf.d/uroce.conf
#                                         copy to /etc/ld.so.conf.d/ and run
#                                         ldconfig: every program gets it
#                                         (opt-in, system-wide)
#   PREFIX/lib/tmpfiles.d/uroce.conf      the /dev/infiniband nodes UCX looks
#                                         for, made at boot by systemd (which
#                                         reads /usr/lib/tmpfiles.d: the
#                                         package's; from another prefix,
#                                         copy it to /etc/tmpfiles.d/)
include(GNUInstallDirs)

set(UROCE_INSTALL_PRIVLIB "lib/uroce" CACHE STRING
    "where uroce's libibverbs.so.1, librdmacm.so.1 and libmlx5.so.1 go, under the prefix (private: no search path names it)")

install(TARGETS ibverbs rdmacm mlx5 LIBRARY DESTINATION ${UROCE_INSTALL_PRIVLIB} NAMELINK_SKIP)
# The tool finds its library relative to itself (tools/uroce/cmd_run.c
# looks in ../lib/uroce too), wherever the prefix is.
set_target_properties(uroce PROPERTIES INSTALL_RPATH "$ORIGIN/../${UROCE_INSTALL_PRIVLIB}")
install(TARGETS uroce RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# tmpfiles.d lives in lib/ whatever the architecture's library directory.
install(FILES ${PROJECT_SOURCE_DIR}/cmake/tmpfiles-uroce.conf DESTINATION lib/tmpfiles.d
        RENAME uroce.conf)

file(GLOB _uroce_man CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/man/*.1)
install(FILES ${_uroce_man} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)

# The opt-in files name the library directory of the prefix installed to
# (cmake --install --prefix may change it), so they are written at install
# time.
install(CODE "
  set(_lib \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${UROCE_INSTALL_PRIVLIB}\")
  set(_real \"\${CMAKE_INSTALL_PREFIX}/${UROCE_INSTALL_PRIVLIB}\")
  file(MAKE_DIRECTORY \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/uroce/ld.so.conf.d\")
  file(WRITE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/uroce/env.sh\"
\"# Source this file (. env.sh) to run this shell's verbs programs on uroce's
# software RDMA devices instead of the system's libibverbs.
export LD_LIBRARY_PATH=\${_real}\\\${LD_LIBRARY_PATH:+:\\\$LD_LIBRARY_PATH}
\")
  file(WRITE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/uroce/ld.so.conf.d/uroce.conf\"
\"# Copy to /etc/ld.so.conf.d/ and run ldconfig to give every program on this
# host uroce's libibverbs.so.1 instead of the system's (remove it to undo).
\${_real}
\")
  message(STATUS \"Installing: \${_lib} is private; opt-in: ${CMAKE_INSTALL_DATADIR}/uroce/env.sh\")
")

# cpack -G DEB (from the build directory): the same files under /usr.
set(CPACK_PACKAGE_NAME uroce)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "uroce developers <uroce@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "software RoCEv2 RDMA devices in user space (private libibverbs.so.1, librdmacm.so.1 and libmlx5.so.1, and the uroce tool)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
# The tool's libraries are the package's own (private directory), so
# dpkg-shlibdeps, which would look for it among packages, is not used.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.34)")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# postinst: the nodes of tmpfiles.d/uroce.conf at once, not at the next boot.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_SOURCE_DIR}/cmake/debian/postinst)
set(CPACK_GENERATOR DEB)
include(CPack)
