/* A small harness for verbs test programs: open a device, make QPs and
 * connect them to each other through the device (a real RoCEv2 path: the
 * packets go out and come back through the interface), buffers with guard
 * bytes, polling with a deadline, and checks that print one line each:
 *
 *   ok: CASE: what was checked
 *   FAIL: CASE: what was expected, and what was seen
 *
 * (the format tests/integ/lib.sh's ur_report counts).  Only the public
 * verbs API is used: these programs run unchanged on any RoCE device.
 */
#ifndef UROCE_INTEG_VT_H
#define UROCE_INTEG_VT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

/* ---- checks ------------------------------------------------------------ */

extern const char *vt_case;     /* the case running, prefixes every line */
extern int vt_failures, vt_checks;

void vt_ok(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void vt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* ok or FAIL with the message; returns cond. */
bool vt_check(bool cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* call must return -1 with errno want: the result and errno are taken
 * before the message is formatted. */
#define VT_EXPECT_ERRNO(call, want, what)                                             \
	do {                                                                          \
		long r_ = (long)(call);                                               \
		int e_ = errno;                                                       \
		vt_check(r_ == -1 && e_ == (want), "%s: -1/%s (got %ld, %s)", (what), \
			 strerror(want), r_, strerror(e_));                           \
	} while (0)
#define VT_EXPECT_EQ(what, expected, seen)                                            \
	({                                                                            \
		long long _e = (long long)(expected), _s = (long long)(seen);         \
		vt_check(_e == _s, "%s: expected %lld, saw %lld", (what), _e, _s);    \
	})
#define VT_EXPECT_STATUS(what, expected, seen)                                        \
	({                                                                            \
		enum ibv_wc_status _e = (expected), _s = (seen);                      \
		vt_check(_e == _s, "%s: expected %s, saw %s", (what),                 \
			 ibv_wc_status_str(_e), ibv_wc_status_str(_s));               \
	})

/* ---- device ------------------------------------------------------------ */

struct vt_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	uint8_t port;
	int gid_index;
	union ibv_gid gid;
	struct ibv_port_attr port_attr;
	struct ibv_device_attr attr;
};

/* Opens DEV (by name) and a PD; exits the program (status 2) if it cannot. */
void vt_dev_open(struct vt_dev *d, const char *name, int gid_index);
void vt_dev_close(struct vt_dev *d);

/* ---- memory ------------------------------------------------------------ */

/* len bytes at p, registered with access, between VT_GUARD guard bytes on
 * each side (not registered).  The whole span starts with a pattern
 * derived from seed; vt_buf_unchanged compares it with that pattern. */
#define VT_GUARD 4096u
struct vt_buf {
	uint8_t *base;    /* guard | p[0..len) | guard */
	uint8_t *p;
	size_t len;
	uint8_t seed;
	struct ibv_mr *mr;
};
void vt_buf_init(struct vt_buf *b, struct vt_dev *d, size_t len, int access, uint8_t seed);
void vt_buf_free(struct vt_buf *b);
uint8_t vt_pattern(uint8_t seed, size_t i);
/* Refill the whole span (guards included) with the pattern of seed. */
void vt_buf_fill(struct vt_buf *b, uint8_t seed);
/* Checks (one ok/FAIL line) that not one byte of the span, guards
 * included, differs from the pattern of b->seed. */
bool vt_buf_unchanged(const struct vt_buf *b, const char *what);

/* ---- QPs --------------------------------------------------------------- */

/* Options: 0 means the default.  VT_ZERO asks for a real 0 where 0 is a
 * meaningful setting (retry counts). */
#define VT_ZERO 0xff
struct vt_qp_opts {
	enum ibv_qp_type type;      /* default RC */
	uint32_t sq, rq;            /* depths (default 64) */
	uint32_t max_sge;           /* default 4 */
	uint32_t max_inline;
	int sq_sig_all;
	int access;                 /* qp_access_flags; default all remote access */
	bool no_access;             /* qp_access_flags = 0 */
	uint8_t timeout;            /* default 14 */
	uint8_t retry_cnt;          /* default 7; VT_ZERO: 0 */
	uint8_t rnr_retry;          /* default 7 (infinite); VT_ZERO: 0 */
	uint8_t min_rnr_timer;      /* default 1 (0.01 ms) */
	uint8_t max_rd_atomic;      /* default 4 */
	enum ibv_mtu mtu;           /* default: the port's active MTU */
	uint64_t send_ops_flags;    /* non-zero: ibv_create_qp_ex with these */
	struct ibv_cq *send_cq, *recv_cq;   /* default: one CQ per QP */
	struct ibv_srq *srq;
};

struct vt_qp {
	struct vt_dev *dev;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;      /* with send_ops_flags */
	struct ibv_cq *cq;          /* the CQ vt made (send and recv), if any */
	struct ibv_cq *scq, *rcq;
	bool own_cq;
	struct vt_qp_opts o;
};

/* Creates a QP (exits if it cannot); opts may be NULL. */
void vt_qp_create(struct vt_qp *q, struct vt_dev *d, const struct vt_qp_opts *opts);
void vt_qp_destroy(struct vt_qp *q);
/* RC/UC: connects a and b to each other (RESET -> INIT -> RTR -> RTS) with
 * a GRH to the device's GID; UD: both to RTS.  0 or an errno value. */
int vt_qp_connect(struct vt_qp *a, struct vt_qp *b);
/* RC/UC: connects q to a QP of another process, qpn at gid (both ends use
 * PSN 0x100). */
int vt_qp_connect_remote(struct vt_qp *q, uint32_t qpn, const union ibv_gid *gid);
/* Connects qps[i] to peer_qpn[i] at gid, i = 0 .. n - 1; 0, or the errno
 * value of the first that failed, whose index is then *bad. */
int vt_qps_connect_remote(struct vt_qp *qps, uint32_t n, const uint32_t *peer_qpn,
			  const union ibv_gid *gid, uint32_t *bad);
/* RC pair in one call: a requester and a responder, each with its options. */
void vt_rc_pair(struct vt_dev *d, struct vt_qp *a, const struct vt_qp_opts *ao,
		struct vt_qp *b, const struct vt_qp_opts *bo);
enum ibv_qp_state vt_qp_state(struct vt_qp *q);
/* Waits (up to seconds) for the QP to reach state; returns the last seen. */
enum ibv_qp_state vt_qp_wait_state(struct vt_qp *q, enum ibv_qp_state state, double seconds);
int vt_qp_to_error(struct vt_qp *q);
struct ibv_ah *vt_ah(struct vt_dev *d);

/* ---- posting and polling ------------------------------------------------ */

int vt_post_recv(struct vt_qp *q, uint64_t wr_id, struct ibv_sge *sge, int nsge);
int vt_post_send(struct vt_qp *q, struct ibv_send_wr *wr);
/* A signaled one-SGE work request of opcode over [addr, addr+len) of mr. */
struct ibv_send_wr vt_wr(uint64_t wr_id, enum ibv_wr_opcode op, struct ibv_sge *sge);
/* Addresses a UD work request: to qpn through ah, with Q_Key qkey. */
void vt_wr_ud(struct ibv_send_wr *wr, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey);
struct ibv_sge vt_sge(const struct vt_buf *b, size_t off, uint32_t len);

/* Polls cq until n completions or seconds elapse; returns how many. */
int vt_poll(struct ibv_cq *cq, struct ibv_wc *wc, int n, double seconds);
/* Exactly one completion within seconds: ok/FAIL line, wc filled (status
 * -1 if none). */
bool vt_poll_one(struct ibv_cq *cq, struct ibv_wc *wc, double seconds, const char *what);
/* No completion arrives within seconds. */
bool vt_poll_none(struct ibv_cq *cq, double seconds, const char *what);

double vt_now(void);
void vt_sleep(double seconds);

/* How long the host kept this process off the CPU: a thread that sleeps
 * 10 ms at a time notes its longest wake-up lag, and at exit the process
 * prints "WHO: longest wake-up lag of a 10 ms sleeper: X ms at T s, N over
 * 100 ms" (T from the call).  A peer that timed out while its partner's
 * lag shows hundreds of milliseconds met the scheduler, not a stall of
 * uroce's. */
void vt_lag_watch(const char *who);

/* ---- running cases ------------------------------------------------------ */

struct vt_case {
	const char *name;
	void (*fn)(struct vt_dev *d);
	bool by_name_only;          /* not among "all": it needs a set-up of its own */
};
/* Usage: PROG DEV GID_INDEX [CASE...]; runs the named cases (all but those
 * run by name only, by default), prints a summary; exit 0 if every check
 * passed. */
int vt_main(int argc, char **argv, const struct vt_case *cases);
/* The main of a program that is a table of cases: VT_MAIN(cases). */
#define VT_MAIN(cases)                                   \
	int main(int argc, char **argv)                  \
	{                                                \
		return vt_main(argc, argv, cases);       \
	}

#endif
