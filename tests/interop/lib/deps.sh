# shellcheck shell=bash
# Host package checks for the interop tests: install what is missing with apt-get when root,
# otherwise print the exact command to run.  Sourced by build-guest.sh and lib/vm.sh.

# uroce_require CHECK PACKAGE [CHECK PACKAGE]...
#   CHECK is a command name (looked up on PATH), an absolute path (must exist), or
#   "static:PATH" (must exist and be a statically linked executable).
uroce_require() {
	local pkgs=() check pkg
	while [ $# -ge 2 ]; do
		check=$1 pkg=$2
		shift 2
		case $check in
		static:*)
			check=${check#static:}
			# ldd fails on a static executable
			if [ -x "$check" ] && ! LC_ALL=C ldd "$check" >/dev/null 2>&1; then
				continue
			fi
			;;
		/*) [ -e "$check" ] && continue ;;
		*) command -v "$check" >/dev/null 2>&1 && continue ;;
		esac
		case " ${pkgs[*]} " in *" $pkg "*) ;; *) pkgs+=("$pkg") ;; esac
	done
	[ ${#pkgs[@]} -eq 0 ] && return 0
	uroce_apt_install "${pkgs[@]}"
}

# uroce_apt_install PACKAGE...: install Debian packages (root), or explain how (not root).
uroce_apt_install() {
	if [ "$(id -u)" != 0 ]; then
		echo "uroce: missing Debian packages: $*" >&2
		echo "uroce: install them with:  sudo apt-get install -y --no-install-recommends $*" >&2
		return 1
	fi
	echo "uroce: installing Debian packages: $*" >&2
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2; then
		echo "uroce: apt-get install failed, refreshing the package lists and retrying" >&2
		if ! { apt-get update -q >&2 &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2; }; then
			echo "uroce: could not install: $*  (try: apt-get update && apt-get install -y $*)" >&2
			return 1
		fi
	fi
}

# uroce_require_scapy: /usr/bin/python3 with scapy (Debian's python3-scapy).
# The probe always runs /usr/bin/python3: a python3 earlier on PATH (pyenv, venv) lacks Debian's modules.
uroce_require_scapy() {
	if /usr/bin/python3 -c 'import scapy.contrib.roce' >/dev/null 2>&1; then
		return 0
	fi
	uroce_apt_install python3 python3-scapy
}
