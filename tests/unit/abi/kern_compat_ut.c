/* Kernel-structure copy helpers: field by field from a patterned source,
 * fields rdma-core does not copy left alone, and (where present) the whole
 * destination byte-identical to the system library's. */
#include "ut.h"
#include "sysref.h"

#include "verbs/kern_compat.c"

#define SENTINEL 0xa5

/* Every byte different, so a field copied from the wrong place shows. */
static void pattern(void *p, size_t n, unsigned seed)
{
	unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)(seed + 7 * i + 1);
}

static void check_ah(const struct ibv_ah_attr *d,
		     const struct ib_uverbs_ah_attr *s)
{
	UT_MEMEQ(d->grh.dgid.raw, s->grh.dgid, 16);
	UT_EQ(d->grh.flow_label, s->grh.flow_label);
	UT_EQ(d->grh.sgid_index, s->grh.sgid_index);
	UT_EQ(d->grh.hop_limit, s->grh.hop_limit);
	UT_EQ(d->grh.traffic_class, s->grh.traffic_class);
	UT_EQ(d->dlid, s->dlid);
	UT_EQ(d->sl, s->sl);
	UT_EQ(d->src_path_bits, s->src_path_bits);
	UT_EQ(d->static_rate, s->static_rate);
	UT_EQ(d->is_global, s->is_global);
	UT_EQ(d->port_num, s->port_num);
}

static void test_ah_attr(void)
{
	struct ib_uverbs_ah_attr src;
	struct ibv_ah_attr dst;

	pattern(&src, sizeof(src), 3);
	memset(&dst, SENTINEL, sizeof(dst));
	ibv_copy_ah_attr_from_kern(&dst, &src);
	check_ah(&dst, &src);
}

static void test_qp_attr(void)
{
	struct ib_uverbs_qp_attr src;
	struct ibv_qp_attr dst, untouched;

	pattern(&src, sizeof(src), 11);
	memset(&dst, SENTINEL, sizeof(dst));
	memset(&untouched, SENTINEL, sizeof(untouched));
	ibv_copy_qp_attr_from_kern(&dst, &src);

	/* not copied, as in rdma-core: the caller owns these */
	UT_EQ(dst.qp_state, untouched.qp_state);
	UT_EQ(dst.rate_limit, untouched.rate_limit);

	UT_EQ(dst.cur_qp_state, src.cur_qp_state);
	UT_EQ(dst.path_mtu, src.path_mtu);
	UT_EQ(dst.path_mig_state, src.path_mig_state);
	UT_EQ(dst.qkey, src.qkey);
	UT_EQ(dst.rq_psn, src.rq_psn);
	UT_EQ(dst.sq_psn, src.sq_psn);
	UT_EQ(dst.dest_qp_num, src.dest_qp_num);
	UT_EQ(dst.qp_access_flags, src.qp_access_flags);
	UT_EQ(dst.cap.max_send_wr, src.max_send_wr);
	UT_EQ(dst.cap.max_recv_wr, src.max_recv_wr);
	UT_EQ(dst.cap.max_send_sge, src.max_send_sge);
	UT_EQ(dst.cap.max_recv_sge, src.max_recv_sge);
	UT_EQ(dst.cap.max_inline_data, src.max_inline_data);
	check_ah(&dst.ah_attr, &src.ah_attr);
	check_ah(&dst.alt_ah_attr, &src.alt_ah_attr);
	UT_EQ(dst.pkey_index, src.pkey_index);
	UT_EQ(dst.alt_pkey_index, src.alt_pkey_index);
	UT_EQ(dst.en_sqd_async_notify, src.en_sqd_async_notify);
	UT_EQ(dst.sq_draining, src.sq_draining);
	UT_EQ(dst.max_rd_atomic, src.max_rd_atomic);
	UT_EQ(dst.max_dest_rd_atomic, src.max_dest_rd_atomic);
	UT_EQ(dst.min_rnr_timer, src.min_rnr_timer);
	UT_EQ(dst.port_num, src.port_num);
	UT_EQ(dst.timeout, src.timeout);
	UT_EQ(dst.retry_cnt, src.retry_cnt);
	UT_EQ(dst.rnr_retry, src.rnr_retry);
	UT_EQ(dst.alt_port_num, src.alt_port_num);
	UT_EQ(dst.alt_timeout, src.alt_timeout);
}

/* The same fields in both directions; mtu narrows to 8 bits going from the
 * kernel's 32-bit field, as in rdma-core. */
#define PATH_FIELDS(X)                                                      \
	X(dlid) X(slid) X(raw_traffic) X(flow_label) X(hop_limit)           \
	X(traffic_class) X(reversible) X(numb_path) X(pkey) X(sl)           \
	X(mtu_selector) X(rate_selector) X(rate)                            \
	X(packet_life_time_selector) X(packet_life_time) X(preference)

static void test_path_rec_from_kern(void)
{
	struct ib_user_path_rec src;
	struct ibv_sa_path_rec dst;

	pattern(&src, sizeof(src), 5);
	memset(&dst, SENTINEL, sizeof(dst));
	ibv_copy_path_rec_from_kern(&dst, &src);
	UT_MEMEQ(dst.dgid.raw, src.dgid, 16);
	UT_MEMEQ(dst.sgid.raw, src.sgid, 16);
#define X(f) UT_EQ(dst.f, src.f);
	PATH_FIELDS(X)
#undef X
	UT_EQ(dst.mtu, (uint8_t)src.mtu);
}

static void test_path_rec_to_kern(void)
{
	struct ibv_sa_path_rec src;
	struct ib_user_path_rec dst;

	pattern(&src, sizeof(src), 9);
	memset(&dst, SENTINEL, sizeof(dst));
	ibv_copy_path_rec_to_kern(&dst, &src);
	UT_MEMEQ(dst.dgid, src.dgid.raw, 16);
	UT_MEMEQ(dst.sgid, src.sgid.raw, 16);
#define X(f) UT_EQ(dst.f, src.f);
	PATH_FIELDS(X)
#undef X
	UT_EQ(dst.mtu, src.mtu);
}

/* Run one helper of ours and the reference on identical inputs and
 * identically prefilled outputs: the results must be byte-identical. */
#define SAME_AS_REF(h, fn, ver, dst_t, src_t, seed)                          \
	do {                                                                \
		void (*ref)(dst_t *, src_t *) =                             \
			(void (*)(dst_t *, src_t *))sysref_sym(h, #fn, ver); \
		src_t s;                                                    \
		dst_t a, b;                                                 \
		UT_CHECK(ref != NULL);                                      \
		if (!ref)                                                   \
			break;                                              \
		pattern(&s, sizeof(s), seed);                               \
		memset(&a, SENTINEL, sizeof(a));                            \
		memset(&b, SENTINEL, sizeof(b));                            \
		fn(&a, &s);                                                 \
		ref(&b, &s);                                                \
		UT_MEMEQ(&a, &b, sizeof(a));                                \
	} while (0)

static void test_against_system_library(void)
{
	void *h = sysref_open();

	if (!h)
		return;
	for (unsigned seed = 0; seed < 8; seed++) {
		SAME_AS_REF(h, ibv_copy_ah_attr_from_kern, "IBVERBS_1.1",
			    struct ibv_ah_attr, struct ib_uverbs_ah_attr, seed);
		SAME_AS_REF(h, ibv_copy_qp_attr_from_kern, "IBVERBS_1.0",
			    struct ibv_qp_attr, struct ib_uverbs_qp_attr, seed);
		SAME_AS_REF(h, ibv_copy_path_rec_from_kern, "IBVERBS_1.0",
			    struct ibv_sa_path_rec, struct ib_user_path_rec, seed);
		SAME_AS_REF(h, ibv_copy_path_rec_to_kern, "IBVERBS_1.0",
			    struct ib_user_path_rec, struct ibv_sa_path_rec, seed);
	}
	dlclose(h);
}

int main(void)
{
	UT_RUN(test_ah_attr);
	UT_RUN(test_qp_attr);
	UT_RUN(test_path_rec_from_kern);
	UT_RUN(test_path_rec_to_kern);
	UT_RUN(test_against_system_library);
	return UT_DONE();
}
