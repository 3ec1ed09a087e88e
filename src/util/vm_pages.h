/* Copying a range of pages to and from a file, page data only.
 *
 * util/vm_share.c moves registered memory into a memfd and back.  Copying
 * through a mapping of the destination faults every page in one at a
 * time, and touches pages that hold nothing: registering 16 MiB took 44
 * ms that way.  These copy with pwrite(2)/pread(2), which allocate the
 * file's pages in the kernel, and skip what holds no data: a source page
 * never touched (not present, not swapped: /proc/self/pagemap) or all
 * zero, a hole of the file (SEEK_DATA/SEEK_HOLE).  The destination reads
 * zero where nothing was copied, so a sparse range stays sparse. */
#ifndef UROCE_UTIL_VM_PAGES_H
#define UROCE_UTIL_VM_PAGES_H

#include <stddef.h>
#include <sys/types.h>

/* The pages of [src, src+len) (whole pages) that hold data, written to fd
 * at off + their offset.  0 or -errno. */
int ur_pages_to_file(int fd, off_t off, const void *src, size_t len);

/* fd's data in [off, off+len) read into dst at the same offsets, dst being
 * fresh memory that reads zero (its pages made present in one call per
 * extent).  0 or -errno. */
int ur_pages_from_file(void *dst, int fd, off_t off, size_t len);

#endif
