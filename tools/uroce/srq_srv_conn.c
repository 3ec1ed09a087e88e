/* uroce srq-server: one connection's life -- handshake (QP on the shared
 * SRQ and CQ), the DONE record, the verdict, and its end (the QP flushed
 * and destroyed, the others undisturbed). */
#include "srq_srv.h"
#include "uroce.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define HANDSHAKE_TIMEOUT_S 10

static const char *const state_names[] = {
	[CS_ACTIVE] = "active", [CS_DRAINING] = "draining", [CS_DONE] = "done",
	[CS_ABORTED] = "aborted", [CS_BAD] = "bad", [CS_REJECTED] = "rejected",
};

const char *srv_state_name(enum conn_state st)
{
	return state_names[st];
}

void srv_conn_end(struct srv *s, struct srv_conn *c, enum conn_state st)
{
	c->state = st;
	if (c->qp) {
		/* Flush what the QP holds and count what it completed while it is
		 * still in the map; then it can go.  The SRQ's other WQEs stay. */
		ibv_modify_qp(c->qp, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR }, IBV_QP_STATE);
		srv_drain_cq(s);
		if (c->mapped)
			srq_qpmap_del(&s->map, &c->map);
		c->mapped = false;
		if (ibv_destroy_qp(c->qp))
			fprintf(stderr, "destroying client %u's QP failed: %s\n", c->id, strerror(errno));
		c->qp = NULL;
	}
	if (c->fd >= 0) {
		epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
		c->fd = -1;
		s->nlive--;
	}
	c->state = st;
}

static void set_timeouts(int fd, int seconds)
{
	struct timeval tv = { .tv_sec = seconds };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* The exchange with a new client; fills c->qp.  Returns 0, -1 when this
 * client is refused (c->error says why), or an exit code when the server
 * cannot go on (no device). */
static int handshake(struct srv *s, struct srv_conn *c)
{
	struct ur_hello lh = { .tool = SRQ_TOOL }, rh;
	struct ur_ep local, remote;
	uint32_t size;
	int rc;

	if (!s->dev_open && (rc = srv_open_device(s, c->fd)))
		return rc;
	c->qp = ur_qp_new(&s->d, &(struct ur_qp_cfg){
		.type = IBV_QPT_RC, .send_cq = s->cq, .recv_cq = s->cq, .srq = s->srq,
		.max_send_wr = 1, .context = c });
	if (!c->qp) {
		snprintf(c->error, sizeof(c->error), "cannot create its QP (%s; %u QPs exist, "
			 "max_qp %d)", strerror(errno), s->nlive, s->d.attr.max_qp);
		return -1;
	}
	c->qpn = c->qp->qp_num;
	ur_ep_fill(&local, &s->d, c->qp, NULL);
	lh.word[SRQ_W_SIZE] = s->o.max_size;
	lh.word[SRQ_W_MSGS] = s->o.msgs;
	lh.word[SRQ_W_ID] = c->id;
	if (ur_exchange(c->fd, true, &lh, &local, &rh, &remote, 1)) {
		snprintf(c->error, sizeof(c->error), "the exchange failed");
		return -1;
	}
	size = rh.word[SRQ_W_SIZE];
	/* The client checks the same and gives up: say it here too. */
	if (size > s->o.max_size || size < SRQ_HDR_BYTES) {
		snprintf(c->error, sizeof(c->error), "its -s %u is outside %d..%u (the server's -s)",
			 size, SRQ_HDR_BYTES, s->o.max_size);
		return -1;
	}
	if (s->o.msgs && rh.word[SRQ_W_MSGS] != s->o.msgs) {
		snprintf(c->error, sizeof(c->error), "it would send %u messages, -n expects %u",
			 rh.word[SRQ_W_MSGS], s->o.msgs);
		return -1;
	}
	if (ur_qp_connect(&s->d, c->qp, &local, &remote, NULL) || ur_tcp_barrier(c->fd)) {
		snprintf(c->error, sizeof(c->error), "connecting its QP failed");
		return -1;
	}
	if (s->o.verbose) {
		printf("client %u from %s: ", c->id, c->peer);
		ur_ep_print(stdout, "remote", &remote, false);
		fflush(stdout);
	}
	return 0;
}

/* A connection beyond -q: tell the client (a hello with no id) and close. */
static void refuse_full(struct srv *s, int fd, const char *peer)
{
	struct ur_hello lh = { .tool = SRQ_TOOL }, rh;
	struct ur_ep none = { 0 }, remote;

	lh.word[SRQ_W_ID] = UINT32_MAX;
	lh.word[SRQ_W_SIZE] = s->o.max_size;
	set_timeouts(fd, 2);
	ur_exchange(fd, true, &lh, &none, &rh, &remote, 1);
	fprintf(stderr, "refused a client from %s: already served -q %u clients\n", peer,
		s->o.max_clients);
	close(fd);
}

static int accept_one(struct srv *s, int fd, const char *peer)
{
	struct srv_conn *c;
	int rc;

	if (s->nconns == s->o.max_clients) {
		refuse_full(s, fd, peer);
		return 0;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return UR_EXIT_FAIL;
	}
	c->id = s->nconns;
	c->fd = fd;
	snprintf(c->peer, sizeof(c->peer), "%s", peer);
	s->conns[s->nconns++] = c;
	s->nlive++;
	if (!s->t0)
		s->t0 = srv_now();
	set_timeouts(fd, HANDSHAKE_TIMEOUT_S);
	rc = handshake(s, c);
	if (rc > 0)
		return rc;
	if (rc < 0) {
		fprintf(stderr, "client %u from %s refused: %s\n", c->id, peer, c->error);
		srv_conn_end(s, c, CS_REJECTED);
		return 0;
	}
	c->map = (struct srq_qpmap_entry){ .qpn = c->qpn, .conn = c };
	srq_qpmap_add(&s->map, &c->map);
	c->mapped = true;
	if (epoll_ctl(s->ep, EPOLL_CTL_ADD, fd,
		      &(struct epoll_event){ .events = EPOLLIN | EPOLLRDHUP, .data.ptr = c })) {
		fprintf(stderr, "epoll: %s\n", strerror(errno));
		return UR_EXIT_FAIL;
	}
	return 0;
}

int srv_accept(struct srv *s)
{
	char peer[80];
	int fd, rc;

	/* One at a time, the CQ drained in between: a burst of hundreds of
	 * handshakes must not leave the SRQ empty for the clients already
	 * sending. */
	fd = ur_tcp_accept(s->lfd, peer, sizeof(peer));
	if (fd == -EAGAIN || fd == -EWOULDBLOCK || fd == -ECONNABORTED)
		return 0;
	if (fd < 0)
		return UR_EXIT_FAIL;
	rc = accept_one(s, fd, peer);
	return rc ? rc : srv_drain_cq(s);
}

static void send_verdict(struct srv *s, struct srv_conn *c)
{
	uint8_t v[SRQ_VERDICT_BYTES];
	bool ok = c->state == CS_DRAINING;

	srq_verdict_pack(v, ok, (uint32_t)c->msgs, c->bytes);
	ur_tcp_write_all(c->fd, v, sizeof(v));
	srv_conn_end(s, c, ok ? CS_DONE : CS_BAD);
}

/* A connection that sent DONE: verdict once what it sent has arrived. */
static void check_one(struct srv *s, struct srv_conn *c)
{
	if (c->state == CS_BAD) {
		send_verdict(s, c);
		return;
	}
	if (c->msgs > c->declared || (c->msgs == c->declared && c->bytes != c->declared_bytes))
		srv_conn_fail(c, "it declared %u messages (%llu bytes), %llu (%llu bytes) arrived",
			      c->declared, (unsigned long long)c->declared_bytes,
			      (unsigned long long)c->msgs, (unsigned long long)c->bytes);
	else if (c->msgs < c->declared && srv_now() < c->deadline)
		return;   /* completions still on their way */
	else if (c->msgs < c->declared)
		srv_conn_fail(c, "it declared %u messages, %llu arrived within %.0f s", c->declared,
			      (unsigned long long)c->msgs, 5.0);
	else if (s->o.msgs && c->declared != s->o.msgs)
		srv_conn_fail(c, "it sent %u messages, -n expects %u", c->declared, s->o.msgs);
	send_verdict(s, c);
}

void srv_check_draining(struct srv *s)
{
	for (uint32_t i = 0; i < s->nconns; i++)
		if (s->conns[i]->fd >= 0 && s->conns[i]->inlen == SRQ_DONE_BYTES)
			check_one(s, s->conns[i]);
}

void srv_conn_readable(struct srv *s, struct srv_conn *c)
{
	ssize_t n;

	if (c->fd < 0)
		return;
	n = recv(c->fd, c->in + c->inlen, sizeof(c->in) - c->inlen, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0 || c->inlen == sizeof(c->in)) {
		/* Closed (or talking past its DONE) before its verdict: count what
		 * arrived, then end it without touching the others. */
		srv_drain_cq(s);
		if (c->state != CS_BAD)
			snprintf(c->error, sizeof(c->error), "disconnected after %llu messages, "
				 "before saying it was done", (unsigned long long)c->msgs);
		srv_conn_end(s, c, c->state == CS_BAD ? CS_BAD : CS_ABORTED);
		return;
	}
	c->inlen += (size_t)n;
	if (c->inlen < sizeof(c->in))
		return;
	if (!srq_done_unpack(c->in, &c->declared, &c->declared_bytes)) {
		srv_conn_fail(c, "sent something other than DONE on its TCP connection");
		send_verdict(s, c);
		return;
	}
	if (c->state == CS_ACTIVE)
		c->state = CS_DRAINING;
	c->deadline = srv_now() + 5.0;
	srv_drain_cq(s);
	check_one(s, c);
}
