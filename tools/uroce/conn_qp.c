/* The connection layer, QP side: create QPs, describe them in endpoint
 * records, and move them INIT -> RTR -> RTS towards a peer, explaining the
 * usual failures (a GID index that does not reach the peer, an MTU the path
 * cannot carry). */
#include "conn.h"
#include "dev_open.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static const char *qpt_name(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC:
		return "RC";
	case IBV_QPT_UC:
		return "UC";
	case IBV_QPT_UD:
		return "UD";
	default:
		return "?";
	}
}

static int qp_to_init(struct ur_dev *d, struct ibv_qp *qp, int access)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = d->port,
	};
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (qp->qp_type == IBV_QPT_UD) {
		a.qkey = UR_UD_QKEY;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = (unsigned)access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(qp, &a, mask) ? errno : 0;
}

struct ibv_qp *ur_qp_new(struct ur_dev *d, const struct ur_qp_cfg *c)
{
	struct ibv_qp_init_attr ia = {
		.qp_context = c->context,
		.send_cq = c->send_cq,
		.recv_cq = c->recv_cq,
		.srq = c->srq,
		.cap = {
			.max_send_wr = c->max_send_wr,
			.max_recv_wr = c->srq ? 0 : c->max_recv_wr,
			.max_send_sge = c->max_sge ? c->max_sge : 1,
			.max_recv_sge = c->max_sge ? c->max_sge : 1,
			.max_inline_data = c->max_inline,
		},
		.qp_type = c->type,
		.sq_sig_all = c->sq_sig_all,
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &ia);
	int rc;

	if (!qp) {
		rc = errno;
		fprintf(stderr, "cannot create a %s QP on %s (send %u, recv %u WRs, inline %u): %s",
			qpt_name(c->type), ur_dev_name(d), c->max_send_wr, c->max_recv_wr,
			c->max_inline, strerror(rc));
		if (c->max_send_wr > (uint32_t)d->attr.max_qp_wr ||
		    c->max_recv_wr > (uint32_t)d->attr.max_qp_wr)
			fprintf(stderr, "; the device allows %d WRs per queue (max_qp_wr)",
				d->attr.max_qp_wr);
		else if (c->max_inline)
			fprintf(stderr, "; %u bytes of inline data may exceed what the device allows "
					"(drop --inline or use a smaller size)", c->max_inline);
		else if (rc == ENOMEM || rc == ENOSPC || rc == EUSERS)
			fprintf(stderr, "; the device allows %d QPs (max_qp, see `ibv_devinfo -v`)",
				d->attr.max_qp);
		fputc('\n', stderr);
		errno = rc;
		return NULL;
	}
	rc = qp_to_init(d, qp, c->access);
	if (rc) {
		fprintf(stderr, "cannot move the %s QP 0x%06x to INIT on %s port %u: %s\n",
			qpt_name(c->type), qp->qp_num, ur_dev_name(d), d->port, strerror(rc));
		ibv_destroy_qp(qp);
		errno = rc;
		return NULL;
	}
	return qp;
}

void ur_ep_fill(struct ur_ep *ep, const struct ur_dev *d, const struct ibv_qp *qp,
		const struct ibv_mr *mr)
{
	uint32_t r = 0;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint32_t)random();
	memset(ep, 0, sizeof(*ep));
	ep->lid = d->port_attr.lid;
	ep->qpn = qp ? qp->qp_num : 0;
	ep->psn = r & 0xffffff;
	ep->gid = d->gid;
	ep->gid_index = (uint8_t)d->gid_index;
	ep->mtu = d->port_attr.active_mtu;
	if (mr) {
		ep->addr = (uintptr_t)mr->addr;
		ep->rkey = mr->rkey;
		ep->len = (uint32_t)mr->length;
	}
}

void ur_ep_print(FILE *f, const char *which, const struct ur_ep *ep, bool rdma)
{
	char gid[UR_GID_STRLEN];

	ur_gid_to_str(&ep->gid, gid, sizeof(gid));
	fprintf(f, "  %s address:%s LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s", which,
		strcmp(which, "local") ? "" : " ", ep->lid, ep->qpn, ep->psn, gid);
	if (rdma)
		fprintf(f, ", VA 0x%016llx, RKEY 0x%08x", (unsigned long long)ep->addr, ep->rkey);
	fputc('\n', f);
}

int ur_mtu_bytes(enum ibv_mtu mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0;
}

enum ibv_mtu ur_mtu_from_bytes(int bytes)
{
	for (enum ibv_mtu m = IBV_MTU_256; m <= IBV_MTU_4096; m++)
		if (ur_mtu_bytes(m) == bytes)
			return m;
	return 0;
}

enum ibv_mtu ur_path_mtu(const struct ur_dev *d, const struct ur_ep *remote,
			 enum ibv_mtu requested)
{
	enum ibv_mtu mine = d->port_attr.active_mtu, theirs = remote->mtu;

	if (requested && requested > mine) {
		fprintf(stderr, "MTU %d is more than %s port %u carries (active MTU %d, from its "
				"interface's MTU): use -m %d or less\n",
			ur_mtu_bytes(requested), ur_dev_name(d), d->port, ur_mtu_bytes(mine),
			ur_mtu_bytes(mine));
		return 0;
	}
	if (requested && requested > theirs) {
		fprintf(stderr, "MTU mismatch: -m %d, but the peer's port carries at most %d "
				"(its active MTU): use -m %d, or raise the peer interface's MTU\n",
			ur_mtu_bytes(requested), ur_mtu_bytes(theirs), ur_mtu_bytes(theirs));
		return 0;
	}
	if (requested)
		return requested;
	if (theirs < IBV_MTU_256 || theirs > IBV_MTU_4096) {
		fprintf(stderr, "the peer sent an invalid MTU code %d\n", theirs);
		return 0;
	}
	return theirs < mine ? theirs : mine;
}

static bool gid_link_local(const union ibv_gid *g)
{
	return g->raw[0] == 0xfe && (g->raw[1] & 0xc0) == 0x80;
}

/* " (uroce0, eth0)" for GID index IDX of D. */
static void gid_where(struct ur_dev *d, int idx, char *out, size_t len)
{
	struct ur_gid_info t[64];
	int n = ur_gid_table(d->ctx, d->port, t, 64);

	snprintf(out, len, "%s", ur_dev_name(d));
	for (int i = 0; i < n; i++)
		if ((int)t[i].e.gid_index == idx && t[i].netdev[0])
			snprintf(out, len, "%s, %s", ur_dev_name(d), t[i].netdev);
}

/* After RTR (or AH creation) failed with RC: say WHAT failed, whether our
 * GID index or the peer's is wrong, and which index reaches the peer.  The
 * peer's address is its GID when that is routable, else the address we know
 * it by (d->peer: the server name, or the client's TCP address). */
static void explain_rtr(struct ur_dev *d, const struct ur_ep *remote, enum ibv_mtu mtu, int rc,
			const char *what)
{
	char rgid[UR_GID_STRLEN], mine[UR_GID_STRLEN], why[256], where[96];
	const char *peer = rgid;
	bool v4, theirs_bad = false, said = false;
	int idx;

	fprintf(stderr, "%s: %s", what, strerror(rc));
	ur_gid_to_str(&d->gid, mine, sizeof(mine));
	if (ur_gid_to_ip(&remote->gid, rgid, sizeof(rgid), &v4) ||
	    (!v4 && gid_link_local(&remote->gid))) {
		theirs_bad = true;
		ur_gid_to_str(&remote->gid, rgid, sizeof(rgid));
		peer = d->peer[0] ? d->peer : NULL;
	}
	idx = peer ? ur_gid_for_peer(d->ctx, d->port, peer, why, sizeof(why)) : -ENOENT;
	if (idx >= 0 && idx != d->gid_index) {
		gid_where(d, idx, where, sizeof(where));
		fprintf(stderr, "; GID index %d (%s) does not reach the peer %s, GID index %d "
				"(%s) does: use %s %d", d->gid_index, mine, peer, idx, where,
			d->gid_flag, idx);
		said = true;
	} else if (idx < 0 && peer && !theirs_bad) {
		fprintf(stderr, "; GID index %d (%s) cannot reach the peer's GID %s (its GID index "
				"%u): %s", d->gid_index, mine, peer, remote->gid_index, why);
		said = true;
	}
	if (theirs_bad) {
		fprintf(stderr, "%s the peer's GID %s (its GID index %u) is a link-local entry "
				"that no route reaches: the peer must use the GID index holding its IP "
				"address (start it without %s, or see `uroce gid` there)",
			";", rgid, remote->gid_index, d->gid_flag);
		said = true;
	}
	if (!said && mtu > d->port_attr.active_mtu)
		fprintf(stderr, "; path MTU %d exceeds the port's active MTU %d",
			ur_mtu_bytes(mtu), ur_mtu_bytes(d->port_attr.active_mtu));
	else if (!said)
		fprintf(stderr, " (GID index %d, %s, towards %s, MTU %d)", d->gid_index, mine,
			rgid, ur_mtu_bytes(mtu));
	fputc('\n', stderr);
}

static void fill_av(struct ur_dev *d, struct ibv_ah_attr *av, const struct ur_ep *remote,
		    const struct ur_qp_tune *t)
{
	memset(av, 0, sizeof(*av));
	av->dlid = remote->lid;
	av->sl = t->sl;
	av->port_num = d->port;
	/* A RoCE port routes by GID: every address vector carries a GRH. */
	if (d->port_attr.link_layer == IBV_LINK_LAYER_ETHERNET ||
	    memcmp(&remote->gid, &(union ibv_gid){ 0 }, sizeof(remote->gid))) {
		av->is_global = 1;
		av->grh.dgid = remote->gid;
		av->grh.sgid_index = (uint8_t)d->gid_index;
		av->grh.hop_limit = 64;
		av->grh.traffic_class = t->traffic_class;
	}
}

static uint8_t cap_u8(int device_max, uint8_t want)
{
	return device_max < want ? (uint8_t)device_max : want;
}

int ur_qp_connect(struct ur_dev *d, struct ibv_qp *qp, const struct ur_ep *local,
		  const struct ur_ep *remote, const struct ur_qp_tune *tune)
{
	struct ur_qp_tune t = tune ? *tune : (struct ur_qp_tune){ 0 };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	int mask = IBV_QP_STATE, rc;

	t.mtu = ur_path_mtu(d, remote, t.mtu);
	if (!t.mtu)
		return -EINVAL;
	if (qp->qp_type != IBV_QPT_UD) {
		fill_av(d, &a.ah_attr, remote, &t);
		a.path_mtu = t.mtu;
		a.dest_qp_num = remote->qpn;
		a.rq_psn = remote->psn;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
	}
	if (qp->qp_type == IBV_QPT_RC) {
		a.max_dest_rd_atomic = cap_u8(d->attr.max_qp_rd_atom, t.max_rd_atomic ? t.max_rd_atomic : 16);
		a.min_rnr_timer = t.min_rnr_timer ? t.min_rnr_timer : 12;
		mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	if (ibv_modify_qp(qp, &a, mask)) {
		rc = errno;
		explain_rtr(d, remote, t.mtu, rc, "failed to modify QP to RTR");
		return -rc;
	}

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = local->psn;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (qp->qp_type == IBV_QPT_RC) {
		a.timeout = t.timeout ? t.timeout : 14;
		a.retry_cnt = t.retry_cnt ? t.retry_cnt : 7;
		a.rnr_retry = t.rnr_retry ? t.rnr_retry : 7;
		a.max_rd_atomic = cap_u8(d->attr.max_qp_init_rd_atom,
					 t.max_rd_atomic ? t.max_rd_atomic : 16);
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (ibv_modify_qp(qp, &a, mask)) {
		rc = errno;
		fprintf(stderr, "failed to modify QP 0x%06x to RTS: %s\n", qp->qp_num, strerror(rc));
		return -rc;
	}
	return 0;
}

struct ibv_ah *ur_ah_new(struct ur_dev *d, const struct ur_ep *remote)
{
	struct ur_qp_tune t = { 0 };
	struct ibv_ah_attr av;
	struct ibv_ah *ah;

	fill_av(d, &av, remote, &t);
	ah = ibv_create_ah(d->pd, &av);
	if (!ah) {
		int rc = errno;

		/* The same causes as RTR: the source GID does not reach the peer. */
		explain_rtr(d, remote, d->port_attr.active_mtu, rc, "cannot create an address handle");
		errno = rc;
	}
	return ah;
}
