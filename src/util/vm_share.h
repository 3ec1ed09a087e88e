/* Registered memory that another process can map: the pages under a
 * region, moved from private anonymous memory into a memfd at the same
 * addresses, so that a peer maps the memfd once and copies into the
 * region with memcpy, as a NIC's DMA would (docs/design.md, "Shared
 * regions").
 *
 * Only whole pages move: the pages holding [addr, addr+len), first and
 * last included even when they hold other data of the process (the move
 * keeps every byte), and of those only the ones holding data are copied.
 * A range moves only if every page of it is private anonymous read-write
 * memory that is not locked, hugetlb, watched by another userfaultfd, or
 * this thread's stack (under the SIGSEGV hold, not MADV_HUGEPAGE, growing
 * down or another thread's stack either); anything else stays where it
 * is, and peers copy into it with the kernel as before.  A range inside one that moved already shares its
 * memfd (counted).  A range inside one MAP_SHARED read-write mapping of a
 * file the process holds open (a memfd, a file in /dev/shm) needs no move:
 * that file is what peers map (the process chose to share it: nothing
 * is done at fork() or at the last put but closing our dup of its fd).
 *
 * While the pages move, a thread that writes them sleeps in its page
 * fault until the move is done, then its write is made on the new pages
 * (userfaultfd's write protection, util/wp_hold.h); so does a write the
 * kernel makes for a system call (read(2) into the range from another
 * thread) where the process may hold the kernel's faults (UR_WP_ALL).
 * Elsewhere only UR_VM_MOVE_ANY moves: such a system call then fails with
 * EFAULT, and where userfaultfd is refused altogether the range is
 * read-only while it moves and a writer waits in the fault guard's
 * handler (util/fault_guard.h), which a program's own SIGSEGV handler,
 * installed later, may not pass it on to.
 *
 * fork(): the child moves every shared range back to private memory of
 * its own before fork() returns in either process (the parent waits for
 * it), so the child never shares a page with its parent or the peers.
 * Putting the last reference moves the range back to private anonymous
 * memory as well, where it is still the memfd's, so that an allocator's
 * MADV_DONTNEED zeroes it again. */
#ifndef UROCE_UTIL_VM_SHARE_H
#define UROCE_UTIL_VM_SHARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ur_vm_share {
	uint64_t id;            /* this process's, never reused; 0: none */
	int fd;                 /* the memfd */
	uintptr_t base;         /* where its byte 0 is (or would be) mapped here */
	size_t len;             /* what peers map of it, from byte 0 */
};

/* Which memory may move into a memfd. */
enum ur_vm_move {
	UR_VM_MOVE_NEVER,       /* none: only what the process shares already */
	UR_VM_MOVE_HELD,        /* where every writer, the kernel too, can be held
				 * without a signal (util/wp_hold.h: UR_WP_ALL) */
	UR_VM_MOVE_ANY,         /* where user-mode writers can (UR_WP_USER), else under
				 * the SIGSEGV hold (util/fault_guard.h) */
};

/* Moves the pages of [addr, addr+len) into a memfd (or takes a reference
 * on the one they are in, or on the file the process shares them through
 * already): 0 and *out, or -errno and *why says why they stay private
 * (-EOPNOTSUPP: not memory that can move, or how forbids it). */
int ur_vm_share_get(void *addr, size_t len, enum ur_vm_move how, struct ur_vm_share *out,
		    const char **why);

/* Drops a reference; the last moves the range back to private anonymous
 * memory and closes the memfd. */
void ur_vm_share_put(const struct ur_vm_share *sh);

#endif
