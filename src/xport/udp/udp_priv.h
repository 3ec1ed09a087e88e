/* Internals shared by the UDP transport's files.  They call each other one
 * way, from the top: udp_open.c (the ops, opening) -> udp_host_port.c (port 4791)
 * -> udp_port_pass.c (the port passed on) -> udp_lock_file.c (the lock
 * file's record) -> udp_tx.c (staging) -> udp_rx.c (receive) ->
 * udp_handon.c (the router handing packets on) -> udp_host_peers.c (this
 * host's processes) -> udp_send.c (a batch onto a socket, parking) ->
 * udp_fwd.c (the unix socket's framing) -> udp_sock.c (sockets); beside
 * them udp_route.c (resolve) and udp_mcast.c (groups). */
#ifndef UROCE_XPORT_UDP_UDP_PRIV_H
#define UROCE_XPORT_UDP_UDP_PRIV_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine/engine.h"
#include "host/registry.h"
#include "util/compiler.h"
#include "wire/icrc.h"
#include "xport/udp/udp.h"

#define UR_UDP_BATCH 8
/* recvmmsg rounds one readable callback may take before it returns (the
 * fd is level-triggered: the reactor calls again).  A peer that keeps the
 * socket full must not hold the reactor: its timers and the EPOLLOUT that
 * resumes the QPs a full transport stopped wait for the callback's end.
 * Seen: a DCT server under ThreadSanitizer read its unix socket for 1.2 s
 * in one callback while its ACKs, parked, waited; the initiator ended in
 * RETRY_EXC_ERR.  A datagram on the unix socket may carry a batch of 64
 * packets, so one round there; UDP datagrams are mostly single packets. */
#define UR_UDP_RX_ROUNDS 4
#define UR_FWD_RX_ROUNDS 1
#define UR_UDP_BUF 65536           /* a UDP GRO buffer: many packets of one flow */
#define UR_UDP_PEERS 64
#define UR_LOCAL_MSG_IOV 4          /* pieces of one local message */
#define UR_GSO_MAX_SEGS 64
#define UR_GSO_MAX_BYTES 65000      /* a UDP datagram's payload limit, with room */
/* Packets the router keeps for one process whose socket is full.  What
 * arrives from the network has no flow control back to its sender: past
 * this a process that does not read loses packets (RC resends them)
 * rather than the router's memory growing without end.  4 MiB of 4 KiB
 * MTU packets, a few messages per QP of a busy host. */
#define UR_HANDON_KEEP_PKTS 1024

/* A UDP path, in struct ur_path's private room. */
struct ur_udp_path {
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
	bool local;                     /* the peer is a process of this host */
	bool mcast;                     /* a multicast group */
};
_Static_assert(sizeof(struct ur_udp_path) <= UR_PATH_PRIV_BYTES, "a UDP path fits a path");

static inline const struct ur_udp_path *ur_udp_path_of(const struct ur_path *p)
{
	return (const struct ur_udp_path *)p->priv.bytes;
}

static inline struct ur_udp_path *ur_udp_path_mut(struct ur_path *p)
{
	return (struct ur_udp_path *)p->priv.bytes;
}

struct ur_udp;
struct ur_udp_rx;
struct tx_batch;

struct ur_udp_sock {
	struct ur_udp *u;
	struct ur_udp_rx *rx;          /* the receive context that reads it */
	int fd;
	int family;                    /* AF_INET, AF_INET6, or AF_UNIX: a local peer */
	bool armed;                    /* the engine watches it for EPOLLOUT */
	bool stale;                    /* AF_UNIX: the peer went away; reconnect */
	uint16_t port;                 /* host byte order */
	bool roce_port;                /* bound to 4791: packets may be for others */
	unsigned spread;               /* 4791: sockets the kernel steers over by QP (0: none) */
	/* Batches the socket had no room for, oldest first (udp_send.c). */
	pthread_mutex_t pending_lock;
	struct tx_batch *pending, *pending_tail;
	uint32_t pending_pkts;         /* in them, under pending_lock */
};

/* Where a batch goes: everything but the payload a packet's send needs. */
struct tx_dest {
	int family;
	union {
		struct sockaddr_in v4;
		struct sockaddr_in6 v6;
	} dst;
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} src;
	unsigned ifindex;             /* multicast / link-local output */
	uint16_t sport;               /* the UDP source port the ICRC covers */
	struct ur_udp_sock *sock;     /* ours, or a local peer's (AF_UNIX) */
};

/* Whether two batches' packets may leave as one: the same socket, addresses
 * and ports (a batch's packets share one header). */
static inline bool ur_udp_same_dest(const struct tx_dest *a, const struct tx_dest *b)
{
	if (a->family != b->family || a->sock != b->sock || a->ifindex != b->ifindex)
		return false;
	if (a->family == AF_INET)
		return a->dst.v4.sin_addr.s_addr == b->dst.v4.sin_addr.s_addr &&
		       a->dst.v4.sin_port == b->dst.v4.sin_port &&
		       a->src.v4.s_addr == b->src.v4.s_addr;
	return !memcmp(&a->dst.v6.sin6_addr, &b->dst.v6.sin6_addr, 16) &&
	       a->dst.v6.sin6_port == b->dst.v6.sin6_port &&
	       a->dst.v6.sin6_scope_id == b->dst.v6.sin6_scope_id &&
	       !memcmp(&a->src.v6, &b->src.v6, 16);
}

/* Packets laid out back to back, ICRC included: one GSO send. */
struct tx_batch {
	struct tx_dest d;
	uint32_t seg;                 /* size of every segment but the last */
	uint32_t nseg;
	uint32_t len;
	bool closed;                  /* a short last segment is in */
	/* Packets the router hands on (udp_handon.c): already recorded
	 * arriving, with the sender's addresses (d.src, d.sport), class and
	 * hop limit, which the header carries to the receiver. */
	bool handed_on;
	uint8_t tclass, hop_limit;
	struct tx_batch *next;        /* on the pending list */
	uint8_t buf[UR_GSO_MAX_BYTES + UR_UDP_BUF];
};

/* What travels on a process's unix socket: a packet the router hands to
 * the owning process, a local peer's batch of packets, or a control
 * message (struct ur_xport_ops.local_msg).  Same host: host byte order. */
#define UR_FWD_MAGIC 0x75465744u   /* "uFWD" */
#define UR_FWD_VERSION 2

enum ur_fwd_kind {
	UR_FWD_PACKETS = 1,            /* RoCE packets (seg: a batch) */
	UR_FWD_MSG = 2,                /* a local message: the bytes after the header */
	UR_FWD_PORT = 3,               /* port 4791 handed on: struct ur_fwd_port, descriptors */
};

/* What follows a UR_FWD_PORT header; the descriptors (SCM_RIGHTS) are the
 * router lock's, then n4 IPv4 and n6 IPv6 sockets bound to 4791, in the
 * order of the receive contexts that read them (udp_port_pass.c). */
struct ur_fwd_port {
	uint32_t n4, n6;
	int32_t pid;                   /* the router that sends it */
	uint32_t flags;                /* UR_FWD_PORT_RESERVE: hold it, read nothing */
};
#define UR_FWD_PORT_RESERVE 1u
#define UR_FWD_MAX_FDS (1 + 2 * UR_ENGINE_MAX_RX)

struct ur_fwd_hdr {
	uint32_t magic;
	uint8_t version;
	uint8_t kind;                  /* enum ur_fwd_kind */
	uint16_t family;
	uint8_t saddr[16];
	uint8_t daddr[16];
	uint16_t sport, dport;
	uint8_t tclass, hop_limit;
	uint16_t seg;       /* a batch: packets of seg bytes, the last maybe shorter; 0: one */
};
_Static_assert(sizeof(struct ur_fwd_hdr) == 48, "forward header layout");

struct ur_rx_batch {
	struct mmsghdr msgs[UR_UDP_BATCH];
	struct iovec iov[UR_UDP_BATCH];
	struct sockaddr_storage from[UR_UDP_BATCH];
	uint8_t ctrl[UR_UDP_BATCH][128];   /* room for a sender's credentials and UR_FWD_MAX_FDS */
	uint8_t buf[UR_UDP_BATCH][UR_UDP_BUF + sizeof(struct ur_fwd_hdr)];
	struct tx_batch handon;        /* packets for another process (udp_handon.c) */
};

/* One receive context of the reactor (engine.h): its share of port 4791
 * and what its callbacks use.  They never run two at a time, so none of it
 * needs a lock; context 0 also reads our own sockets and our unix socket. */
struct ur_udp_rx {
	unsigned index;
	struct ur_rx_batch *batch;
	struct ur_udp_fault *fault;        /* UROCE_FAULTS, or NULL (udp_fault.c) */
	struct ur_udp_sock roce4, roce6;   /* port 4791, while router */
	uint64_t pkts;                     /* packets read here (atomic adds) */
	uint64_t strays;                   /* ... steered to another context's QPs */
};

/* A process of this host we send to over a connected unix socket. */
struct ur_udp_peer {
	pid_t pid;                         /* 0: a free entry */
	struct ur_udp_sock sock;
};

struct ur_udp {
	struct ur_xport xport;
	struct ur_engine *engine;
	struct ur_registry *reg;           /* the process's view of the host registry */
	struct ur_xport_hooks hooks;
	struct ur_xport_stats stats;       /* atomic adds */
	struct ur_udp_sock own4, own6;     /* direct sockets, ephemeral ports */
	unsigned nrx;                      /* receive contexts: the engine's */
	struct ur_udp_rx *rx[UR_ENGINE_MAX_RX];
	int fwd_fd;                        /* abstract unix socket: packets and messages in */
	int router_lock_fd;
	int router_pidfd;                  /* the router's, watched while not router */
	int router_pid;
	bool router;
	bool leaving;                      /* at exit: never elected again */
	unsigned gen;                      /* the fork generation that opened it (not a child's) */
	bool bind_warned;
	uint64_t next_election_ns;
	pid_t reserve_pid;                 /* router: who holds the port in reserve (0: none) */
	struct {                           /* not router: the router's port, held unread */
		struct ur_fwd_port port;   /* port.pid: that router */
		int fds[UR_FWD_MAX_FDS];
		unsigned nfds;             /* 0: none */
	} reserve;
	pthread_mutex_t peers_lock;        /* peers[].pid, connecting */
	struct ur_udp_peer peers[UR_UDP_PEERS];
};

#define UR_UDP_COUNT(u, field, n) __atomic_add_fetch(&(u)->stats.field, (n), __ATOMIC_RELAXED)

/* Closes *fd and leaves -1 there, in that order reversed: the field never
 * names a closed descriptor, which another thread may have been given
 * again, so a child forked in between (udp_host_port.c's fork handler
 * closes what the fields name) never closes one not ours. */
static inline void ur_udp_close_fd(int *fd)
{
	int f = *fd;

	*fd = -1;
	if (f >= 0)
		close(f);
}

/* ---- udp_sock.c: sockets ------------------------------------------------- */
/* reuse: one of a group on the port (SO_REUSEPORT), the kernel picks. */
int ur_udp_open_sock(struct ur_udp_sock *s, struct ur_udp *u, int family, uint16_t port,
		     bool reuse);
void ur_udp_close_sock(struct ur_udp_sock *s);
/* Takes fd, a socket of family bound to port 4791 by another process that
 * handed it on (udp_port_pass.c), as s: 0, or -EINVAL (not such a socket;
 * fd is left to the caller). */
int ur_udp_adopt_sock(struct ur_udp_sock *s, struct ur_udp *u, int family, int fd);
/* Arms or disarms EPOLLOUT on one socket (no system call if unchanged). */
void ur_udp_sock_arm(struct ur_udp_sock *s, bool on);
/* 0, 1: our own IPv4 and IPv6 sockets; then the peers'. */
static inline struct ur_udp_sock *ur_udp_sock_at(struct ur_udp *u, int i)
{
	if (i == 0)
		return &u->own4;
	if (i == 1)
		return &u->own6;
	/* pid is published (release) after the socket it names is set up,
	 * by whichever thread connected it. */
	return __atomic_load_n(&u->peers[i - 2].pid, __ATOMIC_ACQUIRE) ? &u->peers[i - 2].sock
									: NULL;
}
/* Every socket, own and peers', for the writability bookkeeping. */
#define ur_udp_for_each_sock(u, s, i)                                              \
	for ((i) = 0; (i) < 2 + UR_UDP_PEERS; (i)++)                               \
		if (((s) = ur_udp_sock_at(u, i)) && (s)->fd >= 0)
/* A send to a local peer failed for good: reconnect before the next one. */
static inline void ur_udp_sock_stale(struct ur_udp_sock *s)
{
	__atomic_store_n(&s->stale, true, __ATOMIC_RELEASE);
}

/* ---- udp_fwd.c: a process's unix socket and what travels on it ---------- */
/* The abstract unix address of process pid's socket. */
socklen_t ur_udp_fwd_addr(struct sockaddr_un *sun, pid_t pid);
/* Opens and binds ours (u->fwd_fd), asking for senders' credentials. */
int ur_udp_fwd_open(struct ur_udp *u);
/* Whether a datagram received on it came from a process of our user. */
bool ur_udp_fwd_sender_ok(const struct msghdr *msg);
/* The header of packets bound for process pid's socket. */
void ur_udp_fwd_hdr_packets(struct ur_fwd_hdr *h, const struct ur_roce_ip *ip, uint8_t tclass,
			    uint8_t hop, uint16_t seg);
void ur_udp_fwd_hdr_msg(struct ur_fwd_hdr *h);
/* The descriptors a datagram on it carried (SCM_RIGHTS), at most max into
 * fds, their number; any beyond max are closed. */
unsigned ur_udp_fwd_fds(const struct msghdr *msg, int *fds, unsigned max);
/* Checks a received header: 0, or -EINVAL (not ours, wrong version). */
int ur_udp_fwd_hdr_check(const struct ur_fwd_hdr *h, struct ur_roce_ip *ip);
/* Sends one packet that arrived on port 4791 to process pid's socket, as
 * one datagram, unconnected: lost if its queue is full (the way of last
 * resort, udp_handon.c). */
int ur_udp_forward_one(struct ur_udp *u, pid_t pid, const uint8_t *pkt, size_t len,
		       const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop);

/* ---- udp_send.c: batches onto sockets ------------------------------------ */
/* One batch, now: 0, -EAGAIN (no room), or another -errno (a loss). */
int ur_udp_transmit(struct ur_udp *u, const struct tx_batch *b);
/* Keeps a batch the socket had no room for, after those already kept:
 * -EAGAIN.  A handed-on batch past UR_HANDON_KEEP_PKTS kept is not:
 * -ENOBUFS (-ENOMEM without memory), counted lost in the transport; the
 * caller counts it against a device. */
int ur_udp_park(struct ur_udp *u, const struct tx_batch *b);
bool ur_udp_has_pending(struct ur_udp_sock *s);
/* Sends what one socket / every socket kept; -EAGAIN while some remain. */
int ur_udp_flush_pending_sock(struct ur_udp *u, struct ur_udp_sock *s);
int ur_udp_flush_pending(struct ur_udp *u);
/* Frees what s keeps, every packet counted lost (host_lost); returns
 * how many. */
uint32_t ur_udp_drop_pending(struct ur_udp *u, struct ur_udp_sock *s);
/* The engine's callback for a socket we only send on (arg: its struct
 * ur_udp_sock), and the sending half of every other's: when it has room
 * (EPOLLOUT) or failed, what every socket kept goes, and the hooks hear
 * that the transport may take more. */
void ur_udp_on_room(void *arg, uint32_t events);
/* Which sockets the engine watches for room: those with kept batches and,
 * while somebody waits with nothing kept, our own (writable at once). */
void ur_udp_update_writable(struct ur_udp *u, bool waiting);

/* ---- udp_handon.c: the router handing packets on ----------------------------- */
/* A packet that arrived on port 4791 (rx's) for process pid: staged with
 * those before it for the same process and flow, to leave as one batch on
 * the connected socket to that process, which pushes back. */
void ur_udp_hand_on(struct ur_udp *u, struct ur_udp_rx *rx, pid_t pid, const uint8_t *pkt,
		    size_t len, const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop);
/* What rx staged, now: sent, or kept for a full socket (bounded), or
 * counted lost.  At the end of every receive round. */
void ur_udp_hand_on_flush(struct ur_udp *u, struct ur_udp_rx *rx);

/* ---- udp_rx.c: receive ---------------------------------------------------- */
/* Any UDP socket of ours (own, port 4791, local peers' for EPOLLOUT). */
void ur_udp_on_sock_event(void *arg, uint32_t events);
/* Our unix socket: packets handed over, local peers' batches, messages. */
void ur_udp_on_fwd_readable(void *arg, uint32_t events);
/* One datagram read from it, from a process of our user: a header, then
 * RoCE packets (one, or a batch cut every seg bytes) or a local message.
 * Anything malformed is counted and dropped (fuzzed by tests/fuzz/fuzz_local). */
void ur_udp_on_fwd_datagram(struct ur_udp *u, const uint8_t *buf, size_t len);

/* A received packet's addresses as GIDs. */
void ur_udp_ip_gids(const struct ur_roce_ip *ip, union ibv_gid *sgid, union ibv_gid *dgid);

/* n packets lost between processes of this host, counted in the
 * transport's stats and against the device of gid (UR_XPORT_DROP_HOST_LOST). */
void ur_udp_host_lost(struct ur_udp *u, const union ibv_gid *gid, uint32_t n);
/* The same for a batch that will not leave: against its sender's device
 * (a handed-on batch: its receiver's), the GID ur_udp_batch_gid gives. */
void ur_udp_batch_lost(struct ur_udp *u, const struct tx_batch *b);
void ur_udp_batch_gid(const struct tx_batch *b, union ibv_gid *gid);
/* Against the device of gid only: the transport counted them already. */
void ur_udp_lost_on_device(struct ur_udp *u, const union ibv_gid *gid, uint32_t n);

/* Checks a received packet's ICRC and hands it up (counted, or dropped and counted). */
void ur_udp_deliver(struct ur_udp *u, const uint8_t *pkt, size_t len, const struct ur_roce_ip *ip,
		    uint8_t tclass, uint8_t hop);

/* ---- udp_fault.c: the fault injector (UROCE_FAULTS) ------------------------ */
struct ur_udp_fault;
/* Receive context index's injector, if the environment asks for one: its
 * own random sequence (the seed plus the index), its own held packet. */
struct ur_udp_fault *ur_udp_fault_new(unsigned index);
/* Loses, holds back, corrupts or duplicates the packet, then delivers. */
void ur_udp_fault_rx(struct ur_udp *u, struct ur_udp_fault *f, const uint8_t *pkt, size_t len,
		     const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop);

/* ---- udp_host_peers.c: this host's other processes ----------------------- */
/* The connected unix socket to process pid, or NULL (table full, or the
 * process is gone) to fall back to UDP. */
struct ur_udp_sock *ur_udp_peer_sock(struct ur_udp *u, pid_t pid);
void ur_udp_peers_init(struct ur_udp *u);
void ur_udp_peers_close(struct ur_udp *u);
int ur_udp_local_msg(struct ur_xport *x, pid_t pid, const struct iovec *iov, int iovcnt);

/* ---- udp_tx.c: staging ----------------------------------------------------- */
int ur_udp_send(struct ur_xport *x, const struct ur_path *path, const struct ur_tx_pkt *pkt);
int ur_udp_flush(struct ur_xport *x);
/* Sends what waits for room, for at most timeout_ms; what still waits
 * then is dropped, counted (host_lost) and said. */
void ur_udp_drain(struct ur_xport *x, int timeout_ms);
void ur_udp_want_writable(struct ur_xport *x, bool waiting);
int ur_udp_flush_kept(struct ur_xport *x);
enum ur_behind ur_udp_peer_behind(struct ur_xport *x);

/* ---- udp_host_port.c: port 4791 for the host ----------------------------- */
void ur_udp_router_elect(struct ur_udp *u);
/* At exit: frees port 4791 (and the router lock) now, for the next
 * election, and stands for none again. */
void ur_udp_router_leave(struct ur_udp *u);
/* Leaves, stops watching the router and closes the lock file: for a
 * transport that is closed (udp_open.c). */
void ur_udp_router_close(struct ur_udp *u);
/* A child of fork() closes its copies of the port's descriptors (u's). */
void ur_udp_router_watch_forks(struct ur_udp *u);
/* A UR_FWD_PORT datagram (buf, len, its sender checked) and the nfds
 * descriptors it carried, from a router that exits: this process serves
 * the port with them from now on, or closes them and elects. */
void ur_udp_router_take(struct ur_udp *u, const uint8_t *buf, size_t len, int *fds, unsigned nfds);

/* ---- udp_port_pass.c: port 4791 passed on without a gap ---------------- */
enum ur_port_left {
	UR_PORT_FREED,                 /* nobody has it: the caller unlocks */
	UR_PORT_HANDED,                /* another process has it: close, never unlock */
};
/* At exit, the port's sockets and lock unwatched and read by no callback:
 * sends them to another live process of the namespace, the reserve
 * holder first. */
enum ur_port_left ur_udp_port_hand_on(struct ur_udp *u);
/* The router's tick: a copy of the port with one other live process, if
 * none holds one (UR_FWD_PORT_RESERVE). */
void ur_udp_port_send_reserve(struct ur_udp *u);
/* Closes the copy this process holds in reserve (never unlocks). */
void ur_udp_port_drop_reserve(struct ur_udp *u);
/* What a UR_FWD_PORT datagram (buf, len) with nfds descriptors says, into
 * *port: NULL, or why this process cannot take it. */
const char *ur_udp_port_check(struct ur_udp *u, const uint8_t *buf, size_t len, unsigned nfds,
			      struct ur_fwd_port *port);
/* Holds port's descriptors in reserve (replacing any held before). */
void ur_udp_port_keep(struct ur_udp *u, const struct ur_fwd_port *port, const int *fds,
		      unsigned nfds);
/* Takes port's sockets (fds[1..]) into the receive contexts, all or none:
 * NULL, or why not (the descriptors stay the caller's to close). */
const char *ur_udp_port_adopt(struct ur_udp *u, const struct ur_fwd_port *port, const int *fds);

/* ---- udp_lock_file.c: the router lock file's record ---------------------- */
/* Writes "this process serves the port; taker takes it after" (0: none):
 * 0 or -errno. */
int ur_udp_lock_record(struct ur_udp *u, pid_t taker);
/* The record: the router's pid and its taker's (0 where it names none). */
void ur_udp_lock_read(struct ur_udp *u, pid_t *router, pid_t *taker);

/* ---- udp_route.c, udp_mcast.c ------------------------------------------- */
int ur_udp_resolve(struct ur_xport *x, const union ibv_gid *sgid, unsigned ifindex,
		   const union ibv_gid *dgid, uint32_t dqpn, struct ur_path *path);
int ur_udp_mcast(struct ur_xport *x, const union ibv_gid *gid, unsigned ifindex, bool join);

#endif
