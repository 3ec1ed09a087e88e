/* The transport boundary: the whole contract between the protocol and what
 * carries its packets.
 *
 * Above it the protocol (src/rel) builds RoCE packets as header bytes plus
 * payload pieces and hands them to a path; below it a transport moves them.
 * The UDP transport puts them on the wire as RoCEv2 (adding the ICRC) to
 * port 4791 or to a process of this host.  Everything the protocol does
 * with a transport goes through struct ur_xport_ops; everything a transport
 * tells the protocol goes through the hooks it was opened with.  A
 * transport sees bytes, GIDs and process ids: it includes no object or
 * protocol header, and a path's addresses are its own business.
 *
 * A process has a set of transports (struct ur_xports, xport.c): a path is
 * resolved by the first one that can reach the peer, so a transport for
 * processes of this host goes before UDP and falls back to it.
 */
#ifndef UROCE_XPORT_XPORT_H
#define UROCE_XPORT_XPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <infiniband/verbs.h>

struct ur_engine;
struct ur_registry;
struct ur_xport;

/* Largest header block a packet can have: BTH + DETH/XRCETH + RETH or
 * AtomicETH + ImmDt/IETH, rounded up. */
#define UR_MAX_HDR_BYTES 64
/* Payload pieces of one packet (a WQE's SGEs, plus one). */
#define UR_TX_MAX_IOV 33
/* What a transport may keep in a path. */
#define UR_PATH_PRIV_BYTES 64

/* A resolved route to a peer: which transport carries it, and how. */
struct ur_path {
	struct ur_xport *xport;
	uint8_t traffic_class;
	uint8_t hop_limit;
	/* The transport's own view (addresses, ports): opaque above. */
	union {
		uint64_t align;
		uint8_t bytes[UR_PATH_PRIV_BYTES];
	} priv;
};

/* One packet to send: headers, then payload gathered from iov. */
struct ur_tx_pkt {
	uint8_t hdr[UR_MAX_HDR_BYTES];  /* BTH and extension headers */
	uint16_t hdr_len;
	uint8_t pad;                    /* 0..3 bytes to a 4-byte boundary */
	uint32_t paylen;
	int niov;
	struct iovec iov[UR_TX_MAX_IOV];
	/* Payload bytes the sender already placed in the receiver's memory
	 * (ops->place), or, on a READ request and its response, that the
	 * requester fetched itself (ops->fetch): the packet carries none of
	 * them (paylen 0). */
	uint32_t placed;
	/* WRITE payload: a later copy straight into the receiver (ops->place)
	 * must not overtake it. */
	bool write_data;
};

/* What a transport knows about a received packet besides its bytes. */
struct ur_rx_meta {
	union ibv_gid sgid;             /* source address, as a GID */
	union ibv_gid dgid;             /* destination address, as a GID */
	uint8_t traffic_class;
	uint8_t hop_limit;
	bool ipv6;                      /* for the GRH of UD receives */
	/* The sender placed this many payload bytes already (a WRITE with one
	 * copy): the packet holds its headers only.  0 otherwise. */
	uint32_t placed;
};

enum ur_xport_drop {
	UR_XPORT_DROP_ICRC,             /* the ICRC did not match */
	UR_XPORT_DROP_MALFORMED,        /* truncated, or not this transport's framing */
	/* lost between processes of the host: handed on to a process whose
	 * socket was full or gone, or still waiting for room at exit */
	UR_XPORT_DROP_HOST_LOST,
	UR_XPORT_DROP_NR
};

/* What the fault injector did to a received packet (UROCE_FAULTS). */
enum ur_xport_fault {
	UR_XPORT_FAULT_LOSS,
	UR_XPORT_FAULT_REORDER,
	UR_XPORT_FAULT_DUP,
	UR_XPORT_FAULT_CORRUPT,
};

/* What a transport calls, from reactor callbacks (never concurrently). */
struct ur_xport_hooks {
	void *arg;
	/* A received RoCE packet (BTH .. ICRC), its integrity checked. */
	void (*rx)(void *arg, const uint8_t *pkt, size_t len, const struct ur_rx_meta *meta);
	/* Around the rx calls of one batch taken in one go (begin true, then
	 * false), inside one callback: the protocol may hold its ACKs until
	 * the batch ends.  May be NULL. */
	void (*rx_batch)(void *arg, bool begin);
	/* A control message another process of this host sent with local_msg. */
	void (*local_msg)(void *arg, const uint8_t *msg, size_t len);
	/* There is room again (after want_writable(true)). */
	void (*writable)(void *arg);
	/* A packet dropped before anything could read it; dgid, if known,
	 * is where it was going (the device it counts against). */
	void (*dropped)(void *arg, enum ur_xport_drop why, const union ibv_gid *dgid);
	/* The fault injector did this to a packet going to dgid. */
	void (*injected)(void *arg, enum ur_xport_fault what, const union ibv_gid *dgid);
};

struct ur_xport_stats {
	uint64_t rcvd_pkts, sent_pkts;
	uint64_t forwarded;             /* handed on to another process of the host */
	uint64_t tx_eagain;             /* sends refused for lack of room */
	uint64_t icrc_errors, malformed;
	uint64_t lost;                  /* sent or forwarded into a peer that was gone */
	uint64_t placed;                /* messages copied straight into a peer's memory */
};

/* A memory region others may copy into or out of directly (expose_region):
 * this process's rkey, the PD it belongs to, and where it lies. */
struct ur_xport_region {
	uint32_t rkey;
	uint32_t pd;                    /* the PD's handle */
	uint32_t access;                /* IBV_ACCESS_REMOTE_WRITE / _READ */
	uint64_t iova;                  /* what the peer names */
	uint64_t length;
	void *host;                     /* where iova lands here */
	/* A shared region (util/vm_share.h): a memfd mapped at share_base
	 * here that holds host; share_id 0: none, the kernel copies. */
	uint64_t share_id;
	int share_fd;
	uint64_t share_base, share_len;
};

/* A copy between our memory (iov) and what rkey names at va behind QP
 * dqpn of the process at the other end of path (ops->place, ops->fetch). */
typedef int ur_xport_copy_fn(struct ur_xport *x, const struct ur_path *path, uint32_t dqpn,
			     uint32_t rkey, uint64_t va, const struct iovec *iov, int niov,
			     uint64_t len);

/* Who has not read yet what was sent between processes of this host. */
enum ur_behind {
	UR_BEHIND_NONE,
	UR_BEHIND_RX,     /* this process's sockets from the network hold unread datagrams */
	UR_BEHIND_PEER,   /* another process: it may be frozen */
	UR_BEHIND_SELF,   /* this process: running, so it reads what waits */
};

struct ur_xport_ops {
	const char *name;
	/* Fills a path to (dgid, dqpn) from our address sgid on interface
	 * ifindex: 0, -ENOENT (not this transport's kind of peer: ask the
	 * next one), or another -errno (unreachable). */
	int (*resolve)(struct ur_xport *x, const union ibv_gid *sgid, unsigned ifindex,
		       const union ibv_gid *dgid, uint32_t dqpn, struct ur_path *path);
	/* Queues a packet (it may leave at once or at the next flush): 0,
	 * -EAGAIN (not taken: retry after writable), -EFAULT (a piece of the
	 * payload is no longer mapped by the process: the sender's error), or
	 * another -errno (the packet is refused for good: a loss). */
	int (*send)(struct ur_xport *x, const struct ur_path *path, const struct ur_tx_pkt *pkt);
	/* Sends what this thread queued.  0, or -EAGAIN: kept, and it leaves
	 * when there is room (ask for writable to send more). */
	int (*flush)(struct ur_xport *x);
	/* Somebody waits for room: call hooks.writable when there is. */
	void (*want_writable)(struct ur_xport *x, bool waiting);
	/* Optional: sends what flush had to keep, now, without waiting for
	 * the wake-up writable would bring.  0 once nothing is kept (NULL:
	 * the transport keeps nothing), -EAGAIN while some still is. */
	int (*flush_kept)(struct ur_xport *x);
	/* Optional: who is behind, not silent: a process of this host that
	 * has not read yet all we sent it (kept here, or still queued in its
	 * socket), or this process, which has not read all sent to it. */
	enum ur_behind (*peer_behind)(struct ur_xport *x);
	/* Joins or leaves a multicast group for this process. */
	int (*mcast)(struct ur_xport *x, const union ibv_gid *gid, unsigned ifindex, bool join);
	/* One control datagram (the iov pieces joined) to process pid of
	 * this host: 0, -EAGAIN (its queue is full: try later), -ESRCH (it is
	 * gone) or another -errno.  Never blocks. */
	int (*local_msg)(struct ur_xport *x, pid_t pid, const struct iovec *iov, int iovcnt);
	/* Housekeeping, from the engine thread a few times a second. */
	void (*tick)(struct ur_xport *x, uint64_t now);
	/* At exit: sends what is queued, waiting up to timeout_ms for room. */
	void (*drain)(struct ur_xport *x, int timeout_ms);
	/* Optional, at exit after drain: gives up at once what this process
	 * serves for the host's other processes (UDP port 4791). */
	void (*leave)(struct ur_xport *x);
	/* Undoes open, for a stack that could not start (nothing was sent
	 * yet): unwatches its fds on the engine (which still runs), closes
	 * them and frees the transport. */
	void (*close)(struct ur_xport *x);
	/* Optional: whether something received waits to be taken by a poller
	 * (a ring in shared memory; an fd's data is the kernel's to tell). */
	bool (*rx_pending)(struct ur_xport *x);
	void (*stats)(struct ur_xport *x, struct ur_xport_stats *out);

	/* Optional: one copy between address spaces.  The five below may be
	 * NULL. */
	/* Copies len bytes gathered from iov straight into what rkey names at
	 * va, behind QP dqpn of the process at the other end of path, if that
	 * process exposed the region, for dqpn's PD, with remote write, and
	 * the range lies inside it.  0: every byte is there; -errno: not
	 * placed (maybe some bytes were: the caller sends them all in packets
	 * instead, and the receiver checks and places them as usual).  1:
	 * every byte is there, copied with memcpy through the region mapped
	 * here (a shared region) rather than by the kernel. */
	ur_xport_copy_fn *place;
	/* The same the other way (a READ with one copy): len bytes of what
	 * rkey names at va, with remote read, scattered into iov. */
	ur_xport_copy_fn *fetch;
	/* Publishes one of our regions (0, or -errno: not exposed, so peers
	 * send its bytes in packets), or takes it back: revoke_region returns
	 * once no peer copies into or out of it any more. */
	int (*expose_region)(struct ur_xport *x, const struct ur_xport_region *r);
	void (*revoke_region)(struct ur_xport *x, uint32_t rkey);
	/* Publishes which PD our QP qpn checks remote keys against and the
	 * remote access it grants (pd 0: forget the QP). */
	void (*expose_qp)(struct ur_xport *x, uint32_t qpn, uint32_t pd, uint32_t access);
};

struct ur_xport {
	const struct ur_xport_ops *ops;
};

static inline int ur_xport_send(const struct ur_path *path, const struct ur_tx_pkt *pkt)
{
	return path->xport->ops->send(path->xport, path, pkt);
}

/* ---- the process's transports (xport.c) ---------------------------------- */

#define UR_XPORTS_MAX 4

struct ur_xports {
	struct ur_xport *x[UR_XPORTS_MAX];   /* in the order paths prefer them */
	unsigned n;
};

/* Opens every transport this build has, watching their fds on e and
 * finding this host's peers in reg (the process's view of the host
 * registry, attached; the transports keep the pointer): 0, or -errno with
 * none left open. */
int ur_xports_open(struct ur_xports *s, struct ur_engine *e, struct ur_registry *reg,
		   const struct ur_xport_hooks *h);
/* Closes what ur_xports_open opened, last first (a stack that failed). */
void ur_xports_close(struct ur_xports *s);
int ur_xports_resolve(struct ur_xports *s, const union ibv_gid *sgid, unsigned ifindex,
		      const union ibv_gid *dgid, uint32_t dqpn, struct ur_path *path);
/* Flushes every transport: 0, or -EAGAIN if any kept something. */
int ur_xports_flush(struct ur_xports *s);
/* Sends what every transport kept: 0, or -EAGAIN if any still keeps some. */
int ur_xports_flush_kept(struct ur_xports *s);
/* The most behind of the transports (SELF over PEER over NONE). */
enum ur_behind ur_xports_peer_behind(struct ur_xports *s);
void ur_xports_want_writable(struct ur_xports *s, bool waiting);
int ur_xports_mcast(struct ur_xports *s, const union ibv_gid *gid, unsigned ifindex, bool join);
int ur_xports_local_msg(struct ur_xports *s, pid_t pid, const struct iovec *iov, int iovcnt);
void ur_xports_tick(struct ur_xports *s, uint64_t now);
void ur_xports_drain(struct ur_xports *s, int timeout_ms);
void ur_xports_leave(struct ur_xports *s);
bool ur_xports_rx_pending(struct ur_xports *s);
/* Regions and QPs published to every transport that places: 0, or
 * -errno and published nowhere. */
int ur_xports_expose_region(struct ur_xports *s, const struct ur_xport_region *r);
void ur_xports_revoke_region(struct ur_xports *s, uint32_t rkey);
/* Whether a transport copies into our regions directly (exposes them). */
bool ur_xports_expose_any(const struct ur_xports *s);
void ur_xports_expose_qp(struct ur_xports *s, uint32_t qpn, uint32_t pd, uint32_t access);
/* Summed over the transports. */
void ur_xports_stats(struct ur_xports *s, struct ur_xport_stats *out);

#endif
