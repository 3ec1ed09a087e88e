/* Shared helpers of the qptypes test programs: checks, device setup, an
 * out-of-band TCP exchange between the two sides, QP transitions, polling
 * with time limits, async events and device counters.
 *
 * Only the public verbs API is used, so the programs run unchanged on any
 * RoCE device.  A program prints "ok: ..." or "FAIL: ..." per check and
 * exits 0 only if every check passed; a setup failure ends it at once
 * with exit 2.  Time limits are generous: they bound a hang, they never
 * measure speed. */
#ifndef QPT_H
#define QPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

/* ---- checks ---------------------------------------------------------- */

#define CHECK(cond, ...) qpt_check(!!(cond), __FILE__, __LINE__, __VA_ARGS__)
#define DIE(...) qpt_die(__FILE__, __LINE__, __VA_ARGS__)

bool qpt_check(bool ok, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void qpt_die(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));
void qpt_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The exit code: 0 if every check passed (and at least one ran). */
int qpt_finish(void);

/* ---- options ----------------------------------------------------------- */

struct qpt_opts {
	const char *dev;        /* -d: device name (default: the first) */
	int gidx;               /* -g: GID index (default 1) */
	int port;               /* -p: TCP port of the exchange */
	const char *host;       /* server to connect to: absent = server */
	const char *mode;       /* -m: what to run (program-specific) */
	int count;              /* -n: a program-specific count */
	const char *arg;        /* -a: a program-specific argument */
};

void qpt_parse(int argc, char **argv, struct qpt_opts *o);
static inline bool qpt_is_server(const struct qpt_opts *o) { return !o->host; }

/* ---- a program's main -------------------------------------------------- */

enum qpt_side { QPT_EITHER, QPT_SERVER, QPT_CLIENT };

/* One thing a program runs: for -m mode (NULL: any mode) on side. */
struct qpt_role {
	const char *mode;
	enum qpt_side side;
	void (*run)(const struct qpt_opts *o);
};

/* Each program defines its roles, ended by one with no run.  The shared
 * main (qpt.c) parses the options, runs the first role that fits -m and
 * the side and exits with qpt_finish(); with none that fits, it fails the
 * setup, naming the modes. */
extern const struct qpt_role qpt_roles[];

/* ---- device ------------------------------------------------------------ */

struct qpt_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_port_attr port;
	union ibv_gid gid;
	int gidx;
	unsigned mtu;                /* active MTU in bytes */
};

void qpt_open(struct qpt_dev *d, const char *name, int gidx);
void qpt_close(struct qpt_dev *d);
const char *qpt_gid_str(const union ibv_gid *gid, char buf[64]);
unsigned qpt_mtu_bytes(enum ibv_mtu m);

struct qpt_buf {
	uint8_t *p;
	size_t len;
	struct ibv_mr *mr;
};

/* A page-aligned zeroed buffer registered with access. */
void qpt_buf(struct qpt_dev *d, struct qpt_buf *b, size_t len, int access);
void qpt_buf_free(struct qpt_buf *b);

/* What one side made, for qpt_teardown; members left unset are skipped. */
struct qpt_made {
	struct qpt_dev *d;
	struct qpt_buf *buf;
	struct ibv_ah *ah;
	struct ibv_qp *const *qp;    /* nqp of them */
	int nqp;
	struct ibv_cq *cq[3];
};

/* The end of one side: both sides reach "done" (fd < 0: no peer to meet),
 * then what it made goes: the AH, the QPs (a QP holds its CQs), the CQs,
 * the region and the device. */
void qpt_teardown(int fd, const struct qpt_made *m);

/* ---- out-of-band exchange --------------------------------------------- */

/* What one side tells the other about an endpoint. */
struct qpt_ep {
	union ibv_gid gid;
	uint32_t qpn, psn, rkey, srqn;
	uint64_t addr;
	uint64_t netns;              /* inode of the network namespace */
	uint32_t v[8];               /* program-specific */
};

int qpt_listen(int port);                       /* -> listening fd */
int qpt_accept(int lfd);                        /* -> connection fd */
int qpt_connect_to(const char *host, int port); /* retries for 60 s */
/* qpt_oob: the server listens on o->port and accepts one peer, a client
 * connects to it. */
int qpt_oob(const struct qpt_opts *o);
void qpt_send(int fd, const void *buf, size_t len);
void qpt_recv(int fd, void *buf, size_t len);
/* Both sides must reach the same named point (a desync is fatal). */
void qpt_sync(int fd, const char *point);
uint64_t qpt_xchg64(int fd, uint64_t mine);
void qpt_xchg_ep(int fd, const struct qpt_ep *mine, struct qpt_ep *theirs);
uint64_t qpt_netns_id(void);

/* ---- QPs ---------------------------------------------------------------- */

struct ibv_cq *qpt_cq(struct qpt_dev *d, int cqe);
struct ibv_qp *qpt_qp(struct qpt_dev *d, enum ibv_qp_type type, struct ibv_cq *scq,
		      struct ibv_cq *rcq, struct ibv_srq *srq, int depth);
/* The QP's half of an endpoint description (qpn, random psn, gid). */
void qpt_ep_of(struct qpt_dev *d, struct ibv_qp *qp, struct qpt_ep *ep);
/* RESET -> INIT -> RTR -> RTS to the remote endpoint (RC, UC, XRC). */
int qpt_connect(struct qpt_dev *d, struct ibv_qp *qp, const struct qpt_ep *mine,
		const struct qpt_ep *remote, int access, enum ibv_mtu mtu);
/* For each of the n QPs in turn: its endpoint (into me[i]) goes to the
 * peer over fd, the peer's comes back (into peer[i]), and the QP is
 * connected to it with access and a path MTU of 1024 (a failure is fatal). */
void qpt_connect_each(struct qpt_dev *d, int fd, struct ibv_qp *const *qp, struct qpt_ep *me,
		      struct qpt_ep *peer, int n, int access);
/* The same, stopping in RTR (no send queue yet). */
int qpt_connect_rtr(struct qpt_dev *d, struct ibv_qp *qp, const struct qpt_ep *remote,
		    int access, enum ibv_mtu mtu);
int qpt_modify_rts(struct ibv_qp *qp, const struct qpt_ep *mine);
/* RESET -> INIT -> RTR -> RTS for a UD QP with Q_Key qkey. */
int qpt_ud_ready(struct ibv_qp *qp, uint32_t qkey);
int qpt_to_state(struct ibv_qp *qp, enum ibv_qp_state s);
enum ibv_qp_state qpt_qp_state(struct ibv_qp *qp);
/* The largest path MTU both sides can use (from the two active MTUs). */
enum ibv_mtu qpt_path_mtu(struct qpt_dev *d, uint32_t remote_active_mtu_bytes);

int qpt_post_send1(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, void *addr,
		   uint32_t len, uint32_t lkey, int flags);
int qpt_post_recv1(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey);
int qpt_post_srq_recv1(struct ibv_srq *srq, uint64_t wr_id, void *addr, uint32_t len,
		       uint32_t lkey);

/* ---- completions, events, counters ------------------------------------- */

/* Polls until n completions arrived or timeout_ms passed; returns how many. */
int qpt_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, int timeout_ms);
/* True if no completion arrives within ms (it is left in wc if one does). */
bool qpt_poll_none(struct ibv_cq *cq, int ms, struct ibv_wc *wc);
/* Waits for a completion channel event; false after timeout_ms. */
bool qpt_cq_event(struct ibv_comp_channel *ch, struct ibv_cq **cq, int timeout_ms);

/* Waits for an async event of type about element (NULL: any element);
 * events of other kinds seen meanwhile are kept for later waits.
 * Returns false after timeout_ms. */
bool qpt_async_wait(struct ibv_context *ctx, enum ibv_event_type type, const void *element,
		    int timeout_ms);
/* True if no async event of type arrives within ms. */
bool qpt_async_none(struct ibv_context *ctx, enum ibv_event_type type, const void *element,
		    int ms);
/* How many events of type (about element, or any) were seen and kept. */
int qpt_async_seen(enum ibv_event_type type, const void *element);

/* A port counter (hw_counters/NAME), -1 if it cannot be read. */
int64_t qpt_counter(struct ibv_context *ctx, const char *name);
/* Waits (counters are published a few times a second) until NAME reaches
 * at_least, then returns its value; returns the last value seen after
 * timeout_ms. */
int64_t qpt_counter_wait(struct ibv_context *ctx, const char *name, int64_t at_least,
			 int timeout_ms);
/* A counter's value once it stopped moving (no change for ms). */
int64_t qpt_counter_settle(struct ibv_context *ctx, const char *name, int ms);

uint64_t qpt_now_ms(void);
void qpt_sleep_ms(int ms);

#endif
