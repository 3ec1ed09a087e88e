/* One ring of the shared-memory transport: records in, records out.
 *
 * A ring has one producer (the process that claimed it, one of its threads
 * at a time: the caller serialises) and one consumer (the file's owner,
 * from its reactor).  Indices are free-running byte counts; a record never
 * wraps: one that would is preceded by a WRAP mark and starts at 0.  The
 * consumer treats the ring as untrusted bytes: indices and lengths are
 * checked before anything is read, and a ring that breaks them is emptied
 * and reported.
 */
#ifndef UROCE_XPORT_SHM_SHM_RING_H
#define UROCE_XPORT_SHM_SHM_RING_H

#include <stdint.h>
#include <sys/uio.h>

#include "xport/shm/shm_layout.h"

/* Producer: copies a record in (rec, then the pieces: len bytes in all)
 * and publishes it.  0, -EAGAIN (no room now), -EMSGSIZE, or -EFAULT (a
 * piece is not mapped: nothing published). */
int ur_shm_ring_put(struct ur_shm_ring_ctl *c, uint8_t *data, const struct ur_shm_rec *rec,
		    const struct iovec *iov, int niov, uint32_t len);

/* Producer: whether a record of len bytes would fit now. */
int ur_shm_ring_has_room(const struct ur_shm_ring_ctl *c, uint32_t len);

typedef void (*ur_shm_rec_fn)(void *arg, const struct ur_shm_rec *rec, const uint8_t *pkt,
			      uint32_t len);

/* Consumer: hands up to max published records to fn, in order, each
 * released (head moved past it) once fn returns.  Returns how many, or
 * -EBADMSG when the indices or a record are impossible: the ring is then
 * emptied (head = tail) and what was in it is lost. */
int ur_shm_ring_take(struct ur_shm_ring_ctl *c, const uint8_t *data, unsigned max,
		     ur_shm_rec_fn fn, void *arg);

/* Consumer: whether anything is published and not yet taken. */
static inline int ur_shm_ring_pending(const struct ur_shm_ring_ctl *c)
{
	return __atomic_load_n(&c->tail, __ATOMIC_SEQ_CST) != __atomic_load_n(&c->head, __ATOMIC_RELAXED);
}

#endif
