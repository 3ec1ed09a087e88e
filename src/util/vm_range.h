/* Whether a range of this process's address space is mapped with the
 * access asked for, from the kernel's own list (/proc/self/maps).
 *
 * An implicit on-demand region (ibv_reg_mr(pd, NULL, SIZE_MAX, ...)) hands
 * the whole address space to the peer: each access is checked here before
 * uroce touches the bytes, so an address the process never mapped, or a
 * page it may not write, is a protection error and never a fault. */
#ifndef UROCE_UTIL_VM_RANGE_H
#define UROCE_UTIL_VM_RANGE_H

#include <stdbool.h>
#include <stdint.h>

/* [addr, addr+len) lies in readable mappings, writable too if write. */
bool ur_vm_range_ok(uint64_t addr, uint64_t len, bool write);

#endif
