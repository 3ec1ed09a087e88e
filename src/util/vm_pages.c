#include "util/vm_pages.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define PM_PRESENT (UINT64_C(1) << 63)
#define PM_SWAPPED (UINT64_C(1) << 62)
#define PM_BATCH 512u           /* pagemap entries read at once */

static size_t page_size(void)
{
	static size_t pg;

	if (!pg)
		pg = (size_t)sysconf(_SC_PAGESIZE);
	return pg;
}

/* The pages moved are whole: around a registered buffer they hold the
 * allocator's other bytes, which AddressSanitizer poisons (redzones).  The
 * move reads them as the kernel would, so neither this nor the copy below
 * goes through its checks (the raw system calls: its pwrite checks the
 * buffer). */
__attribute__((no_sanitize("address", "hwaddress")))
static bool page_is_zero(const uint8_t *page, size_t len)
{
	const uint64_t *w = (const uint64_t *)page;

	for (size_t i = 0; i < len / sizeof(*w); i += 8) {
		uint64_t any = 0;

		for (size_t j = 0; j < 8; j++)
			any |= w[i + j];
		if (any)
			return false;
	}
	return true;
}

/* All of n bytes at off, pread or pwrite (by the raw system calls, above). */
static int io_all(bool write, int fd, uint8_t *p, size_t n, off_t off)
{
	while (n) {
		ssize_t r = syscall(write ? SYS_pwrite64 : SYS_pread64, fd, p, n, off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		p += r;
		n -= (size_t)r;
		off += r;
	}
	return 0;
}

int ur_pages_to_file(int fd, off_t off, const void *src, size_t len)
{
	const uint8_t *s = src;
	size_t pg = page_size(), npages = len / pg, run = 0, run_start = 0;
	uint64_t ents[PM_BATCH];
	int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	int ret = 0;

	for (size_t i = 0; i < npages && !ret; i += PM_BATCH) {
		size_t n = npages - i < PM_BATCH ? npages - i : PM_BATCH;
		off_t at = (off_t)(((uintptr_t)s / pg + i) * sizeof(uint64_t));

		/* Without pagemap every page is looked at. */
		if (pm < 0 || io_all(false, pm, (uint8_t *)ents, n * sizeof(uint64_t), at))
			for (size_t j = 0; j < n; j++)
				ents[j] = PM_PRESENT;
		for (size_t j = 0; j < n && !ret; j++) {
			size_t p = i + j;
			bool data = (ents[j] & (PM_PRESENT | PM_SWAPPED)) &&
				    !page_is_zero(s + p * pg, pg);

			if (data) {
				if (!run)
					run_start = p;
				run++;
				continue;
			}
			if (run)
				ret = io_all(true, fd, (uint8_t *)s + run_start * pg, run * pg,
						 off + (off_t)(run_start * pg));
			run = 0;
		}
	}
	if (!ret && run)
		ret = io_all(true, fd, (uint8_t *)s + run_start * pg, run * pg,
			     off + (off_t)(run_start * pg));
	if (pm >= 0)
		close(pm);
	return ret;
}

/* Each extent of data of fd within [off, off+len), relative to off. */
static int for_each_extent(int fd, off_t off, size_t len,
			   int (*fn)(void *arg, size_t at, size_t n), void *arg)
{
	off_t end = off + (off_t)len, cur = off;

	while (cur < end) {
		off_t data = lseek(fd, cur, SEEK_DATA), hole;
		int ret;

		if (data < 0)
			return errno == ENXIO ? 0 : -errno;     /* ENXIO: no data past cur */
		if (data >= end)
			return 0;
		hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			return -errno;
		if (hole > end)
			hole = end;
		ret = fn(arg, (size_t)(data - off), (size_t)(hole - data));
		if (ret)
			return ret;
		cur = hole;
	}
	return 0;
}

struct from_file {
	uint8_t *dst;
	int fd;
	off_t off;
};

static int read_extent(void *arg, size_t at, size_t n)
{
	struct from_file *f = arg;

	/* One call faults the extent in; pread would take a fault a page. */
	(void)madvise(f->dst + at, n, MADV_POPULATE_WRITE);
	return io_all(false, f->fd, f->dst + at, n, f->off + (off_t)at);
}

int ur_pages_from_file(void *dst, int fd, off_t off, size_t len)
{
	struct from_file f = { dst, fd, off };

	return for_each_extent(fd, off, len, read_extent, &f);
}
