/* Datagram rsockets (rs_proto.h has the protocol): a UDP socket, whose
 * number the application holds, and a UD QP per local address the socket
 * sends from.  A destination is known by its IP address and UDP port; until
 * its QP is known (the answer to our first datagram, which went by UDP),
 * datagrams to it go by UDP too.  A thread of the process (dgram_svc.c)
 * reads every datagram rsocket's UDP socket: the answers, and datagrams
 * from senders that do not know our QP yet, which it queues for recvfrom
 * beside those that came over UD.
 *
 * All of it is under the rsocket's lock (rsocket.h). */
#ifndef UROCE_RSOCKET_DGRAM_H
#define UROCE_RSOCKET_DGRAM_H

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <rdma/rdma_cma.h>

#include "rsocket/rs_proto.h"

struct rsock;

/* Our UD QP for one local address. */
struct rs_ds_qp {
	struct rs_ds_qp *next;
	struct rdma_cm_id *id;             /* bound to the address, on its device */
	struct sockaddr_storage local;     /* that address, with the UDP socket's port */
	uint8_t hdr[RS_DS_V6_LEN];         /* the datagram header naming it */
	uint8_t hdr_len;
	uint32_t mtu;                      /* the most one UD message carries */
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	bool armed;
	struct ibv_mr *smr, *rmr;
	uint8_t *rbuf;                     /* rq_size slots of RS_SNDLOWAT, then one GRH */
};

/* A destination: where datagrams to it leave from and, once known, its QP. */
struct rs_ds_dest {
	struct sockaddr_storage addr;      /* the key: family, port, address */
	struct rs_ds_qp *qp;
	struct ibv_ah *ah;                 /* NULL until its QP is known */
	uint32_t qpn;
};

/* A datagram waiting for recvfrom: in a receive slot of qp, or (qp NULL)
 * a copy of one that came by UDP. */
struct rs_ds_msg {
	struct rs_ds_qp *qp;
	uint32_t offset;                   /* of the slot in qp->rbuf */
	uint8_t *copy;
	const uint8_t *data;
	uint32_t len;
	struct sockaddr_storage src;
	socklen_t src_len;
};

struct rs_dgram {
	int epfd;                          /* the QPs' channels and evfd: what a sleeper waits on */
	int evfd;                          /* the UDP thread queued a datagram */
	bool ready;                        /* buffers made, the UDP thread reads our socket */
	struct rs_ds_qp *qps;
	void *dests;                       /* tsearch tree of struct rs_ds_dest */
	struct rs_ds_dest *conn_dest;      /* rconnect's: where rsend goes */
	struct ibv_ah **old_ahs;           /* replaced, kept until close (a send may name one) */
	unsigned n_old_ahs;

	uint8_t *sbuf;                     /* sq_size slots of RS_SNDLOWAT */
	uint16_t *free_slots;
	int sqe_avail;
	struct rs_ds_msg *ring;            /* received, rq_size + 1 entries */
	unsigned head, tail;
	int rqe_avail;

	uint64_t dropped;                  /* no room, or not an rsocket datagram (the first is said) */
	bool said_mtu;                     /* that those over the MTU go by UDP */
};

int rs_ds_new(int domain, int type, struct rsock **out);
void rs_ds_free(struct rsock *rs);
int rs_ds_bind(struct rsock *rs, const struct sockaddr *addr, socklen_t len);
int rs_ds_connect(struct rsock *rs, const struct sockaddr *addr, socklen_t len);
ssize_t rs_ds_send(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags,
		   const struct sockaddr *dst, socklen_t dst_len);
ssize_t rs_ds_recv(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags,
		   struct sockaddr *src, socklen_t *src_len);

/* Progress and sleeping, as data.c's for streams. */
void rs_ds_progress(struct rsock *rs);
bool rs_ds_arm(struct rsock *rs);
void rs_ds_sleep(struct rsock *rs, int timeout_ms);
short rs_ds_poll_events(struct rsock *rs);
void rs_ds_poll_arm(struct rsock *rs, struct pollfd *p);
void rs_ds_drain(struct rsock *rs);

/* What came on the UDP socket (the UDP thread, rs->lock held). */
void rs_ds_udp_input(struct rsock *rs);

/* dgram_svc.c: the thread that reads the UDP sockets. */
int rs_ds_svc_add(int fd);
void rs_ds_svc_remove(int fd);

#endif
