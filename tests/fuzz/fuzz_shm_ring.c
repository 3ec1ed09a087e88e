/* libFuzzer target: a shared-memory ring as another process of the user
 * may have left it (src/xport/shm/shm_ring.c).
 *
 * The input's first 16 bytes are the ring's head and tail; the rest is laid
 * at the head's place in the ring (wrapping) and repeated from the start
 * of the ring, so that records, WRAP marks and lengths come from the
 * input.  The consumer must hand up only records that lie inside the ring
 * and are no longer than a packet (every byte is read, so ASan sees a read
 * outside), and after its answer head equals tail or a record boundary it
 * reached; then the ring must carry a record again. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xport/shm/shm_ring.h"

#define FUZZ_ASSERT(c) do { if (!(c)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int fuzz_dropped = -1;

static uint8_t *ring;
static volatile uint64_t sink;

static void on_rec(void *arg, const struct ur_shm_rec *rec, const uint8_t *pkt, uint32_t len)
{
	uint64_t acc = rec->traffic_class;

	(void)arg;
	FUZZ_ASSERT(len <= UR_SHM_MAX_PKT);
	FUZZ_ASSERT(pkt >= ring && pkt + len <= ring + UR_SHM_RING_BYTES);
	for (uint32_t i = 0; i < len; i++)
		acc += pkt[i];
	sink += acc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ur_shm_ring_ctl ctl = { 0 };
	struct ur_shm_rec rec = { 0 };
	uint8_t payload[100] = { 0 };
	struct iovec iov = { payload, sizeof(payload) };
	int n;

	if (!ring && !(ring = aligned_alloc(4096, UR_SHM_RING_BYTES)))
		abort();
	if (size < 16)
		return 0;
	memcpy(&ctl.head, data, 8);
	memcpy(&ctl.tail, data + 8, 8);
	data += 16;
	size -= 16;
	memset(ring, 0, UR_SHM_RING_BYTES);
	for (size_t off = 0; size && off < UR_SHM_RING_BYTES; off += size)
		memcpy(ring + off, data, size < UR_SHM_RING_BYTES - off ? size : UR_SHM_RING_BYTES - off);
	if (size)
		for (size_t i = 0; i < size; i++)
			ring[(ctl.head + i) & (UR_SHM_RING_BYTES - 1)] = data[i];

	n = ur_shm_ring_take(&ctl, ring, 1u << 20, on_rec, NULL);
	FUZZ_ASSERT(n >= 0 || n == -EBADMSG);
	fuzz_dropped = n == -EBADMSG;
	/* Taken to the end, or emptied. */
	FUZZ_ASSERT(ctl.head == ctl.tail);
	/* Usable again (unless the indices sit where no record fits: the
	 * ring was emptied, not repaired, and a head off a boundary stays). */
	if (!(ctl.head & (UR_SHM_ALIGN - 1)) &&
	    ur_shm_ring_put(&ctl, ring, &rec, &iov, 1, sizeof(payload)) == 0) {
		FUZZ_ASSERT(ur_shm_ring_take(&ctl, ring, 1, on_rec, NULL) == 1);
		FUZZ_ASSERT(ctl.head == ctl.tail);
	}
	return 0;
}
