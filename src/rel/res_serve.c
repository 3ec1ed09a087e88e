/* The resource window's socket (rel/res.h, rel/res_proto.h): bound at the
 * stack's start, read on the engine thread, answered from a thread of its
 * own with a memfd that holds the snapshot.  Idle, it is one fd in the
 * engine's set: nothing on the data path. */
#include "rel/res.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine/engine.h"
#include "rel/res_proto.h"
#include "rel/stack.h"
#include "util/log.h"

/* Names tried when the pid's own is taken. */
#define UR_RES_NAME_TRIES 8
/* Queries handled per wake-up; the rest wait for the next. */
#define UR_RES_BATCH 16

/* Only the process's own user and root may see its objects. */
static bool may_see(const struct ucred *cred)
{
	return cred && (cred->uid == 0 || cred->uid == geteuid());
}

/* The snapshot in a fresh memfd (its size in *len): the fd, or -errno. */
static int snapshot(struct ur_stack *s, uint32_t *len)
{
	char *buf = NULL;
	size_t n = 0, off = 0;
	FILE *f;
	int fd, ret = 0;

	f = open_memstream(&buf, &n);
	if (!f)
		return -ENOMEM;
	ur_res_dump(s, f);
	if (fclose(f)) {
		free(buf);
		return -ENOMEM;
	}
	fd = memfd_create("uroce-res", MFD_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	while (off < n) {
		ssize_t w = write(fd, buf + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			ret = w < 0 ? -errno : -EIO;
			close(fd);
			goto out;
		}
		off += (size_t)w;
	}
	*len = (uint32_t)n;
	ret = fd;
out:
	free(buf);
	return ret;
}

static void answer(int sock, const struct sockaddr_un *to, socklen_t tolen, int status, int fd,
		   uint32_t len)
{
	struct ur_res_msg m = { .magic = UR_RES_MAGIC, .version = UR_RES_VERSION,
				.kind = UR_RES_ANSWER, .status = status, .len = len };
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct msghdr msg = { .msg_name = (void *)to, .msg_namelen = tolen,
			      .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	/* A querier gone or not reading loses its answer; never wait for it. */
	if (sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		ur_dbg(NULL, "resource query: cannot answer: %s", strerror(errno));
}

static const struct ucred *creds_of(struct msghdr *msg)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len == CMSG_LEN(sizeof(struct ucred)))
			return (const struct ucred *)CMSG_DATA(c);
	return NULL;
}

/* A snapshot in progress, taken off the engine thread: it may take a
 * while (a lock per object, each contended by its own traffic), and the
 * engine thread holds the reactor's dispatch lock while its callbacks
 * run, so a snapshot there would stall every process's receive path and
 * timers with it (1000 busy QPs: a second, and their peers' retries ran
 * out).  One at a time; a query meanwhile is answered EBUSY. */
struct res_job {
	struct ur_stack *s;
	struct sockaddr_un to;
	socklen_t tolen;
};

static void *snapshot_thread(void *arg)
{
	struct res_job *job = arg;
	uint32_t len = 0;
	int fd = snapshot(job->s, &len);

	answer(job->s->res.fd, &job->to, job->tolen, fd < 0 ? fd : 0, fd, len);
	if (fd >= 0)
		close(fd);
	__atomic_store_n(&job->s->res.busy, false, __ATOMIC_RELEASE);
	free(job);
	return NULL;
}

static int start_snapshot(struct ur_stack *s, const struct sockaddr_un *to, socklen_t tolen)
{
	struct res_job *job;
	pthread_attr_t attr;
	pthread_t t;
	int ret;

	if (__atomic_exchange_n(&s->res.busy, true, __ATOMIC_ACQ_REL))
		return -EBUSY;
	job = malloc(sizeof(*job));
	if (!job) {
		ret = -ENOMEM;
		goto err_idle;
	}
	job->s = s;
	job->to = *to;
	job->tolen = tolen;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = -pthread_create(&t, &attr, snapshot_thread, job);
	pthread_attr_destroy(&attr);
	if (!ret)
		return 0;
	free(job);
err_idle:
	__atomic_store_n(&s->res.busy, false, __ATOMIC_RELEASE);
	return ret;
}

/* One query, if one is waiting: false when none is. */
static bool serve_one(struct ur_stack *s)
{
	struct ur_res_msg q;
	struct sockaddr_un from;
	struct iovec iov = { .iov_base = &q, .iov_len = sizeof(q) };
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} ctl;
	struct msghdr msg = { .msg_name = &from, .msg_namelen = sizeof(from),
			      .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	ssize_t n;
	int ret;

	n = recvmsg(s->res.fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EINTR;
	if ((size_t)n != sizeof(q) || q.magic != UR_RES_MAGIC || q.kind != UR_RES_QUERY ||
	    msg.msg_namelen <= sizeof(sa_family_t))
		return true;            /* not a query, or nowhere to answer */
	if (q.version != UR_RES_VERSION)
		ret = -EPROTONOSUPPORT;
	else if (!may_see(creds_of(&msg)))
		ret = -EPERM;
	else
		ret = start_snapshot(s, &from, msg.msg_namelen);
	if (ret)
		answer(s->res.fd, &from, msg.msg_namelen, ret, -1, 0);
	return true;
}

static void on_query(void *arg, uint32_t events)
{
	(void)events;
	for (int i = 0; i < UR_RES_BATCH && serve_one(arg); i++)
		;
}

int ur_res_open(struct ur_stack *s)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	socklen_t alen;
	int one = 1, ret, len;

	s->res.fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->res.fd < 0) {
		ret = -errno;
		goto err_say;
	}
	if (setsockopt(s->res.fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one))) {
		ret = -errno;
		goto err_close;
	}
	/* Abstract: gone with the process, whatever way it ends.  Processes
	 * of two pid namespaces may share a pid in one network namespace: the
	 * second takes a suffix (the querier learns pids from credentials). */
	for (int n = 0; n < UR_RES_NAME_TRIES; n++) {
		len = n ? snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1,
				   UR_RES_SOCK_PREFIX "%d.%d", (int)getpid(), n)
			: snprintf(addr.sun_path + 1, sizeof(addr.sun_path) - 1,
				   UR_RES_SOCK_PREFIX "%d", (int)getpid());
		alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
		ret = bind(s->res.fd, (struct sockaddr *)&addr, alen) ? -errno : 0;
		if (ret != -EADDRINUSE)
			break;
	}
	if (ret)
		goto err_close;
	ret = ur_engine_watch(s->engine, s->res.fd, EPOLLIN, UR_WATCH_ENGINE, on_query, s);
	if (ret)
		goto err_close;
	return 0;

err_close:
	close(s->res.fd);
	s->res.fd = -1;
err_say:
	ur_warn(NULL, "resource window: cannot serve @%s: %s (`uroce res` will not see this process)",
		addr.sun_path + 1, strerror(-ret));
	return ret;
}

void ur_res_close(struct ur_stack *s)
{
	if (s->res.fd < 0)
		return;
	ur_engine_unwatch(s->engine, s->res.fd);
	ur_engine_quiesce(s->engine);       /* on_query is over */
	close(s->res.fd);
	s->res.fd = -1;
}

void ur_res_attach_cm(struct ur_stack *s, ur_res_cm_fn fn, void *arg)
{
	pthread_mutex_lock(&s->res.cm_lock);
	s->res.cm_dump = fn;
	s->res.cm_arg = arg;
	pthread_mutex_unlock(&s->res.cm_lock);
}
