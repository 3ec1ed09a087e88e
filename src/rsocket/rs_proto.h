/* The rsocket wire protocol (rdma-core's librdmacm/docs/rsocket and
 * rsocket(7)), so that uroce's rsockets and rdma-core's talk to each other.
 *
 * A stream rsocket is an RC QP.  Each side owns a receive buffer that it
 * hands to the peer half at a time: the peer RDMA-writes data into the
 * half it was given, front to back, and says how much with the 32-bit
 * immediate of the write.  Free halves are advertised by writing an SGE
 * into the peer's "target SGL" (two entries, used in turn), also a write
 * with immediate.  Every write with immediate consumes one posted receive,
 * so data messages are counted by credits: a sequence number (16 bits)
 * up to which the peer may send.
 */
#ifndef UROCE_RSOCKET_RS_PROTO_H
#define UROCE_RSOCKET_RS_PROTO_H

#include <assert.h>
#include <stdint.h>

/* Immediate data: the type in bits 31:29, its argument in bits 28:0. */
enum rs_op {
	RS_OP_DATA = 0,       /* bytes written into the receive buffer */
	RS_OP_WRITE = 2,      /* never on the wire: riowrite's plain writes (wr_id only) */
	RS_OP_SGL = 4,        /* credits up to this sequence number; a target SGE may be new */
	RS_OP_IOMAP_SGL = 6,  /* target iomap entry <index> was written */
	RS_OP_CTRL = 7,       /* a control message, below */
};

enum rs_ctrl {
	RS_CTRL_DISCONNECT = 0,   /* no more data either way */
	RS_CTRL_KEEPALIVE = 1,    /* a 0-byte write without immediate: no receive used */
	RS_CTRL_SHUTDOWN = 2,     /* the sender will send no more */
};

static inline uint32_t rs_msg(enum rs_op op, uint32_t data)
{
	return ((uint32_t)op << 29) | (data & 0x1fffffffu);
}

static inline enum rs_op rs_msg_op(uint32_t msg)
{
	return (enum rs_op)(msg >> 29);
}

static inline uint32_t rs_msg_data(uint32_t msg)
{
	return msg & 0x1fffffffu;
}

/* An SGE as the peer writes it into our target SGL: in the byte order of
 * the SGL's owner (the writer swaps when the two differ). */
struct rs_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

/* An entry of the target iomap: the riomap offset a buffer answers to. */
struct rs_iomap {
	uint64_t offset;
	struct rs_sge sge;
};

#define RS_CONN_VERSION    1
#define RS_CONN_FLAG_NET   (1 << 0)   /* the sender is big-endian */
#define RS_CONN_FLAG_IOMAP (1 << 1)   /* an iomap follows the target SGL */

/* The CM private data of the connection request and of its reply; every
 * multi-byte field big-endian. */
struct rs_conn_data {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;             /* the first receive credits */
	uint8_t reserved[3];
	uint8_t target_iomap_size;    /* entries, in rs_scale's 8-bit form */
	struct rs_sge target_sgl;     /* our target SGL: address, rkey, entries */
	struct rs_sge data_buf;       /* the first receive buffer half */
};
static_assert(sizeof(struct rs_conn_data) == 40, "rs_conn_data is 40 bytes on the wire");
static_assert(sizeof(struct rs_sge) == 16, "rs_sge is 16 bytes on the wire");
static_assert(sizeof(struct rs_iomap) == 24, "rs_iomap is 24 bytes on the wire");

#define RS_SGL_SIZE     2        /* target SGL entries */
#define RS_SNDLOWAT     2048     /* bytes per receive credit; the least worth sending */
#define RS_QP_CTRL_SIZE 4        /* control messages in flight, at most */
#define RS_MAX_TRANSFER 65536    /* one write, at most */
#define RS_OLAP_START   2048     /* the first write of a send; each next one doubles */

/* Datagram rsockets (rdma-core's "Datagram Overview").  A datagram rsocket
 * is a UDP socket plus a UD QP for each local address it sends from.  Until
 * a sender knows the QP behind a destination address, its datagrams go over
 * UDP, each behind a UDP header naming the sender's QP; the receiver answers
 * with the same header (op RS_OP_CTRL, no payload), and from then on both
 * send over UD, each datagram behind a datagram header that names the
 * sender's address (IP and UDP port).  Every multi-byte field big-endian.
 *
 * UDP header: tag (4), version (4 or 6), op (RS_OP_DATA or RS_OP_CTRL),
 * length (of this header), reserved, the sender's QP number (low 24 bits of
 * 4 bytes), the address the sender sent from (4 or 16 bytes). */
#define RS_DS_UDP_TAG    0x55555555u
#define RS_DS_UDP_V4_LEN 16
#define RS_DS_UDP_V6_LEN 28
/* Datagram header: version, length (of this header), the sender's UDP port
 * (2), its IPv4 address (4), or an IPv6 flow label (4) and address (16). */
#define RS_DS_V4_LEN 8
#define RS_DS_V6_LEN 24
#define RS_DS_QKEY   0x01234567u   /* rdma_cm's Q_Key for RDMA_PS_UDP */
/* A datagram and its header fit one receive slot of RS_SNDLOWAT bytes, and
 * one UDP read of the receiver's side channel (UDP header, then the bytes). */
#define RS_DS_MAX_V4 (RS_SNDLOWAT - RS_DS_UDP_V4_LEN)
#define RS_DS_MAX_V6 (RS_SNDLOWAT - RS_DS_UDP_V6_LEN)

/* Sizes carried in 8 bits: up to 128 as they are, above that in 256s
 * with the top bit set. */
static inline uint8_t rs_value_to_scale(uint32_t v)
{
	return (uint8_t)(v <= 128 ? v : (128 | (v >> 8)));
}

static inline uint32_t rs_scale_to_value(uint8_t s)
{
	return s <= 128 ? s : (uint32_t)(s & 0x7f) << 8;
}

#endif
