/* Unit tests of one ring of the shared-memory transport (src/xport/shm/
 * shm_ring.c): records come out in order and byte for byte as they went in,
 * gathered from any pieces; the ring fills, says so before a put does, and
 * has room again once a record is taken; records of every size go round
 * the ring for many laps, across the WRAP mark and past 2^32; a record too
 * big is refused without a trace; max bounds a batch; and a ring whose
 * producer broke the rules (indices, lengths, rooms, marks) is refused,
 * emptied, hands up no bad record, and works again afterwards. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <sys/uio.h>

#include "ut.h"

#include "xport/shm/shm_ring.h"

#define RING UR_SHM_RING_BYTES
#define MASK ((uint64_t)RING - 1)
#define POISON 0xa5

/* The ring under test: its indices and its data, as in the shared file. */
static struct {
	struct ur_shm_ring_ctl *c;
	uint8_t *data;
} R;

/* An empty ring whose indices both stand at `at`, its bytes poisoned so
 * that a record read from anywhere but where it was put shows. */
static void ring_reset(uint64_t at)
{
	memset(R.c, 0, sizeof(*R.c));
	R.c->head = at;
	R.c->head_seen = at;
	R.c->tail = at;
	memset(R.data, POISON, RING);
}

/* ---- records ---------------------------------------------------------------- */

/* Every byte and field of a record follows from its sequence number, so the
 * consumer's side can check it without keeping what was put. */
static uint8_t pkt_byte(uint64_t seq, uint32_t i)
{
	return (uint8_t)(seq * 151 + i * 7 + (i >> 8));
}

static void rec_of(uint64_t seq, struct ur_shm_rec *rec)
{
	memset(rec, 0, sizeof(*rec));
	rec->len = 0xdeadbeef;                  /* put stores the real length */
	rec->traffic_class = (uint8_t)(seq * 3);
	rec->hop_limit = (uint8_t)(seq >> 3) | 1;
	rec->ipv6 = seq & 1;
	for (int k = 0; k < 16; k++) {
		rec->sgid[k] = (uint8_t)(seq + k);
		rec->dgid[k] = (uint8_t)(~seq - 3 * k);
	}
}

static uint8_t src[UR_SHM_MAX_PKT + UR_SHM_ALIGN];

/* Puts record seq of len bytes gathered from `pieces` iovecs (cut at even
 * fractions, so short records get empty pieces too; none for len 0). */
static int put_seq(uint64_t seq, uint32_t len, int pieces)
{
	struct ur_shm_rec rec;
	struct iovec iov[4];
	uint32_t at = 0;
	int n = 0;

	rec_of(seq, &rec);
	for (uint32_t i = 0; i < len; i++)
		src[i] = pkt_byte(seq, i);
	for (int k = 0; len && k < pieces; k++) {
		uint32_t end = k == pieces - 1 ? len : (uint32_t)((uint64_t)len * (k + 1) / pieces);

		iov[n].iov_base = src + at;
		iov[n].iov_len = end - at;
		n++;
		at = end;
	}
	return ur_shm_ring_put(R.c, R.data, &rec, iov, n, len);
}

/* The consumer's side: checks each record against what put_seq made of
 * the sequence number it expects next (lengths from lens[seq % nlens]). */
struct sink {
	uint64_t next;
	const uint32_t *lens;
	unsigned nlens;
	unsigned calls;
	unsigned wrong;                 /* records not as they were put */
};

static const char *rec_wrong(const struct sink *s, uint64_t seq, const struct ur_shm_rec *rec,
			     const uint8_t *pkt, uint32_t len)
{
	uintptr_t lo = (uintptr_t)R.data, at = (uintptr_t)rec;
	struct ur_shm_rec want;

	rec_of(seq, &want);
	if (at < lo || at + sizeof(*rec) + len > lo + RING || (at - lo) % UR_SHM_ALIGN)
		return "not inside the ring on a cache line";
	if (pkt != (const uint8_t *)(rec + 1))
		return "packet not right after its header";
	if (len != s->lens[seq % s->nlens] || rec->len != len)
		return "length";
	if (rec->traffic_class != want.traffic_class || rec->hop_limit != want.hop_limit ||
	    rec->ipv6 != want.ipv6 || memcmp(rec->sgid, want.sgid, 16) ||
	    memcmp(rec->dgid, want.dgid, 16))
		return "header fields";
	for (uint32_t i = 0; i < len; i++)
		if (pkt[i] != pkt_byte(seq, i))
			return "packet bytes";
	return NULL;
}

static void on_rec(void *arg, const struct ur_shm_rec *rec, const uint8_t *pkt, uint32_t len)
{
	struct sink *s = arg;
	uint64_t seq = s->next++;
	const char *why = rec_wrong(s, seq, rec, pkt, len);

	s->calls++;
	/* One line for the first wrong record: the rest follow from it. */
	if (why && !s->wrong++)
		fprintf(stderr, "record %" PRIu64 " (len %u at offset %td): %s\n", seq, len,
			(const uint8_t *)rec - R.data, why);
}

static int take(struct sink *s, unsigned max)
{
	return ur_shm_ring_take(R.c, R.data, max, on_rec, s);
}

/* What a record of len bytes moves the tail by when it does not wrap. */
static uint32_t room(uint32_t len)
{
	return ur_shm_rec_room(len);
}

/* ---- producer and consumer agree ------------------------------------------------ */

/* Nothing published: take hands up nothing, reads nothing, moves nothing. */
static void test_empty(void)
{
	struct sink s = { 0, (const uint32_t[]){ 1 }, 1 };
	uint64_t at = ((1ull << 32) - 4096) & ~(uint64_t)(UR_SHM_ALIGN - 1);

	ring_reset(at);
	UT_CHECK(!ur_shm_ring_pending(R.c));
	UT_EQ(take(&s, UINT_MAX), 0);
	UT_EQ(s.calls, 0);
	UT_EQ(R.c->head, at);
	UT_EQ(R.c->tail, at);
}

/* Records of sizes around every boundary (the header, a cache line, the
 * copy's 2 KiB switch, the largest), each from 1 to 4 pieces: out in order,
 * exactly as put, in one batch, and the ring empty after. */
static void test_put_take_order(void)
{
	static const uint32_t lens[] = { 0, 1, 15, 16, 17, 47, 48, 63, 64, 65, 100, 1500,
					 2047, 2048, 2049, 4096, 4200, UR_SHM_MAX_PKT - 1,
					 UR_SHM_MAX_PKT };
	const unsigned n = sizeof(lens) / sizeof(lens[0]);
	struct sink s = { 0, lens, n };
	uint64_t tail = 0;

	ring_reset(0);
	for (unsigned i = 0; i < n; i++) {
		UT_EQ(put_seq(i, lens[i], 1 + i % 4), 0);
		tail += room(lens[i]);
		UT_EQ(R.c->tail, tail);
		UT_CHECK(ur_shm_ring_pending(R.c));
	}
	UT_EQ(R.c->head, 0);                    /* the producer never moves head */
	UT_EQ(take(&s, UINT_MAX), n);
	UT_EQ(s.calls, n);
	UT_EQ(s.wrong, 0);
	UT_EQ(R.c->head, tail);
	UT_CHECK(!ur_shm_ring_pending(R.c));
	UT_EQ(take(&s, UINT_MAX), 0);
	UT_EQ(s.calls, n);
}

/* has_room must say what put will do, or the sender waits for room it has
 * or writes where it has none. */
static int put_checked(uint64_t seq, uint32_t len, int pieces)
{
	int fits = ur_shm_ring_has_room(R.c, len);
	uint64_t tail = R.c->tail;
	int ret = put_seq(seq, len, pieces);

	UT_CHECK(ret == 0 || ret == -EAGAIN);
	UT_EQ(fits, ret == 0);
	if (ret)
		UT_EQ(R.c->tail, tail);         /* a refused put publishes nothing */
	return ret;
}

/* Fill with 1000-byte records until refused; a smaller one still fits the
 * end; taking one makes room for a record that must wrap, which fills the
 * ring to the byte; then everything comes out in order. */
static void test_full(void)
{
	const uint32_t big = 1000, small = 700;
	const unsigned fit = RING / room(big);
	static uint32_t lens[RING / 1088 + 2];   /* the records that fit, the small one, the wrapped one */
	struct sink s = { 0, lens, 0 };
	uint64_t seq = 0;

	_Static_assert(RING / 1088 * 1088 + 768 <= RING, "a small record fits the end");
	UT_EQ(room(big), 1088);
	UT_EQ(room(small), 768);
	ring_reset(0);
	while (seq <= fit && put_checked(seq, big, 2) == 0)
		lens[seq++] = big;
	UT_EQ(seq, fit);
	UT_CHECK(!ur_shm_ring_has_room(R.c, big));
	UT_EQ(put_checked(seq, big, 2), -EAGAIN);
	/* 832 bytes left before the end: 768 of them fit without a wrap. */
	UT_EQ(put_checked(seq, small, 3), 0);
	lens[seq++] = small;
	UT_EQ(R.c->tail, (uint64_t)fit * room(big) + room(small));
	/* 64 bytes left at the end: too few for 17 bytes and its header, and
	 * wrapping would need them and 128 more at the start. */
	UT_EQ(put_checked(seq, 17, 1), -EAGAIN);
	s.nlens = seq + 1;
	/* Taking the first record frees 1088 at the start: with the 64 at the
	 * end, exactly what a wrapped 1000-byte record needs. */
	UT_EQ(take(&s, 1), 1);
	/* The producer looks at the consumer's head only when the one it saw
	 * leaves no room: now, not at any put before. */
	UT_EQ(R.c->head_seen, 0);
	UT_EQ(put_checked(seq, big, 1), 0);
	UT_EQ(R.c->head_seen, room(big));
	lens[seq++] = big;
	UT_EQ(R.c->tail - R.c->head, RING);         /* full to the byte */
	UT_EQ(put_checked(seq, 0, 1), -EAGAIN);
	UT_EQ(take(&s, UINT_MAX), seq - 1);
	UT_EQ(s.calls, seq);
	UT_EQ(s.wrong, 0);
	UT_EQ(R.c->head, R.c->tail);
	UT_CHECK(ur_shm_ring_has_room(R.c, UR_SHM_MAX_PKT));
}

/* Deterministic pseudo-random numbers: the same sequence every run. */
static uint32_t next_rand(uint64_t *st)
{
	*st = *st * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(*st >> 33);
}

#define WRAP_LAPS 16
#define WRAP_LENS 997                   /* prime: lengths do not repeat with the laps */

/* Records of 1 .. UR_SHM_MAX_PKT bytes through many laps, starting 4 KiB
 * below 2^32: the producer runs ahead in bursts (until the ring is full),
 * the consumer takes batches; each put moves the tail by its room or, at
 * the end of a lap, leaves a WRAP mark and starts at 0, and each crossing
 * of a lap is one or the other. */
static void test_wrap_laps(void)
{
	static uint32_t lens[WRAP_LENS];
	struct sink s = { 0, lens, WRAP_LENS };
	const uint64_t start = ((1ull << 32) - 4096) & ~(uint64_t)(UR_SHM_ALIGN - 1);
	uint64_t st = 7, seq = 0;
	unsigned wraps = 0, exact = 0, full = 0;

	for (unsigned i = 0; i < WRAP_LENS; i++)
		lens[i] = 1 + next_rand(&st) % UR_SHM_MAX_PKT;
	lens[0] = UR_SHM_MAX_PKT;
	lens[1] = 1;
	ring_reset(start);
	while (R.c->tail - start < (uint64_t)WRAP_LAPS * RING) {
		unsigned burst = 1 + next_rand(&st) % 96, batch = 1 + next_rand(&st) % 64;
		unsigned before = s.calls;
		int ret;

		for (unsigned k = 0; k < burst; k++) {
			uint32_t len = lens[seq % WRAP_LENS];
			uint64_t tail = R.c->tail;

			if ((ret = put_checked(seq, len, 1 + seq % 4))) {
				full++;
				break;
			}
			seq++;
			if (R.c->tail - tail != room(len)) {
				uint32_t mark;

				memcpy(&mark, R.data + (tail & MASK), 4);
				UT_EQ(mark, UR_SHM_REC_WRAP);
				UT_EQ(R.c->tail - tail, RING - (tail & MASK) + room(len));
				UT_EQ(R.c->tail & MASK, room(len));
				wraps++;
			} else if ((R.c->tail & MASK) == 0) {
				exact++;
			}
		}
		ret = take(&s, batch);
		UT_CHECK(ret >= 0 && (unsigned)ret <= batch);
		UT_EQ(s.calls - before, ret);
		/* Fewer than asked for only when the ring is empty. */
		if (ret >= 0 && (unsigned)ret < batch)
			UT_EQ(R.c->head, R.c->tail);
	}
	UT_EQ(take(&s, UINT_MAX) >= 0, 1);
	UT_EQ(s.next, seq);
	UT_EQ(s.wrong, 0);
	UT_EQ(R.c->head, R.c->tail);
	UT_CHECK(R.c->head > (1ull << 32) + (WRAP_LAPS - 1) * (uint64_t)RING);
	UT_EQ(wraps + exact, (R.c->tail >> 20) - (start >> 20));
	UT_CHECK(wraps > WRAP_LAPS / 2);
	UT_CHECK(full > 0);                     /* the ring was full at times */
}

/* A record too big for any ring: refused outright (not -EAGAIN, or the
 * sender would wait for ever), and nothing is written or published, on an
 * empty ring and on a full one. */
static void test_too_big(void)
{
	static uint8_t before[RING];
	struct ur_shm_rec rec;
	struct iovec iov = { src, UR_SHM_MAX_PKT + 1 };

	rec_of(1, &rec);
	ring_reset(1ull << 32);
	memcpy(before, R.data, RING);
	UT_EQ(ur_shm_ring_put(R.c, R.data, &rec, &iov, 1, UR_SHM_MAX_PKT + 1), -EMSGSIZE);
	UT_EQ(ur_shm_ring_put(R.c, R.data, &rec, &iov, 1, UINT32_MAX), -EMSGSIZE);
	UT_EQ(R.c->tail, 1ull << 32);
	UT_EQ(R.c->head, 1ull << 32);
	UT_CHECK(!memcmp(before, R.data, RING));
	/* Full: the answer is still "too big". */
	while (put_seq(2, UR_SHM_MAX_PKT, 1) == 0)
		;
	memcpy(before, R.data, RING);
	uint64_t tail = R.c->tail;

	UT_EQ(ur_shm_ring_put(R.c, R.data, &rec, &iov, 1, UR_SHM_MAX_PKT + 1), -EMSGSIZE);
	UT_EQ(R.c->tail, tail);
	UT_CHECK(!memcmp(before, R.data, RING));
}

/* max bounds each batch; 0 takes nothing; a WRAP mark is not a record and
 * does not count. */
static void test_max(void)
{
	struct sink s = { 0, (const uint32_t[]){ 200, 3000, 0, 77 }, 4 };
	uint64_t at = 5 * (uint64_t)RING - 2 * room(200);

	ring_reset(at);
	for (uint64_t seq = 0; seq < 10; seq++)
		UT_EQ(put_seq(seq, s.lens[seq % 4], 2), 0);
	UT_EQ(take(&s, 0), 0);
	UT_EQ(R.c->head, at);
	UT_EQ(take(&s, 1), 1);
	UT_EQ(take(&s, 3), 3);                  /* 200 at the end, a mark, 3000, 0 at the start */
	UT_EQ(s.calls, 4);
	UT_EQ(take(&s, 5), 5);
	UT_CHECK(ur_shm_ring_pending(R.c));
	UT_EQ(take(&s, 5), 1);
	UT_EQ(take(&s, 5), 0);
	UT_EQ(s.calls, 10);
	UT_EQ(s.wrong, 0);
	/* The head on a mark: take(1) skips it and hands up the record after. */
	at = 7 * (uint64_t)RING - room(200);
	ring_reset(at);
	s.next = 0;
	s.calls = 0;
	UT_EQ(put_seq(0, 200, 1), 0);
	UT_EQ(put_seq(1, 3000, 1), 0);          /* a mark, then at 0 */
	UT_EQ(take(&s, 1), 1);
	UT_EQ(take(&s, 1), 1);
	UT_EQ(s.calls, 2);
	UT_EQ(s.wrong, 0);
	UT_EQ(R.c->head, 7 * (uint64_t)RING + room(3000));
}

/* ---- broken rings --------------------------------------------------------------- */

/* What a producer that breaks the rules can write: any word anywhere. */
static void poke_len(uint64_t at, uint32_t len)
{
	memcpy(R.data + (at & MASK), &len, sizeof(len));
}

/* After a broken ring is emptied, an honest producer and the consumer go on. */
static void check_works_again(void)
{
	struct sink s = { 9000, (const uint32_t[]){ 300 }, 1 };

	UT_EQ(put_seq(9000, 300, 2), 0);
	UT_EQ(take(&s, UINT_MAX), 1);
	UT_EQ(s.wrong, 0);
	UT_EQ(R.c->head, R.c->tail);
}

/* take refuses the ring: -EBADMSG, nothing but the good records before the
 * bad one handed up (at most `good` of them, each as put), the ring emptied. */
static void check_refused(struct sink *s, unsigned good)
{
	UT_EQ(take(s, UINT_MAX), -EBADMSG);
	UT_CHECK(s->calls <= good);
	UT_EQ(s->wrong, 0);
	UT_EQ(R.c->head, R.c->tail);
	UT_CHECK(!ur_shm_ring_pending(R.c));
}

static const uint32_t bad_lens[] = { 10, 20, 100, 1000 };

/* Puts records 0..n-1 (lengths bad_lens[] then 1000s) from `at`; returns
 * where record `which` starts. */
static uint64_t put_some(uint64_t at, unsigned n, unsigned which)
{
	uint64_t where = 0;

	ring_reset(at);
	for (unsigned i = 0; i < n; i++) {
		if (i == which)
			where = R.c->tail;
		UT_EQ(put_seq(i, bad_lens[i < 4 ? i : 3], 1), 0);
	}
	return where;
}

#define SINK_BAD { 0, bad_lens, 4 }

/* Indices no producer could have written: checked before any record is
 * read, so nothing at all is handed up. */
static void test_bad_indices(void)
{
	struct sink s1 = SINK_BAD, s2 = SINK_BAD, s3 = SINK_BAD, s4 = SINK_BAD;

	/* More published than the ring holds. */
	put_some(0, 3, 0);
	R.c->tail += RING;
	check_refused(&s1, 0);
	UT_EQ(s1.calls, 0);
	check_works_again();
	/* One line more than the ring holds: the smallest excess. */
	put_some(3 * (uint64_t)RING, 3, 0);
	R.c->tail = R.c->head + RING + UR_SHM_ALIGN;
	check_refused(&s2, 0);
	UT_EQ(s2.calls, 0);
	check_works_again();
	/* A tail behind the head. */
	put_some(5 * (uint64_t)RING, 3, 0);
	R.c->tail = R.c->head - UR_SHM_ALIGN;
	check_refused(&s3, 0);
	UT_EQ(s3.calls, 0);
	check_works_again();
	/* A head off its cache line (the consumer's own word, but in the
	 * shared file), with a record that would pass for good under it:
	 * only the alignment check refuses it. */
	put_some(0, 3, 0);
	R.c->head += 8;
	poke_len(R.c->head, 0);
	check_refused(&s4, 0);
	UT_EQ(s4.calls, 0);
	check_works_again();
}

/* Lengths no packet has, with enough published behind them that only the
 * length is wrong; 0xfffffff0's room overflows 32 bits to one line. */
static void test_bad_len(void)
{
	static const uint32_t bad[] = { UR_SHM_MAX_PKT + 1, 0x80000000u, 0xfffffff0u,
					UR_SHM_REC_WRAP - 1 };

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sink s = SINK_BAD;
		uint64_t at = put_some(i * (uint64_t)RING + 4096, 30, 2);

		UT_CHECK(R.c->tail - at > room(UR_SHM_MAX_PKT + 1));
		poke_len(at, bad[i]);
		check_refused(&s, 2);
		check_works_again();
	}
}

/* Records whose room runs past the end of the ring (no mark before them)
 * or past the tail (not all published). */
static void test_bad_room(void)
{
	struct sink s1 = SINK_BAD, s2 = SINK_BAD, s3 = SINK_BAD, s4 = SINK_BAD;
	uint64_t at;

	/* First record: 192 bytes of room, 128 left before the end. */
	ring_reset(3 * (uint64_t)RING - 128);
	poke_len(R.c->head, 100);
	R.c->tail = R.c->head + 4096;
	check_refused(&s1, 0);
	UT_EQ(s1.calls, 0);
	check_works_again();
	/* The same after a good record. */
	at = 3 * (uint64_t)RING - 128 - room(10);
	put_some(at, 1, 0);
	poke_len(R.c->tail, 100);
	R.c->tail += 4096;
	check_refused(&s2, 1);
	check_works_again();
	/* Past the tail: the third record (100 bytes published) claims 300. */
	at = put_some(1ull << 32, 3, 2);
	UT_EQ(R.c->tail - at, room(100));
	poke_len(at, 300);
	check_refused(&s3, 2);
	check_works_again();
	/* A record longer than what is published by a single line. */
	at = put_some(0, 3, 2);
	R.c->tail -= UR_SHM_ALIGN;
	check_refused(&s4, 2);
	check_works_again();
}

/* A WRAP mark says the rest of the ring is skipped: with less than that
 * published, it lies. */
static void test_bad_wrap(void)
{
	struct sink s1 = SINK_BAD, s2 = SINK_BAD, s3 = SINK_BAD;

	/* A mark 256 bytes before the end, 128 published. */
	ring_reset(2 * (uint64_t)RING - 256);
	poke_len(R.c->head, UR_SHM_REC_WRAP);
	R.c->tail = R.c->head + 128;
	check_refused(&s1, 0);
	UT_EQ(s1.calls, 0);
	check_works_again();
	/* The same after a good record, one line short. */
	put_some(2 * (uint64_t)RING - 256 - room(10), 1, 0);
	poke_len(R.c->tail, UR_SHM_REC_WRAP);
	R.c->tail += 256 - UR_SHM_ALIGN;
	check_refused(&s2, 1);
	check_works_again();
	/* A mark at 0 in a ring not entirely published. */
	ring_reset(4 * (uint64_t)RING);
	poke_len(R.c->head, UR_SHM_REC_WRAP);
	R.c->tail = R.c->head + RING - UR_SHM_ALIGN;
	check_refused(&s3, 0);
	UT_EQ(s3.calls, 0);
	check_works_again();
}

/* A tail off its cache line: the records before it are good, the last is
 * cut short.  (No honest put follows: a producer that publishes such a
 * tail has broken its own ring for good, and only its own.) */
static void test_bad_tail_unaligned(void)
{
	struct sink s = SINK_BAD;

	put_some(0, 3, 0);
	R.c->tail -= 8;
	check_refused(&s, 2);
}

int main(void)
{
	R.c = aligned_alloc(UR_SHM_ALIGN, sizeof(*R.c));
	R.data = aligned_alloc(4096, RING);
	if (!R.c || !R.data)
		return 1;
	UT_RUN(test_empty);
	UT_RUN(test_put_take_order);
	UT_RUN(test_full);
	UT_RUN(test_wrap_laps);
	UT_RUN(test_too_big);
	UT_RUN(test_max);
	UT_RUN(test_bad_indices);
	UT_RUN(test_bad_len);
	UT_RUN(test_bad_room);
	UT_RUN(test_bad_wrap);
	UT_RUN(test_bad_tail_unaligned);
	free(R.data);
	free(R.c);
	return UT_DONE();
}
