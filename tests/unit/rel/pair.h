/* The protocol harness's QPs: a side (context, PD, CQs, QP, and the
 * buffer the fixture gives it), a connected pair of them, registered
 * memory with guard bytes, posting and completions.  The fixture most
 * tests start from is t_pair_open_mem: a pair with a buffer on each side,
 * freed by t_pair_close; t_post_*_mem post from and into those buffers.
 * A test on it is written T_PAIR_TEST (the pair opened before its body,
 * closed after); T_FIXTURE_TEST writes the tests on other scenes.
 * Included after harness.h, whose fake transport the pair's paths lead to.
 */
#ifndef UROCE_TESTS_REL_PAIR_H
#define UROCE_TESTS_REL_PAIR_H

/* ---- devices, QPs, memory ---------------------------------------------------- */

static struct ur_device *t_dev;

static inline struct ur_device *t_device(void)
{
	if (!t_dev)
		t_dev = ur_device_by_name("ut0");
	return t_dev;
}

/* A buffer with guard bytes on both sides; only [buf, buf + len) is
 * registered.  Guards and buffer start with a known pattern. */
#define T_GUARD 64

struct t_mem {
	uint8_t *raw;                /* T_GUARD + len + T_GUARD */
	uint8_t *buf;
	size_t len;
	struct ibv_mr *mr;
};

struct t_side {
	struct ur_context *ctx;
	struct ur_pd *pd;
	struct ur_cq *scq, *rcq;
	struct ur_srq *srq;
	struct ur_qp *qp;
	struct t_mem mem;            /* t_pair_open_mem's buffer, freed by t_pair_close */
};

struct t_opts {
	enum ibv_qp_type type;       /* IBV_QPT_RC (0 means RC) */
	enum ibv_mtu mtu;            /* 0: IBV_MTU_1024 */
	uint32_t a_psn, b_psn;       /* each side's first send PSN */
	int access;                  /* QP access flags; -1: none */
	uint8_t timeout;             /* 0: 20 (4 s, never reached: timers are manual) */
	uint8_t retry_cnt, rnr_retry;  /* 0: 7; T_ZERO: 0 */
	uint8_t min_rnr_timer;
	uint8_t rd_atomic;           /* 0: 16 */
	uint8_t dest_rd_atomic;      /* max_dest_rd_atomic at RTR; 0: rd_atomic */
	bool srq_b;                  /* B receives from an SRQ */
	bool b_rtr;                  /* B stays in RTR */
	bool sig_all;
	uint32_t max_wr;             /* 0: 64 */
	uint32_t max_sge;            /* 0: 4 */
	uint32_t max_inline;
	uint32_t cqe;                /* 0: 256 */
	bool rtr_only;               /* (t_connect) stop at RTR */
	bool go_back;                /* packets unmarked: go-back-N as with a peer
				      * that does not retransmit selectively */
	bool ooo;                    /* both tolerate reordering (UROCE_OOO=1) */
};

#define T_ZERO 0x80

#define T_ALL_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static inline struct ibv_ah_attr t_av(void)
{
	struct ibv_ah_attr av = { .is_global = 1, .port_num = 1 };
	struct in_addr lo = { htonl(INADDR_LOOPBACK) };

	ur_gid_from_v4(&av.grh.dgid, lo);
	av.grh.sgid_index = 1;           /* ::ffff:127.0.0.1 on lo */
	av.grh.hop_limit = 64;
	return av;
}

static inline void t_wr_start(struct ibv_qp_ex *qpx)
{
	ur_qp_wr_start(to_uqp(&qpx->qp_base));
}

static inline int t_wr_complete(struct ibv_qp_ex *qpx)
{
	return -ur_qp_wr_complete(to_uqp(&qpx->qp_base));
}

static inline void t_wr_abort(struct ibv_qp_ex *qpx)
{
	ur_qp_wr_abort(to_uqp(&qpx->qp_base));
}

/* Installs the batch calls src/verbs installs around core's builders. */
static inline struct ur_qp *t_wr_ops(struct ur_qp *qp)
{
	if (qp) {
		qp->qpx.wr_start = t_wr_start;
		qp->qpx.wr_complete = t_wr_complete;
		qp->qpx.wr_abort = t_wr_abort;
	}
	return qp;
}

static inline int t_side_open(struct t_side *s, const struct t_opts *o, bool use_srq)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = o->cqe ? o->cqe : 256 };
	struct ibv_qp_init_attr_ex qa = { 0 };

	int ret;

	memset(s, 0, sizeof(*s));
	t_stack()->selective = !o->go_back;
	t_stack()->ooo = o->ooo;
	s->ctx = ut_context_open(t_device());
	if (!s->ctx)
		return -ENODEV;
	ret = ur_pd_alloc(s->ctx, &s->pd);
	if (!ret)
		ret = ur_cq_create(s->ctx, &ca, &s->scq);
	if (!ret)
		ret = ur_cq_create(s->ctx, &ca, &s->rcq);
	if (ret)
		return ret;
	if (use_srq) {
		struct ibv_srq_init_attr_ex sa = { 0 };

		sa.attr.max_wr = 64;
		sa.attr.max_sge = 4;
		ret = ur_srq_create(s->ctx, s->pd, &sa, &s->srq);
		if (ret)
			return ret;
	}
	qa.qp_type = o->type ? o->type : IBV_QPT_RC;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = &s->pd->ibpd;
	qa.send_cq = (struct ibv_cq *)&s->scq->ibcq;
	qa.recv_cq = (struct ibv_cq *)&s->rcq->ibcq;
	qa.srq = s->srq ? &s->srq->ibsrq : NULL;
	qa.sq_sig_all = o->sig_all;
	qa.cap.max_send_wr = o->max_wr ? o->max_wr : 64;
	qa.cap.max_recv_wr = o->max_wr ? o->max_wr : 64;
	qa.cap.max_send_sge = o->max_sge ? o->max_sge : 4;
	qa.cap.max_recv_sge = o->max_sge ? o->max_sge : 4;
	qa.cap.max_inline_data = o->max_inline;
	ret = ur_qp_create(s->ctx, &qa, &s->qp);
	if (!ret)
		t_wr_ops(s->qp);
	return ret;
}

/* The fixtures' teardowns, which may meet a part-open fixture: destroys
 * obj through destroy (ur_qp_destroy, ur_cq_destroy, ...), if there is
 * one, and checks that it could. */
#define t_destroy(destroy, obj)                                              \
	do {                                                                 \
		if (obj)                                                     \
			UT_EQ(destroy(obj), 0);                              \
	} while (0)

static inline void t_side_close(struct t_side *s)
{
	t_destroy(ur_qp_destroy, s->qp);
	t_destroy(ur_srq_destroy, s->srq);
	t_destroy(ur_cq_destroy, s->scq);
	t_destroy(ur_cq_destroy, s->rcq);
	t_destroy(ur_pd_dealloc, s->pd);
	if (s->ctx)
		ur_context_close(s->ctx);
	memset(s, 0, sizeof(*s));
}

static inline int t_to_init(struct ur_qp *qp, int access)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (qp->type == IBV_QPT_UD) {
		a.qkey = 0x11111111;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = (unsigned)access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return ur_qp_modify(qp, &a, mask);
}

/* INIT -> RTR -> RTS towards dqpn; the path then leads to the fake transport. */
static inline int t_connect(struct ur_qp *qp, uint32_t dqpn, uint32_t rq_psn, uint32_t sq_psn,
		     const struct t_opts *o)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	int ret, mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;

	a.ah_attr = t_av();
	a.path_mtu = o->mtu ? o->mtu : IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	if (qp->type == IBV_QPT_RC || qp->type == IBV_QPT_XRC_RECV) {
		a.max_dest_rd_atomic = o->dest_rd_atomic ? o->dest_rd_atomic
				       : o->rd_atomic ? o->rd_atomic : 16;
		a.min_rnr_timer = o->min_rnr_timer;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	ret = ur_qp_modify(qp, &a, mask);
	if (ret)
		return ret;
	if (qp->type == IBV_QPT_XRC_RECV || o->rtr_only)
		return 0;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (ur_qp_is_reliable(qp)) {
		a.timeout = o->timeout ? o->timeout : 20;
		a.retry_cnt = o->retry_cnt == T_ZERO ? 0 : o->retry_cnt ? o->retry_cnt : 7;
		a.rnr_retry = o->rnr_retry == T_ZERO ? 0 : o->rnr_retry ? o->rnr_retry : 7;
		a.max_rd_atomic = o->rd_atomic ? o->rd_atomic : 16;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ur_qp_modify(qp, &a, mask);
}

static inline void t_pattern(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 8));
}

static inline int t_mem_reg(struct t_mem *m, struct t_side *s, size_t len, int access, uint8_t seed)
{
	memset(m, 0, sizeof(*m));
	m->raw = malloc(len + 2 * T_GUARD);
	if (!m->raw)
		return -ENOMEM;
	m->buf = m->raw + T_GUARD;
	m->len = len;
	t_pattern(m->raw, len + 2 * T_GUARD, seed);
	m->mr = ibv_reg_mr_iova2(&s->pd->ibpd, m->buf, len, (uintptr_t)m->buf, (unsigned)access);
	UT_CHECK(m->mr != NULL);
	return m->mr ? 0 : -errno;
}

/* True if not one byte (guards included) differs from the pattern. */
static inline bool t_mem_intact(const struct t_mem *m, uint8_t seed)
{
	uint8_t *ref = malloc(m->len + 2 * T_GUARD);
	bool same;

	t_pattern(ref, m->len + 2 * T_GUARD, seed);
	same = !memcmp(ref, m->raw, m->len + 2 * T_GUARD);
	free(ref);
	return same;
}

/* True if everything but [buf + off, buf + off + len) still holds the
 * pattern: guards and the rest of the buffer were not written. */
static inline bool t_mem_intact_outside(const struct t_mem *m, uint8_t seed, size_t off, size_t len)
{
	size_t total = m->len + 2 * T_GUARD;
	uint8_t *ref = malloc(total);
	bool same;

	t_pattern(ref, total, seed);
	same = !memcmp(ref, m->raw, T_GUARD + off) &&
	       !memcmp(ref + T_GUARD + off + len, m->raw + T_GUARD + off + len,
		       total - (T_GUARD + off + len));
	free(ref);
	return same;
}

static inline void t_mem_free(struct t_mem *m)
{
	if (m->mr)
		UT_EQ(ibv_dereg_mr(m->mr), 0);
	free(m->raw);
	memset(m, 0, sizeof(*m));
}

struct t_pair {
	struct t_side a, b;
	struct t_opts o;
};

/* Two connected QPs: A -> B and B -> A, with o's settings. */
static inline int t_pair_open(struct t_pair *p, const struct t_opts *o)
{
	int access = o->access < 0 ? 0 : (o->access ? o->access : T_ALL_ACCESS);
	int ret;

	memset(p, 0, sizeof(*p));
	p->o = *o;
	t_net_reset();
	ret = t_side_open(&p->a, o, false);
	if (!ret)
		ret = t_side_open(&p->b, o, o->srq_b);
	if (!ret)
		ret = t_to_init(p->a.qp, access);
	if (!ret)
		ret = t_to_init(p->b.qp, access);
	if (!ret)
		ret = t_connect(p->a.qp, ur_qp_num(p->b.qp), o->b_psn, o->a_psn, o);
	if (!ret) {
		struct t_opts ob = *o;

		ob.rtr_only = o->b_rtr;
		ret = t_connect(p->b.qp, ur_qp_num(p->a.qp), o->a_psn, o->b_psn, &ob);
	}
	UT_EQ(ret, 0);
	return ret;
}

static inline void t_pair_close(struct t_pair *p)
{
	t_mem_free(&p->a.mem);
	t_mem_free(&p->b.mem);
	t_side_close(&p->a);
	t_side_close(&p->b);
	t_net_reset();
}

/* The scene most tests start from: a pair with a buffer on each side, A's
 * (a_len bytes, seed 1) for A's own use, B's (b_len bytes, seed 2) with
 * b_access; a length of 0 leaves that side without.  t_pair_close frees
 * them. */
static inline int t_pair_open_mem(struct t_pair *p, const struct t_opts *o, size_t a_len,
				  size_t b_len, int b_access)
{
	int ret = t_pair_open(p, o);

	if (!ret && a_len)
		ret = t_mem_reg(&p->a.mem, &p->a, a_len, IBV_ACCESS_LOCAL_WRITE, 1);
	if (!ret && b_len)
		ret = t_mem_reg(&p->b.mem, &p->b, b_len, b_access, 2);
	if (ret)
		t_pair_close(p);
	return ret;
}

/* A test whose body runs on a fixture, named as a table names it
 * (UT_CASE(name)): open(&fixture, args...) sets a fixture of type up and
 * returns 0 when it could (else the test ends there, neither body nor close
 * run); the body gets it as the pointer var, and close(&fixture) tears it
 * down after.  A body that stops early just returns. */
#define T_FIXTURE_TEST(name, type, var, open, close, ...)                    \
	static void name##_body(type *var);                                  \
	static void name(void)                                               \
	{                                                                    \
		type f;                                                      \
									     \
		if (open(&f, ##__VA_ARGS__))                                 \
			return;                                              \
		name##_body(&f);                                             \
		close(&f);                                                   \
	}                                                                    \
	static void name##_body(type *var)

/* A test on t_pair_open_mem's scene: p, the open pair with its buffers.
 *
 *	T_PAIR_TEST(test_x, a_len, b_len, b_access, .mtu = IBV_MTU_256)
 *	{
 *		... p->a, p->b
 *	}
 *
 * The arguments after b_access initialise the test's struct t_opts (0 for
 * the defaults); the body finds them again in p->o. */
#define T_PAIR_TEST(name, a_len, b_len, b_access, ...)                       \
	T_FIXTURE_TEST(name, struct t_pair, p, t_pair_open_mem, t_pair_close, \
		       &(const struct t_opts){ __VA_ARGS__ }, (a_len), (b_len), (b_access))

/* Two pages registered as one region, the second then taken away (as UCX
 * unmaps buffers under a region its cache deregisters later): *gone is the
 * second page's start.  PROT_NONE faults as a hole does, and unlike a hole
 * no later mapping can fill it while the test runs. */
static inline struct ibv_mr *t_mem_reg_half_unmapped(struct t_side *s, int access, uint8_t **gone)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	uint8_t *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ibv_mr *mr;

	UT_CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0x5a, 2 * page);
	mr = ibv_reg_mr_iova2(&s->pd->ibpd, p, 2 * page, (uintptr_t)p, (unsigned)access);
	UT_CHECK(mr != NULL);
	mprotect(p + page, page, PROT_NONE);
	*gone = p + page;
	return mr;
}

/* Deregisters it and unmaps both pages. */
static inline void t_mem_free_half_unmapped(struct ibv_mr *mr)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mr->addr;

	UT_EQ(ibv_dereg_mr(mr), 0);
	munmap(p, 2 * page);
}

/* ---- posting and completions ----------------------------------------------- */

static inline int t_post_recv(struct t_side *s, uint64_t wr_id, void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

	if (s->srq)
		return ur_srq_post_recv(s->srq, &wr, &bad);
	return ur_qp_post_recv(s->qp, &wr, &bad);
}

static inline int t_post(struct ur_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;

	return ur_qp_post_send(qp, wr, &bad);
}

static inline int t_post_send(struct t_side *s, uint64_t wr_id, enum ibv_wr_opcode op,
		       void *addr, uint32_t len, uint32_t lkey, unsigned flags)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .opcode = op, .send_flags = flags };

	return t_post(s->qp, &wr);
}

static inline int t_post_rdma(struct t_side *s, uint64_t wr_id, enum ibv_wr_opcode op,
		       void *addr, uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .opcode = op, .send_flags = IBV_SEND_SIGNALED };

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	if (op == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = htonl(0x1234abcd);
	return t_post(s->qp, &wr);
}

static inline int t_post_atomic(struct t_side *s, uint64_t wr_id, enum ibv_wr_opcode op,
			 void *addr, uint32_t lkey, uint64_t raddr, uint32_t rkey,
			 uint64_t cmp_add, uint64_t swap)
{
	struct ibv_sge sge = { (uintptr_t)addr, 8, lkey };
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
				  .opcode = op, .send_flags = IBV_SEND_SIGNALED };

	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = cmp_add;
	wr.wr.atomic.swap = swap;
	return t_post(s->qp, &wr);
}

/* The same from and into the buffers of t_pair_open_mem: off, a_off and
 * b_off count from the start of the side's, A's and B's buffer. */
static inline int t_post_recv_mem(struct t_side *s, uint64_t wr_id, size_t off, uint32_t len)
{
	return t_post_recv(s, wr_id, s->mem.buf + off, len, s->mem.mr->lkey);
}

static inline int t_post_send_mem(struct t_side *s, uint64_t wr_id, enum ibv_wr_opcode op,
				  size_t off, uint32_t len, unsigned flags)
{
	return t_post_send(s, wr_id, op, s->mem.buf + off, len, s->mem.mr->lkey, flags);
}

static inline int t_post_rdma_mem(struct t_pair *p, uint64_t wr_id, enum ibv_wr_opcode op,
				  size_t a_off, uint32_t len, size_t b_off)
{
	return t_post_rdma(&p->a, wr_id, op, p->a.mem.buf + a_off, len, p->a.mem.mr->lkey,
			   (uintptr_t)p->b.mem.buf + b_off, p->b.mem.mr->rkey);
}

static inline int t_post_atomic_mem(struct t_pair *p, uint64_t wr_id, enum ibv_wr_opcode op,
				    size_t a_off, size_t b_off, uint64_t cmp_add, uint64_t swap)
{
	return t_post_atomic(&p->a, wr_id, op, p->a.mem.buf + a_off, p->a.mem.mr->lkey,
			     (uintptr_t)p->b.mem.buf + b_off, p->b.mem.mr->rkey, cmp_add, swap);
}

/* The 64-bit word at off in B's buffer (t_pair_open_mem), set to v: an
 * atomic's target. */
static inline uint64_t *t_target(struct t_pair *p, size_t off, uint64_t v)
{
	uint64_t *w = (uint64_t *)(p->b.mem.buf + off);

	*w = v;
	return w;
}

/* The 64-bit word at p (an atomic's result in the requester's buffer). */
static inline uint64_t t_word(const void *p)
{
	uint64_t w;

	memcpy(&w, p, sizeof(w));
	return w;
}

static inline int t_poll(struct ur_cq *cq, struct ibv_wc *wc, int n)
{
	return ur_cq_poll(cq, n, wc);
}

/* Exactly one completion is queued on cq; it is returned in *wc. */
#define t_expect_wc(cq, wcp, id, st)                                         \
	do {                                                                 \
		int _n = t_poll((cq), (wcp), 1);                             \
		UT_EQ(_n, 1);                                                \
		if (_n == 1) {                                               \
			UT_EQ((wcp)->wr_id, (id));                           \
			UT_EQ((wcp)->status, (st));                          \
		}                                                            \
	} while (0)

/* The next n completions on cq succeed, for wr_ids first, first + 1, ...
 * in that order. */
#define t_expect_ok(cq, wcp, first, n)                                       \
	do {                                                                 \
		for (unsigned _k = 0; _k < (unsigned)(n); _k++)              \
			t_expect_wc((cq), (wcp), (first) + _k, IBV_WC_SUCCESS); \
	} while (0)

/* The next receive at B (t_pair_open_mem) completes wr_id with len bytes:
 * A's, from a_off, now at b_off in B's buffer.  A macro, as t_expect_wc,
 * so a failure names the test's line. */
#define t_expect_recv(p, wcp, id, len, b_off, a_off)                        \
	do {                                                                 \
		t_expect_wc((p)->b.rcq, (wcp), (id), IBV_WC_SUCCESS);        \
		UT_EQ((wcp)->byte_len, (len));                               \
		UT_MEMEQ((p)->b.mem.buf + (b_off), (p)->a.mem.buf + (a_off), (len)); \
	} while (0)

/* A receive of len bytes at off in B's buffer (t_pair_open_mem), and a
 * signaled SEND of as many from off in A's. */
#define t_send_mem(p, recv_id, send_id, off, len)                           \
	do {                                                                 \
		UT_EQ(t_post_recv_mem(&(p)->b, (recv_id), (off), (len)), 0); \
		UT_EQ(t_post_send_mem(&(p)->a, (send_id), IBV_WR_SEND, (off), (len), \
				      IBV_SEND_SIGNALED), 0);                \
	} while (0)

static inline bool t_cq_empty(struct ur_cq *cq)
{
	struct ibv_wc wc;

	return ur_cq_poll(cq, 1, &wc) == 0;
}

#endif
