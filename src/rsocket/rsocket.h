/* uroce's rsockets: rdma-core's socket API over RDMA (rsocket(7)), built on
 * uroce's own public rdma_cm and verbs, exported from librdmacm.so.1.
 *
 * A datagram rsocket is a UDP socket and UD QPs (dgram.h).
 *
 * A stream rsocket owns an rdma_cm id on an event channel of its own; the
 * channel's fd is the number the application holds (unique, since the
 * kernel handed it out, so rpoll can mix rsockets and ordinary fds).  Its
 * QP sends and receives on one CQ with a completion channel; both fds are
 * non-blocking, and a blocked call sleeps in poll() on the two.
 *
 * Every rsocket has one lock, held by a call for its whole run except
 * while it sleeps.  Functions here return 0 (or a count) or -errno; the
 * exported r* functions (api.c, opts.c, poll.c, iomap.c) set errno once.
 */
#ifndef UROCE_RSOCKET_RSOCKET_H
#define UROCE_RSOCKET_RSOCKET_H

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <rdma/rdma_cma.h>

#include "rsocket/rs_proto.h"
#include "util/enum_name.h"

#define RS_STATE_LIST(X)				\
	X(RS_IDLE, "idle")				\
	X(RS_BOUND, "bound")				\
	X(RS_LISTENING, "listening")			\
	X(RS_RESOLVING_ADDR, "resolving-addr")		\
	X(RS_RESOLVING_ROUTE, "resolving-route")	\
	/* REQ sent */					\
	X(RS_CONNECTING, "connecting")			\
	/* REP sent, waiting for ESTABLISHED */		\
	X(RS_ACCEPTING, "accepting")			\
	/* see rd_open/wr_open */			\
	X(RS_CONNECTED, "connected")			\
	/* err says why (ECONNREFUSED...) */		\
	X(RS_CONNECT_ERROR, "connect-error")		\
	X(RS_DISCONNECTED, "disconnected")		\
	X(RS_ERROR, "error")

UR_ENUM_DECLARE(rs_state, RS_STATE_LIST, RS_NSTATES, rs_state_names);

struct rs_iomap_mr;
struct rs_dgram;

struct rsock {
	int fd;                        /* the number the application holds */
	uint32_t spin_ns;              /* how long a blocking call spins (rs_spin_next) */
	int type;                      /* SOCK_STREAM, or SOCK_DGRAM (dg: dgram.h) */
	struct rs_dgram *dg;
	pthread_mutex_t lock;
	enum rs_state state;
	bool rd_open, wr_open;         /* while RS_CONNECTED: each way still open */
	int err;                       /* SO_ERROR: what went wrong, until read */
	bool nonblock;                 /* O_NONBLOCK (rfcntl) */
	int fd_flags;                  /* what F_GETFL answers */
	int domain;

	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_comp_channel *cc;
	struct ibv_cq *cq;
	bool cq_armed;
	bool cm_pending;                /* the channel's fd was readable */

	/* Options, fixed once the QP exists. */
	uint32_t sbuf_size, rbuf_size;
	uint16_t sq_size, rq_size;
	uint16_t sq_inline;
	uint16_t target_iomap_size;
	bool nodelay, keepalive, reuseaddr;
	uint32_t keepidle;             /* seconds */
	uint64_t last_keepalive_ns;

	/* Buffers and their registrations. */
	uint8_t *sbuf, *rbuf;
	struct ibv_mr *smr, *rmr;
	void *target;                  /* target SGL, then the target iomap */
	struct ibv_mr *tmr;
	struct rs_sge *target_sgl;     /* RS_SGL_SIZE: where the peer lets us write */
	struct rs_iomap *target_iomap; /* target_iomap_size: the peer's riomaps */
	struct rs_sge remote_sgl;      /* the peer's target SGL */
	struct rs_sge remote_iomap;    /* the peer's target iomap */
	int target_sge, remote_sge;
	bool swap_sgl;                 /* the peer's byte order differs from ours */

	/* Credits and queues. */
	uint16_t sseq_no, sseq_comp;   /* data messages sent / allowed */
	uint16_t rseq_no, rseq_comp;   /* consumed / when to grant more */
	unsigned ctrl_seqno, ctrl_max_seqno;
	int sqe_avail;                 /* send WRs left for data */
	uint32_t sbuf_bytes_avail;
	uint32_t sbuf_head;            /* where the next copy goes in sbuf */
	int rbuf_bytes_avail;          /* free, not yet advertised */
	uint32_t rbuf_free_offset;     /* the next half to advertise */
	uint32_t rbuf_offset;          /* where the reader is */
	uint32_t *rmsg;                /* lengths of received data messages (a ring) */
	unsigned rmsg_head, rmsg_tail, rmsg_size;

	/* riomap: our mapped buffers (iomap.c). */
	struct rs_iomap_mr *iomaps;
	int iomap_pending;             /* entries not yet written to the peer */
};

/* Process-wide defaults (rdma-core's), and the bounds of the options. */
#define RS_DEF_MEM      (1u << 17)
#define RS_DEF_QPSIZE   384
#define RS_DEF_INLINE   64
#define RS_QP_MIN_SIZE  16
#define RS_QP_MAX_SIZE  0xfffe
/* A blocking read (or an rpoll for POLLIN) spins before it sleeps: RS_SPIN_NS at first,
 * longer (up to RS_SPIN_MAX_NS) where answers came soon after the spin gave
 * up, as in a ping-pong over a path slower than the spin (two namespaces):
 * a sleep costs two wake-ups a hop there (the engine thread's, then the
 * completion channel's).  A wait that outlasts the longest spin halves
 * it again, so a socket that mostly idles spins little. */
#define RS_SPIN_NS      20000
#define RS_SPIN_MAX_NS  200000

/* The spin to use after a wait of waited_ns that slept (or not). */
static inline uint32_t rs_spin_next(uint32_t spin_ns, uint64_t waited_ns, bool slept)
{
	if (!spin_ns)
		spin_ns = RS_SPIN_NS;
	if (!slept)
		return spin_ns;
	if (waited_ns < RS_SPIN_MAX_NS) {
		uint64_t want = waited_ns + waited_ns / 4;

		return (uint32_t)(want > RS_SPIN_MAX_NS ? RS_SPIN_MAX_NS : want);
	}
	return spin_ns / 2 < RS_SPIN_NS ? RS_SPIN_NS : spin_ns / 2;
}
/* A sleeper looks again at least this often (a thread beside it may have
 * taken its wake-up). */
#define RS_NAP_MS       50

/* config.c: the defaults in use, uroce's above or an administrator's
 * (/etc/rdma/rsocket, as rdma-core's rsocket(7) describes). */
struct rs_config {
	uint32_t rmem, wmem;           /* mem_default, wmem_default: buffer bytes */
	uint16_t sq_size, rq_size;     /* sqsize_default, rqsize_default */
	uint16_t sq_inline;            /* inline_default */
	uint16_t iomap_size;           /* iomap_size: the peer's riomap entries */
	uint32_t polling_ns;           /* polling_time: the first spin before a sleep */
	int wake_ms;                   /* wake_up_interval: the longest sleep at once, or
					* -1 (rpoll sleeps its whole timeout) */
	int nap_ms;                    /* a blocking call's sleep: RS_NAP_MS or less */
};
const struct rs_config *rs_config(void);
/* A new rsocket's buffer and queue sizes, from the defaults. */
void rs_config_sizes(struct rsock *rs);

/* table.c: rsockets by number. */
int rs_table_add(struct rsock *rs);
struct rsock *rs_table_get(int fd);
void rs_table_del(int fd);
/* Runs fn on every rsocket, the table read-locked (rclose waits). */
void rs_table_each(void (*fn)(struct rsock *rs));
/* Runs fn on the rsocket numbered fd, if any, the same way. */
void rs_table_with(int fd, void (*fn)(struct rsock *rs));

/* ep.c: an id's QP, then its CQ and the CQ's channel, each that exists
 * (the id stays). */
void rs_free_queues(struct rdma_cm_id *id, struct ibv_cq *cq, struct ibv_comp_channel *cc);

/* res.c: what a connection needs. */
int rs_new(int domain, struct rsock **out);     /* an id on a channel of its own */
void rs_free(struct rsock *rs);                 /* everything, the id last */
int rs_create_ep(struct rsock *rs);             /* buffers, MRs, CQ, QP, receives */
int rs_post_recv(struct rsock *rs);
void rs_format_conn_data(const struct rsock *rs, struct rs_conn_data *c);
int rs_save_conn_data(struct rsock *rs, const void *priv, uint8_t len);

/* conn.c: the CM side, never blocking. */
/* Runs the CM events queued on rs's channel. */
void rs_cm_events(struct rsock *rs);
int rs_start_connect(struct rsock *rs, const struct sockaddr *dst);
/* Accepts the connection request ev (for listener l) into a new rsocket. */
int rs_accept_req(struct rsock *l, struct rdma_cm_event *ev, struct rsock **out);
/* A CONNECT_REQUEST waits on a listener's channel (taken off into l's queue). */
bool rs_listen_ready(struct rsock *l);
int rs_take_request(struct rsock *l, struct rdma_cm_event **out);

/* data.c: progress of the QP, credits, and sleeping. */
void rs_progress(struct rsock *rs);
bool rs_have_rdata(const struct rsock *rs);
bool rs_can_send(const struct rsock *rs);
bool rs_ctrl_avail(const struct rsock *rs);
bool rs_all_sends_done(const struct rsock *rs);
int rs_post_write_msg(struct rsock *rs, struct ibv_sge *sgl, int nsge, uint32_t msg, int flags,
		      uint64_t addr, uint32_t rkey);
int rs_post_write(struct rsock *rs, struct ibv_sge *sgl, int nsge, uint32_t wr_msg, int flags,
		  uint64_t addr, uint32_t rkey);
int rs_post_ctrl(struct rsock *rs, enum rs_ctrl ctrl);
void rs_update_credits(struct rsock *rs);
/* Sleeps (lock released) until the CQ or the channel has news, at most
 * timeout_ms (-1: no limit); arms the CQ first. */
void rs_sleep(struct rsock *rs, int timeout_ms);
/* Waits (progress, briefly spinning, then sleeping) until done(rs);
 * -EAGAIN instead of sleeping when nonblock. */
int rs_wait(struct rsock *rs, bool (*done)(const struct rsock *), bool nonblock);
/* The same for a reader waiting for data: its spin learns (rs_spin_next).
 * A writer waiting for credits keeps the short spin: spinning there takes
 * the core the peer's reader and the engine threads need to free them. */
int rs_wait_recv(struct rsock *rs, bool (*done)(const struct rsock *), bool nonblock);
/* wait.c: the loop of rs_wait and rs_wait_recv, and of the datagram
 * path's: progress(rs), then done(rs)? 0; nonblock? -EAGAIN; else spin
 * (learn: the learnt spin, rs_spin_next), arm (true: it armed something,
 * so look again) and sleep. */
struct rs_wait_ops {
	void (*progress)(struct rsock *rs);
	bool (*arm)(struct rsock *rs);
	void (*sleep)(struct rsock *rs);
};
int rs_wait_loop(struct rsock *rs, const struct rs_wait_ops *ops,
		 bool (*done)(const struct rsock *), bool nonblock, bool learn);
/* After progress: the socket's poll(2) events. */
short rs_poll_events(struct rsock *rs);
/* rpoll: arms rs and names the fds that wake a poll(2) for it; after the
 * poll, takes the CQ's events off its channel. */
void rs_poll_arm(struct rsock *rs, struct pollfd *cm, struct pollfd *cq);
void rs_poll_drain(struct rsock *rs, short cm_revents, short cq_revents);

/* xfer.c: the stream data path (rs->lock held). */
ssize_t rs_send_iov(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags);
ssize_t rs_recv_iov(struct rsock *rs, const struct iovec *iov, int iovcnt, int flags);
int rs_shutdown(struct rsock *rs, int how);

/* keepalive.c */
void rs_keepalive_start(void);
void rs_keepalive_send(struct rsock *rs);

/* xfer.c: copies n bytes from iov into sbuf at its head; the SGEs (1 or 2)
 * that name them, in sge[]. */
int rs_stage(struct rsock *rs, const struct iovec *iov, int iovcnt, uint32_t n,
	     struct ibv_sge *sge);

/* iomap.c */
void rs_iomap_free(struct rsock *rs);
/* Writes the entries of our new PROT_WRITE mappings into the peer's
 * target iomap (before the data that follows them). */
int rs_iomap_flush(struct rsock *rs, bool nonblock);

#endif
