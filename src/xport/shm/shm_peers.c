/* The files we send into: one entry per receiving process, its file
 * mapped, the ring we claimed in it, its doorbell.
 *
 * An entry lives as long as its process: a peer that died is noticed at
 * the next tick (or when its bell cannot be opened) and its entry marked
 * dead, so that what is still sent to it is counted as lost; the mapping
 * goes under the entry's lock, which every send holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/host_uid.h"
#include "util/log.h"
#include "xport/shm/shm_priv.h"

void ur_shm_file_name(char *buf, size_t len, pid_t pid, bool bell)
{
	snprintf(buf, len, "/dev/shm/uroce-%u-%s-%d-v%u", (unsigned)ur_host_uid(),
		 bell ? "bell" : "shm", (int)pid, UR_SHM_VERSION);
}

void ur_shm_ring_bell(int fd)
{
	static const uint8_t one = 1;

	/* EAGAIN: the FIFO is full, so the bell is ringing already. */
	if (write(fd, &one, 1) < 0 && errno != EAGAIN)
		ur_dbg(NULL, "a doorbell did not ring: %s", strerror(errno));
}

void ur_shm_peers_init(struct ur_shm *s)
{
	pthread_mutexattr_t attr;

	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&s->peers_lock, NULL);
	for (unsigned i = 0; i < UR_SHM_PEERS; i++) {
		/* A mutex, not a spinlock: the holder copies a packet and
		 * may be preempted with more threads than cores. */
		pthread_mutex_init(&s->peers[i].lock, &attr);
		s->peers[i].bell_fd = -1;
	}
	pthread_mutexattr_destroy(&attr);
}

/* Opens pid's file (only if it is this user's alone) and maps it. */
static struct ur_shm_file *map_peer(pid_t pid, int *why)
{
	char path[80];
	struct ur_shm_file *f;
	struct stat st;
	int fd;

	ur_shm_file_name(path, sizeof(path), pid, false);
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		*why = -errno;
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) || (size_t)st.st_size != sizeof(*f)) {
		close(fd);
		*why = -EPERM;
		return NULL;
	}
	f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (f == MAP_FAILED) {
		*why = -errno;
		return NULL;
	}
	if (__atomic_load_n(&f->magic, __ATOMIC_ACQUIRE) != UR_SHM_MAGIC ||
	    f->version != UR_SHM_VERSION || f->layout_size != sizeof(*f) ||
	    f->pid != (uint32_t)pid) {
		munmap(f, sizeof(*f));
		*why = -EPROTO;
		return NULL;
	}
	return f;
}

int ur_shm_open_bell(pid_t pid)
{
	char path[80];
	struct stat st;
	int fd;

	ur_shm_file_name(path, sizeof(path), pid, true);
	/* Read-write, so that the FIFO always has a reader: written with no
	 * reader (its owner died), it would raise SIGPIPE in the application. */
	fd = open(path, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISFIFO(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* A free ring in f, now ours: its index, or -ENOSPC. */
static int claim_ring(struct ur_shm *s, struct ur_shm_file *f)
{
	for (unsigned i = 0; i < UR_SHM_RINGS; i++) {
		struct ur_shm_ring_ctl *c = &f->ring[i];
		uint32_t free_owner = 0;

		if (!__atomic_compare_exchange_n(&c->owner, &free_owner, (uint32_t)getpid(), false,
						 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		__atomic_store_n(&c->producer_id, s->id, __ATOMIC_RELAXED);
		__atomic_store_n(&c->want_room, 0, __ATOMIC_RELAXED);
		/* A freed ring is empty (head == tail); the consumer looks at
		 * it once its bit is set. */
		__atomic_store_n(&c->head_seen, __atomic_load_n(&c->head, __ATOMIC_ACQUIRE),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&c->tail, c->head_seen, __ATOMIC_RELEASE);
		__atomic_or_fetch(&f->active, 1ull << i, __ATOMIC_RELEASE);
		return (int)i;
	}
	return -ENOSPC;
}

/* Peer lock held: unmaps its shared regions, all or (stale) those no
 * longer published under the id we mapped. */
static void drop_maps(struct ur_shm_peer *p, bool stale)
{
	if (!p->maps)
		return;
	for (unsigned i = 0; i < UR_SHM_REGIONS; i++) {
		struct ur_shm_map *m = &p->maps[i];

		if (!m->id || (stale && p->f && __atomic_load_n(&p->f->region[i].rkey, __ATOMIC_ACQUIRE) &&
			       __atomic_load_n(&p->f->region[i].share_id, __ATOMIC_ACQUIRE) == m->id))
			continue;
		munmap(m->base, m->len);
		m->id = 0;
	}
	if (!stale) {
		free(p->maps);
		p->maps = NULL;
	}
}

uint8_t *ur_shm_peer_region_map(struct ur_shm_peer *p, unsigned slot)
{
	const struct ur_shm_region *g = &p->f->region[slot];
	uint64_t id = __atomic_load_n(&g->share_id, __ATOMIC_ACQUIRE), len;
	struct ur_shm_map *m;
	char path[64];
	struct stat st;
	void *base;
	int fd;

	if (!id || p->map_refused)
		return NULL;
	if (!p->maps && !(p->maps = calloc(UR_SHM_REGIONS, sizeof(*p->maps))))
		return NULL;
	m = &p->maps[slot];
	if (m->id == id)
		return m->base;
	if (m->id) {
		munmap(m->base, m->len);
		m->id = 0;
	}
	/* The slot is published and our copying names it: the owner keeps
	 * the fd open until it has waited us out. */
	len = __atomic_load_n(&g->share_len, __ATOMIC_RELAXED);
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)p->pid,
		 (int)__atomic_load_n(&g->share_fd, __ATOMIC_RELAXED));
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		/* Not ours to open: never again for this process. */
		ur_info(NULL, "process %d: its shared regions cannot be mapped here (%s): "
			"the kernel copies into them", (int)p->pid, strerror(errno));
		p->map_refused = true;
		return NULL;
	}
	if (fd < 0 || fstat(fd, &st) || (uint64_t)st.st_size < len) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return NULL;
	m->id = id;
	m->base = base;
	m->len = len;
	return base;
}

static void unmap_peer(struct ur_shm_peer *p)
{
	drop_maps(p, false);
	if (p->f)
		munmap(p->f, sizeof(*p->f));
	if (p->bell_fd >= 0)
		close(p->bell_fd);
	p->f = NULL;
	p->bell_fd = -1;
}

/* A new entry for pid: its file mapped, a ring claimed, its bell open. */
static int peer_new(struct ur_shm *s, struct ur_shm_peer *p, pid_t pid)
{
	int why = 0, ring;
	struct ur_shm_file *f = map_peer(pid, &why);

	if (!f)
		return why;
	ring = claim_ring(s, f);
	if (ring < 0) {
		munmap(f, sizeof(*f));
		return ring;
	}
	why = ur_shm_open_bell(pid);
	if (why < 0) {
		__atomic_and_fetch(&f->active, ~(1ull << ring), __ATOMIC_RELEASE);
		__atomic_store_n(&f->ring[ring].owner, 0, __ATOMIC_RELEASE);
		munmap(f, sizeof(*f));
		return why;
	}
	pthread_mutex_lock(&p->lock);
	p->f = f;
	p->ring = (unsigned)ring;
	p->bell_fd = why;
	p->dead = false;
	__atomic_store_n(&p->blocked, false, __ATOMIC_RELAXED);
	p->map_refused = false;
	p->mapped_once = false;
	pthread_mutex_unlock(&p->lock);
	__atomic_store_n(&p->pid, pid, __ATOMIC_RELEASE);
	return 0;
}

int ur_shm_peer_get(struct ur_shm *s, pid_t pid)
{
	struct ur_shm_peer *free_p = NULL;
	int ret = -ENOSPC;

	pthread_mutex_lock(&s->peers_lock);
	for (unsigned i = 0; i < UR_SHM_PEERS; i++) {
		struct ur_shm_peer *p = &s->peers[i];

		if (p->pid == pid && !p->dead) {
			ret = (int)i;
			goto out;
		}
		if (!free_p && (!p->pid || (p->dead && !p->f)))
			free_p = p;
	}
	if (free_p) {
		ret = peer_new(s, free_p, pid);
		if (!ret)
			ret = (int)(free_p - s->peers);
	}
	/* Said once per peer process, for whoever asks (UROCE_LOG=info). */
	if (ret >= 0)
		ur_info(NULL, "process %d reached by shared memory (ring %u of its file)",
			(int)pid, s->peers[ret].ring);
	else
		ur_info(NULL, "process %d not reached by shared memory (%s): UDP", (int)pid,
			ret == -ENOENT ? "it has no shared-memory file" : strerror(-ret));
out:
	pthread_mutex_unlock(&s->peers_lock);
	return ret;
}

void ur_shm_peers_reap(struct ur_shm *s)
{
	pthread_mutex_lock(&s->peers_lock);
	for (unsigned i = 0; i < UR_SHM_PEERS; i++) {
		struct ur_shm_peer *p = &s->peers[i];

		if (!p->pid || p->dead)
			continue;
		if (!(kill(p->pid, 0) && errno == ESRCH)) {
			/* Its regions deregistered: let their memory go. */
			if (p->maps) {
				pthread_mutex_lock(&p->lock);
				drop_maps(p, true);
				pthread_mutex_unlock(&p->lock);
			}
			continue;
		}
		pthread_mutex_lock(&p->lock);
		p->dead = true;
		unmap_peer(p);
		pthread_mutex_unlock(&p->lock);
	}
	pthread_mutex_unlock(&s->peers_lock);
}

void ur_shm_peers_close(struct ur_shm *s)
{
	for (unsigned i = 0; i < UR_SHM_PEERS; i++) {
		/* Our rings stay claimed: their consumers free them once we
		 * are gone. */
		unmap_peer(&s->peers[i]);
	}
}
