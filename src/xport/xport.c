/* The process's transports: which ones this build has, and the calls that
 * go to all of them or to the first that serves. */
#include "xport/xport.h"

#include <errno.h>
#include <string.h>

#include "util/compiler.h"
#include "xport/capture.h"
#include "xport/shm/shm.h"
#include "xport/udp/udp.h"

/* In the order paths prefer them: a transport that reaches fewer peers
 * (this host's) goes first and answers -ENOENT for the others. */
static int (*const kinds[])(struct ur_engine *e, struct ur_registry *reg,
			     const struct ur_xport_hooks *h, struct ur_xport **out) = {
	ur_shm_open,
	ur_udp_open,
};

int ur_xports_open(struct ur_xports *s, struct ur_engine *e, struct ur_registry *reg,
		   const struct ur_xport_hooks *h)
{
	memset(s, 0, sizeof(*s));
	ur_capture_attach();
	for (unsigned i = 0; i < UR_ARRAY_SIZE(kinds); i++) {
		int ret = kinds[i](e, reg, h, &s->x[s->n]);

		if (ret) {
			ur_xports_close(s);
			return ret;
		}
		if (s->x[s->n])       /* NULL: off in this process */
			s->n++;
	}
	return 0;
}

int ur_xports_resolve(struct ur_xports *s, const union ibv_gid *sgid, unsigned ifindex,
		      const union ibv_gid *dgid, uint32_t dqpn, struct ur_path *path)
{
	int ret = -ENOENT;

	for (unsigned i = 0; i < s->n && ret == -ENOENT; i++) {
		memset(path, 0, sizeof(*path));
		ret = s->x[i]->ops->resolve(s->x[i], sgid, ifindex, dgid, dqpn, path);
		if (!ret)
			path->xport = s->x[i];
	}
	return ret == -ENOENT ? -ENETUNREACH : ret;
}

/* Runs every transport's flush, or flush_kept, where it has one: -EAGAIN
 * when one of them could not send all it had. */
static int flush_each(struct ur_xports *s, bool kept)
{
	int ret = 0;

	for (unsigned i = 0; i < s->n; i++) {
		const struct ur_xport_ops *o = s->x[i]->ops;
		int (*flush)(struct ur_xport *x) = kept ? o->flush_kept : o->flush;

		if (flush && flush(s->x[i]) == -EAGAIN)
			ret = -EAGAIN;
	}
	return ret;
}

int ur_xports_flush(struct ur_xports *s)
{
	return flush_each(s, false);
}

int ur_xports_flush_kept(struct ur_xports *s)
{
	return flush_each(s, true);
}

enum ur_behind ur_xports_peer_behind(struct ur_xports *s)
{
	enum ur_behind most = UR_BEHIND_NONE;

	for (unsigned i = 0; i < s->n && most != UR_BEHIND_SELF; i++) {
		enum ur_behind b;

		if (!s->x[i]->ops->peer_behind)
			continue;
		b = s->x[i]->ops->peer_behind(s->x[i]);
		if (b > most)
			most = b;
	}
	return most;
}

void ur_xports_want_writable(struct ur_xports *s, bool waiting)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->x[i]->ops->want_writable)
			s->x[i]->ops->want_writable(s->x[i], waiting);
}

int ur_xports_mcast(struct ur_xports *s, const union ibv_gid *gid, unsigned ifindex, bool join)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->x[i]->ops->mcast)
			return s->x[i]->ops->mcast(s->x[i], gid, ifindex, join);
	return -EOPNOTSUPP;
}

int ur_xports_local_msg(struct ur_xports *s, pid_t pid, const struct iovec *iov, int iovcnt)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->x[i]->ops->local_msg)
			return s->x[i]->ops->local_msg(s->x[i], pid, iov, iovcnt);
	return -EOPNOTSUPP;
}

void ur_xports_tick(struct ur_xports *s, uint64_t now)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->x[i]->ops->tick)
			s->x[i]->ops->tick(s->x[i], now);
}

void ur_xports_drain(struct ur_xports *s, int timeout_ms)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->x[i]->ops->drain)
			s->x[i]->ops->drain(s->x[i], timeout_ms);
}

void ur_xports_close(struct ur_xports *s)
{
	while (s->n) {
		struct ur_xport *x = s->x[--s->n];

		s->x[s->n] = NULL;
		if (x->ops->close)       /* a test's own transports have none */
			x->ops->close(x);
	}
}

void ur_xports_leave(struct ur_xports *s)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->x[i]->ops->leave)
			s->x[i]->ops->leave(s->x[i]);
}

bool ur_xports_rx_pending(struct ur_xports *s)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->x[i]->ops->rx_pending && s->x[i]->ops->rx_pending(s->x[i]))
			return true;
	return false;
}

int ur_xports_expose_region(struct ur_xports *s, const struct ur_xport_region *r)
{
	for (unsigned i = 0; i < s->n; i++) {
		int ret;

		if (!s->x[i]->ops->expose_region)
			continue;
		ret = s->x[i]->ops->expose_region(s->x[i], r);
		if (!ret)
			continue;
		/* All or none, so that revoking never takes another's entry. */
		while (i--)
			if (s->x[i]->ops->revoke_region)
				s->x[i]->ops->revoke_region(s->x[i], r->rkey);
		return ret;
	}
	return 0;
}

bool ur_xports_expose_any(const struct ur_xports *s)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->x[i]->ops->expose_region)
			return true;
	return false;
}

void ur_xports_revoke_region(struct ur_xports *s, uint32_t rkey)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->x[i]->ops->revoke_region)
			s->x[i]->ops->revoke_region(s->x[i], rkey);
}

void ur_xports_expose_qp(struct ur_xports *s, uint32_t qpn, uint32_t pd, uint32_t access)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->x[i]->ops->expose_qp)
			s->x[i]->ops->expose_qp(s->x[i], qpn, pd, access);
}

void ur_xports_stats(struct ur_xports *s, struct ur_xport_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < s->n; i++) {
		struct ur_xport_stats one;

		if (!s->x[i]->ops->stats)
			continue;
		s->x[i]->ops->stats(s->x[i], &one);
		out->rcvd_pkts += one.rcvd_pkts;
		out->sent_pkts += one.sent_pkts;
		out->forwarded += one.forwarded;
		out->tx_eagain += one.tx_eagain;
		out->placed += one.placed;
		out->icrc_errors += one.icrc_errors;
		out->malformed += one.malformed;
		out->lost += one.lost;
	}
}
