/* Our regions and QPs, published in our own file so that a producer can
 * copy a large WRITE straight into our memory (shm_place.c), and taken
 * back so that nothing lands after ibv_dereg_mr returns.
 *
 * Only the owner writes these tables (under expose_lock); producers read
 * them.  A region's slot is filled with rkey 0 and then published by its
 * rkey; a QP's by its number.  Revoking zeroes the rkey and then waits
 * while any ring's producer says it copies into that slot: see
 * shm_layout.h for why one of the two always sees the other.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "xport/shm/shm_priv.h"

#define UR_SHM_REVOKE_POLL_NS 20000   /* a copy takes tens of microseconds */

static unsigned region_home(uint32_t rkey)
{
	return (rkey >> 8) & (UR_SHM_REGIONS - 1);
}

static unsigned qp_home(uint32_t qpn)
{
	return qpn & (UR_SHM_QPS - 1);
}

int ur_shm_expose_region(struct ur_xport *x, const struct ur_xport_region *r)
{
	struct ur_shm *s = ur_shm_of(x);
	struct ur_shm_region *free_slot = NULL;
	int ret = 0;

	if (!r->rkey || !(r->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)))
		return -EINVAL;
	pthread_mutex_lock(&s->expose_lock);
	for (unsigned i = 0; i < UR_SHM_PROBE; i++) {
		struct ur_shm_region *g = &s->own->region[(region_home(r->rkey) + i) & (UR_SHM_REGIONS - 1)];
		uint32_t k = __atomic_load_n(&g->rkey, __ATOMIC_RELAXED);

		/* Two contexts of this process drew the same key: the first
		 * keeps the slot; the other's bytes go in packets (and a
		 * peer's PD check keeps it from the first's region). */
		if (k == r->rkey) {
			ret = -EEXIST;
			break;
		}
		if (!k && !free_slot)
			free_slot = g;
	}
	if (!ret && !free_slot)
		ret = -ENOSPC;
	if (!ret) {
		free_slot->pd = r->pd;
		free_slot->access = r->access;
		free_slot->iova = r->iova;
		free_slot->length = r->length;
		free_slot->host = (uint64_t)(uintptr_t)r->host;
		free_slot->share_id = r->share_id;
		free_slot->share_fd = r->share_fd;
		free_slot->share_base = r->share_base;
		free_slot->share_len = r->share_len;
		__atomic_store_n(&free_slot->rkey, r->rkey, __ATOMIC_SEQ_CST);
	}
	pthread_mutex_unlock(&s->expose_lock);
	return ret;
}

/* A process that exited copies nothing more, even while its parent has
 * not reaped it (a zombie answers kill(pid, 0)). */
static bool pid_gone(pid_t pid)
{
	char path[40], buf[256], *end;
	ssize_t n;
	int fd;

	if (kill(pid, 0) && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	/* "pid (comm) S ...": the state follows the last ')'. */
	end = strrchr(buf, ')');
	return end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X');
}

/* Whether ring c's producer may still be copying into slot (a producer
 * that died copies nothing more). */
static bool copying_into(const struct ur_shm_ring_ctl *c, uint32_t slot)
{
	uint32_t owner;

	if (__atomic_load_n(&c->copying, __ATOMIC_SEQ_CST) != slot + 1)
		return false;
	owner = __atomic_load_n(&c->owner, __ATOMIC_ACQUIRE);
	return owner && !pid_gone((pid_t)owner);
}

void ur_shm_revoke_region(struct ur_xport *x, uint32_t rkey)
{
	struct ur_shm *s = ur_shm_of(x);
	const struct timespec nap = { 0, UR_SHM_REVOKE_POLL_NS };

	if (!rkey)
		return;
	pthread_mutex_lock(&s->expose_lock);
	for (unsigned i = 0; i < UR_SHM_PROBE; i++) {
		uint32_t slot = (region_home(rkey) + i) & (UR_SHM_REGIONS - 1);
		struct ur_shm_region *g = &s->own->region[slot];

		if (__atomic_load_n(&g->rkey, __ATOMIC_RELAXED) != rkey)
			continue;
		__atomic_store_n(&g->rkey, 0, __ATOMIC_SEQ_CST);
		for (unsigned r = 0; r < UR_SHM_RINGS; r++)
			while (copying_into(&s->own->ring[r], slot))
				nanosleep(&nap, NULL);
		break;
	}
	pthread_mutex_unlock(&s->expose_lock);
}

void ur_shm_expose_qp(struct ur_xport *x, uint32_t qpn, uint32_t pd, uint32_t access)
{
	struct ur_shm *s = ur_shm_of(x);
	struct ur_shm_qp *free_slot = NULL;

	if (!qpn)
		return;
	pthread_mutex_lock(&s->expose_lock);
	for (unsigned i = 0; i < UR_SHM_PROBE; i++) {
		struct ur_shm_qp *q = &s->own->qp[(qp_home(qpn) + i) & (UR_SHM_QPS - 1)];
		uint32_t n = __atomic_load_n(&q->qpn, __ATOMIC_RELAXED);

		if (n == qpn) {
			/* Gone, or changed: unpublished first, so that no
			 * reader pairs the number with what it no longer
			 * has. */
			__atomic_store_n(&q->qpn, 0, __ATOMIC_SEQ_CST);
			if (!free_slot)
				free_slot = q;
		} else if (!n && !free_slot) {
			free_slot = q;
		}
	}
	if (pd && free_slot) {
		__atomic_store_n(&free_slot->pd, pd, __ATOMIC_RELAXED);
		__atomic_store_n(&free_slot->access, access, __ATOMIC_RELAXED);
		__atomic_store_n(&free_slot->qpn, qpn, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->expose_lock);
}

/* Where a producer finds them (shm_place.c): the PD QP qpn checks keys
 * against (0 if it is not published) and the access it grants. */
uint32_t ur_shm_qp_pd(const struct ur_shm_file *f, uint32_t qpn, uint32_t *access)
{
	for (unsigned i = 0; i < UR_SHM_PROBE; i++) {
		const struct ur_shm_qp *q = &f->qp[(qp_home(qpn) + i) & (UR_SHM_QPS - 1)];
		uint32_t pd;

		if (__atomic_load_n(&q->qpn, __ATOMIC_ACQUIRE) != qpn)
			continue;
		pd = __atomic_load_n(&q->pd, __ATOMIC_ACQUIRE);
		*access = __atomic_load_n(&q->access, __ATOMIC_ACQUIRE);
		/* Still the same QP after reading them. */
		if (__atomic_load_n(&q->qpn, __ATOMIC_ACQUIRE) == qpn)
			return pd;
	}
	return 0;
}

int ur_shm_region_slot(const struct ur_shm_file *f, uint32_t rkey)
{
	for (unsigned i = 0; i < UR_SHM_PROBE; i++) {
		uint32_t slot = (region_home(rkey) + i) & (UR_SHM_REGIONS - 1);

		if (__atomic_load_n(&f->region[slot].rkey, __ATOMIC_RELAXED) == rkey)
			return (int)slot;
	}
	return -ENOENT;
}
