/* rsetsockopt, rgetsockopt, rfcntl: the options rdma-core's rsockets know.
 * Buffer and queue sizes shape the connection's resources, so they count
 * when set before it is made (as in rdma-core); after, they are taken and
 * change nothing. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rdma/rsocket.h>

#include "core/limits.h"
#include "rsocket/dgram.h"
#include "rsocket/rsocket.h"
#include "util/compiler.h"

static int int_opt(const void *v, socklen_t len, int *out)
{
	if (!v || len < sizeof(int))
		return -EINVAL;
	memcpy(out, v, sizeof(int));
	return 0;
}

static uint16_t qsize(int v)
{
	if (v < 1)
		return 1;
	return (uint16_t)(v > RS_QP_MAX_SIZE ? RS_QP_MAX_SIZE : v);
}

static int set_socket(struct rsock *rs, int name, int v)
{
	switch (name) {
	case SO_REUSEADDR:
		if (rdma_set_option(rs->id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &v, sizeof(v)))
			return -errno;
		rs->reuseaddr = v != 0;
		return 0;
	case SO_RCVBUF:
		if (!rs->rbuf && v > 0)
			rs->rbuf_size = (uint32_t)v << 1;
		return 0;
	case SO_SNDBUF:
		if (!rs->sbuf && v > 0)
			rs->sbuf_size = (uint32_t)v << 1;
		if (rs->sbuf_size < RS_SNDLOWAT)
			rs->sbuf_size = RS_SNDLOWAT << 1;
		return 0;
	case SO_KEEPALIVE:
		rs->keepalive = v != 0;
		if (rs->keepalive)
			rs_keepalive_start();
		return 0;
	case SO_LINGER:
	case SO_OOBINLINE:
		return 0;   /* taken as rdma-core takes them: a close sends what it has */
	default:
		return -ENOPROTOOPT;
	}
}

static int set_tcp(struct rsock *rs, int name, int v)
{
	switch (name) {
	case TCP_NODELAY:
		rs->nodelay = v != 0;   /* every send is written at once anyway */
		return 0;
	case TCP_MAXSEG:
		return 0;
	case TCP_KEEPIDLE:
		if (v <= 0)
			return -EINVAL;
		rs->keepidle = (uint32_t)v;
		return 0;
	default:
		return -ENOPROTOOPT;
	}
}

static int set_rdma(struct rsock *rs, int name, int v)
{
	switch (name) {
	case RDMA_SQSIZE:
		rs->sq_size = qsize(v);
		return 0;
	case RDMA_RQSIZE:
		rs->rq_size = qsize(v);
		return 0;
	case RDMA_INLINE:
		rs->sq_inline = (uint16_t)(v < 0 ? 0 : v > UR_MAX_INLINE ? UR_MAX_INLINE : v);
		return 0;
	case RDMA_IOMAPSIZE:
		rs->target_iomap_size = (uint16_t)rs_scale_to_value(
			rs_value_to_scale((uint32_t)(v < 0 ? 0 : v > 0x7f00 ? 0x7f00 : v)));
		return 0;
	default:
		return -EOPNOTSUPP;   /* RDMA_ROUTE: paths come from uroce's CM */
	}
}

/* A datagram rsocket's options but SOL_RDMA's are its UDP socket's (as in
 * rdma-core); the buffer sizes shape its queues too, until they exist. */
static int set_dgram(struct rsock *rs, int level, int name, const void *val, socklen_t len)
{
	int v;

	if (level == SOL_RDMA)
		return int_opt(val, len, &v) ? -EINVAL : set_rdma(rs, name, v);
	if (setsockopt(rs->fd, level, name, val, len))
		return -errno;
	if (level == SOL_SOCKET && (name == SO_RCVBUF || name == SO_SNDBUF) &&
	    !int_opt(val, len, &v) && v > 0 && !rs->dg->ready) {
		if (name == SO_RCVBUF)
			rs->rbuf_size = (uint32_t)v << 1;
		else
			rs->sbuf_size = (uint32_t)v << 1;
	}
	return 0;
}

UR_EXPORT int rsetsockopt(int s, int level, int optname, const void *optval, socklen_t optlen)
{
	struct rsock *rs = rs_table_get(s);
	int v, ret;

	if (!rs) {
		errno = EBADF;
		return -1;
	}
	if (rs->type == SOCK_DGRAM) {
		pthread_mutex_lock(&rs->lock);
		ret = set_dgram(rs, level, optname, optval, optlen);
		pthread_mutex_unlock(&rs->lock);
		if (!ret)
			return 0;
		goto out_err;
	}
	ret = int_opt(optval, optlen, &v);
	if (ret)
		goto out_err;
	pthread_mutex_lock(&rs->lock);
	switch (level) {
	case SOL_SOCKET:
		ret = set_socket(rs, optname, v);
		break;
	case IPPROTO_TCP:
		ret = set_tcp(rs, optname, v);
		break;
	case IPPROTO_IPV6:
		if (optname != IPV6_V6ONLY)
			ret = -ENOPROTOOPT;
		else if (rdma_set_option(rs->id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &v, sizeof(v)))
			ret = -errno;
		break;
	case SOL_RDMA:
		ret = set_rdma(rs, optname, v);
		break;
	default:
		ret = -ENOPROTOOPT;
		break;
	}
	pthread_mutex_unlock(&rs->lock);
	if (!ret)
		return 0;
out_err:
	errno = -ret;
	return -1;
}

static int get_opt(struct rsock *rs, int level, int name, int *v)
{
	switch (level) {
	case SOL_SOCKET:
		switch (name) {
		case SO_REUSEADDR: *v = rs->reuseaddr; return 0;
		case SO_KEEPALIVE: *v = rs->keepalive; return 0;
		case SO_RCVBUF:    *v = (int)rs->rbuf_size; return 0;
		case SO_SNDBUF:    *v = (int)rs->sbuf_size; return 0;
		case SO_OOBINLINE: *v = 1; return 0;
		case SO_TYPE:      *v = SOCK_STREAM; return 0;
		case SO_DOMAIN:    *v = rs->domain; return 0;
		case SO_ERROR:
			*v = rs->err;
			rs->err = 0;
			return 0;
		default:
			return -ENOPROTOOPT;
		}
	case IPPROTO_TCP:
		switch (name) {
		case TCP_NODELAY:  *v = rs->nodelay; return 0;
		case TCP_MAXSEG:   *v = RS_SNDLOWAT; return 0;
		case TCP_KEEPIDLE: *v = (int)rs->keepidle; return 0;
		default:
			return -ENOPROTOOPT;
		}
	case SOL_RDMA:
		switch (name) {
		case RDMA_SQSIZE:    *v = rs->sq_size; return 0;
		case RDMA_RQSIZE:    *v = rs->rq_size; return 0;
		case RDMA_INLINE:    *v = rs->sq_inline; return 0;
		case RDMA_IOMAPSIZE: *v = rs->target_iomap_size; return 0;
		default:
			return -EOPNOTSUPP;
		}
	default:
		return -ENOPROTOOPT;
	}
}

UR_EXPORT int rgetsockopt(int s, int level, int optname, void *optval, socklen_t *optlen)
{
	struct rsock *rs = rs_table_get(s);
	int v = 0, ret;

	if (!rs) {
		errno = EBADF;
		return -1;
	}
	if (rs->type == SOCK_DGRAM && level != SOL_RDMA)
		return getsockopt(rs->fd, level, optname, optval, optlen);
	if (!optval || !optlen || *optlen < sizeof(int)) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&rs->lock);
	if (level == SOL_SOCKET && optname == SO_ERROR)
		rs_progress(rs);   /* a connect in progress may have finished */
	ret = get_opt(rs, level, optname, &v);
	pthread_mutex_unlock(&rs->lock);
	if (ret) {
		errno = -ret;
		return -1;
	}
	memcpy(optval, &v, sizeof(v));
	*optlen = sizeof(v);
	return 0;
}

UR_EXPORT int rfcntl(int s, int cmd, ...)
{
	struct rsock *rs = rs_table_get(s);
	va_list ap;
	int arg, ret = 0;

	if (!rs) {
		errno = EBADF;
		return -1;
	}
	pthread_mutex_lock(&rs->lock);
	switch (cmd) {
	case F_GETFL:
		ret = rs->fd_flags;
		break;
	case F_SETFL:
		va_start(ap, cmd);
		arg = va_arg(ap, int);
		va_end(ap);
		rs->fd_flags = arg;
		rs->nonblock = (arg & O_NONBLOCK) != 0;
		break;
	default:
		ret = -1;
		break;
	}
	pthread_mutex_unlock(&rs->lock);
	if (ret == -1)
		errno = EOPNOTSUPP;
	return ret;
}
