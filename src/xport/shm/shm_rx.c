/* Receiving by shared memory: our rings polled from the reactor, the
 * doorbell that wakes our engine thread, producers told of room, and the
 * rings of producers that died given back. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "xport/shm/shm_priv.h"
#include "xport/shm/shm_ring.h"

#define UR_SHM_TAKE_BATCH 64u   /* records from one ring per poll */

static void on_rec(void *arg, const struct ur_shm_rec *rec, const uint8_t *pkt, uint32_t len)
{
	struct ur_shm *s = arg;
	struct ur_rx_meta meta = {
		.traffic_class = rec->traffic_class,
		.hop_limit = rec->hop_limit,
		.ipv6 = rec->ipv6 != 0,
		.placed = rec->placed,
	};

	memcpy(meta.sgid.raw, rec->sgid, 16);
	memcpy(meta.dgid.raw, rec->dgid, 16);
	UR_SHM_COUNT(s, rcvd_pkts, 1);
	s->hooks.rx(s->hooks.arg, pkt, len, &meta);
}

/* Ring i's producer asked to hear when there is room: there is now. */
static void tell_producer(struct ur_shm *s, unsigned i)
{
	struct ur_shm_ring_ctl *c = &s->own->ring[i];
	uint32_t owner;

	/* Head moved (sequentially consistent), now want_room: the
	 * producer does the two the other way round. */
	if (!__atomic_load_n(&c->want_room, __ATOMIC_SEQ_CST))
		return;
	__atomic_store_n(&c->want_room, 0, __ATOMIC_RELAXED);
	owner = __atomic_load_n(&c->owner, __ATOMIC_ACQUIRE);
	if (!owner)
		return;
	if (s->producer_bell_pid[i] != (pid_t)owner || s->producer_bell[i] < 0) {
		if (s->producer_bell[i] >= 0)
			close(s->producer_bell[i]);
		s->producer_bell[i] = ur_shm_open_bell((pid_t)owner);
		s->producer_bell_pid[i] = (pid_t)owner;
	}
	if (s->producer_bell[i] >= 0)
		ur_shm_ring_bell(s->producer_bell[i]);
}

static int take(struct ur_shm *s, unsigned i)
{
	struct ur_shm_ring_ctl *c = &s->own->ring[i];
	int n;

	if (s->hooks.rx_batch)
		s->hooks.rx_batch(s->hooks.arg, true);
	n = ur_shm_ring_take(c, s->own->data[i], UR_SHM_TAKE_BATCH, on_rec, s);
	if (s->hooks.rx_batch)
		s->hooks.rx_batch(s->hooks.arg, false);

	if (n < 0) {
		UR_SHM_COUNT(s, malformed, 1);
		s->hooks.dropped(s->hooks.arg, UR_XPORT_DROP_MALFORMED, NULL);
		ur_warn_ratelimited(NULL, "shared-memory ring %u (from process %u) held an "
				    "impossible record: emptied", i,
				    __atomic_load_n(&c->owner, __ATOMIC_RELAXED));
	}
	if (n)
		tell_producer(s, i);
	return n;
}

/* The poller: every claimed ring, a batch from each. */
bool ur_shm_poll(void *arg)
{
	struct ur_shm *s = arg;
	uint64_t active = __atomic_load_n(&s->own->active, __ATOMIC_ACQUIRE);
	bool found = false;

	while (active) {
		unsigned i = (unsigned)__builtin_ctzll(active);

		active &= active - 1;
		if (ur_shm_ring_pending(&s->own->ring[i]) && take(s, i))
			found = true;
	}
	return found;
}

/* Records wait in a claimed ring. */
static bool any_pending(struct ur_shm *s)
{
	uint64_t active = __atomic_load_n(&s->own->active, __ATOMIC_ACQUIRE);

	while (active) {
		unsigned i = (unsigned)__builtin_ctzll(active);

		active &= active - 1;
		if (ur_shm_ring_pending(&s->own->ring[i]))
			return true;
	}
	return false;
}

bool ur_shm_pending(void *arg)
{
	return any_pending(arg);
}

bool ur_shm_rx_pending(struct ur_xport *x)
{
	return any_pending(ur_shm_of(x));
}

/* Anything may come: some process has claimed one of our rings. */
bool ur_shm_active(void *arg)
{
	struct ur_shm *s = arg;

	return __atomic_load_n(&s->own->active, __ATOMIC_RELAXED) != 0;
}

/* Our engine thread naps: a producer with a small WRITE for us copies it
 * straight in rather than leave it in the ring for half a millisecond. */
void ur_shm_doze(void *arg, bool dozing)
{
	struct ur_shm *s = arg;

	__atomic_store_n(&s->own->dozing, dozing ? 1u : 0u, __ATOMIC_RELAXED);
}

/* Our engine thread goes to sleep: producers must ring from now on, and
 * anything that came before they could see it is found here. */
bool ur_shm_sleep(void *arg, bool going)
{
	struct ur_shm *s = arg;

	__atomic_store_n(&s->own->sleeping, going ? 1u : 0u, __ATOMIC_SEQ_CST);
	return !going || !any_pending(s);
}

void ur_shm_on_bell(void *arg, uint32_t events)
{
	struct ur_shm *s = arg;
	uint8_t buf[64];

	(void)events;
	while (read(s->bell_fd, buf, sizeof(buf)) > 0)
		;
	/* Rings with news are polled in this same dispatch; what is left is
	 * room in the rings we send into. */
	ur_shm_room_check(s);
}

void ur_shm_rx_reap(struct ur_shm *s)
{
	uint64_t active = __atomic_load_n(&s->own->active, __ATOMIC_ACQUIRE);

	while (active) {
		unsigned i = (unsigned)__builtin_ctzll(active);
		struct ur_shm_ring_ctl *c = &s->own->ring[i];
		uint32_t owner = __atomic_load_n(&c->owner, __ATOMIC_ACQUIRE);

		active &= active - 1;
		if (!owner || !(kill((pid_t)owner, 0) && errno == ESRCH))
			continue;
		/* What it published before it died still counts. */
		while (take(s, i) > 0)
			;
		__atomic_and_fetch(&s->own->active, ~(1ull << i), __ATOMIC_RELEASE);
		__atomic_store_n(&c->head, __atomic_load_n(&c->tail, __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
		__atomic_store_n(&c->want_room, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&c->copying, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&c->owner, 0, __ATOMIC_RELEASE);
		if (s->producer_bell[i] >= 0)
			close(s->producer_bell[i]);
		s->producer_bell[i] = -1;
		s->producer_bell_pid[i] = 0;
	}
}

void ur_shm_rx_close(struct ur_shm *s)
{
	for (unsigned i = 0; i < UR_SHM_RINGS; i++)
		if (s->producer_bell[i] >= 0)
			close(s->producer_bell[i]);
}
