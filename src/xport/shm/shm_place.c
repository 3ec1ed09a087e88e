/* One copy for a large WRITE or READ: the producer copies the bytes
 * straight into the receiver's memory (process_vm_writev), or out of it
 * (process_vm_readv), and then sends the request's headers alone through
 * its ring.  The receiver's protocol checks the rkey again and answers as
 * if the payload had come in the ring (a READ with one response of
 * headers).
 *
 * The producer copies only into a region the receiver published for a PD
 * that the target QP has, with remote write (read), the whole range inside it;
 * anything else (a window, an unknown key, a refused copy) is answered
 * with an error and the caller sends the bytes in packets, where the
 * receiver's own checks decide.  Cross-memory attach needs the same user
 * and ptrace permission over the receiver: where the kernel refuses it
 * (Yama, a container's seccomp), the first refusal turns single copy off
 * for that peer, said once in the log.
 *
 * A shared region (its memory a memfd, util/vm_share.h) needs no system
 * call: the producer maps the memfd once (shm_peers.c) and copies with
 * memcpy, as a NIC's DMA would; where it cannot be mapped, the kernel
 * copies as above.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/uio.h>
#include <infiniband/verbs.h>

#include "util/clock.h"
#include "util/fault_guard.h"
#include "util/log.h"
#include "xport/shm/shm_priv.h"

#define UR_SHM_DRAIN_WAIT_NS 1000000ull     /* a ring's MiB taken, with room */

static bool inside(uint64_t start, uint64_t size, uint64_t va, uint64_t len)
{
	return va >= start && len <= size && va - start <= size - len;
}

/* memcpy between our iov and the peer's bytes at dst: false if ours
 * fault (unmapped under a live region). */
static bool memcpy_with(uint8_t *dst, bool write, const struct iovec *iov, int niov)
{
	for (int i = 0; i < niov; i++) {
		if (!(write ? ur_guarded_copy(dst, iov[i].iov_base, iov[i].iov_len)
			    : ur_guarded_copy(iov[i].iov_base, dst, iov[i].iov_len)))
			return false;
		dst += iov[i].iov_len;
	}
	return true;
}

/* Copies into slot (write) or out of it, announced in our ring's copying
 * word so that a revocation waits for us: 1 if by memcpy through the
 * region mapped here, 0 if by the kernel, or -errno.  Peer lock held. */
static int copy_with(struct ur_shm_peer *peer, int slot, uint32_t rkey, uint32_t pd, bool write,
		     uint64_t va, const struct iovec *iov, int niov, uint64_t len)
{
	struct ur_shm_ring_ctl *c = &peer->f->ring[peer->ring];
	const struct ur_shm_region *g = &peer->f->region[slot];
	struct iovec remote;
	ssize_t n = -1;
	int ret = -EACCES;

	__atomic_store_n(&c->copying, (uint32_t)slot + 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&g->rkey, __ATOMIC_SEQ_CST) == rkey &&
	    __atomic_load_n(&g->pd, __ATOMIC_RELAXED) == pd &&
	    (__atomic_load_n(&g->access, __ATOMIC_RELAXED) &
	     (write ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ)) &&
	    inside(g->iova, g->length, va, len)) {
		uint8_t *map = ur_shm_peer_region_map(peer, (unsigned)slot);

		if (map) {
			map += g->host - g->share_base + (va - g->iova);
			ret = memcpy_with(map, write, iov, niov) ? 1 : -EFAULT;
			goto out;
		}
		remote.iov_base = (void *)(uintptr_t)(g->host + (va - g->iova));
		remote.iov_len = len;
		n = write ? process_vm_writev(peer->pid, iov, (unsigned long)niov, &remote, 1, 0)
			  : process_vm_readv(peer->pid, iov, (unsigned long)niov, &remote, 1, 0);
		ret = n < 0 ? -errno : (uint64_t)n == len ? 0 : -EFAULT;
	}
out:
	__atomic_store_n(&c->copying, 0, __ATOMIC_RELEASE);
	return ret;
}

/* Whether WRITE bytes of ours still wait in the peer's ring: placing now
 * would land these before them.  Peer lock held. */
static bool writes_in_ring(const struct ur_shm_peer *peer)
{
	return (int64_t)(__atomic_load_n(&peer->f->ring[peer->ring].head, __ATOMIC_ACQUIRE) -
			 peer->write_tail) < 0;
}

/* A large copy behind WRITE bytes in the ring waits (a while) for the
 * peer to take them rather than go into the ring behind them: a stream
 * of WRITEs that once went by the ring (while its region moved into a
 * memfd, or was revoked for a moment) would otherwise stay there, each
 * keeping the next from being placed.  The peer's engine thread is woken
 * if it sleeps.  Peer lock held. */
static bool ring_drained(struct ur_shm_peer *peer)
{
	uint64_t until = ur_now_ns() + UR_SHM_DRAIN_WAIT_NS;
	bool rang = false;

	while (writes_in_ring(peer)) {
		if (ur_now_ns() > until)
			return false;
		if (!rang && __atomic_load_n(&peer->f->sleeping, __ATOMIC_SEQ_CST)) {
			ur_shm_ring_bell(peer->bell_fd);
			rang = true;
		}
		sched_yield();
	}
	return true;
}

static int one_copy(struct ur_xport *x, const struct ur_path *path, uint32_t dqpn, uint32_t rkey,
		    bool write, uint64_t va, const struct iovec *iov, int niov, uint64_t len)
{
	struct ur_shm *s = ur_shm_of(x);
	const struct ur_shm_path *p = (const struct ur_shm_path *)path->priv.bytes;
	struct ur_shm_peer *peer = &s->peers[p->peer];
	uint32_t pd, qp_access = 0, need = write ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ;
	int slot, ret;

	if (s->place_min == UINT64_MAX)
		return -EOPNOTSUPP;     /* UROCE_SHM_SINGLE_COPY=0 */
	pthread_mutex_lock(&peer->lock);
	if (peer->dead || __atomic_load_n(&peer->pid, __ATOMIC_RELAXED) != p->pid) {
		ret = -ESRCH;
	} else if (peer->place_refused) {
		ret = -EPERM;
	} else if (len < s->place_min && !__atomic_load_n(&peer->f->dozing, __ATOMIC_RELAXED) &&
		   !__atomic_load_n(&peer->f->sleeping, __ATOMIC_RELAXED)) {
		/* Small, and the peer's engine thread is up: the ring is as
		 * fast, and costs no system call. */
		ret = -EMSGSIZE;
	} else if (writes_in_ring(peer) && (len < s->place_min || !ring_drained(peer))) {
		ret = -EBUSY;
	} else if (!(pd = ur_shm_qp_pd(peer->f, dqpn, &qp_access)) || !(qp_access & need) ||
		   (slot = ur_shm_region_slot(peer->f, rkey)) < 0) {
		/* Not published, or the QP refuses: the responder says so. */
		ret = -ENOENT;
	} else {
		ret = copy_with(peer, slot, rkey, pd, write, va, iov, niov, len);
		if (ret == -EPERM || ret == -ENOSYS) {
			peer->place_refused = true;
			ur_info(NULL, "process %d: the kernel refuses to copy into it (%s): its "
				"large WRITEs and READs go through the ring", (int)p->pid,
				strerror(-ret));
		} else if (ret == 1 && !peer->mapped_once) {
			peer->mapped_once = true;
			ur_info(NULL, "process %d: large WRITEs and READs copied with memcpy through "
				"its shared regions (mapped here)", (int)p->pid);
		} else if (!ret && !peer->placed_once) {
			peer->placed_once = true;
			ur_info(NULL, "process %d: large WRITEs and READs copied straight into and "
				"out of its memory (single copy)", (int)p->pid);
		}
	}
	pthread_mutex_unlock(&peer->lock);
	if (ret >= 0)
		UR_SHM_COUNT(s, placed, 1);
	return ret;
}


int ur_shm_place(struct ur_xport *x, const struct ur_path *path, uint32_t dqpn, uint32_t rkey,
		 uint64_t va, const struct iovec *iov, int niov, uint64_t len)
{
	return one_copy(x, path, dqpn, rkey, true, va, iov, niov, len);
}

int ur_shm_fetch(struct ur_xport *x, const struct ur_path *path, uint32_t dqpn, uint32_t rkey,
		 uint64_t va, const struct iovec *iov, int niov, uint64_t len)
{
	return one_copy(x, path, dqpn, rkey, false, va, iov, niov, len);
}
