/* UD ids over rdma_cm (SIDR), both ends in this one process on 127.0.0.1:
 *  - accept:   a SIDR_REQ's private data up to 180 bytes arrives intact
 *              in CONNECT_REQUEST (181 is EINVAL); rdma_accept's up to 136
 *              (137 is EINVAL) in the active side's ESTABLISHED, which names
 *              the passive QP, rdma_cm's Q_Key 0x01234567 and an address
 *              that carries a datagram to that QP (sent and checked);
 *  - reject:   rdma_reject answers UNREACHABLE with status 2 and its
 *              private data;
 *  - nobody:   no listener on the port: UNREACHABLE, status 1, once the
 *              grace for a late listener (1.5 s) is over;
 *  - mcast:    rdma_join_multicast: EINVAL before the address is resolved
 *              or for a unicast address; MULTICAST_JOIN names the group
 *              (::ffff:239.x.y.z), QP 0xffffff, rdma_cm's Q_Key and the
 *              join's context; a second join of the group is EADDRINUSE; a
 *              datagram sent to the group from another id arrives intact;
 *              after rdma_leave_multicast none does, and leaving again is
 *              EADDRNOTAVAIL.
 *
 *   rdmacm_ud DEVICE GID_INDEX [CASE...]
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>
#include <rdma/rdma_cma.h>

#include "cm_events.h"
#include "vt.h"

#define UDP_QKEY 0x01234567u
#define MSG_BYTES 64
#define GRH_BYTES 40

static struct rdma_event_channel *ch;
static int next_port = 29400;

struct ud_end {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t buf[GRH_BYTES + MSG_BYTES];
};

struct ud_pair {
	struct rdma_cm_id *listen;
	struct ud_end active, passive;
};

static bool make_ud_qp(struct ud_end *e)
{
	struct ibv_qp_init_attr a = { .qp_type = IBV_QPT_UD,
				      .cap = { .max_send_wr = 4, .max_recv_wr = 4,
					       .max_send_sge = 1, .max_recv_sge = 1 } };

	e->cq = ibv_create_cq(e->id->verbs, 16, NULL, NULL, 0);
	a.send_cq = a.recv_cq = e->cq;
	e->mr = e->cq ? ibv_reg_mr(e->id->pd, e->buf, sizeof(e->buf), IBV_ACCESS_LOCAL_WRITE)
		      : NULL;
	if (!e->mr) {
		vt_fail("a UD QP on the id: no CQ or MR: %s", strerror(errno));
		return false;
	}
	if (rdma_create_qp(e->id, NULL, &a)) {
		vt_fail("rdma_create_qp (UD): %s", strerror(errno));
		return false;
	}
	vt_ok("a UD QP on the id");
	return true;
}

/* A UDP listener on a fresh port, and an active id routed to it with its QP. */
static bool setup(struct ud_pair *u, bool listen)
{
	memset(u, 0, sizeof(*u));
	return cm_listen_and_route(ch, RDMA_PS_UDP, next_port++, 4, listen ? &u->listen : NULL,
				   &u->active.id) &&
	       make_ud_qp(&u->active);
}

static void end_free(struct ud_end *e)
{
	if (!e->id)
		return;
	if (e->id->qp)
		rdma_destroy_qp(e->id);
	if (e->mr)
		ibv_dereg_mr(e->mr);
	if (e->cq)
		ibv_destroy_cq(e->cq);
	rdma_destroy_id(e->id);
}

static void teardown(struct ud_pair *u)
{
	end_free(&u->active);
	end_free(&u->passive);
	if (u->listen)
		rdma_destroy_id(u->listen);
}

/* One completion of cq within 5 s. */
static bool poll_one(struct ibv_cq *cq, struct ibv_wc *wc, const char *what)
{
	for (int i = 0; i < 5000000; i++) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n)
			return vt_check(n == 1 && wc->status == IBV_WC_SUCCESS, "%s: %s", what,
					n < 0 ? "poll error" : ibv_wc_status_str(wc->status));
		if (i % 1000 == 999)
			usleep(1000);
	}
	vt_fail("%s: no completion within 5 s", what);
	return false;
}

/* A datagram through the address, QP number and Q_Key the SIDR_REP gave. */
static void send_through(struct ud_pair *u, const struct rdma_ud_param *ud)
{
	struct ibv_sge rs = { (uintptr_t)u->passive.buf, sizeof(u->passive.buf),
			      u->passive.mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &rs, .num_sge = 1 }, *bad_r;
	struct ibv_sge ss = { (uintptr_t)u->active.buf, MSG_BYTES, u->active.mr->lkey };
	struct ibv_send_wr swr = { .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *bad_s;
	struct ibv_ah_attr attr = ud->ah_attr;
	struct ibv_ah *ah = ibv_create_ah(u->active.id->pd, &attr);
	struct ibv_wc wc;

	if (!ah) {
		vt_fail("ibv_create_ah from ESTABLISHED's ah_attr: %s", strerror(errno));
		return;
	}
	vt_ok("ibv_create_ah from ESTABLISHED's ah_attr");
	for (int i = 0; i < MSG_BYTES; i++)
		u->active.buf[i] = (uint8_t)(0xc0 ^ i);
	swr.wr.ud.ah = ah;
	swr.wr.ud.remote_qpn = ud->qp_num;
	swr.wr.ud.remote_qkey = ud->qkey;
	if (vt_check(!ibv_post_recv(u->passive.id->qp, &rwr, &bad_r), "post a receive") &&
	    vt_check(!ibv_post_send(u->active.id->qp, &swr, &bad_s), "post the datagram") &&
	    poll_one(u->active.cq, &wc, "the datagram's send") &&
	    poll_one(u->passive.cq, &wc, "the datagram's receive")) {
		VT_EXPECT_EQ("bytes received (GRH + message)", GRH_BYTES + MSG_BYTES, wc.byte_len);
		VT_EXPECT_EQ("the sender's QP number", u->active.id->qp->qp_num, wc.src_qp);
		vt_check(!memcmp(u->passive.buf + GRH_BYTES, u->active.buf, MSG_BYTES),
			 "the datagram arrives intact");
	}
	ibv_destroy_ah(ah);
}

static void case_accept(struct vt_dev *d)
{
	struct rdma_conn_param p = { 0 };
	uint8_t req[181], rep[137];
	struct rdma_cm_event *ev;
	struct ud_pair u;
	int r;

	(void)d;
	for (unsigned i = 0; i < sizeof(req); i++)
		req[i] = (uint8_t)(0x30 + i);
	for (unsigned i = 0; i < sizeof(rep); i++)
		rep[i] = (uint8_t)(0x90 + i);
	if (!setup(&u, true))
		goto out;
	p.private_data = req;
	p.private_data_len = 181;
	r = rdma_connect(u.active.id, &p);
	vt_check(r == -1 && errno == EINVAL,
		 "UD rdma_connect with 181 bytes of private data: EINVAL (%s)", strerror(errno));
	p.private_data_len = 180;
	if (!vt_check(!rdma_connect(u.active.id, &p), "UD rdma_connect with 180 bytes"))
		goto out;
	ev = cm_next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, "SIDR request");
	if (!ev)
		goto out;
	u.passive.id = ev->id;
	vt_check(ev->listen_id == u.listen, "the request names its listener");
	vt_check(ev->param.ud.private_data_len >= 180 &&
		 !memcmp(ev->param.ud.private_data, req, 180),
		 "the request's 180 bytes of private data arrive intact");
	cm_ack(ev);
	if (!make_ud_qp(&u.passive))
		goto out;
	VT_EXPECT_EQ("the passive UD QP is ready (RTS)", 1, u.passive.id->qp->state == IBV_QPS_RTS);
	p.private_data = rep;
	p.private_data_len = 137;
	r = rdma_accept(u.passive.id, &p);
	vt_check(r == -1 && errno == EINVAL,
		 "UD rdma_accept with 137 bytes of private data: EINVAL (%s)", strerror(errno));
	p.private_data_len = 136;
	if (!vt_check(!rdma_accept(u.passive.id, &p), "UD rdma_accept with 136 bytes"))
		goto out;
	ev = cm_next_event(ch, RDMA_CM_EVENT_ESTABLISHED, "the active side's ESTABLISHED");
	if (!ev)
		goto out;
	VT_EXPECT_EQ("the answer's QP number is the passive QP", u.passive.id->qp->qp_num,
		     ev->param.ud.qp_num);
	VT_EXPECT_EQ("the answer's Q_Key (rdma_cm's for RDMA_PS_UDP)", UDP_QKEY, ev->param.ud.qkey);
	vt_check(ev->param.ud.private_data_len >= 136 &&
		 !memcmp(ev->param.ud.private_data, rep, 136),
		 "the answer's 136 bytes of private data arrive intact");
	vt_check(ev->param.ud.ah_attr.is_global, "the address is global (RoCE: a GRH)");
	send_through(&u, &ev->param.ud);
	cm_ack(ev);
out:
	teardown(&u);
}

static void case_reject(struct vt_dev *d)
{
	struct rdma_cm_event *ev;
	struct ud_pair u;

	(void)d;
	if (!setup(&u, true) || !vt_check(!rdma_connect(u.active.id, NULL), "UD rdma_connect"))
		goto out;
	ev = cm_next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, "SIDR request");
	if (!ev)
		goto out;
	u.passive.id = ev->id;
	cm_ack(ev);
	vt_check(!rdma_reject(u.passive.id, "nope", 5), "UD rdma_reject with 5 bytes");
	ev = cm_next_event(ch, RDMA_CM_EVENT_UNREACHABLE, "rejected");
	if (ev) {
		VT_EXPECT_EQ("UNREACHABLE's status (SIDR: rejected)", 2, ev->status);
		vt_check(ev->param.ud.private_data_len >= 5 &&
			 !memcmp(ev->param.ud.private_data, "nope", 5),
			 "the reject's private data arrives");
		cm_ack(ev);
	}
out:
	teardown(&u);
}

static void case_nobody(struct vt_dev *d)
{
	struct rdma_cm_event *ev;
	struct pollfd pfd;
	struct ud_pair u;

	(void)d;
	if (!setup(&u, false) || !vt_check(!rdma_connect(u.active.id, NULL), "UD rdma_connect"))
		goto out;
	/* The grace (1.5 s) first: nothing within it. */
	pfd = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	VT_EXPECT_EQ("no event within 1 s (a late listener may still come)", 0,
		     poll(&pfd, 1, 1000));
	ev = cm_next_event(ch, RDMA_CM_EVENT_UNREACHABLE, "nobody listens");
	if (ev) {
		VT_EXPECT_EQ("UNREACHABLE's status (SIDR: service not supported)", 1, ev->status);
		cm_ack(ev);
	}
out:
	teardown(&u);
}

/* Sends one datagram from e to the group at attr (QP 0xffffff). */
static bool send_group(struct ud_end *e, struct ibv_ah_attr *attr, uint32_t qkey, uint8_t seed)
{
	struct ibv_sge ss = { (uintptr_t)e->buf, MSG_BYTES, e->mr->lkey };
	struct ibv_send_wr swr = { .sg_list = &ss, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_ah *ah = ibv_create_ah(e->id->pd, attr);
	struct ibv_wc wc;
	bool ok;

	if (!ah) {
		vt_fail("ibv_create_ah for the group: %s", strerror(errno));
		return false;
	}
	for (int i = 0; i < MSG_BYTES; i++)
		e->buf[i] = (uint8_t)(seed ^ i);
	swr.wr.ud.ah = ah;
	swr.wr.ud.remote_qpn = 0xffffff;
	swr.wr.ud.remote_qkey = qkey;
	ok = vt_check(!ibv_post_send(e->id->qp, &swr, &bad), "post a datagram to the group") &&
	     poll_one(e->cq, &wc, "the group datagram's send");
	ibv_destroy_ah(ah);
	return ok;
}

static void case_mcast(struct vt_dev *d)
{
	struct sockaddr_in grp = cm_addr("239.1.2.9", 0), uni = cm_addr("127.0.0.1", 0);
	struct ibv_sge rs;
	struct ibv_recv_wr rwr = { .sg_list = &rs, .num_sge = 1 }, *bad_r;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *fresh;
	struct ibv_ah_attr attr;
	struct ud_pair u;
	struct ibv_wc wc;
	int tag, r;

	(void)d;
	if (vt_check(!rdma_create_id(ch, &fresh, NULL, RDMA_PS_UDP), "a fresh UDP id")) {
		r = rdma_join_multicast(fresh, (struct sockaddr *)&grp, NULL);
		vt_check(r == -1 && errno == EINVAL,
			 "join before the address is resolved: EINVAL (%s)", strerror(errno));
		rdma_destroy_id(fresh);
	}
	/* A UD id with its QP joins; a second one sends to the group. */
	if (!setup(&u, false))
		goto out;
	r = rdma_join_multicast(u.active.id, (struct sockaddr *)&uni, NULL);
	vt_check(r == -1 && errno == EINVAL, "join a unicast address: EINVAL (%s)", strerror(errno));
	if (!vt_check(!rdma_join_multicast(u.active.id, (struct sockaddr *)&grp, &tag),
		      "rdma_join_multicast 239.1.2.9"))
		goto out;
	ev = cm_next_event(ch, RDMA_CM_EVENT_MULTICAST_JOIN, "joined");
	if (!ev)
		goto out;
	vt_check(ev->param.ud.ah_attr.is_global && ev->param.ud.ah_attr.grh.dgid.raw[10] == 0xff &&
		 ev->param.ud.ah_attr.grh.dgid.raw[11] == 0xff &&
		 !memcmp(&ev->param.ud.ah_attr.grh.dgid.raw[12], &grp.sin_addr, 4),
		 "MULTICAST_JOIN's address is the group's GID, ::ffff:239.1.2.9");
	VT_EXPECT_EQ("MULTICAST_JOIN's QP number", 0xffffffu, ev->param.ud.qp_num);
	VT_EXPECT_EQ("MULTICAST_JOIN's Q_Key", UDP_QKEY, ev->param.ud.qkey);
	vt_check(ev->param.ud.private_data == &tag, "MULTICAST_JOIN carries the join's context");
	attr = ev->param.ud.ah_attr;
	cm_ack(ev);
	r = rdma_join_multicast(u.active.id, (struct sockaddr *)&grp, NULL);
	vt_check(r == -1 && errno == EADDRINUSE, "the same group again: EADDRINUSE (%s)",
		 strerror(errno));

	/* A second id, its own QP, sends to the group. */
	if (!vt_check(!rdma_create_id(ch, &u.passive.id, NULL, RDMA_PS_UDP), "a sender id"))
		goto out;
	{
		struct sockaddr_in src = cm_addr("127.0.0.1", 0), dst = cm_addr("127.0.0.1", 7471);

		if (!vt_check(!rdma_resolve_addr(u.passive.id, (struct sockaddr *)&src,
						  (struct sockaddr *)&dst, 2000), "the sender resolves"))
			goto out;
		cm_ack(cm_next_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, "the sender's address"));
	}
	if (!make_ud_qp(&u.passive))
		goto out;
	rs = (struct ibv_sge){ (uintptr_t)u.active.buf, sizeof(u.active.buf), u.active.mr->lkey };
	memset(u.active.buf, 0, sizeof(u.active.buf));
	if (!vt_check(!ibv_post_recv(u.active.id->qp, &rwr, &bad_r), "the member posts a receive") ||
	    !send_group(&u.passive, &attr, UDP_QKEY, 0x3c) ||
	    !poll_one(u.active.cq, &wc, "the member's receive"))
		goto out;
	VT_EXPECT_EQ("bytes received from the group (GRH + message)", GRH_BYTES + MSG_BYTES,
		     wc.byte_len);
	vt_check(!memcmp(u.active.buf + GRH_BYTES, u.passive.buf, MSG_BYTES),
		 "the group datagram arrives intact");

	vt_check(!rdma_leave_multicast(u.active.id, (struct sockaddr *)&grp),
		 "rdma_leave_multicast");
	r = rdma_leave_multicast(u.active.id, (struct sockaddr *)&grp);
	vt_check(r == -1 && errno == EADDRNOTAVAIL, "leaving again: EADDRNOTAVAIL (%s)",
		 strerror(errno));
	if (!vt_check(!ibv_post_recv(u.active.id->qp, &rwr, &bad_r), "another receive") ||
	    !send_group(&u.passive, &attr, UDP_QKEY, 0x5a))
		goto out;
	usleep(300000);
	VT_EXPECT_EQ("after leaving, nothing from the group arrives", 0,
		     ibv_poll_cq(u.active.cq, 1, &wc));
out:
	teardown(&u);
}

static const struct vt_case cases[] = {
	{ "accept", case_accept },
	{ "reject", case_reject },
	{ "nobody", case_nobody },
	{ "mcast", case_mcast },
	{ NULL, NULL },
};

int main(int argc, char **argv)
{
	return cm_main(argc, argv, cases, &ch);
}
