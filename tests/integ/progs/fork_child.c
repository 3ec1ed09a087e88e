/* A child of fork() that opens the device anew works, as with a kernel
 * device (pyverbs' rdma_cm tests and multiprocessing servers fork after
 * looking at the devices):
 *  - verbs: the parent has a context and a connected RC pair; its child
 *    opens its own context, connects its own pair and moves a SEND and an
 *    RDMA WRITE, checked byte for byte; the parent's pair still works after;
 *  - rdmacm: the parent makes an event channel and an id; its child makes
 *    its own and resolves 127.0.0.1 (its CM runs: ADDR_RESOLVED comes);
 *  - xrcd: the parent opens an XRC domain through a file; its child, on a
 *    context of its own, opening the same file gets a domain of its own
 *    context, not the parent's.
 *
 *   fork_child DEVICE GID_INDEX [CASE...]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

#include "cm_events.h"
#include "vt.h"

#define MSG 4096

/* One SEND and one RDMA WRITE from a to b on device d, checked. */
static void traffic(struct vt_dev *d, struct vt_qp *a, struct vt_qp *b, uint8_t seed)
{
	struct vt_buf src, dst;
	struct ibv_sge s, r;
	struct ibv_send_wr wr;
	struct ibv_wc wc;

	vt_buf_init(&src, d, MSG, IBV_ACCESS_LOCAL_WRITE, seed);
	vt_buf_init(&dst, d, 2 * MSG, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		    (uint8_t)(seed + 1));
	r = vt_sge(&dst, 0, MSG);
	s = vt_sge(&src, 0, MSG);
	if (vt_post_recv(b, 1, &r, 1) || (wr = vt_wr(2, IBV_WR_SEND, &s), vt_post_send(a, &wr))) {
		vt_fail("post the SEND: %s", strerror(errno));
		goto out;
	}
	vt_poll_one(a->scq, &wc, 5, "SEND completes");
	vt_poll_one(b->rcq, &wc, 5, "SEND received");
	vt_check(!memcmp(dst.p, src.p, MSG), "the SEND's %d bytes arrive intact", MSG);
	wr = vt_wr(3, IBV_WR_RDMA_WRITE, &s);
	wr.wr.rdma.remote_addr = (uintptr_t)dst.p + MSG;
	wr.wr.rdma.rkey = dst.mr->rkey;
	if (vt_post_send(a, &wr)) {
		vt_fail("post the WRITE: %s", strerror(errno));
		goto out;
	}
	vt_poll_one(a->scq, &wc, 5, "RDMA WRITE completes");
	vt_check(!memcmp(dst.p + MSG, src.p, MSG), "the WRITE's %d bytes land intact", MSG);
out:
	vt_buf_free(&src);
	vt_buf_free(&dst);
}

/* Runs fn in a child; the child's checks print as its own, its verdict
 * is its exit status. */
static void in_child(const char *what, void (*fn)(void *), void *arg)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		vt_fail("fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		fn(arg);
		fflush(NULL);
		_exit(vt_failures || !vt_checks ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) != pid) {
		vt_fail("%s: waitpid: %s", what, strerror(errno));
		return;
	}
	vt_check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the child %s", what,
		 WIFEXITED(status) ? (WEXITSTATUS(status) ? "failed" : "passed")
				   : "was killed");
}

struct verbs_arg {
	const char *dev;
	int gid_index;
};

static void child_verbs(void *p)
{
	struct verbs_arg *v = p;
	struct vt_qp a, b;
	struct vt_dev d;

	vt_dev_open(&d, v->dev, v->gid_index);   /* a context of its own */
	vt_rc_pair(&d, &a, NULL, &b, NULL);
	traffic(&d, &a, &b, 0x21);
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	vt_dev_close(&d);
}

static void case_verbs(struct vt_dev *d)
{
	struct verbs_arg v = { .gid_index = d->gid_index };
	struct vt_qp a, b;

	v.dev = ibv_get_device_name(d->ctx->device);
	vt_rc_pair(d, &a, NULL, &b, NULL);
	traffic(d, &a, &b, 0x11);
	in_child("verbs after fork", child_verbs, &v);
	traffic(d, &a, &b, 0x31);   /* the parent's, untouched by the child */
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
}

static void child_cm(void *p)
{
	struct sockaddr_in dst = cm_addr("127.0.0.1", 7471);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;

	(void)p;
	if (!vt_check(ch && !rdma_create_id(ch, &id, NULL, RDMA_PS_TCP),
		      "the child's own channel and id"))
		return;
	if (vt_check(!rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 2000),
		     "the child resolves 127.0.0.1"))
		cm_ack(cm_next_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, "the child's ADDR_RESOLVED"));
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

static void case_rdmacm(struct vt_dev *d)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;

	(void)d;
	if (!vt_check(ch && !rdma_create_id(ch, &id, NULL, RDMA_PS_TCP),
		      "the parent's channel and id"))
		return;
	in_child("rdma_cm after fork", child_cm, NULL);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
}

struct xrcd_arg {
	const char *dev;
	int gid_index;
	int fd;
};

static void child_xrcd(void *p)
{
	struct xrcd_arg *x = p;
	struct ibv_xrcd_init_attr attr = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = x->fd, .oflags = O_CREAT,
	};
	struct ibv_xrcd *xrcd;
	struct vt_dev d;

	vt_dev_open(&d, x->dev, x->gid_index);
	xrcd = ibv_open_xrcd(d.ctx, &attr);
	if (vt_check(xrcd, "the child opens the file's XRC domain: %s", xrcd ? "ok" : strerror(errno))) {
		vt_check(xrcd->context == d.ctx, "the child's domain is on the child's context");
		vt_check(!ibv_close_xrcd(xrcd), "the child closes its domain");
	}
	vt_dev_close(&d);
}

static void case_xrcd(struct vt_dev *d)
{
	char path[] = "/tmp/uroce-fork-xrcd-XXXXXX";
	struct xrcd_arg x = { .gid_index = d->gid_index, .fd = mkstemp(path) };
	struct ibv_xrcd_init_attr attr = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = x.fd, .oflags = O_CREAT,
	};
	struct ibv_xrcd *xrcd;

	if (!vt_check(x.fd >= 0, "a file for the domain"))
		return;
	unlink(path);
	x.dev = ibv_get_device_name(d->ctx->device);
	xrcd = ibv_open_xrcd(d->ctx, &attr);
	if (vt_check(xrcd, "the parent opens the file's XRC domain")) {
		in_child("an XRC domain after fork", child_xrcd, &x);
		vt_check(!ibv_close_xrcd(xrcd), "the parent closes its domain");
	}
	close(x.fd);
}

static const struct vt_case cases[] = {
	{ "verbs", case_verbs },
	{ "rdmacm", case_rdmacm },
	{ "xrcd", case_xrcd },
	{ NULL, NULL },
};

VT_MAIN(cases)
