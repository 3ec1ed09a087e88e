/* uroce srq-server internals, shared by its files.  Calls go one way, down
 * this list:
 *   srq_server.c     the command: signals, the epoll loop, the final table
 *   srq_srv_conn.c   one connection's life: handshake, DONE, verdict, end
 *   srq_srv_recv.c   the device, the shared SRQ and CQ, each completion
 *   srq_srv_opts.c   options and help */
#ifndef UROCE_TOOLS_SRQ_SRV_H
#define UROCE_TOOLS_SRQ_SRV_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "conn.h"
#include "opts.h"
#include "srq.h"

struct srv_opts {
	struct ur_conn_opts conn;       /* -d -i -g -p */
	uint32_t max_clients;   /* -q: serve this many, then exit */
	uint32_t depth;         /* -r: SRQ depth */
	uint32_t max_size;      /* -s: receive buffer size */
	uint32_t msgs;          /* -n: what each client must send (0: what it says) */
	double duration;        /* --duration: stop after this many seconds */
	bool verbose;
};

enum conn_state { CS_ACTIVE, CS_DRAINING, CS_DONE, CS_ABORTED, CS_BAD, CS_REJECTED };

struct srv_conn {
	uint32_t id;
	int fd;
	char peer[80];
	struct ibv_qp *qp;
	uint32_t qpn;
	struct srq_qpmap_entry map;
	bool mapped, cut;
	enum conn_state state;
	uint64_t msgs, bytes;
	uint32_t declared;      /* from DONE */
	uint64_t declared_bytes;
	uint8_t in[SRQ_DONE_BYTES];
	size_t inlen;
	double deadline;
	char error[200];
};

struct srv {
	struct srv_opts o;
	struct ur_dev d;
	bool dev_open;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_mr *mr;
	uint8_t *bufs;
	struct ibv_recv_wr *rwr, *pending;
	struct ibv_sge *rsge;
	int lfd, ep;
	char listen_tag, channel_tag;   /* epoll data for the non-connection fds */
	struct srv_conn **conns;
	uint32_t nconns, nlive;
	struct srq_qpmap map;
	uint64_t msgs, bytes, completions, reposted, stray;
	double t0, t_end;
	const char *stopped_by;
};

static inline double srv_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* srq_srv_conn.c */
int srv_accept(struct srv *s);
void srv_conn_readable(struct srv *s, struct srv_conn *c);
void srv_check_draining(struct srv *s);
/* Destroys the connection's QP and closes its socket; its row stays. */
void srv_conn_end(struct srv *s, struct srv_conn *c, enum conn_state st);
const char *srv_state_name(enum conn_state st);

/* srq_srv_recv.c */
/* Opens the device, CQ, SRQ and buffers with the first client (on FD). */
int srv_open_device(struct srv *s, int fd);
void srv_close_device(struct srv *s);
/* Counts and checks every completion the CQ holds, then refills the SRQ. */
int srv_drain_cq(struct srv *s);
/* Marks C bad with its first error (later ones add nothing). */
void srv_conn_fail(struct srv_conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* srq_srv_opts.c */
int srv_parse(int argc, char **argv, struct srv_opts *o);

#endif
