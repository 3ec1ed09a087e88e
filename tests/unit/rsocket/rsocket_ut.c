/* rsockets' wire: the immediate data's encoding, the 8-bit size scale, the
 * layout of the connection data (rdma-core's struct rs_conn_data, byte for
 * byte) and its round trip through format and save, byte order included. */
#include <endian.h>
#include <errno.h>
#include <stddef.h>

#include "rsocket/res.c"
#include "ut.h"

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

int main(void)
{
	UT_RUN(test_layout);
	UT_RUN(test_msg);
	UT_RUN(test_scale);
	UT_RUN(test_conn_data);
	UT_DONE();
}
