/* uroce's librdmacm.so.1: rdma-core 44's librdmacm ABI over uroce's
 * devices, with the IBTA communication manager (src/cm) on QP1.
 *
 * One CM per process (struct cma): the devices it opened (the contexts
 * ids hand out as id->verbs), QP1's receiver attached to uroce's stack,
 * and a thread that runs what arrives and the CM's timers.  Everything
 * below runs under cma.lock; functions return 0 or -errno and the exported
 * rdma_* functions (this folder's ABI files) convert once, setting errno.
 */
#ifndef UROCE_RDMACM_CMA_H
#define UROCE_RDMACM_CMA_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>

#include "cm/cm.h"
#include "util/list.h"

#define CMA_MAX_DEVS 16
#define CMA_REQ_PRIV (UR_CM_REQ_PRIV - UR_CMA_HDR_BYTES)   /* 56: what a user may send */
#define CMA_UDP_QKEY 0x01234567u

struct cma_dev {
	struct ibv_context *verbs;
	struct ibv_pd *pd;             /* for rdma_create_qp without a PD */
	struct ibv_xrcd *xrcd;         /* for XRC_RECV QPs and XRC SRQs of ids */
	uint64_t guid;
	enum ibv_mtu mtu;
	uint8_t max_rd_atom;           /* the device's max_qp_rd_atom */
};

struct cma_channel {
	struct rdma_event_channel ch;  /* ch.fd: an eventfd, one count per event */
	bool sync;                     /* made for an id created without a channel */
	struct ur_list events;         /* queued, not yet got */
	unsigned readers;              /* threads inside rdma_get_cm_event */
	bool closed;                   /* destroyed (readers may be inside) */
	struct ur_list buried;         /* destroyed, kept: see channel.c */
};

struct cma_event {
	struct rdma_cm_event ev;
	struct ur_list link;
	uint8_t priv[UR_CM_PRIV_MAX];
};

struct cma_id {
	struct rdma_cm_id id;          /* what the application sees */
	struct ur_list link;           /* on cma.ids */
	struct cma_channel *chan;
	bool own_chan;                 /* chan was made for this id (synchronous) */
	struct ur_cm_conn conn;
	uint32_t comm_num;             /* the host-unique number in our comm ID */
	bool bound, listening, connect_sent, disconnected;
	struct sockaddr_storage src, dst;
	int dev;                       /* index in cma.devs, -1: none yet */
	int gid_index;
	union ibv_gid sgid, dgid;
	struct ibv_sa_path_rec path;
	/* Options. */
	uint8_t tos;
	bool tos_set, reuseaddr;
	uint8_t ack_timeout;
	/* The listener: its backlog and its children not yet accepted. */
	int backlog, pending;
	struct cma_id *listener;       /* a child's, until it is accepted or rejected */
	/* The connection. */
	struct rdma_conn_param param;  /* ours (resources, retries) */
	struct ur_cm_msg req;          /* the REQ (passive) */
	/* The Starting PSN our REQ or REP carries: where our QP receives
	 * from.  As the kernel's ib_cm reads it, a REQ's or REP's Starting
	 * PSN is the first PSN its sender expects; the peer sends from it. */
	uint32_t psn;
	uint32_t peer_psn;             /* the peer's: we send from it */
	uint32_t qp_num;               /* the local QP (id->qp's, or conn_param's) */
	/* Events handed out and not yet acked: destroy waits for them. */
	int events_out;
	/* Multicast groups joined (struct cma_mc, mcast.c). */
	struct ur_list mcs;
	/* rdma_create_ep: what a listener's children are created with. */
	struct ibv_qp_init_attr *ep_attr;
	bool own_cqs;                  /* rdma_create_qp made id->send_cq/recv_cq */
};

struct cma {
	pthread_mutex_t lock;
	pthread_cond_t acked;          /* an event was acked */
	unsigned gen;                  /* the fork generation whose CM this is (cma.c) */
	bool ready;
	int init_err;
	struct cma_dev devs[CMA_MAX_DEVS];
	int ndev;
	struct ibv_context **verbs_list;   /* NULL-terminated, for rdma_get_devices */
	struct ur_list ids;
	/* MADs from the engine thread to ours. */
	pthread_mutex_t rx_lock;
	struct ur_list rx;
	int wake_fd;                   /* eventfd */
	pthread_t thread;
};

extern struct cma cma;

static inline struct cma_id *to_cid(struct rdma_cm_id *id)
{
	return (struct cma_id *)id;
}

/* The exported functions' convention for a 0 or -errno result: 0, or -1
 * with errno set. */
static inline uint8_t cma_min8(unsigned a, unsigned b)
{
	return (uint8_t)(a < b ? a : b);
}

static inline int cma_abi_ret(int ret)
{
	if (ret) {
		errno = -ret;
		return -1;
	}
	return 0;
}

/* An exported function that only runs CALL (0 or -errno) under cma.lock. */
#define cma_locked_abi_call(call)                                          \
	({                                                                  \
		int ret_;                                                   \
									    \
		pthread_mutex_lock(&cma.lock);                              \
		ret_ = (call);                                              \
		pthread_mutex_unlock(&cma.lock);                            \
		cma_abi_ret(ret_);                                          \
	})

/* cma.c */
int cma_init(void);                 /* takes no lock; idempotent */
/* What the CM thread hands up, under cma.lock: each parsed MAD (with the
 * device and GID it came to) and its timer (next: the earliest deadline
 * left, 0 if none).  conn_rx.c registers them when the library loads. */
struct cma_upcalls {
	void (*on_mad)(const struct ur_cm_msg *m, int dev, int gid_index,
		       const union ibv_gid *sgid);
	void (*tick)(uint64_t now, uint64_t *next);
};
void cma_set_upcalls(const struct cma_upcalls *up);
uint64_t cma_now(void);
void cma_wake(void);
int cma_dev_of_gid(const union ibv_gid *gid, int *gid_index);
int cma_dev_of_verbs(struct ibv_context *verbs);
struct cma_id *cma_find_comm(uint32_t comm_id);
void cma_send(struct cma_id *c, const struct ur_cm_msg *m);
void cma_send_to(int dev, int gid_index, const union ibv_gid *dgid, const struct ur_cm_msg *m);

/* res.c: the ids' lines for `uroce res` (uroce_res_cm_fn). */
void cma_res_dump(void *arg, FILE *f);
/* channel.c */
int cma_channel_open(bool sync, struct cma_channel **out);
void cma_channel_close(struct cma_channel *c);
/* Forgets the queued (not yet got) events of id c: it is going. */
void cma_channel_drop(struct cma_channel *ch, struct cma_id *c);
/* Moves the queued events of id c to another channel. */
void cma_channel_move(struct cma_channel *from, struct cma_channel *to, struct cma_id *c);
/* Queues an event for c's channel; priv (len bytes) is copied. */
int cma_event(struct cma_id *c, enum rdma_cm_event_type type, int status, const void *priv,
	      size_t len, struct cma_event **out);
/* A UD answer (SIDR's ESTABLISHED, MULTICAST_JOIN) names where to send: to
 * dgid through c's GID, as ibv_create_ah takes it, QP qpn with Q_Key qkey. */
void cma_event_set_ud(struct cma_event *e, const struct cma_id *c, const union ibv_gid *dgid,
		      uint8_t hop_limit, uint32_t qpn, uint32_t qkey);
/* A synchronous id keeps the last event it waited for in id->event, as
 * rdma-core's does (rdma_xclient reads the REP's private data there): it
 * counts as acked at once and is freed when the next one replaces it or
 * the id goes (cma.lock held). */
void cma_keep_event(struct cma_id *c, struct rdma_cm_event *ev);
void cma_drop_kept(struct cma_id *c);
/* Waits for the next event of a synchronous id's channel. */
int cma_wait_event(struct cma_id *c, enum rdma_cm_event_type want, struct rdma_cm_event **out);

/* id.c */
int cma_id_new(struct cma_channel *ch, void *context, enum rdma_port_space ps,
	       enum ibv_qp_type qpt, struct cma_id **out);
void cma_id_free(struct cma_id *c);
/* sockaddr.c */
uint16_t cma_port_of(const struct sockaddr *sa);
uint64_t cma_service_id(const struct cma_id *c);
/* The device's PD, made on first use (cma.lock held): as rdma-core's
 * librdmacm, one per device, shared by the ids bound to it. */
struct ibv_pd *cma_dev_pd(int dev);
/* Binds c to device dev: id->verbs, id->port_num and, as rdma-core does,
 * id->pd (the device's PD), which programs use (UCX's rdmacm CM makes
 * its QPs on it). */
void cma_id_set_dev(struct cma_id *c, int dev);
/* The device's XRC domain, opened on first use (cma.lock held), as
 * rdma-core's librdmacm shares one per device among its ids. */
struct ibv_xrcd *cma_dev_xrcd(int dev);

/* addr.c */
int cma_resolve(struct cma_id *c, const struct sockaddr *src, const struct sockaddr *dst);
void cma_fill_route(struct cma_id *c);

/* listen.c */
struct cma_id *cma_find_listener(uint64_t service_id, int dev);
/* The child a request (REQ or SIDR_REQ) from `from` already made, if any. */
struct cma_id *cma_find_child(const struct ur_cm_msg *req, const union ibv_gid *from);
/* A child of listener l for request m (cma.lock held): the request kept,
 * its addresses from rdma_cm's header h, its device, GIDs and route;
 * -ENOSPC when l's backlog is full. */
int cma_child_new(struct cma_id *l, const struct ur_cm_msg *m, const struct ur_cma_hdr *h,
		  int dev, int gid_index, const union ibv_gid *from, struct cma_id **out);
/* Marks a child's CONNECT_REQUEST event with its listener. */
void cma_child_event(struct cma_id *c, struct cma_event *e);
/* priv.c: the private data of a REQ or SIDR_REQ.
 * -EINVAL if p's private data is missing or longer than room. */
int cma_check_priv(const struct rdma_conn_param *p, size_t room);
/* m's private data as rdma_cm lays it out: its header (IP version, source
 * port, both addresses, from c), then p's. */
void cma_pack_priv(const struct cma_id *c, const struct rdma_conn_param *p, struct ur_cm_msg *m);
/* conn_qp.c: the QP moves of a connection.  A fresh 24-bit starting PSN. */
uint32_t cma_new_psn(void);
/* RTR, then RTS: receiving from c->psn (ours, advertised), sending from
 * peer_psn (the Starting PSN of the peer's REQ or REP). */
int cma_qp_to_rtr_rts(struct cma_id *c, uint32_t dqpn, uint32_t peer_psn, uint8_t mtu,
		      uint8_t dest_rd_atomic, uint8_t rd_atomic, uint8_t timeout,
		      uint8_t retry, uint8_t rnr_retry);
/* rdma_init_qp_attr: what moves a QP of c to a->qp_state (INIT, RTR,
 * RTS) as the CM would, in *a and *mask; -EINVAL when the connection is
 * not far enough along to know. */
int cma_qp_attr(struct cma_id *c, struct ibv_qp_attr *a, int *mask);
int cma_qp_to_error(struct cma_id *c);

/* sidr.c: UD ids (RDMA_PS_UDP, RDMA_PS_IB with a UD QP) resolve the
 * peer's QP number and Q_Key with SIDR_REQ/SIDR_REP, as the kernel's
 * rdma_cm does. */
#define CMA_SIDR_REQ_PRIV (UR_CM_SIDR_REQ_PRIV - UR_CMA_HDR_BYTES)   /* 180 */
int cma_sidr_connect(struct cma_id *c, const struct rdma_conn_param *p);
void cma_on_sidr_req(const struct ur_cm_msg *m, int dev, int gid_index, const union ibv_gid *from);
int cma_sidr_accept(struct cma_id *c, const struct rdma_conn_param *p);
int cma_sidr_reject(struct cma_id *c, const void *priv, uint8_t len);
void cma_sidr_answered(struct cma_id *c, const struct ur_cm_msg *m);

/* mcast.c: leaves every group c joined (c is going). */
void cma_mc_leave_all(struct cma_id *c);

/* qp.c */
int cma_qp_to_init(struct cma_id *c, struct ibv_qp *qp);

#endif
