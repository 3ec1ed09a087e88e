/* What the device does not do, it says so: every optional feature either
 * works as its capability bits promise, or fails with EOPNOTSUPP in the
 * error convention of its verb (NULL + errno, or the errno value returned)
 * -- never a fake success.  Where a capability exists (memory windows,
 * device memory, ODP, completion timestamps, raw packet QPs, QP create
 * flags) the result must agree with it.  Features without a capability bit
 * that uroce does not implement must fail with EOPNOTSUPP; when one of them
 * becomes supported, this program must learn how to check it works.
 *
 *   unsupported DEVICE GID_INDEX [CASE...]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt.h"

static struct ibv_device_attr_ex attr_ex;
static bool have_attr_ex;

/* A pointer-returning verb: NULL with errno EOPNOTSUPP, or an object when
 * supported says so.  Returns the object (for the caller to free). */
static void *expect_ptr(void *p, int err, bool supported, const char *what)
{
	if (supported) {
		vt_check(p != NULL, "%s: advertised, must work: %s", what, p ? "ok" : strerror(err));
		return p;
	}
	if (p) {
		vt_fail("%s: not advertised, yet it returned an object (a fake success)", what);
		return p;
	}
	vt_check(err == EOPNOTSUPP, "%s: not supported: NULL with errno %s (want EOPNOTSUPP)", what,
		 strerrorname_np(err) ? strerrorname_np(err) : "?");
	return NULL;
}

/* An errno-returning verb. */
static void expect_ret(int ret, bool supported, const char *what)
{
	if (supported) {
		vt_check(ret == 0, "%s: advertised, must work: %s", what, strerror(ret));
		return;
	}
	if (!ret) {
		vt_fail("%s: not advertised, yet it returned 0 (a fake success)", what);
		return;
	}
	vt_check(ret == EOPNOTSUPP, "%s: not supported: returned %s (want EOPNOTSUPP)", what,
		 strerrorname_np(ret) ? strerrorname_np(ret) : "?");
}

/* The capabilities every case compares with. */
static void load_caps(struct vt_dev *d)
{
	int ret;

	if (have_attr_ex)
		return;
	ret = ibv_query_device_ex(d->ctx, NULL, &attr_ex);
	have_attr_ex = vt_check(ret == 0, "ibv_query_device_ex: %s", strerror(ret));
}

static void case_caps(struct vt_dev *d)
{
	load_caps(d);
	vt_check(attr_ex.orig_attr.max_qp_rd_atom > 0, "max_qp_rd_atom %d > 0 (perftest's outstanding reads)",
		 attr_ex.orig_attr.max_qp_rd_atom);
	vt_check(!memcmp(&attr_ex.orig_attr, &d->attr, sizeof(d->attr)),
		 "ibv_query_device_ex's orig_attr equals ibv_query_device's");
	/* The kernel reports all 64 bits in device_cap_flags_ex, the low
	 * half being device_cap_flags (what rdma-core's own tests read). */
	vt_check((uint32_t)attr_ex.device_cap_flags_ex == (uint32_t)d->attr.device_cap_flags,
		 "device_cap_flags_ex 0x%llx holds device_cap_flags 0x%x in its low half",
		 (unsigned long long)attr_ex.device_cap_flags_ex, d->attr.device_cap_flags);
}

static void case_memory(struct vt_dev *d)
{
	struct ibv_alloc_dm_attr dma = { .length = 4096 };
	struct ibv_dm *dm;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	void *buf = calloc(1, 65536);
	bool mw_cap = d->attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW;
	bool odp = attr_ex.odp_caps.general_caps & IBV_ODP_SUPPORT;
	int ret;

	load_caps(d);

	errno = 0;
	mw = ibv_alloc_mw(d->pd, IBV_MW_TYPE_1);
	mw = expect_ptr(mw, errno, mw_cap && d->attr.max_mw > 0, "ibv_alloc_mw(type 1)");
	if (mw)
		ibv_dealloc_mw(mw);
	errno = 0;
	mw = ibv_alloc_mw(d->pd, IBV_MW_TYPE_2);
	mw = expect_ptr(mw, errno, ((d->attr.device_cap_flags | attr_ex.device_cap_flags_ex) &
				    (IBV_DEVICE_MEM_WINDOW_TYPE_2A | IBV_DEVICE_MEM_WINDOW_TYPE_2B)) != 0,
			"ibv_alloc_mw(type 2)");
	if (mw)
		ibv_dealloc_mw(mw);

	errno = 0;
	dm = ibv_alloc_dm(d->ctx, &dma);
	dm = expect_ptr(dm, errno, attr_ex.max_dm_size >= 4096, "ibv_alloc_dm(4096)");
	if (dm)
		ibv_free_dm(dm);

	errno = 0;
	mr = ibv_reg_mr(d->pd, buf, 65536, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	mr = expect_ptr(mr, errno, odp, "ibv_reg_mr(IBV_ACCESS_ON_DEMAND)");
	if (mr)
		ibv_dereg_mr(mr);

	errno = 0;
	mr = ibv_reg_dmabuf_mr(d->pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE);
	mr = expect_ptr(mr, errno, false, "ibv_reg_dmabuf_mr");
	if (mr)
		ibv_dereg_mr(mr);
	errno = 0;
	mr = ibv_alloc_null_mr(d->pd);
	mr = expect_ptr(mr, errno, false, "ibv_alloc_null_mr");
	if (mr)
		ibv_dereg_mr(mr);

	mr = ibv_reg_mr(d->pd, buf, 65536, IBV_ACCESS_LOCAL_WRITE);
	if (mr) {
		struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 4096, .lkey = mr->lkey };

		ret = ibv_advise_mr(d->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &sge, 1);
		expect_ret(ret, odp, "ibv_advise_mr(PREFETCH)");
		ibv_dereg_mr(mr);
	}
	free(buf);
}

static void case_completions(struct vt_dev *d)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 16, .wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP };
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	struct ibv_cq_ex *cq;
	bool ts = attr_ex.completion_timestamp_mask != 0 && attr_ex.hca_core_clock != 0;
	int ret;

	load_caps(d);

	errno = 0;
	cq = ibv_create_cq_ex(d->ctx, &ca);
	cq = expect_ptr(cq, errno, ts, "ibv_create_cq_ex(IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)");
	if (cq)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cq));
	ret = ibv_query_rt_values_ex(d->ctx, &v);
	if (ret == 0)
		vt_check(ts && (v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK),
			 "ibv_query_rt_values_ex gives a raw clock only with completion timestamps "
			 "(timestamp mask 0x%llx, core clock %llu kHz, comp_mask 0x%x)",
			 (unsigned long long)attr_ex.completion_timestamp_mask,
			 (unsigned long long)attr_ex.hca_core_clock, v.comp_mask);
	else
		expect_ret(ret, false, "ibv_query_rt_values_ex(RAW_CLOCK)");
}

static void case_qps(struct vt_dev *d)
{
	struct ibv_cq *cq = ibv_create_cq(d->ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;
	struct {
		const char *what;
		uint32_t flags;
		bool supported;
	} cf[] = {
		{ "create_flags IBV_QP_CREATE_SCATTER_FCS", IBV_QP_CREATE_SCATTER_FCS,
		  attr_ex.raw_packet_caps & IBV_RAW_PACKET_CAP_SCATTER_FCS },
		{ "create_flags IBV_QP_CREATE_CVLAN_STRIPPING", IBV_QP_CREATE_CVLAN_STRIPPING,
		  attr_ex.raw_packet_caps & IBV_RAW_PACKET_CAP_CVLAN_STRIPPING },
		{ "create_flags IBV_QP_CREATE_SOURCE_QPN", IBV_QP_CREATE_SOURCE_QPN, false },
		{ "create_flags IBV_QP_CREATE_PCI_WRITE_END_PADDING", IBV_QP_CREATE_PCI_WRITE_END_PADDING,
		  attr_ex.device_cap_flags_ex & IBV_DEVICE_PCI_WRITE_END_PADDING },
	};

	load_caps(d);

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_RAW_PACKET;
	a.send_cq = a.recv_cq = cq;
	a.cap.max_send_wr = a.cap.max_recv_wr = 4;
	a.cap.max_send_sge = a.cap.max_recv_sge = 1;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = d->pd;
	errno = 0;
	qp = ibv_create_qp_ex(d->ctx, &a);
	qp = expect_ptr(qp, errno, attr_ex.raw_packet_caps != 0, "ibv_create_qp_ex(IBV_QPT_RAW_PACKET)");
	if (qp)
		ibv_destroy_qp(qp);

	for (unsigned i = 0; i < sizeof(cf) / sizeof(cf[0]); i++) {
		a.qp_type = cf[i].flags == IBV_QP_CREATE_SOURCE_QPN ? IBV_QPT_UD : IBV_QPT_RC;
		a.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
		a.create_flags = cf[i].flags;
		a.source_qpn = 0x10;
		errno = 0;
		qp = ibv_create_qp_ex(d->ctx, &a);
		qp = expect_ptr(qp, errno, cf[i].supported, cf[i].what);
		if (qp)
			ibv_destroy_qp(qp);
	}

	/* A plain RC QP to hang QP-level verbs on. */
	a.qp_type = IBV_QPT_RC;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.create_flags = 0;
	qp = ibv_create_qp_ex(d->ctx, &a);
	if (vt_check(qp != NULL, "a plain RC QP: %s", qp ? "ok" : strerror(errno))) {
		struct ibv_flow_attr fa = { .size = sizeof(fa), .type = IBV_FLOW_ATTR_NORMAL, .port = 1 };
		struct ibv_qp_rate_limit_attr rl = { .rate_limit = 1000 };
		struct ibv_ece ece = { 0 };
		struct ibv_flow *flow;

		errno = 0;
		flow = ibv_create_flow(qp, &fa);
		flow = expect_ptr(flow, errno, false, "ibv_create_flow");
		if (flow)
			ibv_destroy_flow(flow);
		expect_ret(ibv_modify_qp_rate_limit(qp, &rl),
			   attr_ex.packet_pacing_caps.qp_rate_limit_max > 0, "ibv_modify_qp_rate_limit");
		expect_ret(ibv_query_ece(qp, &ece), false, "ibv_query_ece");
		expect_ret(ibv_set_ece(qp, &ece), false, "ibv_set_ece");
		ibv_destroy_qp(qp);
	}
	ibv_destroy_cq(cq);
}

static void case_objects(struct vt_dev *d)
{
	struct ibv_td_init_attr ta = { 0 };
	struct ibv_counters_init_attr cia = { 0 };
	struct ibv_parent_domain_init_attr pa = { .pd = d->pd };
	struct ibv_rwq_ind_table_init_attr ria = { 0 };
	struct ibv_td *td;
	struct ibv_counters *c;
	struct ibv_pd *pd;
	struct ibv_rwq_ind_table *rit;
	struct ibv_context *imp;
	struct ibv_pd *ipd;
	struct ibv_mr *imr;

	load_caps(d);

	/* Thread and parent domains work (no capability bit names them): a
	 * parent domain holds its PD and thread domain, and a region of the
	 * PD serves a QP made on the parent domain (verbs_api's traffic). */
	errno = 0;
	td = ibv_alloc_td(d->ctx, &ta);
	td = expect_ptr(td, errno, true, "ibv_alloc_td");
	pa.td = td;
	errno = 0;
	pd = ibv_alloc_parent_domain(d->ctx, &pa);
	pd = expect_ptr(pd, errno, true, "ibv_alloc_parent_domain");
	if (pd) {
		VT_EXPECT_EQ("ibv_dealloc_td while a parent domain uses it", EBUSY,
			     td ? ibv_dealloc_td(td) : EBUSY);
		VT_EXPECT_EQ("ibv_dealloc_pd of the PD under a parent domain", EBUSY,
			     ibv_dealloc_pd(d->pd));
		VT_EXPECT_EQ("ibv_dealloc_pd of the parent domain", 0, ibv_dealloc_pd(pd));
	}
	if (td)
		VT_EXPECT_EQ("ibv_dealloc_td once unused", 0, ibv_dealloc_td(td));
	errno = 0;
	c = ibv_create_counters(d->ctx, &cia);
	c = expect_ptr(c, errno, false, "ibv_create_counters");
	if (c)
		ibv_destroy_counters(c);
	errno = 0;
	rit = ibv_create_rwq_ind_table(d->ctx, &ria);
	rit = expect_ptr(rit, errno, false, "ibv_create_rwq_ind_table");
	if (rit)
		ibv_destroy_rwq_ind_table(rit);
	errno = 0;
	imp = ibv_import_device(d->ctx->cmd_fd);
	imp = expect_ptr(imp, errno, false, "ibv_import_device");
	if (imp)
		ibv_close_device(imp);
	errno = 0;
	ipd = ibv_import_pd(d->ctx, 1);
	ipd = expect_ptr(ipd, errno, false, "ibv_import_pd");
	if (ipd)
		ibv_unimport_pd(ipd);
	errno = 0;
	imr = ibv_import_mr(d->pd, 1);
	imr = expect_ptr(imr, errno, false, "ibv_import_mr");
	if (imr)
		ibv_unimport_mr(imr);
}

static const struct vt_case cases[] = {
	{ "caps", case_caps },
	{ "memory", case_memory },
	{ "completions", case_completions },
	{ "qps", case_qps },
	{ "objects", case_objects },
	{ NULL, NULL },
};

VT_MAIN(cases)
