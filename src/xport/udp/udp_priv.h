/* Internals shared by the UDP transport's files. */
#ifndef UROCE_XPORT_UDP_UDP_PRIV_H
#define UROCE_XPORT_UDP_UDP_PRIV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "util/compiler.h"
#include "wire/icrc.h"
#include "host/registry.h"
#include "xport/udp/udp.h"

#define UR_UDP_BATCH 8
#define UR_UDP_BUF 65536           /* a UDP GRO buffer: many packets of one flow */
#define UR_FWD_MAGIC 0x75465744u   /* "uFWD" */
#define UR_FWD_VERSION 1

#include <pthread.h>

struct ur_udp;
struct tx_batch;

struct ur_udp_sock {
	struct ur_udp *u;
	int fd;
	int family;                    /* AF_INET, AF_INET6, or AF_UNIX: a local peer */
	bool armed;                    /* the engine watches it for EPOLLOUT */
	bool stale;                    /* AF_UNIX: the peer went away; reconnect */
	uint16_t port;                 /* host byte order */
	bool roce_port;                /* bound to 4791: packets may be for others */
	/* Batches the socket had no room for, oldest first (udp_tx.c). */
	pthread_mutex_t pending_lock;
	struct tx_batch *pending, *pending_tail;
};

/* What the router puts before a packet it hands to the owning process. */
struct ur_fwd_hdr {
	uint32_t magic;
	uint16_t version;
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
	uint8_t ctrl[UR_UDP_BATCH][128];
	uint8_t buf[UR_UDP_BATCH][UR_UDP_BUF + sizeof(struct ur_fwd_hdr)];
};

/* A process of this host we send to over a connected unix socket. */
struct ur_udp_peer {
	pid_t pid;                         /* 0: a free entry */
	struct ur_udp_sock sock;
};

#define UR_UDP_PEERS 64

struct ur_udp {
	struct ur_xport xport;
	struct ur_engine *engine;
	struct ur_udp_sock own4, own6;     /* direct sockets, ephemeral ports */
	struct ur_udp_sock roce4, roce6;   /* port 4791, while router */
	int fwd_fd;                        /* abstract unix socket: packets from the router */
	int router_lock_fd;
	bool router;
	bool bind_warned;
	uint64_t next_election_ns;
	struct ur_rx_batch *batch;         /* engine thread only */
	pthread_mutex_t peers_lock;        /* peers[].pid, connecting */
	struct ur_udp_peer peers[UR_UDP_PEERS];
};

int ur_udp_open_sock(struct ur_udp_sock *s, struct ur_udp *u, int family, uint16_t port);
void ur_udp_close_sock(struct ur_udp_sock *s);
void ur_udp_on_readable(void *arg, uint32_t events);

/* Router side. */
int ur_udp_fwd_open(struct ur_udp *u);
void ur_udp_on_fwd_readable(void *arg, uint32_t events);
void ur_udp_router_elect(struct ur_udp *u);
/* A packet that arrived on 4791 for a QP of another process. */
void ur_udp_forward(struct ur_udp *u, uint32_t qpn, const uint8_t *pkt, size_t len,
		    const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop);

void ur_udp_forward_to(struct ur_udp *u, pid_t pid, const uint8_t *pkt, size_t len,
		       const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop);

/* Local peers (udp_local.c): the connected unix socket to process PID,
 * or NULL (table full, or the process is gone) to fall back to UDP. */
struct ur_udp_sock *ur_udp_peer_sock(struct ur_udp *u, pid_t pid);
/* A send to the peer failed for good: reconnect before the next one. */
void ur_udp_peer_gone(struct ur_udp_sock *s);
void ur_udp_peers_init(struct ur_udp *u);
/* A control datagram to process pid (struct ur_xport_ops.local_msg). */
int ur_udp_local_msg(struct ur_xport *x, pid_t pid, const struct iovec *iov, int iovcnt);
void ur_udp_peers_close(struct ur_udp *u);
/* Every socket, own and peers', for the writability bookkeeping. */
#define ur_udp_for_each_sock(u, s, i)                                              \
	for ((i) = 0; (i) < 2 + UR_UDP_PEERS; (i)++)                               \
		if (((s) = ur_udp_sock_at(u, i)) && (s)->fd >= 0)
/* 0, 1: our own IPv4 and IPv6 sockets; then the peers'. */
struct ur_udp_sock *ur_udp_sock_at(struct ur_udp *u, int i);
/* Arms or disarms EPOLLOUT on one socket (no system call if unchanged). */
void ur_udp_sock_arm(struct ur_udp_sock *s, bool on);
/* The abstract unix address of process PID's forwarding socket. */
socklen_t ur_udp_fwd_addr(struct sockaddr_un *sun, pid_t pid);

/* Multicast: membership on our own socket, fan-out at the router. */
int ur_udp_mcast(struct ur_xport *x, const union ibv_gid *gid, unsigned ifindex, bool join);
void ur_udp_mcast_fanout(struct ur_udp *u, const uint8_t *pkt, size_t len,
			 const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop);

/* Transmit path (udp_tx.c). */
int ur_udp_send(struct ur_xport *x, const struct ur_path *path, const struct ur_tx_pkt *pkt);
int ur_udp_flush(struct ur_xport *x);

/* Checks the ICRC and hands the packet to the engine. */
void ur_udp_deliver(struct ur_udp *u, const uint8_t *pkt, size_t len,
		    const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop);

#endif
