/* One mapping of this process at a time, asked of the kernel.
 *
 * Reading /proc/self/maps (or smaps) formats every mapping of the process,
 * and smaps walks each one's page tables too: a few hundred microseconds
 * per registration in a process with uroce's rings mapped.  Linux 6.11's
 * PROCMAP_QUERY ioctl answers for one address in a system call.  Where the
 * kernel lacks it, ur_vma_query says so (-ENOTTY) and the caller reads the
 * text as before. */
#ifndef UROCE_UTIL_VM_QUERY_H
#define UROCE_UTIL_VM_QUERY_H

#include <stdbool.h>
#include <stdint.h>

struct ur_vma {
	uintptr_t start, end;
	bool readable, writable, shared;
	uint64_t offset;                /* into the file, in bytes */
	uint64_t inode;                 /* 0: anonymous memory */
	unsigned dev_major, dev_minor;
	uint64_t page_size;             /* larger than the base page: hugetlb */
	char name[128];                 /* "[heap]", "[stack]", a path ("" if none or too long) */
};

/* The mapping covering addr, else the next one above it: 0, -ENOENT if
 * there is none, -ENOTTY where the kernel cannot answer this way. */
int ur_vma_query(uintptr_t addr, struct ur_vma *out);

#endif
