/* Touching application memory that may no longer be mapped.
 *
 * A NIC's memory region pins its pages: an application that unmaps memory
 * under a live region (UCX frees an interface's receive buffers before it
 * destroys the QP they are posted to; its registration cache deregisters
 * lazily) loses nothing, the device writes pages nobody sees.  uroce
 * reaches a region through the process's own mappings, so the same write
 * would be a SIGSEGV on the engine's thread.  These accessors catch a
 * fault inside their own access and report it instead: the caller turns
 * it into a protection or access error completion.  Any other fault goes
 * on to the handler that was installed before (or the default action). */
#ifndef UROCE_UTIL_FAULT_GUARD_H
#define UROCE_UTIL_FAULT_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Installs the SIGSEGV/SIGBUS handler once per process; later calls do
 * nothing.  Until it runs, the accessors below behave as plain ones. */
void ur_fault_guard_install(void);

/* memcpy that returns false, having copied part or none, if either side
 * faults. */
bool ur_guarded_copy(void *dst, const void *src, size_t n);

enum ur_guarded_op {
	UR_GUARDED_STORE,     /* *p = a */
	UR_GUARDED_CAS,       /* if (*p == a) *p = b */
	UR_GUARDED_FADD,      /* *p += a */
};

/* One sequentially consistent 64-bit atomic on *p; *orig gets the value
 * before it (STORE: unchanged).  False if *p faults. */
bool ur_guarded_atomic(uint64_t *p, enum ur_guarded_op op, uint64_t a, uint64_t b, uint64_t *orig);

/* Pages [lo, hi) are read-only while they move to other backing
 * (util/vm_share.c): a fault in them, in any thread, waits in the handler
 * until ur_fault_guard_release(), then returns, and the access is made
 * again.  The handle for release, or -EBUSY if UR_FAULT_HOLDS ranges are
 * held already.  Install first. */
#define UR_FAULT_HOLDS 4
int ur_fault_guard_hold(uintptr_t lo, uintptr_t hi);
void ur_fault_guard_release(int hold);

#endif
