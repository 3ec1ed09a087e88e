/* The local messages of a shared XRC domain (src/rel/xrc_msg.c): what one
 * process encodes the other parses back, and every malformed datagram is
 * refused before a field is used. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "ut.h"
#include "rel/xrc_msg.h"

static size_t deliver(uint8_t *buf, uint32_t paylen)
{
	struct ur_xrc_msg m;

	ur_xrc_msg_init(&m, UR_XRC_DELIVER, 1234);
	m.tgt_qpn = 0x000123;
	m.srqn = 0x000200;
	m.psn = 0xfffffe;
	m.gen = 0xdeadbeef;
	m.xrcd_dev = 0x803;
	m.xrcd_ino = 0x1234567890ull;
	strcpy(m.ibdev, "uroce0");
	m.src_qpn = 0x000456;
	m.flags = UR_XRC_F_FIRST | UR_XRC_F_LAST | UR_XRC_F_IMM;
	m.imm = 0x01020304;
	m.paylen = paylen;
	memcpy(buf, &m, sizeof(m));
	for (uint32_t i = 0; i < paylen; i++)
		buf[sizeof(m) + i] = (uint8_t)i;
	return sizeof(m) + paylen;
}

static void test_roundtrip(void)
{
	uint8_t buf[sizeof(struct ur_xrc_msg) + 100];
	const uint8_t *pay = NULL;
	struct ur_xrc_msg m, r;
	size_t len = deliver(buf, 100);

	UT_EQ(ur_xrc_msg_parse(buf, len, &m, &pay), 0);
	UT_EQ(m.kind, UR_XRC_DELIVER);
	UT_EQ(m.src_pid, 1234);
	UT_EQ(m.tgt_qpn, 0x123);
	UT_EQ(m.srqn, 0x200);
	UT_EQ(m.psn, 0xfffffe);
	UT_EQ(m.gen, 0xdeadbeef);
	UT_EQ(m.xrcd_ino, 0x1234567890ull);
	UT_CHECK(!strcmp(m.ibdev, "uroce0"));
	UT_EQ(m.flags, UR_XRC_F_FIRST | UR_XRC_F_LAST | UR_XRC_F_IMM);
	UT_EQ(m.paylen, 100);
	UT_CHECK(pay == buf + sizeof(m));
	UT_EQ(pay[99], 99);
	/* A zero-length SEND has a header only. */
	len = deliver(buf, 0);
	UT_EQ(ur_xrc_msg_parse(buf, len, &m, &pay), 0);

	ur_xrc_msg_init(&r, UR_XRC_REPLY, 99);
	r.psn = 7;
	r.status = UR_XRC_RNR;
	memcpy(buf, &r, sizeof(r));
	UT_EQ(ur_xrc_msg_parse(buf, sizeof(r), &m, &pay), 0);
	UT_EQ(m.kind, UR_XRC_REPLY);
	UT_EQ(m.status, UR_XRC_RNR);
	UT_EQ(m.src_pid, 99);
	UT_CHECK(!strcmp(ur_xrc_status_name[UR_XRC_RNR], "rnr"));
}

/* Corrupts one thing at a time in a good DELIVER. */
static void test_malformed(void)
{
	uint8_t good[sizeof(struct ur_xrc_msg) + 16], buf[sizeof(good)];
	const uint8_t *pay;
	struct ur_xrc_msg m, *p = (struct ur_xrc_msg *)buf;
	size_t len = deliver(good, 16);

	/* Short datagrams, down to nothing. */
	for (size_t l = 0; l < sizeof(struct ur_xrc_msg); l += 7)
		UT_EQ(ur_xrc_msg_parse(good, l, &m, &pay), -EINVAL);
	/* paylen must be exactly what follows the header. */
	UT_EQ(ur_xrc_msg_parse(good, len - 1, &m, &pay), -EINVAL);
#define BAD(stmt)                                                     \
	do {                                                          \
		memcpy(buf, good, len);                               \
		stmt;                                                 \
		UT_EQ(ur_xrc_msg_parse(buf, len, &m, &pay), -EINVAL); \
	} while (0)
	BAD(p->magic ^= 1);
	BAD(p->version = UR_XRC_VERSION + 1);
	BAD(p->kind = 0);
	BAD(p->kind = 3);
	BAD(p->src_pid = 0);
	BAD(p->src_pid = -5);
	BAD(p->status = UR_XRC_OK + 1);        /* a DELIVER carries no status */
	BAD(p->psn = 0x1000000);
	BAD(p->tgt_qpn = 0x1000000);
	BAD(p->srqn = 0xffffffff);
	BAD(memset(p->ibdev, 'x', sizeof(p->ibdev)));
	BAD(p->paylen = 17);
	/* A REPLY: fixed size, a known status, no payload. */
	memset(buf, 0, sizeof(buf));
	ur_xrc_msg_init(p, UR_XRC_REPLY, 5);
	UT_EQ(ur_xrc_msg_parse(buf, sizeof(*p), &m, &pay), 0);
	UT_EQ(ur_xrc_msg_parse(buf, sizeof(*p) + 4, &m, &pay), -EINVAL);
	p->status = UR_XRC_STATUS_NR;
	UT_EQ(ur_xrc_msg_parse(buf, sizeof(*p), &m, &pay), -EINVAL);
	p->status = 0;
	p->paylen = 4;
	UT_EQ(ur_xrc_msg_parse(buf, sizeof(*p), &m, &pay), -EINVAL);
#undef BAD
}

int main(void)
{
	UT_RUN(test_roundtrip);
	UT_RUN(test_malformed);
	return UT_DONE();
}
