#include "xport/shm/shm_ring.h"

#include <errno.h>
#include <string.h>

#include "util/compiler.h"
#include "util/fault_guard.h"

#define RING_MASK ((uint64_t)UR_SHM_RING_BYTES - 1)

/* The indices are stored and loaded sequentially consistent: each pairs
 * with a flag (the consumer's sleeping, the producer's want_room) that the
 * other side stores before loading an index, so that of a store and a
 * wait, one side always sees the other (no fences: ThreadSanitizer does
 * not model them). */

/* Where a record of room bytes goes: its offset, after skipping to 0 if it
 * would cross the end; *need is the bytes it takes with the skip. */
static uint64_t place(uint64_t tail, uint32_t room, uint64_t *need)
{
	uint64_t off = tail & RING_MASK;
	uint64_t left = UR_SHM_RING_BYTES - off;

	*need = left < room ? left + room : room;
	return left < room ? 0 : off;
}

int ur_shm_ring_has_room(const struct ur_shm_ring_ctl *c, uint32_t len)
{
	uint64_t tail = __atomic_load_n(&c->tail, __ATOMIC_RELAXED);
	uint64_t head = __atomic_load_n(&c->head, __ATOMIC_SEQ_CST);
	uint64_t need;

	place(tail, ur_shm_rec_room(len), &need);
	return tail - head + need <= UR_SHM_RING_BYTES;
}

int ur_shm_ring_put(struct ur_shm_ring_ctl *c, uint8_t *data, const struct ur_shm_rec *rec,
		    const struct iovec *iov, int niov, uint32_t len)
{
	uint64_t tail = __atomic_load_n(&c->tail, __ATOMIC_RELAXED);
	/* The consumer's head lives on its line, which moves to the other
	 * core at every take: read only when the head last seen leaves no
	 * room (it never runs ahead of the real one, so room it shows is
	 * there). */
	uint64_t head = __atomic_load_n(&c->head_seen, __ATOMIC_RELAXED);
	uint32_t room = ur_shm_rec_room(len);
	uint64_t need, off;
	uint8_t *p;

	if (len > UR_SHM_MAX_PKT)
		return -EMSGSIZE;
	off = place(tail, room, &need);
	if (tail - head + need > UR_SHM_RING_BYTES) {
		head = __atomic_load_n(&c->head, __ATOMIC_SEQ_CST);
		__atomic_store_n(&c->head_seen, head, __ATOMIC_RELAXED);
		if (tail - head + need > UR_SHM_RING_BYTES)
			return -EAGAIN;
	}
	if (need != room)
		/* The rest of the ring is empty: the mark tells the consumer. */
		__atomic_store_n((uint32_t *)(data + (tail & RING_MASK)), UR_SHM_REC_WRAP,
				 __ATOMIC_RELAXED);
	p = data + off;
	memcpy(p, rec, sizeof(*rec));
	((struct ur_shm_rec *)p)->len = len;
	p += sizeof(*rec);
	for (int i = 0; i < niov; i++) {
		/* Unpublished until the tail moves: a fault leaves no trace. */
		if (!ur_guarded_copy(p, iov[i].iov_base, iov[i].iov_len))
			return -EFAULT;
		p += iov[i].iov_len;
	}
	/* Records and mark are seen by whoever sees the tail. */
	__atomic_store_n(&c->tail, tail + need, __ATOMIC_SEQ_CST);
	return 0;
}

int ur_shm_ring_take(struct ur_shm_ring_ctl *c, const uint8_t *data, unsigned max,
		     ur_shm_rec_fn fn, void *arg)
{
	uint64_t tail = __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE);
	uint64_t head = __atomic_load_n(&c->head, __ATOMIC_RELAXED);
	int n = 0;

	if (tail - head > UR_SHM_RING_BYTES || (head & (UR_SHM_ALIGN - 1)))
		goto bad;
	while (head != tail && (unsigned)n < max) {
		uint64_t off = head & RING_MASK;
		uint64_t left = UR_SHM_RING_BYTES - off;
		const struct ur_shm_rec *rec = (const void *)(data + off);
		/* Read once: the producer's bytes are not trusted. */
		uint32_t len = __atomic_load_n(&rec->len, __ATOMIC_RELAXED);
		uint32_t room;

		if (len == UR_SHM_REC_WRAP) {
			if (left > tail - head)
				goto bad;
			head += left;
			continue;
		}
		room = ur_shm_rec_room(len);
		if (len > UR_SHM_MAX_PKT || room > left || room > tail - head)
			goto bad;
		fn(arg, rec, (const uint8_t *)(rec + 1), len);
		head += room;
		__atomic_store_n(&c->head, head, __ATOMIC_SEQ_CST);
		n++;
	}
	__atomic_store_n(&c->head, head, __ATOMIC_SEQ_CST);
	return n;

bad:
	__atomic_store_n(&c->head, tail, __ATOMIC_SEQ_CST);
	return -EBADMSG;
}
