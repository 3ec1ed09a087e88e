/* libFuzzer target: a shared-memory ring as another process of the user
 * may have left it (src/xport/shm/shm_ring.c).
 *
 * The input's first 16 bytes are the ring's head and tail; the rest is laid
 * at the head's place in the ring (wrapping) and repeated from the start
 * of the ring (zeros if there is no rest), so that records, WRAP marks and
 * lengths come from the input.  The consumer takes in batches whose size
 * comes from the input too.  It must hand up only records that lie inside
 * the ring, on a cache line, no longer than a packet (every byte of header
 * and packet is read, so ASan sees a read outside); a batch is no larger
 * than asked for and stops short only on an empty ring; head never passes
 * tail, and a refused ring is emptied.  Then, unless the indices sit where
 * no record can start (the ring was emptied, not repaired), the ring must
 * carry a record again, byte for byte. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xport/shm/shm_ring.h"

#define FUZZ_ASSERT(c) do { if (!(c)) { fprintf(stderr, "fuzz_shm_ring: %s\n", #c); abort(); } } while (0)
#define RING UR_SHM_RING_BYTES
#define MASK ((uint64_t)RING - 1)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* The corpus replay's verdict: 1 if the ring was refused (drop-* seeds). */
int fuzz_dropped = -1;

static struct ur_shm_ring_ctl *ctl;
static uint8_t *ring;
static volatile uint64_t sink;

struct seen {
	unsigned records;
	uint64_t rooms;                 /* what the records handed up take in the ring */
	const uint8_t *want;            /* the record put after: its packet's bytes */
	uint32_t want_len;
};

static void on_rec(void *arg, const struct ur_shm_rec *rec, const uint8_t *pkt, uint32_t len)
{
	struct seen *s = arg;
	uintptr_t lo = (uintptr_t)ring, at = (uintptr_t)rec;
	const uint8_t *h = (const uint8_t *)rec;
	uint64_t acc = 0;

	FUZZ_ASSERT(len <= UR_SHM_MAX_PKT);
	FUZZ_ASSERT(at >= lo && at + sizeof(*rec) + len <= lo + RING);
	FUZZ_ASSERT((at - lo) % UR_SHM_ALIGN == 0);
	FUZZ_ASSERT(pkt == h + sizeof(*rec));
	for (size_t i = 0; i < sizeof(*rec); i++)
		acc += h[i];
	for (uint32_t i = 0; i < len; i++)
		acc += pkt[i];
	sink += acc;
	if (s->want)
		FUZZ_ASSERT(len == s->want_len && !memcmp(pkt, s->want, len));
	s->records++;
	s->rooms += ur_shm_rec_room(len);
}

/* The rest of the input at the start of the ring, repeated to its end
 * (by doubling: a copy per byte of a short input is most of a run), then
 * once more at the head's place. */
static void fill(const uint8_t *p, size_t n, uint64_t head)
{
	size_t have = n < RING ? n : RING, at = head & MASK;

	if (!n) {
		memset(ring, 0, RING);
		return;
	}
	memcpy(ring, p, have);
	while (have < RING) {
		size_t k = have < RING - have ? have : RING - have;

		memcpy(ring + have, ring, k);
		have += k;
	}
	have = n < RING ? n : RING;
	if (have <= RING - at) {
		memcpy(ring + at, p, have);
	} else {
		memcpy(ring + at, p, RING - at);
		memcpy(ring, p + (RING - at), have - (RING - at));
	}
}

/* An honest record through the emptied ring. */
static void check_usable(void)
{
	static uint8_t payload[333];
	struct ur_shm_rec rec = { 0 };
	struct iovec iov[2] = { { payload, 100 }, { payload + 100, sizeof(payload) - 100 } };
	struct seen s = { 0, 0, payload, sizeof(payload) };

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 13 + 1);
	FUZZ_ASSERT(ur_shm_ring_has_room(ctl, sizeof(payload)));
	FUZZ_ASSERT(ur_shm_ring_put(ctl, ring, &rec, iov, 2, sizeof(payload)) == 0);
	FUZZ_ASSERT(ur_shm_ring_take(ctl, ring, 1, on_rec, &s) == 1);
	FUZZ_ASSERT(s.records == 1 && ctl->head == ctl->tail);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t head, tail;
	unsigned max;
	int n;

	if (!ring) {
		ctl = aligned_alloc(UR_SHM_ALIGN, sizeof(*ctl));
		ring = aligned_alloc(4096, RING);
		FUZZ_ASSERT(ctl && ring);
	}
	fuzz_dropped = -1;
	if (size < 16)
		return 0;
	memcpy(&head, data, 8);
	memcpy(&tail, data + 8, 8);
	memset(ctl, 0, sizeof(*ctl));
	ctl->head = head;
	ctl->tail = tail;
	fill(data + 16, size - 16, head);
	/* Batches of 1 .. 64 records, from bits the indices do not use much. */
	max = 1 + (unsigned)((size + (tail >> 6)) % 64);
	fuzz_dropped = 0;
	do {
		struct seen s = { 0 };
		uint64_t before = ctl->head;

		n = ur_shm_ring_take(ctl, ring, max, on_rec, &s);
		if (n == -EBADMSG) {
			FUZZ_ASSERT(ctl->head == tail);
			fuzz_dropped = 1;
			break;
		}
		FUZZ_ASSERT(n >= 0 && (unsigned)n <= max && (unsigned)n == s.records);
		/* Head moved by the records' rooms and any WRAP skips, never past tail. */
		FUZZ_ASSERT(ctl->head - before >= s.rooms && ctl->head - before <= tail - before);
		FUZZ_ASSERT((unsigned)n == max || ctl->head == tail);
	} while (ctl->head != tail);
	FUZZ_ASSERT(!ur_shm_ring_pending(ctl));
	if (!(tail & (UR_SHM_ALIGN - 1)))
		check_usable();
	return 0;
}
