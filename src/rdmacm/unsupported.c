/* What librdmacm exports and uroce does not do: each fails with
 * EOPNOTSUPP and -1 or the function's error value, never pretends.
 *  - ECE (enhanced connection establishment), which RoCE NICs of
 *    one vendor only negotiate: EOPNOTSUPP, as the device's
 *    ibv_query_ece answers, so programs go on without it (pyverbs does);
 *  - rsockets (rsocket, raccept, ...): their keep-alive service and
 *    their own protocol on top of the CM are left for later.
 */
#include <errno.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>

#include "util/compiler.h"

/* Not supported (for ECE, as ibv_query_ece says on uroce). */
#define UNSUPPORTED_RET(val) do { errno = EOPNOTSUPP; return (val); } while (0)

UR_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id; (void)ece;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	(void)id; (void)ece;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			      uint8_t private_data_len)
{
	(void)id; (void)private_data; (void)private_data_len;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT int rsocket(int domain, int type, int protocol)
{
	(void)domain; (void)type; (void)protocol;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT int rbind(int s, const struct sockaddr *addr, socklen_t len)
{
	(void)s; (void)addr; (void)len;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT int rlisten(int s, int backlog)
{
	(void)s; (void)backlog;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT int raccept(int s, struct sockaddr *addr, socklen_t *len)
{
	(void)s; (void)addr; (void)len;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT int rconnect(int s, const struct sockaddr *addr, socklen_t len)
{
	(void)s; (void)addr; (void)len;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT int rshutdown(int s, int how)
{
	(void)s; (void)how;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT int rclose(int s)
{
	(void)s;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT ssize_t rrecv(int s, void *buf, size_t len, int flags)
{
	(void)s; (void)buf; (void)len; (void)flags;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT ssize_t rrecvfrom(int s, void *buf, size_t len, int flags, struct sockaddr *src,
			    socklen_t *alen)
{
	(void)s; (void)buf; (void)len; (void)flags; (void)src; (void)alen;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT ssize_t rrecvmsg(int s, struct msghdr *msg, int flags)
{
	(void)s; (void)msg; (void)flags;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT ssize_t rsend(int s, const void *buf, size_t len, int flags)
{
	(void)s; (void)buf; (void)len; (void)flags;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT ssize_t rsendto(int s, const void *buf, size_t len, int flags,
			  const struct sockaddr *dst, socklen_t alen)
{
	(void)s; (void)buf; (void)len; (void)flags; (void)dst; (void)alen;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT ssize_t rsendmsg(int s, const struct msghdr *msg, int flags)
{
	(void)s; (void)msg; (void)flags;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT ssize_t rread(int s, void *buf, size_t count)
{
	(void)s; (void)buf; (void)count;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT ssize_t rreadv(int s, const struct iovec *iov, int iovcnt)
{
	(void)s; (void)iov; (void)iovcnt;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT ssize_t rwrite(int s, const void *buf, size_t count)
{
	(void)s; (void)buf; (void)count;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT ssize_t rwritev(int s, const struct iovec *iov, int iovcnt)
{
	(void)s; (void)iov; (void)iovcnt;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	(void)fds; (void)nfds; (void)timeout;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT int rselect(int nfds, fd_set *r, fd_set *w, fd_set *e, struct timeval *timeout)
{
	(void)nfds; (void)r; (void)w; (void)e; (void)timeout;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT int rgetpeername(int s, struct sockaddr *addr, socklen_t *len)
{
	(void)s; (void)addr; (void)len;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT int rgetsockname(int s, struct sockaddr *addr, socklen_t *len)
{
	(void)s; (void)addr; (void)len;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT int rsetsockopt(int s, int level, int optname, const void *optval, socklen_t optlen)
{
	(void)s; (void)level; (void)optname; (void)optval; (void)optlen;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT int rgetsockopt(int s, int level, int optname, void *optval, socklen_t *optlen)
{
	(void)s; (void)level; (void)optname; (void)optval; (void)optlen;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT int rfcntl(int s, int cmd, ...)
{
	(void)s; (void)cmd;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT off_t riomap(int s, void *buf, size_t len, int prot, int flags, off_t offset)
{
	(void)s; (void)buf; (void)len; (void)prot; (void)flags; (void)offset;
	UNSUPPORTED_RET((off_t)-1);
}

UR_EXPORT int riounmap(int s, void *buf, size_t len)
{
	(void)s; (void)buf; (void)len;
	UNSUPPORTED_RET(-1);
}

UR_EXPORT size_t riowrite(int s, const void *buf, size_t count, off_t offset, int flags)
{
	(void)s; (void)buf; (void)count; (void)offset; (void)flags;
	errno = EOPNOTSUPP;
	return 0;
}
