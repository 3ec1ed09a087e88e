#include "util/vm_query.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "util/atfork.h"

/* Linux 6.11's uapi (include/uapi/linux/fs.h), for older headers. */
struct ur_procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start;
	uint64_t vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint32_t vma_name_size;
	uint32_t build_id_size;
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};
_Static_assert(sizeof(struct ur_procmap_query) == 104, "PROCMAP_QUERY's argument");

#define UR_PROCMAP_QUERY _IOWR('f', 17, struct ur_procmap_query)
#define UR_PMQ_READABLE 0x01
#define UR_PMQ_WRITABLE 0x02
#define UR_PMQ_SHARED 0x08
#define UR_PMQ_COVERING_OR_NEXT 0x10

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int maps_fd = -1;
static unsigned maps_gen;       /* whose maps: a child of fork() opens its own */
static bool unsupported;

static int maps(void)
{
	unsigned gen = ur_fork_generation();

	if (maps_fd >= 0 && maps_gen != gen) {
		close(maps_fd);
		maps_fd = -1;
	}
	if (maps_fd < 0) {
		maps_fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
		maps_gen = gen;
	}
	return maps_fd;
}

static int query(int fd, uintptr_t addr, struct ur_procmap_query *q, char *name, uint32_t name_size)
{
	memset(q, 0, sizeof(*q));
	q->size = sizeof(*q);
	q->query_flags = UR_PMQ_COVERING_OR_NEXT;
	q->query_addr = addr;
	q->vma_name_addr = (uintptr_t)name;
	q->vma_name_size = name_size;
	return ioctl(fd, UR_PROCMAP_QUERY, q) ? -errno : 0;
}

int ur_vma_query(uintptr_t addr, struct ur_vma *out)
{
	struct ur_procmap_query q;
	int fd, ret;

	pthread_mutex_lock(&lock);
	fd = unsupported ? -1 : maps();
	if (fd < 0) {
		pthread_mutex_unlock(&lock);
		return -ENOTTY;
	}
	out->name[0] = '\0';
	ret = query(fd, addr, &q, out->name, sizeof(out->name));
	if (ret == -ENAMETOOLONG) {
		/* A long path: a file mapping, which is all a caller asks. */
		ret = query(fd, addr, &q, NULL, 0);
		out->name[0] = '\0';
	}
	if (ret == -ENOTTY || ret == -EINVAL)
		unsupported = true;     /* before Linux 6.11 */
	pthread_mutex_unlock(&lock);
	if (ret)
		return ret == -EINVAL ? -ENOTTY : ret;
	out->start = (uintptr_t)q.vma_start;
	out->end = (uintptr_t)q.vma_end;
	out->readable = q.vma_flags & UR_PMQ_READABLE;
	out->writable = q.vma_flags & UR_PMQ_WRITABLE;
	out->shared = q.vma_flags & UR_PMQ_SHARED;
	out->offset = q.vma_offset;
	out->inode = q.inode;
	out->dev_major = q.dev_major;
	out->dev_minor = q.dev_minor;
	out->page_size = q.vma_page_size;
	return 0;
}
