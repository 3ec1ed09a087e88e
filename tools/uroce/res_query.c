/* Asking the host's processes for their objects (src/rel/res_proto.h):
 * their sockets are found by name in /proc/net/unix (abstract names are
 * per network namespace, as the host registry is), all asked at once from
 * one socket, and their answers, memfds of text, parsed into objects. */
#include "res.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../../src/rel/res_proto.h"   /* the library's own protocol */

#define MAX_PEERS 4096

struct peer {
	char name[64];              /* abstract, without its leading NUL */
	bool answered;
};

/* The abstract names UR_RES_SOCK_PREFIX... bound in this namespace. */
static int find_peers(struct peer *p, int max)
{
	char line[512];
	int n = 0;
	FILE *f = fopen("/proc/net/unix", "re");

	if (!f)
		return -errno;
	while (n < max && fgets(line, sizeof(line), f)) {
		char *at = strstr(line, " @" UR_RES_SOCK_PREFIX);
		size_t len;

		if (!at)
			continue;
		at += 2;
		len = strcspn(at, " \n");
		if (len >= sizeof(p[n].name))
			continue;
		memcpy(p[n].name, at, len);
		p[n].name[len] = '\0';
		p[n].answered = false;
		n++;
	}
	fclose(f);
	return n;
}

static socklen_t abstract_addr(struct sockaddr_un *a, const char *name)
{
	size_t len = strlen(name);

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	memcpy(a->sun_path + 1, name, len);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len);
}

static void read_comm(pid_t pid, char *out, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f || !fgets(out, (int)len, f))
		snprintf(out, len, "?");
	out[strcspn(out, "\n")] = '\0';
	if (f)
		fclose(f);
}

static struct ur_res_obj *new_obj(struct ur_res_set *set)
{
	if (set->n == set->cap) {
		int cap = set->cap ? set->cap * 2 : 64;
		struct ur_res_obj *o = realloc(set->objs, (size_t)cap * sizeof(*o));

		if (!o)
			return NULL;
		set->objs = o;
		set->cap = cap;
	}
	memset(&set->objs[set->n], 0, sizeof(set->objs[0]));
	return &set->objs[set->n++];
}

/* One snapshot line "KIND key=value ..." into an object. */
static int parse_line(struct ur_res_set *set, char *line, pid_t pid, const char *comm)
{
	char *save = NULL, *tok = strtok_r(line, " ", &save);
	struct ur_res_obj *o;

	if (!tok || strlen(tok) >= sizeof(o->kind))
		return 0;
	o = new_obj(set);
	if (!o)
		return -ENOMEM;
	snprintf(o->kind, sizeof(o->kind), "%s", tok);
	o->pid = pid;
	snprintf(o->comm, sizeof(o->comm), "%s", comm);
	while ((tok = strtok_r(NULL, " ", &save))) {
		char *eq = strchr(tok, '=');
		struct ur_res_field *f;

		if (!eq)
			continue;
		f = realloc(o->fields, (size_t)(o->nfields + 1) * sizeof(*f));
		if (!f)
			return -ENOMEM;
		o->fields = f;
		f = &o->fields[o->nfields++];
		*eq = '\0';
		f->detail = tok[0] == '+';
		f->key = strdup(tok + f->detail);
		f->val = strdup(eq + 1);
		if (!f->key || !f->val)
			return -ENOMEM;
	}
	return 0;
}

static int parse_snapshot(struct ur_res_set *set, int fd, uint32_t len, pid_t pid)
{
	char comm[32], *buf = malloc((size_t)len + 1), *save = NULL;
	size_t off = 0;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (off < len) {
		ssize_t r = pread(fd, buf + off, len - off, (off_t)off);

		if (r <= 0) {
			ret = r < 0 ? -errno : -EIO;
			goto out;
		}
		off += (size_t)r;
	}
	buf[len] = '\0';
	read_comm(pid, comm, sizeof(comm));
	for (char *l = strtok_r(buf, "\n", &save); l && !ret; l = strtok_r(NULL, "\n", &save))
		ret = parse_line(set, l, pid, comm);
out:
	free(buf);
	return ret;
}

/* One answer: which peer, its pid as we see it, the snapshot. */
static int take_answer(struct ur_res_set *set, int sock, struct peer *peers, int npeers)
{
	struct ur_res_msg m;
	struct sockaddr_un from;
	struct iovec iov = { .iov_base = &m, .iov_len = sizeof(m) };
	union {
		char buf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct msghdr msg = { .msg_name = &from, .msg_namelen = sizeof(from),
			      .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
	pid_t pid = 0;
	int fd = -1, ret = 0;
	ssize_t n = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
		else if (c->cmsg_type == SCM_CREDENTIALS &&
			 c->cmsg_len == CMSG_LEN(sizeof(struct ucred)))
			pid = ((struct ucred *)CMSG_DATA(c))->pid;
	}
	if ((size_t)n != sizeof(m) || m.magic != UR_RES_MAGIC || m.kind != UR_RES_ANSWER)
		goto out;
	for (int i = 0; i < npeers; i++)
		if (!peers[i].answered &&
		    msg.msg_namelen == offsetof(struct sockaddr_un, sun_path) + 1 +
					   strlen(peers[i].name) &&
		    !memcmp(from.sun_path + 1, peers[i].name, strlen(peers[i].name))) {
			peers[i].answered = true;
			set->answered++;
			break;
		}
	if (m.status == -EPERM)
		set->refused++;
	else if (m.status == -EBUSY)
		fprintf(stderr, "uroce res: process %d was answering another query: left out "
			"(ask again)\n", (int)pid);
	else if (m.status)
		fprintf(stderr, "uroce res: process %d could not answer: %s\n", (int)pid,
			strerror(-m.status));
	else if (fd >= 0)
		ret = parse_snapshot(set, fd, m.len, pid);
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

static long long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int ur_res_query(struct ur_res_set *set, int timeout_ms)
{
	struct peer *peers = calloc(MAX_PEERS, sizeof(*peers));
	struct sockaddr_un me = { .sun_family = AF_UNIX };
	struct ur_res_msg q = { .magic = UR_RES_MAGIC, .version = UR_RES_VERSION,
				.kind = UR_RES_QUERY };
	long long deadline;
	int one = 1, sock, npeers, ret = 0;

	if (!peers)
		return -ENOMEM;
	npeers = find_peers(peers, MAX_PEERS);
	if (npeers <= 0) {
		free(peers);
		return npeers;
	}
	sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	/* Autobound: an address of our own for the answers. */
	if (sock < 0 || setsockopt(sock, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) ||
	    bind(sock, (struct sockaddr *)&me, sizeof(sa_family_t))) {
		ret = -errno;
		goto out;
	}
	for (int i = 0; i < npeers; i++) {
		struct sockaddr_un to;
		socklen_t tolen = abstract_addr(&to, peers[i].name);

		if (sendto(sock, &q, sizeof(q), MSG_DONTWAIT, (struct sockaddr *)&to, tolen) < 0)
			peers[i].answered = true;       /* gone since it was listed */
		else
			set->asked++;
	}
	deadline = now_ms() + timeout_ms;
	while (!ret && set->answered < set->asked) {
		struct pollfd pfd = { .fd = sock, .events = POLLIN };
		long long left = deadline - now_ms();

		if (left <= 0)
			break;
		if (poll(&pfd, 1, (int)left) > 0)
			ret = take_answer(set, sock, peers, npeers);
	}
	for (int i = 0; i < npeers && !ret; i++)
		if (!peers[i].answered)
			fprintf(stderr, "uroce res: @%s did not answer within %d ms (stopped?)\n",
				peers[i].name, timeout_ms);
out:
	if (sock >= 0)
		close(sock);
	free(peers);
	return ret;
}

void ur_res_set_free(struct ur_res_set *set)
{
	for (int i = 0; i < set->n; i++) {
		for (int j = 0; j < set->objs[i].nfields; j++) {
			free(set->objs[i].fields[j].key);
			free(set->objs[i].fields[j].val);
		}
		free(set->objs[i].fields);
	}
	free(set->objs);
	memset(set, 0, sizeof(*set));
}

const char *ur_res_get(const struct ur_res_obj *o, const char *key)
{
	for (int i = 0; i < o->nfields; i++)
		if (!strcmp(o->fields[i].key, key))
			return o->fields[i].val;
	return NULL;
}
