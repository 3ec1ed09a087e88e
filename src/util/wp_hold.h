/* Holding writers off a range while it moves, without a signal.
 *
 * util/vm_share.c moves registered memory into a memfd at the same
 * addresses; a write made between its copy and its remap would be lost.
 * userfaultfd's write protection stops such a write in the kernel: the
 * writing thread sleeps in its page fault until the hold is released, and
 * then makes the write again on whatever is mapped there by then.  No
 * signal is delivered, so a program with a SIGSEGV handler of its own
 * (UCX installs one that does not pass faults on) is not disturbed; the
 * older hold, read-only pages and a wait in uroce's SIGSEGV handler
 * (util/fault_guard.h), is the fallback where userfaultfd is refused.
 *
 * Where only user-mode faults may be held (an unprivileged process:
 * UFFD_USER_MODE_ONLY), a write the kernel makes into the range for a
 * system call at that moment fails with EFAULT, as under the older hold. */
#ifndef UROCE_UTIL_WP_HOLD_H
#define UROCE_UTIL_WP_HOLD_H

#include <stdbool.h>
#include <stdint.h>

enum ur_wp_kind {
	UR_WP_NONE,             /* refused (no userfaultfd, a seccomp filter, an old kernel) */
	UR_WP_USER,             /* faults from user mode are held; the kernel's fail */
	UR_WP_ALL,              /* the kernel's writes (system calls) are held too */
};

/* What this process may hold, probed once: write protection of private
 * anonymous memory and of shmem (the way back) must both be offered.
 * *why says why not, for UR_WP_NONE. */
enum ur_wp_kind ur_wp_kind(const char **why);

struct ur_wp_hold {
	int uffd;
	uintptr_t lo, hi;
};

/* Write-protects the whole pages [lo, hi): private anonymous memory or a
 * shared memfd mapping, every page of it (none need be present).  0, or
 * -errno with nothing held. */
int ur_wp_hold(struct ur_wp_hold *h, uintptr_t lo, uintptr_t hi);

/* Lets the held writers go: they fault again on what is mapped at their
 * addresses now (the new backing, or the same pages, their protection
 * lifted if they are still the held ones). */
void ur_wp_release(struct ur_wp_hold *h);

#endif
