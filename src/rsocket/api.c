/* The exported socket calls of rsockets: each finds its rsocket, runs under
 * its lock, and turns a -errno into -1 and errno once, here. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/uio.h>
#include <rdma/rsocket.h>

#include "rsocket/dgram.h"
#include "rsocket/rsocket.h"
#include "util/compiler.h"

#define RS_ACK_TIMEOUT 17

static int fail(int neg)
{
	errno = -neg;
	return -1;
}

static ssize_t ret_ssize(ssize_t r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

static int stream_socket(int domain, struct rsock **out)
{
	struct rsock *rs;
	int ret = rs_new(domain, &rs);

	if (ret)
		return ret;
	if (rdma_create_id(rs->ch, &rs->id, rs, RDMA_PS_TCP)) {
		ret = -errno;
		rs_free(rs);
		return ret;
	}
	/* The ACK timeout rdma-core's rsockets get from the kernel's rdma_cm
	 * over RoCE (its packet life time 16, plus one: 0.5 s), rather than
	 * uroce's 67 ms: a slow peer (rxe in an emulated guest) stalls for
	 * longer than 7 retries of that. */
	rdma_set_option(rs->id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT,
			&(uint8_t){ RS_ACK_TIMEOUT }, sizeof(uint8_t));
	*out = rs;
	return 0;
}

UR_EXPORT int rsocket(int domain, int type, int protocol)
{
	int kind = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct rsock *rs;
	int ret;

	if (domain != AF_INET && domain != AF_INET6)
		return fail(-EAFNOSUPPORT);
	if (kind == SOCK_DGRAM && (!protocol || protocol == IPPROTO_UDP))
		ret = rs_ds_new(domain, type, &rs);
	else if (kind == SOCK_STREAM && (!protocol || protocol == IPPROTO_TCP))
		ret = stream_socket(domain, &rs);
	else
		return fail(-EPROTONOSUPPORT);
	if (ret)
		return fail(ret);
	if (type & SOCK_NONBLOCK) {
		rs->nonblock = true;
		rs->fd_flags |= O_NONBLOCK;
	}
	ret = rs_table_add(rs);
	if (ret) {
		rs_free(rs);
		return fail(ret);
	}
	return rs->fd;
}

static struct rsock *lookup_locked(int s)
{
	struct rsock *rs = rs_table_get(s);

	if (rs)
		pthread_mutex_lock(&rs->lock);
	else
		errno = EBADF;
	return rs;
}

UR_EXPORT int rbind(int s, const struct sockaddr *addr, socklen_t len)
{
	struct rsock *rs = lookup_locked(s);
	int ret = 0;

	if (!rs)
		return -1;
	if (rs->type == SOCK_DGRAM)
		ret = rs_ds_bind(rs, addr, len);
	else if (!addr || len < sizeof(struct sockaddr_in))
		ret = -EINVAL;
	else if (rs->state != RS_IDLE)
		ret = -EINVAL;
	else if (rdma_bind_addr(rs->id, (struct sockaddr *)addr))
		ret = -errno;
	else
		rs->state = RS_BOUND;
	pthread_mutex_unlock(&rs->lock);
	return ret ? fail(ret) : 0;
}

UR_EXPORT int rlisten(int s, int backlog)
{
	struct rsock *rs = lookup_locked(s);
	int ret = 0;

	if (!rs)
		return -1;
	if (rs->type == SOCK_DGRAM)
		ret = -EOPNOTSUPP;   /* as listen(2) on a UDP socket */
	else if (rs->state == RS_LISTENING)
		ret = 0;
	else if (rs->state != RS_IDLE && rs->state != RS_BOUND)
		ret = -EINVAL;
	else if (rdma_listen(rs->id, backlog > 0 ? backlog : 1))
		ret = -errno;
	else
		rs->state = RS_LISTENING;
	pthread_mutex_unlock(&rs->lock);
	return ret ? fail(ret) : 0;
}

/* As getsockname(2): at most *len bytes of the address, and its whole
 * length in *len (with *len 0, addr may be NULL: librspreload asks a
 * socket's length so, to learn its family). */
static int copy_addr(const struct sockaddr *sa, struct sockaddr *addr, socklen_t *len)
{
	socklen_t n = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						: sizeof(struct sockaddr_in);

	if (!len)
		return 0;
	if (addr && *len)
		memcpy(addr, sa, *len < n ? *len : n);
	*len = n;
	return 0;
}

static bool opened(const struct rsock *rs)
{
	return rs->state != RS_RESOLVING_ADDR && rs->state != RS_RESOLVING_ROUTE &&
	       rs->state != RS_CONNECTING && rs->state != RS_ACCEPTING;
}

UR_EXPORT int raccept(int s, struct sockaddr *addr, socklen_t *len)
{
	struct rsock *l = lookup_locked(s), *rs;
	struct rdma_cm_event *ev;
	int ret;

	if (!l)
		return -1;
	if (l->type == SOCK_DGRAM) {
		pthread_mutex_unlock(&l->lock);
		return fail(-EOPNOTSUPP);
	}
	for (;;) {
		if (l->state != RS_LISTENING) {
			pthread_mutex_unlock(&l->lock);
			return fail(-EINVAL);
		}
		ret = rs_take_request(l, &ev);
		if (ret == -EAGAIN && !l->nonblock) {
			struct pollfd p = { .fd = l->ch->fd, .events = POLLIN };

			pthread_mutex_unlock(&l->lock);
			poll(&p, 1, 1000);
			pthread_mutex_lock(&l->lock);
			continue;
		}
		if (ret) {
			pthread_mutex_unlock(&l->lock);
			return fail(ret);
		}
		ret = rs_accept_req(l, ev, &rs);
		if (!ret)
			break;
		/* A request we could not take (its data, our resources):
		 * turned away; wait for the next. */
	}
	pthread_mutex_unlock(&l->lock);

	pthread_mutex_lock(&rs->lock);
	rs_wait(rs, opened, false);   /* the peer's RTU follows our REP at once */
	if (rs->state != RS_CONNECTED) {
		pthread_mutex_unlock(&rs->lock);
		rs_free(rs);
		return fail(-ECONNABORTED);
	}
	copy_addr(rdma_get_peer_addr(rs->id), addr, len);
	pthread_mutex_unlock(&rs->lock);
	/* Published once unlocked: the table's lock comes before an
	 * rsocket's (docs/design.md), as the datagram service holds it while
	 * it runs a socket's input. */
	ret = rs_table_add(rs);
	if (ret) {
		rs_free(rs);
		return fail(ret);
	}
	return rs->fd;
}

UR_EXPORT int rconnect(int s, const struct sockaddr *addr, socklen_t len)
{
	struct rsock *rs = lookup_locked(s);
	int ret = 0;

	if (!rs)
		return -1;
	if (!addr || len < sizeof(struct sockaddr_in)) {
		ret = -EINVAL;
		goto out;
	}
	if (rs->type == SOCK_DGRAM) {
		ret = rs_ds_connect(rs, addr, len);
		goto out;
	}
	switch (rs->state) {
	case RS_IDLE:
	case RS_BOUND:
		ret = rs_start_connect(rs, addr);
		if (ret)
			goto out;
		break;
	case RS_CONNECTED:
		ret = -EISCONN;
		goto out;
	case RS_LISTENING:
	case RS_DISCONNECTED:
	case RS_ERROR:
		ret = -EINVAL;
		goto out;
	case RS_CONNECT_ERROR:
		ret = -(rs->err ? rs->err : ECONNREFUSED);
		rs->err = 0;
		goto out;
	default:
		if (rs->nonblock) {
			ret = -EALREADY;
			goto out;
		}
		break;
	}
	ret = rs_wait(rs, opened, rs->nonblock);
	if (ret == -EAGAIN) {
		ret = -EINPROGRESS;
		goto out;
	}
	if (rs->state == RS_CONNECT_ERROR) {
		ret = -(rs->err ? rs->err : ECONNREFUSED);
		rs->err = 0;
	} else if (rs->state != RS_CONNECTED) {
		ret = -ECONNRESET;
	}
out:
	pthread_mutex_unlock(&rs->lock);
	return ret ? fail(ret) : 0;
}

UR_EXPORT int rshutdown(int s, int how)
{
	struct rsock *rs = lookup_locked(s);
	int ret;

	if (!rs)
		return -1;
	ret = rs->type == SOCK_DGRAM ? -EOPNOTSUPP : rs_shutdown(rs, how);
	pthread_mutex_unlock(&rs->lock);
	return ret ? fail(ret) : 0;
}

UR_EXPORT int rclose(int s)
{
	struct rsock *rs = rs_table_get(s);
	bool was_connected;

	if (rs && rs->type == SOCK_DGRAM) {
		/* Out of the UDP thread's set, then out of the table (which
		 * waits for its input to this socket to end), then freed. */
		rs_ds_svc_remove(s);
		rs_table_del(s);
		pthread_mutex_lock(&rs->lock);
		pthread_mutex_unlock(&rs->lock);
		rs_free(rs);
		return 0;
	}
	if (!rs) {
		errno = EBADF;
		return -1;
	}
	/* Out of the table before its lock is taken: the table's lock comes
	 * before an rsocket's (docs/design.md). */
	rs_table_del(s);
	pthread_mutex_lock(&rs->lock);
	rs_iomap_free(rs);
	if (rs->state == RS_CONNECTED)
		rs_shutdown(rs, SHUT_RDWR);
	was_connected = rs->state == RS_DISCONNECTED || rs->state == RS_ERROR ||
			rs->state == RS_ACCEPTING || rs->state == RS_CONNECTING;
	if (was_connected)
		rdma_disconnect(rs->id);
	pthread_mutex_unlock(&rs->lock);
	rs_free(rs);
	return 0;
}

static ssize_t do_recv(int s, const struct iovec *iov, int cnt, int flags, struct sockaddr *src,
		       socklen_t *src_len)
{
	struct rsock *rs = lookup_locked(s);
	ssize_t r;

	if (!rs)
		return -1;
	if (rs->type == SOCK_DGRAM) {
		r = rs_ds_recv(rs, iov, cnt, flags, src, src_len);
	} else {
		r = rs_recv_iov(rs, iov, cnt, flags);
		if (r >= 0 && src && src_len)
			copy_addr(rdma_get_peer_addr(rs->id), src, src_len);
	}
	pthread_mutex_unlock(&rs->lock);
	return ret_ssize(r);
}

static ssize_t do_send(int s, const struct iovec *iov, int cnt, int flags,
		       const struct sockaddr *dst, socklen_t dst_len)
{
	struct rsock *rs = lookup_locked(s);
	ssize_t r;

	if (!rs)
		return -1;
	if (rs->type == SOCK_DGRAM) {
		r = rs_ds_send(rs, iov, cnt, flags, dst, dst_len);
	} else {
		/* New mappings go to the peer ahead of the data (rsocket(7));
		 * a connected stream socket ignores dst, as TCP's does. */
		r = rs->iomap_pending ? rs_iomap_flush(rs, rs->nonblock || (flags & MSG_DONTWAIT)) : 0;
		if (!r)
			r = rs_send_iov(rs, iov, cnt, flags);
	}
	pthread_mutex_unlock(&rs->lock);
	return ret_ssize(r);
}

UR_EXPORT ssize_t rrecv(int s, void *buf, size_t len, int flags)
{
	struct iovec v = { buf, len };

	return do_recv(s, &v, 1, flags, NULL, NULL);
}

UR_EXPORT ssize_t rrecvfrom(int s, void *buf, size_t len, int flags, struct sockaddr *src,
			    socklen_t *alen)
{
	struct iovec v = { buf, len };

	return do_recv(s, &v, 1, flags, src, alen);
}

UR_EXPORT ssize_t rrecvmsg(int s, struct msghdr *msg, int flags)
{
	if (msg->msg_control && msg->msg_controllen)
		return fail(-EOPNOTSUPP);
	msg->msg_flags = 0;
	return do_recv(s, msg->msg_iov, (int)msg->msg_iovlen, flags, msg->msg_name,
		       msg->msg_name ? &msg->msg_namelen : NULL);
}

UR_EXPORT ssize_t rsend(int s, const void *buf, size_t len, int flags)
{
	struct iovec v = { (void *)buf, len };

	return do_send(s, &v, 1, flags, NULL, 0);
}

UR_EXPORT ssize_t rsendto(int s, const void *buf, size_t len, int flags,
			  const struct sockaddr *dst, socklen_t alen)
{
	struct iovec v = { (void *)buf, len };

	return do_send(s, &v, 1, flags, dst, alen);
}

UR_EXPORT ssize_t rsendmsg(int s, const struct msghdr *msg, int flags)
{
	if (msg->msg_control && msg->msg_controllen)
		return fail(-EOPNOTSUPP);
	return do_send(s, msg->msg_iov, (int)msg->msg_iovlen, flags, msg->msg_name,
		       msg->msg_namelen);
}

UR_EXPORT ssize_t rread(int s, void *buf, size_t count)
{
	return rrecv(s, buf, count, 0);
}

UR_EXPORT ssize_t rreadv(int s, const struct iovec *iov, int iovcnt)
{
	return do_recv(s, iov, iovcnt, 0, NULL, NULL);
}

UR_EXPORT ssize_t rwrite(int s, const void *buf, size_t count)
{
	return rsend(s, buf, count, 0);
}

UR_EXPORT ssize_t rwritev(int s, const struct iovec *iov, int iovcnt)
{
	return do_send(s, iov, iovcnt, 0, NULL, 0);
}

static int get_name(int s, struct sockaddr *addr, socklen_t *len, bool peer)
{
	struct rsock *rs = lookup_locked(s);
	int ret = 0;

	if (!rs)
		return -1;
	if (!len || (!addr && *len))
		ret = -EFAULT;
	else if (rs->type == SOCK_DGRAM)
		ret = (peer ? getpeername(rs->fd, addr, len) : getsockname(rs->fd, addr, len)) ? -errno : 0;
	else if (peer && rs->state != RS_CONNECTED && rs->state != RS_DISCONNECTED)
		ret = -ENOTCONN;
	else if (!peer && rdma_get_local_addr(rs->id)->sa_family == AF_UNSPEC)
		/* Not bound (a connect that failed): the domain's wildcard. */
		copy_addr((const struct sockaddr *)&(struct sockaddr_storage){
				  .ss_family = (sa_family_t)rs->domain }, addr, len);
	else
		copy_addr(peer ? rdma_get_peer_addr(rs->id) : rdma_get_local_addr(rs->id),
			  addr, len);
	pthread_mutex_unlock(&rs->lock);
	return ret ? fail(ret) : 0;
}

UR_EXPORT int rgetpeername(int s, struct sockaddr *addr, socklen_t *len)
{
	return get_name(s, addr, len, true);
}

UR_EXPORT int rgetsockname(int s, struct sockaddr *addr, socklen_t *len)
{
	return get_name(s, addr, len, false);
}
