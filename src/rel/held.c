#include "rel/held.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/qp.h"
#include "rel/psn.h"
#include "rel/rel_priv.h"
#include "xport/xport.h"

/* A packet as it came, BTH through ICRC: headers, an MTU of payload, pad
 * and ICRC at most. */
#define UR_HELD_PKT_MAX (UR_MAX_HDR_BYTES + 4096u + 8u)
/* Packets the whole process may hold at once (about 8.5 MiB at 4 KiB): past
 * that a packet is dropped as go-back-N would, and sent again. */
#define UR_HELD_POOL_MAX 2048u

struct ur_held_pkt {
	struct ur_held_pkt *next;    /* in the pool's free list */
	uint32_t psn;
	uint32_t len;
	uint8_t buf[UR_HELD_PKT_MAX];
};

/* One slot per PSN of the window; the struct lives while the QP has held
 * packets since it last left an error or reset. */
struct ur_held {
	uint32_t n;
	struct ur_held_pkt *slot[UR_MAX_UNACKED_PSNS];
};

_Static_assert((UR_MAX_UNACKED_PSNS & (UR_MAX_UNACKED_PSNS - 1)) == 0,
	       "the window is a power of two: slots are PSN modulo the window");

/* Buffers are kept once allocated: a packet held and released per loss
 * through malloc made glibc grow and trim a thread's heap for each, and
 * the page faults took a quarter of the receiver's time at 1 % loss.
 * Shared by every QP of the process, kept for its life. */
static struct {
	pthread_mutex_t lock;
	struct ur_held_pkt *free;
	uint32_t total;
} pool = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct ur_held_pkt *pkt_get(void)
{
	struct ur_held_pkt *p;

	pthread_mutex_lock(&pool.lock);
	p = pool.free;
	if (p)
		pool.free = p->next;
	else if (pool.total < UR_HELD_POOL_MAX && (p = malloc(sizeof(*p))))
		pool.total++;
	pthread_mutex_unlock(&pool.lock);
	return p;
}

static void pkt_put(struct ur_held_pkt *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&pool.lock);
	p->next = pool.free;
	pool.free = p;
	pthread_mutex_unlock(&pool.lock);
}

bool ur_held_keep(struct ur_held **store, const struct ur_pkt_view *pkt, uint32_t d)
{
	struct ur_held *h = *store;
	uint32_t len = pkt->hdr_len + pkt->paylen + pkt->pad + 4u;
	uint32_t i = pkt->psn & (UR_MAX_UNACKED_PSNS - 1);
	struct ur_held_pkt *p;

	if (!d || d >= UR_MAX_UNACKED_PSNS || len > UR_HELD_PKT_MAX)
		return false;
	if (!h) {
		h = *store = calloc(1, sizeof(*h));
		if (!h)
			return false;
	}
	if (h->slot[i] && h->slot[i]->psn == pkt->psn)
		return true;     /* held already: a duplicate */
	p = h->slot[i];
	if (p)
		h->n--;          /* a stale PSN from before the window moved */
	else if (!(p = pkt_get()))
		return false;
	p->psn = pkt->psn;
	p->len = len;
	memcpy(p->buf, pkt->bth, len);
	h->slot[i] = p;
	h->n++;
	return true;
}

void *ur_held_take(struct ur_held *h, uint32_t psn, struct ur_pkt_view *v)
{
	uint32_t i = psn & (UR_MAX_UNACKED_PSNS - 1);
	struct ur_held_pkt *p;

	if (!h || !h->slot[i] || h->slot[i]->psn != psn)
		return NULL;
	p = h->slot[i];
	h->slot[i] = NULL;
	h->n--;
	if (ur_pkt_parse(v, p->buf, p->len) != UR_PARSE_OK) {
		pkt_put(p);          /* parsed once already: cannot happen */
		return NULL;
	}
	return p;
}

void ur_held_release(void *taken)
{
	pkt_put(taken);
}

void ur_held_forget_before(struct ur_held *h, uint32_t psn)
{
	if (!h || !h->n)
		return;
	for (uint32_t i = 0; i < UR_MAX_UNACKED_PSNS; i++) {
		if (h->slot[i] && psn_lt(h->slot[i]->psn, psn)) {
			pkt_put(h->slot[i]);
			h->slot[i] = NULL;
			h->n--;
		}
	}
}

bool ur_held_any(const struct ur_held *h)
{
	return h && h->n;
}

uint32_t ur_held_count(const struct ur_held *h)
{
	return h ? h->n : 0;
}

void ur_held_clear(struct ur_held **store)
{
	struct ur_held *h = *store;

	if (!h)
		return;
	for (uint32_t i = 0; i < UR_MAX_UNACKED_PSNS; i++)
		pkt_put(h->slot[i]);
	free(h);
	*store = NULL;
}
