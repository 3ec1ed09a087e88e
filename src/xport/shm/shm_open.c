/* The shared-memory transport's face: its ops, our own file and doorbell,
 * housekeeping, closing. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"
#include "util/config.h"
#include "util/host_uid.h"
#include "util/log.h"
#include "util/random.h"
#include "xport/shm/shm_priv.h"

/* Files that processes of ours which died left behind. */
static void sweep_dead(void)
{
	char prefix[40];
	size_t plen;
	struct dirent *d;
	DIR *dir = opendir("/dev/shm");

	if (!dir)
		return;
	plen = (size_t)snprintf(prefix, sizeof(prefix), "uroce-%u-", (unsigned)ur_host_uid());
	while ((d = readdir(dir))) {
		const char *rest = d->d_name + plen;
		char path[300];
		int pid;

		if (strncmp(d->d_name, prefix, plen))
			continue;
		if (!strncmp(rest, "shm-", 4))
			rest += 4;
		else if (!strncmp(rest, "bell-", 5))
			rest += 5;
		else
			continue;
		pid = atoi(rest);
		if (pid <= 0 || !(kill(pid, 0) && errno == ESRCH))
			continue;
		snprintf(path, sizeof(path), "/dev/shm/%s", d->d_name);
		unlink(path);
	}
	closedir(dir);
}

/* Our file: created anew (a stale one of our pid is a dead process's). */
static int own_file(struct ur_shm *s)
{
	struct ur_shm_file *f;
	int fd;

	ur_shm_file_name(s->own_path, sizeof(s->own_path), getpid(), false);
	unlink(s->own_path);
	fd = open(s->own_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, sizeof(*f))) {
		int err = -errno;

		close(fd);
		unlink(s->own_path);
		return err;
	}
	f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (f == MAP_FAILED) {
		unlink(s->own_path);
		return -errno;
	}
	f->version = UR_SHM_VERSION;
	f->layout_size = sizeof(*f);
	f->pid = (uint32_t)getpid();
	/* Whoever sees the magic sees the rest. */
	__atomic_store_n(&f->magic, UR_SHM_MAGIC, __ATOMIC_RELEASE);
	s->own = f;
	return 0;
}

/* Our doorbell: a FIFO only we (the user) may open, held open read-write
 * (as a sender holds it) so that it never reports end of file. */
static int own_bell(struct ur_shm *s)
{
	int fd;

	ur_shm_file_name(s->bell_path, sizeof(s->bell_path), getpid(), true);
	unlink(s->bell_path);
	if (mkfifo(s->bell_path, 0600))
		return -errno;
	fd = ur_shm_open_bell(getpid());
	if (fd < 0)
		return fd;
	s->bell_fd = fd;
	return 0;
}

static void shm_tick(struct ur_xport *x, uint64_t now)
{
	struct ur_shm *s = ur_shm_of(x);

	(void)now;
	ur_shm_peers_reap(s);
	ur_shm_rx_reap(s);
}

static void shm_stats(struct ur_xport *x, struct ur_xport_stats *out)
{
	struct ur_shm *s = ur_shm_of(x);
	const uint64_t *in = (const uint64_t *)&s->stats;
	uint64_t *o = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		o[i] = __atomic_load_n(&in[i], __ATOMIC_RELAXED);
}

/* At exit: what we sent is in the peers' memory already; our file goes,
 * so that nobody sends into it any more. */
static void shm_drain(struct ur_xport *x, int timeout_ms)
{
	struct ur_shm *s = ur_shm_of(x);

	(void)timeout_ms;
	unlink(s->own_path);
	unlink(s->bell_path);
}

static void shm_close(struct ur_shm *s)
{
	ur_shm_peers_close(s);
	ur_shm_rx_close(s);
	if (s->bell_fd >= 0)
		close(s->bell_fd);
	if (s->own)
		munmap(s->own, sizeof(*s->own));
	unlink(s->own_path);
	unlink(s->bell_path);
	free(s);
}

/* A transport ur_shm_open returned, undone: out of the engine's reach
 * (remove_poller waits for callbacks in progress), then closed. */
static void shm_xport_close(struct ur_xport *x)
{
	struct ur_shm *s = ur_shm_of(x);
	const struct ur_poller poller = { .poll = ur_shm_poll, .arg = s };

	ur_engine_unwatch(s->engine, s->bell_fd);
	ur_engine_remove_poller(s->engine, &poller);
	shm_close(s);
}

static const struct ur_xport_ops shm_ops = {
	.name = "shm",
	.resolve = ur_shm_resolve,
	.send = ur_shm_send,
	.flush = ur_shm_flush,
	.want_writable = ur_shm_want_writable,
	.tick = shm_tick,
	.drain = shm_drain,
	.close = shm_xport_close,
	.rx_pending = ur_shm_rx_pending,
	.stats = shm_stats,
	.place = ur_shm_place,
	.fetch = ur_shm_fetch,
	.expose_region = ur_shm_expose_region,
	.revoke_region = ur_shm_revoke_region,
	.expose_qp = ur_shm_expose_qp,
};

static bool wanted(void)
{
	const struct ur_config *cfg = ur_config();

	if (cfg->shm == 0) {
		ur_info(NULL, "shared-memory transport off (UROCE_SHM=0): processes of this "
			"host are reached over UDP and unix sockets");
		return false;
	}
#ifdef __SANITIZE_THREAD__
	/* ThreadSanitizer orders a socket's send before any socket's receive,
	 * which is how it sees that a peer's completion (told over TCP, say)
	 * follows our placement; through shared memory it sees nothing and
	 * reports the application's read of placed data as a race. */
	if (cfg->shm != 1) {
		ur_info(NULL, "shared-memory transport off under ThreadSanitizer (it cannot see "
			"ordering between processes through shared memory); UROCE_SHM=1 forces it");
		return false;
	}
#endif
	if (cfg->faults.set) {
		ur_info(NULL, "shared-memory transport off: UROCE_FAULTS injects faults on the "
			"UDP receive path, so this process's packets take it");
		return false;
	}
	return true;
}

/* WRITEs and READs of at least this many bytes (UROCE_SHM_PLACE_MIN,
 * 16 KiB) are copied straight into or out of the peer (smaller WRITEs only
 * while its engine thread naps or sleeps).  UROCE_SHM_SINGLE_COPY=0 sends
 * every byte through the rings. */

static uint64_t place_min(void)
{
	if (!ur_config()->shm_single_copy) {
		ur_info(NULL, "single copy off (UROCE_SHM_SINGLE_COPY=0): WRITEs and READs go "
			"through the shared-memory rings");
		return UINT64_MAX;
	}
	return ur_config()->shm_place_min;
}

int ur_shm_open(struct ur_engine *e, struct ur_registry *reg, const struct ur_xport_hooks *h,
		struct ur_xport **out)
{
	struct ur_poller poller;
	struct ur_shm *s;
	int ret;

	*out = NULL;
	if (!wanted())
		return 0;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->xport.ops = &shm_ops;
	s->engine = e;
	s->reg = reg;
	s->hooks = *h;
	s->bell_fd = -1;
	for (unsigned i = 0; i < UR_SHM_RINGS; i++)
		s->producer_bell[i] = -1;
	ur_shm_peers_init(s);
	pthread_mutex_init(&s->expose_lock, NULL);
	s->place_min = place_min();
	if (ur_random_bytes(&s->id, sizeof(s->id)))
		s->id = (uint64_t)getpid() << 32 | (uint64_t)time(NULL);
	sweep_dead();
	ret = own_file(s);
	if (!ret)
		ret = own_bell(s);
	if (!ret)
		ret = ur_engine_watch(e, s->bell_fd, EPOLLIN, UR_WATCH_INLINE, ur_shm_on_bell, s);
	if (!ret) {
		poller = (struct ur_poller){ .poll = ur_shm_poll, .sleep = ur_shm_sleep,
					     .active = ur_shm_active, .doze = ur_shm_doze,
					     .pending = ur_shm_pending, .arg = s };
		ret = ur_engine_add_poller(e, &poller);
		if (ret)
			ur_engine_unwatch(e, s->bell_fd);
	}
	if (ret) {
		/* Not fatal: UDP reaches this host's processes too. */
		ur_info(NULL, "shared-memory transport off: cannot set up %s: %s",
			s->own ? s->bell_path : s->own_path, strerror(-ret));
		shm_close(s);
		return 0;
	}
	*out = &s->xport;
	return 0;
}
