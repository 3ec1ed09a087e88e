/* uroce srq-server / srq-client: message layout, the -s both sides check
 * against it, closing records, and the QPN -> connection map. */
#include "opts.h"
#include "srq.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static void put32(uint8_t *b, uint32_t v)
{
	b[0] = (uint8_t)(v >> 24);
	b[1] = (uint8_t)(v >> 16);
	b[2] = (uint8_t)(v >> 8);
	b[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void put64(uint8_t *b, uint64_t v)
{
	put32(b, (uint32_t)(v >> 32));
	put32(b + 4, (uint32_t)v);
}

static uint64_t get64(const uint8_t *b)
{
	return (uint64_t)get32(b) << 32 | get32(b + 4);
}

/* Byte I of the body of client ID's message SEQ: every message differs
 * from every other client's and from the same client's previous one. */
static uint8_t body_byte(uint32_t id, uint32_t seq, uint32_t i)
{
	uint32_t x = (i + 1) * 2654435761u ^ (id * 0x9e3779b9u) ^ (seq * 0x85ebca6bu);

	return (uint8_t)(x >> 24 ^ x >> 8);
}

void srq_msg_fill(uint8_t *buf, uint32_t len, uint32_t id, uint32_t seq)
{
	put32(buf, SRQ_MSG_MAGIC);
	put32(buf + 4, id);
	put32(buf + 8, seq);
	put32(buf + 12, len);
	for (uint32_t i = SRQ_HDR_BYTES; i < len; i++)
		buf[i] = body_byte(id, seq, i);
}

bool srq_msg_check(const uint8_t *buf, uint32_t len, uint32_t id, uint32_t seq, char *why,
		   size_t whylen)
{
	if (len < SRQ_HDR_BYTES) {
		snprintf(why, whylen, "message %u: %u bytes, shorter than the %d-byte header", seq,
			 len, SRQ_HDR_BYTES);
		return false;
	}
	if (get32(buf) != SRQ_MSG_MAGIC) {
		snprintf(why, whylen, "message %u: no header (magic 0x%08x)", seq, get32(buf));
		return false;
	}
	if (get32(buf + 4) != id) {
		snprintf(why, whylen, "message %u: carries client id %u on client %u's QP", seq,
			 get32(buf + 4), id);
		return false;
	}
	if (get32(buf + 8) != seq) {
		snprintf(why, whylen, "message %u expected, message %u arrived (lost, duplicated "
				      "or reordered)", seq, get32(buf + 8));
		return false;
	}
	if (get32(buf + 12) != len) {
		snprintf(why, whylen, "message %u: %u bytes arrived, its header says %u", seq, len,
			 get32(buf + 12));
		return false;
	}
	for (uint32_t i = SRQ_HDR_BYTES; i < len; i++)
		if (buf[i] != body_byte(id, seq, i)) {
			snprintf(why, whylen, "message %u: byte %u is 0x%02x, expected 0x%02x", seq,
				 i, buf[i], body_byte(id, seq, i));
			return false;
		}
	return true;
}

void srq_opt_size(struct ur_optparse *p, uint32_t *size)
{
	unsigned long v;

	if (!ur_parse_uint(optarg, SRQ_HDR_BYTES, 1u << 24, &v))
		ur_opt_error(p, "-s %s: a size from 16 (the message header) to 16 MiB", optarg);
	else
		*size = (uint32_t)v;
}

void srq_done_pack(uint8_t *b, uint32_t msgs, uint64_t bytes)
{
	put32(b, SRQ_DONE_MAGIC);
	put32(b + 4, msgs);
	put64(b + 8, bytes);
}

bool srq_done_unpack(const uint8_t *b, uint32_t *msgs, uint64_t *bytes)
{
	*msgs = get32(b + 4);
	*bytes = get64(b + 8);
	return get32(b) == SRQ_DONE_MAGIC;
}

void srq_verdict_pack(uint8_t *b, bool ok, uint32_t msgs, uint64_t bytes)
{
	put32(b, SRQ_VERDICT_MAGIC);
	put32(b + 4, ok);
	put32(b + 8, msgs);
	put64(b + 12, bytes);
}

bool srq_verdict_unpack(const uint8_t *b, bool *ok, uint32_t *msgs, uint64_t *bytes)
{
	*ok = get32(b + 4) == 1;
	*msgs = get32(b + 8);
	*bytes = get64(b + 12);
	return get32(b) == SRQ_VERDICT_MAGIC;
}

int srq_qpmap_init(struct srq_qpmap *m, uint32_t expected)
{
	uint32_t n = 16;

	/* At least twice as many buckets as connections: chains stay short. */
	while (n < 2 * expected && n < (1u << 24))
		n <<= 1;
	m->bucket = calloc(n, sizeof(*m->bucket));
	if (!m->bucket)
		return -ENOMEM;
	m->mask = n - 1;
	m->count = 0;
	return 0;
}

void srq_qpmap_fini(struct srq_qpmap *m)
{
	free(m->bucket);
	m->bucket = NULL;
}

void srq_qpmap_add(struct srq_qpmap *m, struct srq_qpmap_entry *e)
{
	struct srq_qpmap_entry **head = &m->bucket[e->qpn & m->mask];

	e->next = *head;
	*head = e;
	m->count++;
}

void srq_qpmap_del(struct srq_qpmap *m, struct srq_qpmap_entry *e)
{
	for (struct srq_qpmap_entry **p = &m->bucket[e->qpn & m->mask]; *p; p = &(*p)->next)
		if (*p == e) {
			*p = e->next;
			m->count--;
			return;
		}
}

void *srq_qpmap_find(const struct srq_qpmap *m, uint32_t qpn)
{
	for (struct srq_qpmap_entry *e = m->bucket[qpn & m->mask]; e; e = e->next)
		if (e->qpn == qpn)
			return e->conn;
	return NULL;
}
