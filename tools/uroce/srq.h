/* uroce srq-server / srq-client: many RC connections, one SRQ and one CQ on
 * the server.  What both sides agree on: the message layout, the records
 * that close a connection, and the QPN -> connection map. */
#ifndef UROCE_TOOLS_SRQ_H
#define UROCE_TOOLS_SRQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SRQ_TOOL "srq"
#define SRQ_HDR_BYTES 16      /* magic, client id, sequence, length */
#define SRQ_MSG_MAGIC 0x5352514du /* "SRQM" */
#define SRQ_DONE_MAGIC 0x444f4e45u /* "DONE": client -> server, all sent */
#define SRQ_VERDICT_MAGIC 0x56524454u /* "VRDT": server -> client */
#define SRQ_DONE_BYTES 16
#define SRQ_VERDICT_BYTES 20

/* Hello words. */
enum {
	SRQ_W_SIZE,           /* client: its -s; server: its largest receive */
	SRQ_W_MSGS,           /* client: its -n; server: the -n it expects (0: any) */
	SRQ_W_ID,             /* server: the id it gives this connection */
};

struct ur_optparse;
/* -s, on either side: a message size from the header's 16 bytes to 16 MiB. */
void srq_opt_size(struct ur_optparse *p, uint32_t *size);

/* Writes message SEQ of client ID, LEN bytes (>= SRQ_HDR_BYTES), into BUF. */
void srq_msg_fill(uint8_t *buf, uint32_t len, uint32_t id, uint32_t seq);

/* Checks a received message against what client ID's message SEQ must be;
 * on a mismatch writes why into WHY and returns false. */
bool srq_msg_check(const uint8_t *buf, uint32_t len, uint32_t id, uint32_t seq, char *why,
		   size_t whylen);

/* The DONE and verdict records (big-endian). */
void srq_done_pack(uint8_t *b, uint32_t msgs, uint64_t bytes);
bool srq_done_unpack(const uint8_t *b, uint32_t *msgs, uint64_t *bytes);
void srq_verdict_pack(uint8_t *b, bool ok, uint32_t msgs, uint64_t bytes);
bool srq_verdict_unpack(const uint8_t *b, bool *ok, uint32_t *msgs, uint64_t *bytes);

/* The QPN -> connection map: buckets indexed by the QPN's low bits, chained
 * on collision, so a completion finds its connection in O(1) whatever the
 * QPNs the device hands out (SPDK looks up wc->qp_num the same way). */
struct srq_qpmap_entry {
	uint32_t qpn;
	void *conn;
	struct srq_qpmap_entry *next;
};

struct srq_qpmap {
	struct srq_qpmap_entry **bucket;
	uint32_t mask;
	uint32_t count;
};

int srq_qpmap_init(struct srq_qpmap *m, uint32_t expected);
void srq_qpmap_fini(struct srq_qpmap *m);
/* E is owned by the caller (embedded in its connection). */
void srq_qpmap_add(struct srq_qpmap *m, struct srq_qpmap_entry *e);
void srq_qpmap_del(struct srq_qpmap *m, struct srq_qpmap_entry *e);
void *srq_qpmap_find(const struct srq_qpmap *m, uint32_t qpn);

#endif
