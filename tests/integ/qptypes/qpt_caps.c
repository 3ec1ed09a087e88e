/* What ibv_query_device(_ex) advertises against what works, both ways, in
 * one process: each capability flag and limit is checked by using it (or
 * by its absence being refused).  The deeper checks of each feature are in
 * the other qpt_* programs; this one ties the advertisement to them.
 *
 *   qpt_caps -d DEV -g GIDX
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "qpt.h"

static struct qpt_dev d;

static void atomics(const struct ibv_device_attr *da)
{
	struct ibv_cq *cq = qpt_cq(&d, 16);
	struct ibv_qp *a = qpt_qp(&d, IBV_QPT_RC, cq, cq, NULL, 8);
	struct ibv_qp *b = qpt_qp(&d, IBV_QPT_RC, cq, cq, NULL, 8);
	struct qpt_buf buf;
	struct qpt_ep ea, eb;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	uint64_t *target, *result;
	int ret;

	qpt_buf(&d, &buf, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
				    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
	target = (uint64_t *)buf.p;
	result = (uint64_t *)(buf.p + 64);
	*target = 40;
	qpt_ep_of(&d, a, &ea);
	qpt_ep_of(&d, b, &eb);
	if (qpt_connect(&d, a, &ea, &eb, IBV_ACCESS_REMOTE_ATOMIC, IBV_MTU_1024) ||
	    qpt_connect(&d, b, &eb, &ea, IBV_ACCESS_REMOTE_ATOMIC, IBV_MTU_1024))
		DIE("pair");
	sge = (struct ibv_sge){ (uintptr_t)result, 8, buf.mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD, .send_flags = IBV_SEND_SIGNALED };
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = buf.mr->rkey;
	wr.wr.atomic.compare_add = 2;
	ret = ibv_post_send(a, &wr, &bad);
	if (da->atomic_cap == IBV_ATOMIC_NONE) {
		CHECK(ret != 0 || (qpt_poll(cq, &wc, 1, 10000) == 1 && wc.status != IBV_WC_SUCCESS),
		      "atomic_cap NONE: an atomic fails");
	} else {
		/* Polled before *result and *target are read: the message's
		 * arguments may be evaluated before the condition. */
		bool done = ret == 0 && qpt_poll(cq, &wc, 1, 10000) == 1 &&
			    wc.status == IBV_WC_SUCCESS;

		CHECK(done && *result == 40 && *target == 42,
		      "atomic_cap %d: FETCH_AND_ADD returns the old value and adds (%llu, now %llu)",
		      da->atomic_cap, (unsigned long long)*result, (unsigned long long)*target);
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.compare_add = 42;
		wr.wr.atomic.swap = 7;
		ret = ibv_post_send(a, &wr, &bad);
		done = ret == 0 && qpt_poll(cq, &wc, 1, 10000) == 1 && wc.status == IBV_WC_SUCCESS;
		CHECK(done && *result == 42 && *target == 7,
		      "CMP_AND_SWP swaps on a match (%llu, now %llu)", (unsigned long long)*result,
		      (unsigned long long)*target);
	}
	ibv_destroy_qp(a);
	ibv_destroy_qp(b);
	ibv_destroy_cq(cq);
	qpt_buf_free(&buf);
}

static void caps(const struct qpt_opts *o)
{
	struct ibv_device_attr_ex dx;
	struct ibv_device_attr *da = &dx.orig_attr;
	int ret;

	qpt_open(&d, o->dev, o->gidx);
	memset(&dx, 0, sizeof(dx));
	if (ibv_query_device_ex(d.ctx, NULL, &dx))
		DIE("ibv_query_device_ex");
	qpt_note("device_cap_flags 0x%x", da->device_cap_flags);

	CHECK(da->sys_image_guid != 0 && (da->device_cap_flags & IBV_DEVICE_SYS_IMAGE_GUID),
	      "SYS_IMAGE_GUID advertised and sys_image_guid set (0x%llx)",
	      (unsigned long long)da->sys_image_guid);

	{
		struct ibv_mw *mw1 = ibv_alloc_mw(d.pd, IBV_MW_TYPE_1);
		struct ibv_mw *mw2 = ibv_alloc_mw(d.pd, IBV_MW_TYPE_2);
		bool adv1 = da->device_cap_flags & IBV_DEVICE_MEM_WINDOW;
		bool adv2 = (da->device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2A) ||
			    (da->device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);

		CHECK(adv1 == (mw1 != NULL) && adv1 == (da->max_mw > 0),
		      "MEM_WINDOW %s, max_mw %d, ibv_alloc_mw(type 1) %s", adv1 ? "advertised" : "not advertised",
		      da->max_mw, mw1 ? "works" : "fails");
		CHECK(adv2 == (mw2 != NULL), "MEM_WINDOW_TYPE_2A/2B %s, ibv_alloc_mw(type 2) %s",
		      adv2 ? "advertised" : "not advertised", mw2 ? "works" : "fails");
		if (mw1)
			ibv_dealloc_mw(mw1);
		if (mw2)
			ibv_dealloc_mw(mw2);
	}
	{
		struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD |
							      IBV_XRCD_INIT_ATTR_OFLAGS,
						 .fd = -1, .oflags = O_CREAT };
		struct ibv_xrcd *x = ibv_open_xrcd(d.ctx, &xa);
		bool adv = da->device_cap_flags & IBV_DEVICE_XRC;

		CHECK(adv == (x != NULL), "XRC %s, ibv_open_xrcd %s", adv ? "advertised" : "not advertised",
		      x ? "works" : "fails");
		if (x)
			ibv_close_xrcd(x);
	}
	{
		struct ibv_srq_init_attr ia = { .attr = { .max_wr = 8, .max_sge = 1 } };
		struct ibv_srq *srq = ibv_create_srq(d.pd, &ia);
		struct ibv_srq_attr sa = { .max_wr = 64 };
		bool adv = da->device_cap_flags & IBV_DEVICE_SRQ_RESIZE;

		CHECK(srq && da->max_srq > 0, "max_srq %d and ibv_create_srq works", da->max_srq);
		ret = srq ? ibv_modify_srq(srq, &sa, IBV_SRQ_MAX_WR) : -1;
		CHECK(adv == (ret == 0), "SRQ_RESIZE %s, resizing an SRQ %s",
		      adv ? "advertised" : "not advertised", ret == 0 ? "works" : "fails");
		if (srq)
			ibv_destroy_srq(srq);
	}
	{
		bool adv = dx.odp_caps.general_caps & IBV_ODP_SUPPORT;
		struct ibv_mr *mr;
		static char page[4096] __attribute__((aligned(4096)));

		errno = 0;
		mr = ibv_reg_mr(d.pd, page, sizeof(page), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
		CHECK(adv == (mr != NULL), "on-demand paging %s, an IBV_ACCESS_ON_DEMAND region %s (errno %d)",
		      adv ? "advertised" : "not advertised", mr ? "registers" : "is refused", errno);
		if (mr)
			ibv_dereg_mr(mr);
	}
	CHECK(da->max_qp_rd_atom > 0 && da->max_qp_init_rd_atom > 0,
	      "max_qp_rd_atom %d, max_qp_init_rd_atom %d", da->max_qp_rd_atom, da->max_qp_init_rd_atom);
	CHECK(da->max_mcast_grp > 0 && da->max_mcast_qp_attach > 0 && da->max_ah > 0,
	      "max_mcast_grp %d, max_mcast_qp_attach %d, max_ah %d (qpt_mcast -m limits uses them)",
	      da->max_mcast_grp, da->max_mcast_qp_attach, da->max_ah);
	atomics(da);
	{
		struct ibv_port_attr pa;

		ret = ibv_query_port(d.ctx, 1, &pa);
		CHECK(ret == 0 && (da->device_cap_flags & IBV_DEVICE_PORT_ACTIVE_EVENT),
		      "PORT_ACTIVE_EVENT advertised (qptypes_async takes the link down and up)");
		CHECK(ret == 0 && pa.link_layer == IBV_LINK_LAYER_ETHERNET &&
		      (pa.port_cap_flags & IBV_PORT_IP_BASED_GIDS),
		      "a RoCE port: Ethernet link layer, IP-based GIDs");
	}
	qpt_close(&d);
}

const struct qpt_role qpt_roles[] = {
	{ NULL, QPT_EITHER, caps },
	{ NULL, QPT_EITHER, NULL },
};
