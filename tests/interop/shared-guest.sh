#!/bin/bash
# The guest the interop tests of one ctest run share (CTest fixture "interop_vm"):
#   shared-guest.sh up     interop.vm_up: boot it for the ctest run (this script's parent) and
#                          record it in $UROCE_BUILD/interop-vm/guest.<ctest pid>.env
#   shared-guest.sh down   interop.vm_down: shut it down
# Tests ctest starts after vm_up attach to it in vm_boot (lib/vm.sh) and leave it fresh at their
# exit.  The guest's watchdog stops it if the run ends (or is killed) before vm_down.
# Run by hand from a shell, the guest is that shell's: tests run from it attach, and
# "shared-guest.sh down" from it shuts the guest down.
set -euo pipefail

src=${UROCE_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export UROCE_BUILD=${UROCE_BUILD:-$src/build}
# shellcheck source=lib/vm.sh
. "$src/tests/interop/lib/vm.sh"
vm_need_root

case ${1:-} in
up)
	vm_enter_run up # the run's namespace, for the guest's tap and the tests' host programs
	vm_boot_shared
	;;
down) vm_shutdown_shared ;;
*)
	echo "usage: $0 up|down" >&2
	exit 2
	;;
esac
