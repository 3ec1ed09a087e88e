#!/usr/bin/env bash
# Installs what building and testing uroce needs, from Debian's packages.
# Sourced by scripts/demo and scripts/test; also runnable alone.
#   scripts/deps.sh [build|test]
set -euo pipefail

UROCE_DEPS_BUILD=(cmake make gcc pkg-config libibverbs-dev librdmacm-dev)
# Real peers the tests run unmodified, plus what the interop VM and the
# benchmarks (bench/: iperf3, qperf, nftables for loss) need.
UROCE_DEPS_TEST=(ibverbs-utils perftest rdmacm-utils python3-pyverbs iproute2
		 tshark python3-scapy clang libclang-rt-14-dev zlib1g-dev
		 qemu-system-x86 busybox-static rdma-core ibverbs-providers kmod cpio
		 qperf iperf3 nftables ucx-utils binutils procps
		 openmpi-bin libopenmpi-dev libfabric-bin fio)

uroce_missing() {
	local p missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing+=("$p")
	done
	echo "${missing[@]:-}"
}

uroce_install() {
	local missing
	missing=$(uroce_missing "$@")
	[ -z "$missing" ] && return 0
	if [ "$(id -u)" = 0 ]; then
		echo "uroce: installing Debian packages: $missing" >&2
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >&2
		# shellcheck disable=SC2086
		apt-get install -y -qq --no-install-recommends $missing >&2
	else
		echo "uroce: missing Debian packages: $missing" >&2
		echo "uroce: install them with:  sudo apt-get install -y $missing" >&2
		return 1
	fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	case "${1:-test}" in
	build) uroce_install "${UROCE_DEPS_BUILD[@]}" ;;
	*) uroce_install "${UROCE_DEPS_BUILD[@]}" "${UROCE_DEPS_TEST[@]}" ;;
	esac
fi
