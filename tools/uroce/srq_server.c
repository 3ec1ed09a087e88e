/* uroce srq-server: accept RC clients over TCP (epoll), give each its own
 * QP, all receiving from ONE SRQ into ONE CQ; map every completion back to
 * its connection by wc.qp_num, check every message, refill the SRQ, and
 * print a per-client table at the end (and on SIGINT/SIGTERM).
 *
 * This file is the command and its loop; below it, srq_srv_conn.c (each
 * connection), srq_srv_recv.c (the SRQ, the CQ, each completion) and
 * srq_srv_opts.c (see srq_srv.h). */
#include "conn.h"
#include "srq.h"
#include "srq_srv.h"
#include "uroce.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* --- the loop ------------------------------------------------------------------------- */

static bool finished(struct srv *s)
{
	if (stop_signal) {
		s->stopped_by = stop_signal == SIGINT ? "SIGINT" : "SIGTERM";
		return true;
	}
	if (s->o.duration && s->t0 && srv_now() >= s->t0 + s->o.duration) {
		s->stopped_by = "--duration";
		return true;
	}
	return s->nconns == s->o.max_clients && s->nlive == 0;
}

static int serve(struct srv *s)
{
	struct epoll_event ev[64];
	int n, rc;

	while (!finished(s)) {
		n = epoll_wait(s->ep, ev, 64, 100);
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "epoll_wait: %s\n", strerror(errno));
			return UR_EXIT_FAIL;
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == &s->listen_tag) {
				if ((rc = srv_accept(s)))
					return rc;
			} else if (ev[i].data.ptr == &s->channel_tag) {
				if (!ur_cq_wait(&s->d))
					return UR_EXIT_FAIL;
			} else {
				srv_conn_readable(s, ev[i].data.ptr);
			}
		}
		if ((rc = srv_drain_cq(s)))
			return rc;
		srv_check_draining(s);
	}
	return srv_drain_cq(s);
}

/* The per-client table and the totals; the exit code they mean. */
static int report(struct srv *s)
{
	uint32_t count[CS_REJECTED + 1] = { 0 }, cut = 0;
	double secs = s->t0 ? s->t_end - s->t0 : 0;

	printf("\n %6s  %-22s  %-8s  %10s  %14s  %s\n", "client", "peer", "QPN", "msgs", "bytes",
	       "state");
	for (uint32_t i = 0; i < s->nconns; i++) {
		struct srv_conn *c = s->conns[i];

		count[c->state]++;
		cut += c->cut;
		printf(" %6u  %-22s  0x%06x  %10llu  %14llu  %s%s%s%s\n", c->id, c->peer, c->qpn,
		       (unsigned long long)c->msgs, (unsigned long long)c->bytes,
		       srv_state_name(c->state), c->cut ? " (cut short by the stop)" : "",
		       c->error[0] ? ": " : "", c->error);
	}
	printf("total: %u clients (%u done, %u aborted, %u bad, %u refused, %u still running); "
	       "%llu messages, %llu bytes in %.2f seconds = %.2f Mbit/sec\n",
	       s->nconns, count[CS_DONE], count[CS_ABORTED], count[CS_BAD], count[CS_REJECTED],
	       cut, (unsigned long long)s->msgs, (unsigned long long)s->bytes, secs,
	       secs > 0 ? (double)s->bytes * 8 / secs / 1e6 : 0.0);
	printf("SRQ: depth %u, %llu receives reposted, %llu completions of QPs already gone",
	       s->o.depth, (unsigned long long)s->reposted, (unsigned long long)s->stray);
	if (s->stopped_by)
		printf("; stopped by %s", s->stopped_by);
	printf("\n");
	fflush(stdout);
	return count[CS_ABORTED] || count[CS_BAD] || count[CS_REJECTED] ? UR_EXIT_FAIL : UR_EXIT_OK;
}

static void teardown(struct srv *s)
{
	for (uint32_t i = 0; i < s->nconns; i++) {
		srv_conn_end(s, s->conns[i], s->conns[i]->state);
		free(s->conns[i]);
	}
	free(s->conns);
	srq_qpmap_fini(&s->map);
	srv_close_device(s);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->ep >= 0)
		close(s->ep);
}

int cmd_srq_server(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct srv s = { .lfd = -1, .ep = -1 };
	int rc;

	rc = srv_parse(argc, argv, &s.o);
	if (rc)
		return rc < 0 ? UR_EXIT_OK : rc;
	/* No SA_RESTART: epoll_wait returns and the loop sees the flag. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	s.conns = calloc(s.o.max_clients, sizeof(*s.conns));
	if (!s.conns || srq_qpmap_init(&s.map, s.o.max_clients))
		return UR_EXIT_FAIL;
	s.lfd = ur_tcp_listen(s.o.conn.tcp_port);
	s.ep = epoll_create1(EPOLL_CLOEXEC);
	if (s.lfd < 0 || s.ep < 0) {
		teardown(&s);
		return UR_EXIT_FAIL;
	}
	fcntl(s.lfd, F_SETFL, fcntl(s.lfd, F_GETFL) | O_NONBLOCK);
	epoll_ctl(s.ep, EPOLL_CTL_ADD, s.lfd,
		  &(struct epoll_event){ .events = EPOLLIN, .data.ptr = &s.listen_tag });
	printf("srq-server: waiting for %u clients on TCP port %d\n", s.o.max_clients,
	       s.o.conn.tcp_port);
	fflush(stdout);
	rc = serve(&s);
	s.t_end = srv_now();
	for (uint32_t i = 0; i < s.nconns; i++)
		if (s.conns[i]->state == CS_ACTIVE || s.conns[i]->state == CS_DRAINING)
			s.conns[i]->cut = true;
	if (!rc)
		rc = report(&s);
	teardown(&s);
	return rc;
}
