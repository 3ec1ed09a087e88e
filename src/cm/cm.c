#include "cm/cm.h"

#include <errno.h>
#include <string.h>

UR_ENUM_NAMES(UR_CM_STATE_LIST, UR_CM_STATE_NR, ur_cm_state_name);

void ur_cm_init(struct ur_cm_conn *c, const struct ur_cm_ops *ops, uint32_t local_id,
		uint64_t timeout_ns, unsigned max_retries)
{
	memset(c, 0, sizeof(*c));
	c->ops = ops;
	c->local_id = local_id;
	c->timeout_ns = timeout_ns;
	c->max_retries = max_retries;
}

/* Sends c->out and arms the timer for its answer. */
static void send_out(struct ur_cm_conn *c, uint64_t now)
{
	c->ops->send(c, &c->out);
	c->deadline_ns = now + c->timeout_ns;
}

static void start(struct ur_cm_conn *c, struct ur_cm_msg *m, uint64_t now)
{
	m->local_comm_id = c->local_id;
	m->remote_comm_id = c->remote_id;
	m->tid = c->tid;
	c->out = *m;
	c->retries_left = c->max_retries;
	send_out(c, now);
}

/* An answer that is not waited for, kept to answer a repeat. */
static void answer(struct ur_cm_conn *c, uint16_t attr, uint16_t reason, const uint8_t *priv,
		   uint8_t len)
{
	struct ur_cm_msg *a = &c->answer;

	memset(a, 0, sizeof(*a));
	a->attr = attr;
	a->tid = c->tid;
	a->local_comm_id = c->local_id;
	a->remote_comm_id = c->remote_id;
	if (attr == UR_CM_REJ)
		a->msg_ref = c->state == UR_CM_REQ_RCVD ? UR_CM_REF_REQ : UR_CM_REF_REP;
	a->reason = reason;
	if (len)
		memcpy(a->priv, priv, len);
	a->priv_len = len;
	c->have_answer = true;
	c->ops->send(c, a);
}

/* The first message of an exchange (a REQ or a SIDR_REQ) from an idle
 * connection: a new transaction, no peer known yet. */
static int send_first(struct ur_cm_conn *c, struct ur_cm_msg *m, uint64_t now, enum ur_cm_attr attr,
		      enum ur_cm_state sent)
{
	if (c->state != UR_CM_IDLE)
		return -EINVAL;
	m->attr = attr;
	c->tid = ((uint64_t)c->local_id << 32) | 1;
	c->remote_id = 0;
	start(c, m, now);
	c->req_sent_ns = now;
	c->await_listener = false;
	c->state = sent;
	return 0;
}

int ur_cm_send_req(struct ur_cm_conn *c, struct ur_cm_msg *m, uint64_t now)
{
	return send_first(c, m, now, UR_CM_REQ, UR_CM_REQ_SENT);
}

/* The first message of an exchange received: its peer and transaction. */
static void first_rcvd(struct ur_cm_conn *c, const struct ur_cm_msg *req, enum ur_cm_state rcvd)
{
	c->remote_id = req->local_comm_id;
	c->tid = req->tid;
	c->state = rcvd;
}

void ur_cm_req_rcvd(struct ur_cm_conn *c, const struct ur_cm_msg *req)
{
	c->remote_qpn = req->qpn;
	first_rcvd(c, req, UR_CM_REQ_RCVD);
}

int ur_cm_send_rep(struct ur_cm_conn *c, struct ur_cm_msg *m, uint64_t now)
{
	if (c->state != UR_CM_REQ_RCVD)
		return -EINVAL;
	m->attr = UR_CM_REP;
	start(c, m, now);
	c->state = UR_CM_REP_SENT;
	return 0;
}

int ur_cm_send_rtu(struct ur_cm_conn *c, const uint8_t *priv, uint8_t len)
{
	if (c->state != UR_CM_REP_RCVD)
		return -EINVAL;
	c->state = UR_CM_ESTABLISHED;
	answer(c, UR_CM_RTU, 0, priv, len);
	return 0;
}

int ur_cm_send_rej(struct ur_cm_conn *c, uint16_t reason, const uint8_t *priv, uint8_t len)
{
	switch (c->state) {
	case UR_CM_REQ_SENT:
	case UR_CM_REQ_RCVD:
	case UR_CM_REP_SENT:
	case UR_CM_REP_RCVD:
		break;
	default:
		return -EINVAL;
	}
	c->deadline_ns = 0;
	answer(c, UR_CM_REJ, reason, priv, len);
	c->state = UR_CM_TIMEWAIT;
	return 0;
}

int ur_cm_send_dreq(struct ur_cm_conn *c, const uint8_t *priv, uint8_t len, uint64_t now)
{
	struct ur_cm_msg m;

	if (c->state != UR_CM_ESTABLISHED)
		return -EINVAL;
	memset(&m, 0, sizeof(m));
	m.attr = UR_CM_DREQ;
	m.qpn = c->remote_qpn;
	if (len)
		memcpy(m.priv, priv, len);
	m.priv_len = len;
	c->tid++;
	start(c, &m, now);
	c->state = UR_CM_DREQ_SENT;
	return 0;
}

int ur_cm_send_sidr_req(struct ur_cm_conn *c, struct ur_cm_msg *m, uint64_t now)
{
	return send_first(c, m, now, UR_CM_SIDR_REQ, UR_CM_SIDR_REQ_SENT);
}

void ur_cm_sidr_req_rcvd(struct ur_cm_conn *c, const struct ur_cm_msg *req)
{
	first_rcvd(c, req, UR_CM_SIDR_REQ_RCVD);
}

int ur_cm_send_sidr_rep(struct ur_cm_conn *c, uint8_t status, uint32_t qpn, uint32_t qkey,
			const uint8_t *priv, uint8_t len)
{
	struct ur_cm_msg *a = &c->answer;

	if (c->state != UR_CM_SIDR_REQ_RCVD || len > UR_CM_SIDR_REP_PRIV)
		return -EINVAL;
	memset(a, 0, sizeof(*a));
	a->attr = UR_CM_SIDR_REP;
	a->tid = c->tid;
	a->remote_comm_id = c->remote_id;
	a->sidr_status = status;
	a->qpn = status == UR_SIDR_OK ? qpn : 0;
	a->qkey = status == UR_SIDR_OK ? qkey : 0;
	if (len)
		memcpy(a->priv, priv, len);
	a->priv_len = len;
	c->have_answer = true;
	c->state = UR_CM_TIMEWAIT;
	c->ops->send(c, a);
	return 0;
}

void ur_cm_established(struct ur_cm_conn *c)
{
	if (c->state == UR_CM_REP_SENT) {
		c->state = UR_CM_ESTABLISHED;
		c->deadline_ns = 0;
	}
}

static enum ur_cm_up on_dreq(struct ur_cm_conn *c, const struct ur_cm_msg *m)
{
	bool first = c->state == UR_CM_ESTABLISHED || c->state == UR_CM_DREQ_SENT ||
		     c->state == UR_CM_REP_SENT;

	if (!first && c->state != UR_CM_TIMEWAIT)
		return UR_CM_UP_NONE;
	c->tid = m->tid;
	c->deadline_ns = 0;
	c->state = UR_CM_TIMEWAIT;
	answer(c, UR_CM_DREP, 0, NULL, 0);
	return first ? UR_CM_UP_DREQ : UR_CM_UP_NONE;
}

void ur_cm_peer_gone(struct ur_cm_conn *c)
{
	c->deadline_ns = 0;
	c->state = UR_CM_TIMEWAIT;
}

/* What was awaited came: no deadline now, the next state, the upcall. */
static enum ur_cm_up settle(struct ur_cm_conn *c, enum ur_cm_state state, enum ur_cm_up up)
{
	c->deadline_ns = 0;
	c->state = state;
	return up;
}

/* A request turned away perhaps only because nobody listens yet: sent
 * again, as a new transaction, shortly (ur_cm_tick). */
static enum ur_cm_up await_listener(struct ur_cm_conn *c, uint64_t now)
{
	c->await_listener = true;
	c->deadline_ns = now + UR_CM_LISTEN_RETRY_NS;
	return UR_CM_UP_NONE;
}

enum ur_cm_up ur_cm_rx(struct ur_cm_conn *c, const struct ur_cm_msg *m, uint64_t now)
{
	switch (m->attr) {
	case UR_CM_REP:
		if (c->state == UR_CM_REQ_SENT) {
			c->remote_id = m->local_comm_id;
			c->remote_qpn = m->qpn;
			return settle(c, UR_CM_REP_RCVD, UR_CM_UP_REP);
		}
		/* Our RTU was lost: say it again. */
		if (c->state == UR_CM_ESTABLISHED && c->have_answer && c->answer.attr == UR_CM_RTU)
			c->ops->send(c, &c->answer);
		return UR_CM_UP_NONE;
	case UR_CM_REQ:
		/* Our REP was lost or is late: say it again. */
		if (c->state == UR_CM_REP_SENT)
			c->ops->send(c, &c->out);
		return UR_CM_UP_NONE;
	case UR_CM_RTU:
		if (c->state != UR_CM_REP_SENT)
			return UR_CM_UP_NONE;
		return settle(c, UR_CM_ESTABLISHED, UR_CM_UP_RTU);
	case UR_CM_MRA:
		/* The peer needs longer: wait its service timeout, at least ours. */
		if (c->deadline_ns) {
			uint64_t more = 4096ull << (m->service_timeout > 31 ? 31 : m->service_timeout);

			c->deadline_ns = now + (more > c->timeout_ns ? more : c->timeout_ns);
		}
		return UR_CM_UP_NONE;
	case UR_CM_REJ:
		if (c->state == UR_CM_REQ_SENT && m->reason == UR_REJ_INVALID_SERVICE_ID &&
		    now - c->req_sent_ns < UR_CM_LISTEN_GRACE_NS) {
			/* Maybe not listening yet: ask again shortly (cm.h). */
			return await_listener(c, now);
		}
		switch (c->state) {
		case UR_CM_REQ_SENT:
		case UR_CM_REP_SENT:
		case UR_CM_REP_RCVD:
		case UR_CM_REQ_RCVD:
			return settle(c, UR_CM_TIMEWAIT, UR_CM_UP_REJ);
		default:
			return UR_CM_UP_NONE;
		}
	case UR_CM_DREQ:
		return on_dreq(c, m);
	case UR_CM_SIDR_REQ:
		/* Our SIDR_REP was lost: say it again. */
		if (c->have_answer && c->answer.attr == UR_CM_SIDR_REP)
			c->ops->send(c, &c->answer);
		return UR_CM_UP_NONE;
	case UR_CM_SIDR_REP:
		if (c->state != UR_CM_SIDR_REQ_SENT)
			return UR_CM_UP_NONE;
		if (m->sidr_status == UR_SIDR_UNSUPPORTED &&
		    now - c->req_sent_ns < UR_CM_LISTEN_GRACE_NS) {
			/* Maybe not listening yet, as for a REQ (cm.h). */
			return await_listener(c, now);
		}
		return settle(c, UR_CM_TIMEWAIT, UR_CM_UP_SIDR_REP);
	case UR_CM_DREP:
		if (c->state != UR_CM_DREQ_SENT)
			return UR_CM_UP_NONE;
		return settle(c, UR_CM_TIMEWAIT, UR_CM_UP_DREP);
	default:
		return UR_CM_UP_NONE;
	}
}

enum ur_cm_up ur_cm_tick(struct ur_cm_conn *c, uint64_t now)
{
	if (!c->deadline_ns || now < c->deadline_ns)
		return UR_CM_UP_NONE;
	if (c->await_listener) {
		/* A fresh request (new transaction ID): the side that turned
		 * the last one away kept nothing of it. */
		c->await_listener = false;
		c->tid++;
		c->out.tid = c->tid;
		c->retries_left = c->max_retries;
		send_out(c, now);
		return UR_CM_UP_NONE;
	}
	if (c->retries_left) {
		c->retries_left--;
		send_out(c, now);
		return UR_CM_UP_NONE;
	}
	c->deadline_ns = 0;
	switch (c->state) {
	case UR_CM_REQ_SENT:
	case UR_CM_REP_SENT:
	case UR_CM_SIDR_REQ_SENT:
		c->state = UR_CM_TIMEWAIT;
		return UR_CM_UP_TIMEOUT;
	case UR_CM_DREQ_SENT:
		c->state = UR_CM_TIMEWAIT;
		return UR_CM_UP_DREQ_TIMEOUT;
	default:
		return UR_CM_UP_NONE;
	}
}

void ur_cm_rej_for(const struct ur_cm_msg *in, uint16_t reason, struct ur_cm_msg *out)
{
	memset(out, 0, sizeof(*out));
	out->attr = UR_CM_REJ;
	out->tid = in->tid;
	out->remote_comm_id = in->local_comm_id;
	out->msg_ref = in->attr == UR_CM_REQ ? UR_CM_REF_REQ :
		       in->attr == UR_CM_REP ? UR_CM_REF_REP : UR_CM_REF_OTHER;
	out->reason = reason;
}
