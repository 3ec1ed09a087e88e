/* The transport boundary.
 *
 * Above this line, the protocol engine (src/rel) builds RoCE packets as
 * header bytes plus payload pieces and hands them to a path; below it, a
 * transport moves them.  The UDP transport puts them on the wire as RoCEv2
 * (adding the ICRC) to port 4791 or to a local process's socket; a
 * shared-memory transport can carry the same packets between processes of
 * one host without a socket.  Nothing above assumes that a packet crosses a
 * socket: it sees only ur_xport_send() results and ur_engine_rx() calls.
 */
#ifndef UROCE_XPORT_XPORT_H
#define UROCE_XPORT_XPORT_H

#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <infiniband/verbs.h>

#include "core/limits.h"

struct ur_xport;

/* Largest header block a packet can have: BTH + DETH/XRCETH + RETH or
 * AtomicETH + ImmDt/IETH, rounded up. */
#define UR_MAX_HDR_BYTES 64

/* A resolved route to a peer QP's host: where packets go and which of our
 * addresses they come from. */
struct ur_path {
	struct ur_xport *xport;
	int family;                     /* AF_INET or AF_INET6 */
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} dst;                          /* peer IP and UDP port */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} src;                          /* our address (the source GID) */
	unsigned ifindex;
	uint8_t traffic_class;
	uint8_t hop_limit;
	bool local;                     /* the peer is a process of this host */
	bool mcast;                     /* a multicast group */
};

struct ur_tx_pkt {
	uint8_t hdr[UR_MAX_HDR_BYTES];  /* BTH and extension headers */
	uint16_t hdr_len;
	uint8_t pad;                    /* 0..3 bytes to a 4-byte boundary */
	uint32_t paylen;
	int niov;
	struct iovec iov[UR_MAX_SGE + 1];
};

/* What a transport knows about a received packet besides its bytes. */
struct ur_rx_meta {
	union ibv_gid sgid;             /* source address, as a GID */
	union ibv_gid dgid;             /* destination address, as a GID */
	uint8_t traffic_class;
	uint8_t hop_limit;
	bool ipv6;                      /* for the GRH of UD receives */
};

struct ur_xport_ops {
	const char *name;
	/* Queues a packet (it may leave at once or at the next flush): 0,
	 * -EAGAIN (not taken: retry when the engine says writable), or another
	 * -errno (the packet is dropped and counted). */
	int (*send)(struct ur_xport *x, const struct ur_path *path,
		    const struct ur_tx_pkt *pkt);
	/* Fills a path to (dgid, dqpn) from our source address sgid. */
	int (*resolve)(struct ur_xport *x, const union ibv_gid *sgid,
		       unsigned ifindex, const union ibv_gid *dgid,
		       uint32_t dqpn, struct ur_path *path);
	/* Sends what this thread queued with send.  0, or -EAGAIN: kept and
	 * sent when the transport drains (the caller waits for writable). */
	int (*flush)(struct ur_xport *x);
	/* Joins or leaves a multicast group (the first attach and the last
	 * detach of this process). */
	int (*mcast)(struct ur_xport *x, const union ibv_gid *gid, unsigned ifindex, bool join);
	/* Sends one control datagram (the iov pieces joined) to process pid
	 * of this host (network namespace): 0, -EAGAIN (its queue is full:
	 * try later), -ESRCH (it is gone) or another -errno.  The receiver's
	 * engine hands it to ur_engine_local_msg().  Never blocks. */
	int (*local_msg)(struct ur_xport *x, pid_t pid, const struct iovec *iov, int iovcnt);
};

struct ur_xport {
	const struct ur_xport_ops *ops;
};

static inline int ur_xport_send(const struct ur_path *path, const struct ur_tx_pkt *pkt)
{
	return path->xport->ops->send(path->xport, path, pkt);
}

static inline int ur_xport_local_msg(struct ur_xport *x, pid_t pid, const struct iovec *iov,
				     int iovcnt)
{
	return x && x->ops->local_msg ? x->ops->local_msg(x, pid, iov, iovcnt) : -EOPNOTSUPP;
}

static inline int ur_xport_flush(struct ur_xport *x)
{
	return x->ops->flush ? x->ops->flush(x) : 0;
}

#endif
