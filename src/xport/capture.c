/* The capture tap: the switch file, the connection to the capture process
 * and one record per packet (xport/capture.h, capture_proto.h). */
#include "xport/capture.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "host/registry.h"
#include "util/compiler.h"
#include "util/host_uid.h"
#include "util/log.h"
#include "wire/roce_hdr.h"

#define CAP_SNDBUF (4 << 20)       /* records in flight to a slow capture */
#define CAP_MAX_IOV 40             /* payload pieces of one record */

static const uint32_t off_word;
const uint32_t *ur_capture_switch = &off_word;
/* Set once (attach), before the switch pointer: read with acquire. */
static struct ur_cap_shared *shared;
static pthread_once_t attach_once = PTHREAD_ONCE_INIT;

/* The connection for session conn_session: conn_fd and conn_ok are set
 * under conn_lock before conn_session is published. */
static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static int conn_fd = -1;
static bool conn_ok;
static uint32_t conn_session;

static struct ur_cap_shared *switch_file(void)
{
	return __atomic_load_n(&shared, __ATOMIC_ACQUIRE);
}

static void attach(void)
{
	struct ur_cap_shared *m;
	char path[96];
	uint32_t zero = 0;
	struct stat st;
	int fd;

	if (ur_cap_shared_path(path, sizeof(path), (unsigned)ur_host_uid()))
		return;
	fd = ur_registry_open_private(path);
	if (fd < 0) {
		ur_info(NULL, "capture switch %s: %s; this process cannot be captured", path,
			strerror(-fd));
		return;
	}
	if (fstat(fd, &st) || ((size_t)st.st_size < sizeof(*m) && ftruncate(fd, sizeof(*m)))) {
		ur_info(NULL, "capture switch %s: %s; this process cannot be captured", path,
			strerror(errno));
		close(fd);
		return;
	}
	m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return;
	/* The first to map it names it; the tool checks before switching on. */
	__atomic_compare_exchange_n(&m->magic, &zero, UR_CAP_MAGIC, false, __ATOMIC_ACQ_REL,
				    __ATOMIC_RELAXED);
	if (m->magic != UR_CAP_MAGIC || (m->version && m->version != UR_CAP_VERSION)) {
		munmap(m, sizeof(*m));
		return;
	}
	m->version = UR_CAP_VERSION;
	__atomic_store_n(&shared, m, __ATOMIC_RELEASE);
	__atomic_store_n(&ur_capture_switch, &m->on, __ATOMIC_RELEASE);
}

void ur_capture_attach(void)
{
	pthread_once(&attach_once, attach);
}

/* A connection to the capture process of this session, ours only if its
 * owner is our user (anyone may bind an abstract name first). */
static void conn_open(uint32_t session)
{
	struct sockaddr_un sun;
	socklen_t len = ur_cap_sock_addr(&sun, (unsigned)ur_host_uid());
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	int sz = CAP_SNDBUF;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	__atomic_store_n(&conn_ok, false, __ATOMIC_RELEASE);
	if (fd < 0)
		goto out;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof(sz)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	if (connect(fd, (struct sockaddr *)&sun, len) ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) || cred.uid != getuid()) {
		close(fd);
		goto out;
	}
	/* dup2 swaps the socket under threads sending on the old one. */
	if (conn_fd < 0) {
		__atomic_store_n(&conn_fd, fd, __ATOMIC_RELEASE);
	} else {
		dup2(fd, conn_fd);
		close(fd);
	}
	__atomic_store_n(&conn_ok, true, __ATOMIC_RELEASE);
out:
	__atomic_store_n(&conn_session, session, __ATOMIC_RELEASE);
}

static int conn_get(void)
{
	uint32_t session = __atomic_load_n(&switch_file()->session, __ATOMIC_ACQUIRE);

	if (__atomic_load_n(&conn_session, __ATOMIC_ACQUIRE) != session) {
		pthread_mutex_lock(&conn_lock);
		if (conn_session != session)
			conn_open(session);
		pthread_mutex_unlock(&conn_lock);
	}
	if (!__atomic_load_n(&conn_ok, __ATOMIC_ACQUIRE))
		return -1;
	return __atomic_load_n(&conn_fd, __ATOMIC_ACQUIRE);
}

static void dropped(void)
{
	__atomic_add_fetch(&switch_file()->dropped, 1, __ATOMIC_RELAXED);
}

/* Sends one record on fd (conn_get's). */
static void emit(int fd, struct ur_cap_rec *r, const struct iovec *iov, int niov, size_t len,
		 const void *tail, size_t tail_len)
{
	struct iovec all[2 + CAP_MAX_IOV];
	struct msghdr msg = { .msg_iov = all };
	struct timespec ts;
	size_t n = 0;

	if (niov > CAP_MAX_IOV) {
		dropped();
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	r->magic = UR_CAP_MAGIC;
	r->version = UR_CAP_VERSION;
	r->pid = getpid();
	r->time_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	r->len = (uint32_t)(len + tail_len);
	all[n++] = (struct iovec){ r, sizeof(*r) };
	for (int i = 0; i < niov; i++)
		if (iov[i].iov_len)
			all[n++] = iov[i];
	if (tail_len)
		all[n++] = (struct iovec){ (void *)tail, tail_len };
	msg.msg_iovlen = n;
	if (sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
		return;
	dropped();
	/* The capture ended without switching off: stop trying this session. */
	if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
		__atomic_store_n(&conn_ok, false, __ATOMIC_RELEASE);
}

/* The connection to the capture when capturing is switched on, else -1;
 * one switched on that cannot be had counts the record as dropped. */
static int capture_fd(void)
{
	int fd;

	if (!switch_file())
		return -1;
	fd = conn_get();
	if (fd < 0)
		dropped();
	return fd;
}

void ur_capture_roce(enum ur_cap_dir dir, enum ur_cap_via via, pid_t peer_pid,
		     const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop, uint32_t placed,
		     const struct iovec *iov, int niov, size_t len, bool with_icrc)
{
	struct ur_cap_rec r = {
		.kind = UR_CAP_ROCE, .dir = (uint8_t)dir, .via = (uint8_t)via,
		.peer_pid = peer_pid, .family = (uint8_t)ip->family, .tclass = tclass,
		.hop_limit = hop ? hop : 64, .sport = ip->sport, .dport = UR_ROCE_UDP_PORT,
		.ip_id = ip->ip_id, .placed = placed,
	};
	struct ur_roce_ip shown = *ip;
	struct iovec body[CAP_MAX_IOV];
	uint8_t icrc[UR_ICRC_BYTES];
	int fd;

	/* Before any work: a capture that died switched on costs little. */
	fd = capture_fd();
	if (fd < 0)
		return;
	if (ip->family == AF_INET) {
		memcpy(r.saddr, &ip->v4.saddr, 4);
		memcpy(r.daddr, &ip->v4.daddr, 4);
	} else {
		memcpy(r.saddr, &ip->v6.saddr, 16);
		memcpy(r.daddr, &ip->v6.daddr, 16);
	}
	if (with_icrc && ip->dport == UR_ROCE_UDP_PORT) {
		/* A received IPv4 packet: the ICRC tells the identification
		 * the sender's IP header had (wire/icrc.h). */
		if (dir == UR_CAP_RX && ip->family == AF_INET && niov == 1)
			ur_icrc_check(ip, iov[0].iov_base, len, &r.ip_id);
		emit(fd, &r, iov, niov, len, NULL, 0);
		return;
	}
	/* Shared memory carries no ICRC; a packet to a process's own port
	 * is shown going to 4791, as it would to another host: either way
	 * the ICRC is the one those headers would have. */
	if (with_icrc) {
		if (niov != 1 || len < UR_BTH_BYTES + UR_ICRC_BYTES) {
			dropped();
			return;
		}
		if (dir == UR_CAP_RX && ip->family == AF_INET)
			ur_icrc_check(ip, iov[0].iov_base, len, &r.ip_id);
		len -= UR_ICRC_BYTES;
	}
	shown.dport = UR_ROCE_UDP_PORT;
	shown.ip_id = r.ip_id;
	shown.df = true;
	if (niov > CAP_MAX_IOV) {
		dropped();
		return;
	}
	memcpy(body, iov, (size_t)niov * sizeof(*iov));
	if (with_icrc)
		body[0].iov_len = len;
	ur_put_le32(icrc, ur_icrc_calc(&shown, body, niov, len));
	emit(fd, &r, body, niov, len, icrc, sizeof(icrc));
}

void ur_capture_msg(pid_t to, const struct iovec *iov, int niov)
{
	struct ur_cap_rec r = {
		.kind = UR_CAP_MSG, .dir = UR_CAP_TX, .via = UR_CAP_VIA_UNIX, .peer_pid = to,
		.family = AF_INET, .hop_limit = 64,
	};
	size_t len = 0;
	int fd;

	fd = capture_fd();
	if (fd < 0)
		return;
	for (int i = 0; i < niov; i++)
		len += iov[i].iov_len;
	r.saddr[0] = r.daddr[0] = 127;
	r.saddr[3] = r.daddr[3] = 1;
	emit(fd, &r, iov, niov, len, NULL, 0);
}
