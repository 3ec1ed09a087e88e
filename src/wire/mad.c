/* The CM's messages in a MAD (IBA 12.6, tables 106..113).  Offsets below
 * are from the start of the message, i.e. after the 24-byte MAD header;
 * sub-byte fields are named by the bits they take of their byte. */
#include "wire/mad.h"

#include <errno.h>
#include <string.h>

#include "wire/roce_hdr.h"

/* Where private data starts in each message. */
#define REQ_PRIV	140
#define MRA_PRIV	10
#define REJ_PRIV	84
#define REP_PRIV	36
#define RTU_PRIV	8
#define DREQ_PRIV	12
#define DREP_PRIV	8
#define SIDR_REQ_PRIV	16
#define SIDR_REP_PRIV	96

static const struct {
	uint16_t attr;
	uint8_t off, room;
} priv_at[] = {
	{ UR_CM_REQ, REQ_PRIV, UR_CM_REQ_PRIV },   { UR_CM_MRA, MRA_PRIV, UR_CM_MRA_PRIV },
	{ UR_CM_REJ, REJ_PRIV, UR_CM_REJ_PRIV },   { UR_CM_REP, REP_PRIV, UR_CM_REP_PRIV },
	{ UR_CM_RTU, RTU_PRIV, UR_CM_RTU_PRIV },   { UR_CM_DREQ, DREQ_PRIV, UR_CM_DREQ_PRIV },
	{ UR_CM_DREP, DREP_PRIV, UR_CM_DREP_PRIV },
	{ UR_CM_SIDR_REQ, SIDR_REQ_PRIV, UR_CM_SIDR_REQ_PRIV },
	{ UR_CM_SIDR_REP, SIDR_REP_PRIV, UR_CM_SIDR_REP_PRIV },
};

/* The CM's 24-bit fields (QPNs, PSNs) take the first three bytes of their
 * word, unlike the BTH's. */
static void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static uint32_t get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static int priv_index(uint16_t attr)
{
	for (unsigned i = 0; i < sizeof(priv_at) / sizeof(priv_at[0]); i++)
		if (priv_at[i].attr == attr)
			return (int)i;
	return -1;
}

size_t ur_cm_priv_room(uint16_t attr)
{
	int i = priv_index(attr);

	return i < 0 ? 0 : priv_at[i].room;
}

static void pack_req(const struct ur_cm_msg *m, uint8_t *p)
{
	ur_put_be64(p + 8, m->service_id);
	ur_put_be64(p + 16, m->ca_guid);
	ur_put_be32(p + 28, m->qkey);
	put24(p + 32, m->qpn);
	p[35] = m->resp_res;
	p[39] = m->init_depth;
	p[43] = (uint8_t)((m->remote_cm_timeout & 0x1f) << 3 | (m->transport & 3) << 1 |
			  (m->flow_control ? 1 : 0));
	put24(p + 44, m->psn);
	p[47] = (uint8_t)((m->local_cm_timeout & 0x1f) << 3 | (m->retry_count & 7));
	ur_put_be16(p + 48, m->pkey);
	p[50] = (uint8_t)((m->mtu & 0xf) << 4 | (m->rnr_retry & 7));
	p[51] = (uint8_t)((m->max_cm_retries & 0xf) << 4 | (m->srq ? 0x08 : 0));
	/* RoCE: LIDs are the permissive LID (0xffff), as the kernel sends. */
	ur_put_be16(p + 52, 0xffff);
	ur_put_be16(p + 54, 0xffff);
	memcpy(p + 56, m->local_gid, 16);
	memcpy(p + 72, m->remote_gid, 16);
	ur_put_be32(p + 88, (m->flow_label & 0xfffff) << 12);
	p[91] |= 0x02;                 /* packet rate: 2.5 Gb/s, unused on RoCE */
	p[92] = m->traffic_class;
	p[93] = m->hop_limit;
	p[94] = (uint8_t)((m->sl & 0xf) << 4);
	p[95] = (uint8_t)((m->ack_timeout & 0x1f) << 3);
}

static void parse_req(const uint8_t *p, struct ur_cm_msg *m)
{
	m->service_id = ur_get_be64(p + 8);
	m->ca_guid = ur_get_be64(p + 16);
	m->qkey = ur_get_be32(p + 28);
	m->qpn = get24(p + 32);
	m->resp_res = p[35];
	m->init_depth = p[39];
	m->remote_cm_timeout = p[43] >> 3;
	m->transport = (p[43] >> 1) & 3;
	m->flow_control = p[43] & 1;
	m->psn = get24(p + 44);
	m->local_cm_timeout = p[47] >> 3;
	m->retry_count = p[47] & 7;
	m->pkey = ur_get_be16(p + 48);
	m->mtu = p[50] >> 4;
	m->rnr_retry = p[50] & 7;
	m->max_cm_retries = p[51] >> 4;
	m->srq = p[51] & 0x08;
	memcpy(m->local_gid, p + 56, 16);
	memcpy(m->remote_gid, p + 72, 16);
	m->flow_label = ur_get_be32(p + 88) >> 12;
	m->traffic_class = p[92];
	m->hop_limit = p[93];
	m->sl = p[94] >> 4;
	m->ack_timeout = p[95] >> 3;
}

static void pack_rep(const struct ur_cm_msg *m, uint8_t *p)
{
	ur_put_be32(p + 8, m->qkey);
	put24(p + 12, m->qpn);
	put24(p + 20, m->psn);
	p[24] = m->resp_res;
	p[25] = m->init_depth;
	p[26] = (uint8_t)((m->target_ack_delay & 0x1f) << 3 | (m->flow_control ? 1 : 0));
	p[27] = (uint8_t)((m->rnr_retry & 7) << 5 | (m->srq ? 0x10 : 0));
	ur_put_be64(p + 28, m->ca_guid);
}

static void parse_rep(const uint8_t *p, struct ur_cm_msg *m)
{
	m->qkey = ur_get_be32(p + 8);
	m->qpn = get24(p + 12);
	m->psn = get24(p + 20);
	m->resp_res = p[24];
	m->init_depth = p[25];
	m->target_ack_delay = p[26] >> 3;
	m->flow_control = p[26] & 1;
	m->rnr_retry = p[27] >> 5;
	m->srq = p[27] & 0x10;
	m->ca_guid = ur_get_be64(p + 28);
}

/* SIDR messages have no comm IDs: a request ID, then their own fields. */
static void pack_sidr(const struct ur_cm_msg *m, uint8_t *p)
{
	if (m->attr == UR_CM_SIDR_REQ) {
		ur_put_be32(p, m->local_comm_id);
		ur_put_be16(p + 4, m->pkey);
		ur_put_be64(p + 8, m->service_id);
		return;
	}
	ur_put_be32(p, m->remote_comm_id);
	p[4] = m->sidr_status;
	put24(p + 8, m->qpn);
	ur_put_be64(p + 12, m->service_id);
	ur_put_be32(p + 20, m->qkey);
}

static void parse_sidr(const uint8_t *p, struct ur_cm_msg *m)
{
	if (m->attr == UR_CM_SIDR_REQ) {
		m->local_comm_id = ur_get_be32(p);
		m->pkey = ur_get_be16(p + 4);
		m->service_id = ur_get_be64(p + 8);
		return;
	}
	m->remote_comm_id = ur_get_be32(p);
	m->sidr_status = p[4];
	m->qpn = get24(p + 8);
	m->service_id = ur_get_be64(p + 12);
	m->qkey = ur_get_be32(p + 20);
}

static bool is_sidr(uint16_t attr)
{
	return attr == UR_CM_SIDR_REQ || attr == UR_CM_SIDR_REP;
}

int ur_cm_pack(const struct ur_cm_msg *m, uint8_t mad[UR_MAD_BYTES])
{
	int i = priv_index(m->attr);
	uint8_t *p = mad + UR_MAD_HDR_BYTES;

	if (i < 0 || m->priv_len > priv_at[i].room)
		return -EINVAL;
	memset(mad, 0, UR_MAD_BYTES);
	mad[0] = UR_MAD_BASE_VERSION;
	mad[1] = UR_MAD_CLASS_CM;
	mad[2] = UR_MAD_CM_VERSION;
	mad[3] = UR_MAD_METHOD_SEND;
	ur_put_be64(mad + 8, m->tid);
	ur_put_be16(mad + 16, m->attr);
	if (!is_sidr(m->attr)) {
		ur_put_be32(p, m->local_comm_id);
		ur_put_be32(p + 4, m->remote_comm_id);
	}
	switch (m->attr) {
	case UR_CM_SIDR_REQ:
	case UR_CM_SIDR_REP:
		pack_sidr(m, p);
		break;
	case UR_CM_REQ:
		pack_req(m, p);
		break;
	case UR_CM_REP:
		pack_rep(m, p);
		break;
	case UR_CM_REJ:
		p[8] = (uint8_t)((m->msg_ref & 3) << 6);
		p[9] = (uint8_t)((m->ari_len > 72 ? 72 : m->ari_len) << 1);
		ur_put_be16(p + 10, m->reason);
		memcpy(p + 12, m->ari, m->ari_len > 72 ? 72 : m->ari_len);
		break;
	case UR_CM_MRA:
		p[8] = (uint8_t)((m->msg_ref & 3) << 6);
		p[9] = (uint8_t)((m->service_timeout & 0x1f) << 3);
		break;
	case UR_CM_DREQ:
		put24(p + 8, m->qpn);
		break;
	default:
		break;
	}
	memcpy(p + priv_at[i].off, m->priv, m->priv_len);
	return 0;
}

static int check_hdr(const uint8_t *mad, size_t len)
{
	if (len < UR_MAD_BYTES || mad[0] != UR_MAD_BASE_VERSION || mad[1] != UR_MAD_CLASS_CM ||
	    mad[2] != UR_MAD_CM_VERSION || mad[3] != UR_MAD_METHOD_SEND)
		return -EINVAL;
	return priv_index(ur_get_be16(mad + 16)) < 0 ? -EINVAL : 0;
}

int ur_cm_parse(const uint8_t *mad, size_t len, struct ur_cm_msg *m)
{
	const uint8_t *p = mad + UR_MAD_HDR_BYTES;
	int i;

	if (check_hdr(mad, len))
		return -EINVAL;
	memset(m, 0, sizeof(*m));
	m->attr = ur_get_be16(mad + 16);
	m->tid = ur_get_be64(mad + 8);
	if (!is_sidr(m->attr)) {
		m->local_comm_id = ur_get_be32(p);
		m->remote_comm_id = ur_get_be32(p + 4);
	}
	switch (m->attr) {
	case UR_CM_SIDR_REQ:
	case UR_CM_SIDR_REP:
		parse_sidr(p, m);
		break;
	case UR_CM_REQ:
		parse_req(p, m);
		break;
	case UR_CM_REP:
		parse_rep(p, m);
		break;
	case UR_CM_REJ:
		m->msg_ref = p[8] >> 6;
		m->ari_len = p[9] >> 1;
		if (m->ari_len > 72)
			m->ari_len = 72;
		m->reason = ur_get_be16(p + 10);
		memcpy(m->ari, p + 12, m->ari_len);
		break;
	case UR_CM_MRA:
		m->msg_ref = p[8] >> 6;
		m->service_timeout = p[9] >> 3;
		break;
	case UR_CM_DREQ:
		m->qpn = get24(p + 8);
		break;
	default:
		break;
	}
	i = priv_index(m->attr);
	m->priv_len = priv_at[i].room;
	memcpy(m->priv, p + priv_at[i].off, m->priv_len);
	return 0;
}

int ur_cm_dest_of(const uint8_t *mad, size_t len, struct ur_cm_dest *d)
{
	const uint8_t *p = mad + UR_MAD_HDR_BYTES;

	if (check_hdr(mad, len))
		return -EINVAL;
	memset(d, 0, sizeof(*d));
	if (ur_get_be16(mad + 16) == UR_CM_REQ || ur_get_be16(mad + 16) == UR_CM_SIDR_REQ) {
		d->by_service = true;
		d->service_id = ur_get_be64(p + 8);   /* the same place in both */
	} else if (ur_get_be16(mad + 16) == UR_CM_SIDR_REP) {
		d->comm_id = ur_get_be32(p);          /* the request ID it answers */
	} else {
		/* Addressed to the comm ID the receiver gave: the "remote" one. */
		d->comm_id = ur_get_be32(p + 4);
	}
	return 0;
}

uint64_t ur_cma_service_id(uint16_t ps, uint16_t port)
{
	return UR_CMA_SID_BASE | (uint64_t)ps << 16 | port;
}

void ur_cma_hdr_pack(const struct ur_cma_hdr *h, uint8_t out[UR_CMA_HDR_BYTES])
{
	memset(out, 0, UR_CMA_HDR_BYTES);
	out[0] = 0;                           /* cma_version */
	out[1] = (uint8_t)(h->ip_version << 4);
	ur_put_be16(out + 2, h->src_port);
	memcpy(out + 4, h->src, 16);
	memcpy(out + 20, h->dst, 16);
}

int ur_cma_hdr_parse(const uint8_t *in, size_t len, struct ur_cma_hdr *h)
{
	if (len < UR_CMA_HDR_BYTES || in[0] != 0)
		return -EINVAL;
	h->ip_version = in[1] >> 4;
	if (h->ip_version != 4 && h->ip_version != 6)
		return -EINVAL;
	h->src_port = ur_get_be16(in + 2);
	memcpy(h->src, in + 4, 16);
	memcpy(h->dst, in + 20, 16);
	return 0;
}
