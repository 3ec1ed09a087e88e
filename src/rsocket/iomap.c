/* riomap, riounmap, riowrite: direct placement into a peer's mapped
 * buffers is not built yet.  They fail with EOPNOTSUPP; our connection
 * data advertises an iomap of RDMA_IOMAPSIZE entries (0 unless set), and
 * a peer's iomap updates are taken and ignored (data.c). */
#include <errno.h>
#include <rdma/rsocket.h>

#include "rsocket/rsocket.h"
#include "util/compiler.h"

void rs_iomap_free(struct rsock *rs)
{
	(void)rs;
}

void rs_iomap_flush(struct rsock *rs)
{
	rs->iomap_pending = 0;
}

UR_EXPORT off_t riomap(int s, void *buf, size_t len, int prot, int flags, off_t offset)
{
	(void)s; (void)buf; (void)len; (void)prot; (void)flags; (void)offset;
	errno = EOPNOTSUPP;
	return (off_t)-1;
}

UR_EXPORT int riounmap(int s, void *buf, size_t len)
{
	(void)s; (void)buf; (void)len;
	errno = EOPNOTSUPP;
	return -1;
}

UR_EXPORT size_t riowrite(int s, const void *buf, size_t count, off_t offset, int flags)
{
	(void)s; (void)buf; (void)count; (void)offset; (void)flags;
	errno = EOPNOTSUPP;
	return 0;
}
