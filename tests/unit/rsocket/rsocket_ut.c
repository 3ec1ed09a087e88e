/* rsockets' wire: the immediate data's encoding, the 8-bit size scale, the
 * layout of the connection data (rdma-core's struct rs_conn_data, byte for
 * byte) and its round trip through format and save, byte order included;
 * the datagram headers (rdma-core's struct ds_udp_header and ds_header,
 * byte for byte), and what their readers refuse; how long a blocking call
 * spins. */
#include <endian.h>
#include <errno.h>
#include <stddef.h>

#include <arpa/inet.h>

#include "rsocket/dgram_wire.c"
#include "rsocket/config.c"
#include "rsocket/ep.c"
#include "rsocket/res.c"
#include "ut.h"

/* res.c frees datagram rsockets through dgram.c, which this test leaves
 * out: its rsockets are all streams. */
void rs_ds_free(struct rsock *rs)
{
	(void)rs;
	abort();
}

static void test_layout(void)
{
	UT_EQ(sizeof(struct rs_conn_data), 40);
	UT_EQ(offsetof(struct rs_conn_data, version), 0);
	UT_EQ(offsetof(struct rs_conn_data, flags), 1);
	UT_EQ(offsetof(struct rs_conn_data, credits), 2);
	UT_EQ(offsetof(struct rs_conn_data, target_iomap_size), 7);
	UT_EQ(offsetof(struct rs_conn_data, target_sgl), 8);
	UT_EQ(offsetof(struct rs_conn_data, data_buf), 24);
	UT_EQ(offsetof(struct rs_sge, addr), 0);
	UT_EQ(offsetof(struct rs_sge, key), 8);
	UT_EQ(offsetof(struct rs_sge, length), 12);
	UT_EQ(offsetof(struct rs_iomap, sge), 8);
}

static void test_msg(void)
{
	UT_EQ(rs_msg(RS_OP_DATA, 65536), 0x00010000u);
	UT_EQ(rs_msg(RS_OP_SGL, 0x1234), 0x80001234u);
	UT_EQ(rs_msg(RS_OP_IOMAP_SGL, 3), 0xc0000003u);
	UT_EQ(rs_msg(RS_OP_CTRL, RS_CTRL_SHUTDOWN), 0xe0000002u);
	UT_EQ(rs_msg(RS_OP_CTRL, RS_CTRL_DISCONNECT), 0xe0000000u);
	UT_EQ(rs_msg_op(0xe0000001u), RS_OP_CTRL);
	UT_EQ(rs_msg_data(0xe0000001u), RS_CTRL_KEEPALIVE);
	UT_EQ(rs_msg_data(rs_msg(RS_OP_DATA, 0x3fffffffu)), 0x1fffffffu);   /* 29 bits */
	UT_EQ(rs_msg_op(rs_msg(RS_OP_DATA, 0x3fffffffu)), RS_OP_DATA);
}

static void test_scale(void)
{
	for (uint32_t v = 0; v <= 128; v++)
		UT_EQ(rs_scale_to_value(rs_value_to_scale(v)), v);
	UT_EQ(rs_value_to_scale(256), 0x81);
	UT_EQ(rs_scale_to_value(0x81), 256);
	UT_EQ(rs_scale_to_value(rs_value_to_scale(300)), 256);   /* rounds down */
	UT_EQ(rs_scale_to_value(0xff), 0x7f00);
}

/* An rsocket with just what format needs: its buffers and their keys. */
struct fake {
	struct rsock rs;
	struct rs_sge sgl[RS_SGL_SIZE];
	struct ibv_mr tmr, rmr;
	uint8_t rbuf[64];
};

static void fake_init(struct fake *f, uint16_t rq, uint32_t rbuf_size, uint16_t iomap)
{
	memset(f, 0, sizeof(*f));
	f->rs.rq_size = rq;
	f->rs.rbuf_size = rbuf_size;
	f->rs.rbuf = f->rbuf;
	f->rs.target_iomap_size = iomap;
	f->rs.target_sgl = f->sgl;
	f->tmr.rkey = 0x11223344;
	f->rmr.rkey = 0x55667788;
	f->rs.tmr = &f->tmr;
	f->rs.rmr = &f->rmr;
}

static void test_conn_data(void)
{
	struct fake a, b;
	struct rs_conn_data cd;
	const uint8_t *p = (const uint8_t *)&cd;

	fake_init(&a, 64, 131072, 16);
	fake_init(&b, 0, 0, 0);
	rs_format_conn_data(&a.rs, &cd);
	UT_EQ(p[0], 1);                                          /* version */
	UT_EQ(p[1], RS_CONN_FLAG_IOMAP | (__BYTE_ORDER == __BIG_ENDIAN ? RS_CONN_FLAG_NET : 0));
	UT_EQ(p[2], 0);                                           /* credits 64, big-endian */
	UT_EQ(p[3], 64);
	UT_EQ(p[7], 16);                                          /* iomap entries */
	UT_EQ(be64toh(cd.target_sgl.addr), (uintptr_t)a.sgl);
	UT_EQ(be32toh(cd.target_sgl.key), 0x11223344);
	UT_EQ(be32toh(cd.target_sgl.length), RS_SGL_SIZE);
	UT_EQ(be64toh(cd.data_buf.addr), (uintptr_t)a.rbuf);
	UT_EQ(be32toh(cd.data_buf.key), 0x55667788);
	UT_EQ(be32toh(cd.data_buf.length), 65536);               /* half the buffer */

	UT_EQ(rs_save_conn_data(&b.rs, &cd, sizeof(cd)), 0);
	UT_EQ(b.rs.remote_sgl.addr, (uintptr_t)a.sgl);
	UT_EQ(b.rs.remote_sgl.key, 0x11223344);
	UT_EQ(b.rs.remote_sgl.length, RS_SGL_SIZE);
	UT_EQ(b.rs.remote_sge, 1);                    /* entry 0 came in the data itself */
	UT_EQ(b.rs.target_sgl[0].addr, (uintptr_t)a.rbuf);
	UT_EQ(b.rs.target_sgl[0].key, 0x55667788);
	UT_EQ(b.rs.target_sgl[0].length, 65536);
	UT_EQ(b.rs.sseq_comp, 64);
	UT_EQ(b.rs.remote_iomap.addr, (uintptr_t)a.sgl + 2 * sizeof(struct rs_sge));
	UT_EQ(b.rs.remote_iomap.length, 16);
	UT_EQ(b.rs.remote_iomap.key, 0x11223344);
	UT_CHECK(!b.rs.swap_sgl);

	/* A peer of the other byte order: SGEs it writes to us come swapped
	 * by it, and we swap those we write to it. */
	cd.flags ^= RS_CONN_FLAG_NET;
	UT_EQ(rs_save_conn_data(&b.rs, &cd, sizeof(cd)), 0);
	UT_CHECK(b.rs.swap_sgl);

	cd.version = 2;
	UT_EQ(rs_save_conn_data(&b.rs, &cd, sizeof(cd)), -EOPNOTSUPP);
	cd.version = 1;
	UT_EQ(rs_save_conn_data(&b.rs, &cd, sizeof(cd) - 1), -EPROTO);
	UT_EQ(rs_save_conn_data(&b.rs, NULL, 0), -EPROTO);
}

static void test_ds_udp_header(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(7174) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(7174) };
	const uint8_t want4[RS_DS_UDP_V4_LEN] = {
		0x55, 0x55, 0x55, 0x55, 4, RS_OP_DATA, 16, 0, 0x00, 0x12, 0x34, 0x56, 10, 0, 0, 2,
	};
	uint8_t buf[64];
	struct rs_ds_udp h;

	inet_pton(AF_INET, "10.0.0.2", &a.sin_addr);
	inet_pton(AF_INET6, "fd00::2", &a6.sin6_addr);
	UT_EQ(rs_ds_udp_write(buf, RS_OP_DATA, 0xff123456, (struct sockaddr *)&a), 16);
	UT_MEMEQ(buf, want4, sizeof(want4));                     /* the QPN's top byte is not sent */
	UT_EQ(rs_ds_udp_read(buf, 16 + 100, AF_INET, &h), 0);
	UT_EQ(h.op, RS_OP_DATA);
	UT_EQ(h.qpn, 0x123456);
	UT_EQ(h.hdr_len, 16);

	UT_EQ(rs_ds_udp_write(buf, RS_OP_CTRL, 0x42, (struct sockaddr *)&a6), 28);
	UT_EQ(buf[4], 6);
	UT_EQ(buf[6], 28);
	UT_MEMEQ(buf + 12, &a6.sin6_addr, 16);
	UT_EQ(rs_ds_udp_read(buf, 28, AF_INET6, &h), 0);
	UT_EQ(h.op, RS_OP_CTRL);
	UT_EQ(h.qpn, 0x42);

	/* Refused: too short, wrong tag, a version that is not the
	 * socket's family, a length that is not the version's, an op
	 * that is neither data nor control. */
	UT_EQ(rs_ds_udp_read(buf, 27, AF_INET6, &h), -EINVAL);
	UT_EQ(rs_ds_udp_read(buf, 28, AF_INET, &h), -EINVAL);
	rs_ds_udp_write(buf, RS_OP_DATA, 1, (struct sockaddr *)&a);
	UT_EQ(rs_ds_udp_read(buf, 15, AF_INET, &h), -EINVAL);
	buf[0] = 0x54;
	UT_EQ(rs_ds_udp_read(buf, 16, AF_INET, &h), -EINVAL);
	buf[0] = 0x55;
	buf[6] = 28;
	UT_EQ(rs_ds_udp_read(buf, 32, AF_INET, &h), -EINVAL);
	buf[6] = 16;
	buf[5] = RS_OP_SGL;
	UT_EQ(rs_ds_udp_read(buf, 16, AF_INET, &h), -EINVAL);
}

static void test_ds_header(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(7174) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(9),
				   .sin6_flowinfo = htonl(5) };
	const uint8_t want4[RS_DS_V4_LEN] = { 4, 8, 0x1c, 0x06, 10, 0, 0, 2 };
	struct sockaddr_storage src;
	socklen_t len;
	uint8_t buf[64];

	inet_pton(AF_INET, "10.0.0.2", &a.sin_addr);
	inet_pton(AF_INET6, "fd00::2", &a6.sin6_addr);
	UT_EQ(rs_ds_hdr_write(buf, (struct sockaddr *)&a), 8);
	UT_MEMEQ(buf, want4, sizeof(want4));
	UT_EQ(rs_ds_hdr_read(buf, 8, &src, &len), 8);            /* an empty datagram */
	UT_EQ(len, sizeof(struct sockaddr_in));
	UT_MEMEQ(&src, &a, sizeof(a));

	UT_EQ(rs_ds_hdr_write(buf, (struct sockaddr *)&a6), 24);
	UT_EQ(buf[0], 6);
	UT_EQ(buf[1], 24);
	UT_MEMEQ(buf + 4, &a6.sin6_flowinfo, 4);
	UT_MEMEQ(buf + 8, &a6.sin6_addr, 16);
	UT_EQ(rs_ds_hdr_read(buf, 100, &src, &len), 24);
	UT_EQ(len, sizeof(struct sockaddr_in6));
	UT_MEMEQ(&src, &a6, sizeof(a6));

	/* A dual-stack socket's IPv4 peer: IPv4 on the wire. */
	inet_pton(AF_INET6, "::ffff:10.0.0.2", &a6.sin6_addr);
	a6.sin6_port = htons(7174);
	UT_EQ(rs_ds_hdr_write(buf, (struct sockaddr *)&a6), 8);
	UT_MEMEQ(buf, want4, sizeof(want4));
	UT_EQ(rs_ds_udp_write(buf, RS_OP_CTRL, 1, (struct sockaddr *)&a6), 16);
	UT_EQ(buf[4], 4);
	UT_MEMEQ(buf + 12, want4 + 4, 4);
	inet_pton(AF_INET6, "fd00::2", &a6.sin6_addr);
	rs_ds_hdr_write(buf, (struct sockaddr *)&a6);          /* for the checks below */

	UT_EQ(rs_ds_hdr_read(buf, 23, &src, &len), -EINVAL);     /* cut short */
	buf[1] = 8;
	UT_EQ(rs_ds_hdr_read(buf, 100, &src, &len), -EINVAL);    /* version 6, length 8 */
	buf[0] = 5;
	UT_EQ(rs_ds_hdr_read(buf, 100, &src, &len), -EINVAL);
	UT_EQ(rs_ds_hdr_read(buf, 0, &src, &len), -EINVAL);
}

/* How long a blocking call spins: longer where answers came soon after it
 * gave up, at most RS_SPIN_MAX_NS; halved, not below RS_SPIN_NS, when a
 * wait outlasts the longest spin. */
static void test_spin_next(void)
{
	UT_EQ(rs_spin_next(0, 5000, false), RS_SPIN_NS);          /* the first spin */
	UT_EQ(rs_spin_next(40000, 30000, false), 40000);          /* the spin sufficed: kept */
	UT_EQ(rs_spin_next(20000, 50000, true), 62500);           /* came 30 us late: 1.25 x the wait */
	UT_EQ(rs_spin_next(62500, 190000, true), RS_SPIN_MAX_NS); /* capped */
	UT_EQ(rs_spin_next(RS_SPIN_MAX_NS, 5000000, true), RS_SPIN_MAX_NS / 2);   /* an idle wait */
	UT_EQ(rs_spin_next(30000, 5000000, true), RS_SPIN_NS);    /* not below the first spin */
	UT_EQ(rs_spin_next(0, 5000000, true), RS_SPIN_NS);
}

int main(void)
{
	UT_RUN(test_layout);
	UT_RUN(test_msg);
	UT_RUN(test_scale);
	UT_RUN(test_conn_data);
	UT_RUN(test_ds_udp_header);
	UT_RUN(test_ds_header);
	UT_RUN(test_spin_next);
	UT_DONE();
}
