#include "util/wp_hold.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Linux 6.4: write protection of pages never touched (none ptes) of
 * private anonymous memory.  Without it the range is populated first. */
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1u << 13)
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define UR_WP_NEEDED (UFFD_FEATURE_PAGEFAULT_FLAG_WP | UFFD_FEATURE_WP_HUGETLBFS_SHMEM)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static enum ur_wp_kind kind = UR_WP_NONE;
static uint64_t features;       /* asked for at every hold */
static const char *refused = "userfaultfd not probed";

static int uffd_open(enum ur_wp_kind k)
{
	int flags = O_CLOEXEC | O_NONBLOCK | (k == UR_WP_USER ? UFFD_USER_MODE_ONLY : 0);
	int fd = (int)syscall(SYS_userfaultfd, flags);

	return fd < 0 ? -errno : fd;
}

/* The handshake, asking for what: the features offered, or -errno. */
static int64_t uffd_api(int fd, uint64_t ask)
{
	struct uffdio_api api = { .api = UFFD_API, .features = ask };

	if (ioctl(fd, UFFDIO_API, &api))
		return -errno;
	return (int64_t)(api.features & INT64_MAX);
}

static void probe(void)
{
	/* Holding the kernel's faults as well needs CAP_SYS_PTRACE or
	 * vm.unprivileged_userfaultfd; user-mode faults alone, nothing. */
	for (enum ur_wp_kind k = UR_WP_ALL; k >= UR_WP_USER; k--) {
		int fd = uffd_open(k);
		int64_t offered;

		if (fd < 0) {
			refused = fd == -ENOSYS ? "no userfaultfd in this kernel"
						 : "userfaultfd refused (a seccomp filter, or the sysctl)";
			continue;
		}
		offered = uffd_api(fd, 0);
		close(fd);
		if (offered < 0 || ((uint64_t)offered & UR_WP_NEEDED) != UR_WP_NEEDED) {
			refused = "userfaultfd without write protection of shmem (Linux 5.19 on)";
			continue;
		}
		features = UR_WP_NEEDED | ((uint64_t)offered & UFFD_FEATURE_WP_UNPOPULATED);
		kind = k;
		return;
	}
}

enum ur_wp_kind ur_wp_kind(const char **why)
{
	pthread_once(&once, probe);
	if (why)
		*why = kind == UR_WP_NONE ? refused : NULL;
	return kind;
}

int ur_wp_hold(struct ur_wp_hold *h, uintptr_t lo, uintptr_t hi)
{
	struct uffdio_register reg = { .range = { lo, hi - lo }, .mode = UFFDIO_REGISTER_MODE_WP };
	struct uffdio_writeprotect wp = { .range = { lo, hi - lo },
					  .mode = UFFDIO_WRITEPROTECT_MODE_WP };
	int fd, ret;

	h->uffd = -1;
	if (ur_wp_kind(NULL) == UR_WP_NONE)
		return -EOPNOTSUPP;
	/* Pages never touched have nothing to protect on older kernels: a
	 * write there would land on a fresh page, then be lost. */
	if (!(features & UFFD_FEATURE_WP_UNPOPULATED) &&
	    madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE))
		return -errno;
	fd = uffd_open(kind);
	if (fd < 0)
		return fd;
	if (uffd_api(fd, features) < 0 ||
	    ioctl(fd, UFFDIO_REGISTER, &reg) || ioctl(fd, UFFDIO_WRITEPROTECT, &wp)) {
		ret = -errno;
		goto err_close;
	}
	h->uffd = fd;
	h->lo = lo;
	h->hi = hi;
	return 0;

err_close:
	/* Closing drops the registration and any protection with it. */
	close(fd);
	return ret;
}

void ur_wp_release(struct ur_wp_hold *h)
{
	struct uffdio_writeprotect wp = { .range = { h->lo, h->hi - h->lo }, .mode = 0 };
	struct uffdio_range range = { h->lo, h->hi - h->lo };

	if (h->uffd < 0)
		return;
	/* Pages still the held ones (the move failed) lose their protection;
	 * where new backing was mapped this finds nothing registered.  Then
	 * every sleeper goes: a wake is by address, registered or not. */
	(void)ioctl(h->uffd, UFFDIO_WRITEPROTECT, &wp);
	(void)ioctl(h->uffd, UFFDIO_WAKE, &range);
	close(h->uffd);
	h->uffd = -1;
}
