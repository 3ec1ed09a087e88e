/* libFuzzer target: what another process of this host can send us.
 *
 * Processes of one host (one user: the kernel vouches for the sender) reach
 * each other through their forwarding sockets (src/xport/udp/udp_fwd.c).
 * Same user is not the same as well-behaved: a crashed, older or buggy
 * process may send anything, and nothing it sends may crash the receiver,
 * write outside a registered region or wedge a QP.  Two doors:
 *
 *   selector bit 0x01 set: the bytes are one whole forwarding datagram
 *     (header, then one RoCE packet, a batch cut every `seg` bytes, or a
 *     local message), given to ur_udp_on_fwd_datagram as the socket would.
 *     0x08 makes the header's magic and version right; 0x20 then also
 *     stores a correct ICRC in every packet of the batch, so they reach
 *     the protocol.
 *   clear: the bytes are one local message (XRC DELIVER / REPLY,
 *     rel/xrc_msg.h), given to ur_recv_local_msg.  0x02 makes the
 *     header's magic, version, kind and length right; 0x04 aims it at this
 *     process's XRC SRQ in a domain shared through a file (or, for a REPLY,
 *     at the XRC target QP with its current PSN and incarnation).
 *
 * The live stack is fuzz_stack.h's.  Replies to the sender go to pid 1,
 * which has no uroce socket: they are counted lost. */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_stack.h"
#include "core/context.h"
#include "core/device.h"
#include "core/qp.h"
#include "core/srq.h"
#include "core/xrcd.h"
#include "rel/recv.h"
#include "rel/stack.h"
#include "rel/xrc_msg.h"
#include "wire/icrc.h"
#include "wire/roce_hdr.h"
#include "xport/udp/udp_priv.h"

#define SEL_FWD 0x01
#define SEL_MSG_VALID 0x02
#define SEL_MSG_AIM 0x04
#define SEL_FWD_VALID 0x08
#define SEL_FWD_ICRC 0x20

/* For the corpus replay: whether the last input was counted malformed. */
int fuzz_dropped = -1;

static struct {
	struct ur_udp *udp;
	struct ibv_xrcd *xrcd;          /* shared through a file: has an inode */
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	int ready;
} l;

static void setup_local(void)
{
	struct ur_stack *s;
	char path[] = "/tmp/uroce-fuzz-xrcd-XXXXXX";
	struct ibv_xrcd_init_attr xa = { .comp_mask = IBV_XRCD_INIT_ATTR_FD |
						      IBV_XRCD_INIT_ATTR_OFLAGS,
					 .oflags = O_CREAT };

	fuzz_stack_setup();
	s = to_uctx(fz.ctx)->stack;
	for (unsigned i = 0; i < s->xports.n; i++)
		if (!strcmp(s->xports.x[i]->ops->name, "udp"))
			l.udp = (struct ur_udp *)((char *)s->xports.x[i] - offsetof(struct ur_udp, xport));
	FUZZ_ASSERT(l.udp);
	xa.fd = mkstemp(path);
	FUZZ_ASSERT(xa.fd >= 0);
	unlink(path);
	l.xrcd = ibv_open_xrcd(fz.ctx, &xa);
	FUZZ_ASSERT(l.xrcd && to_uxrcd(l.xrcd)->has_inode);
	l.cq = ibv_create_cq(fz.ctx, 256, NULL, NULL, 0);
	FUZZ_ASSERT(l.cq);
	l.srq = fuzz_xrc_srq(l.xrcd, l.cq, 2);
	l.ready = 1;
}

/* Receives into the region's upper half, two pieces each. */
static void refill_srq(void)
{
	struct ibv_wc wc[64];

	while (ibv_poll_cq(l.cq, 64, wc) > 0)
		;
	while (ur_wq_used(&to_usrq(l.srq)->rq) < 16) {
		uint8_t *at = fz.buf + FUZZ_MR_BYTES / 2;
		struct ibv_sge sge[2] = { { (uintptr_t)at, 3000, fz.mr->lkey },
					  { (uintptr_t)at + 8192, 5000, fz.mr->lkey } };
		struct ibv_recv_wr wr = { .wr_id = 7, .sg_list = sge, .num_sge = 2 }, *bad;

		FUZZ_ASSERT(!ibv_post_srq_recv(l.srq, &wr, &bad));
	}
}

static void one_message(uint8_t sel, uint8_t *msg, size_t len)
{
	struct ur_xrc_msg m;

	if ((sel & SEL_MSG_VALID) && len >= sizeof(m)) {
		memcpy(&m, msg, sizeof(m));
		m.magic = UR_XRC_MAGIC;
		m.version = UR_XRC_VERSION;
		m.kind = (m.kind & 1) ? UR_XRC_DELIVER : UR_XRC_REPLY;
		m.src_pid = 1;
		if (m.kind == UR_XRC_DELIVER) {
			m.status = 0;
			m.paylen = (uint32_t)(len - sizeof(m));
			m.ibdev[sizeof(m.ibdev) - 1] = '\0';
		} else {
			len = sizeof(m);
			m.paylen = 0;
			m.status %= UR_XRC_STATUS_NR;
		}
		if (sel & SEL_MSG_AIM) {
			struct ur_xrcd *x = to_uxrcd(l.xrcd);
			struct ur_qp *tq = to_uqp(fz.qp[FUZZ_XRC_TGT]);

			snprintf(m.ibdev, sizeof(m.ibdev), "%s", fz.ctx->device->name);
			m.xrcd_dev = (uint64_t)x->dev;
			m.xrcd_ino = (uint64_t)x->ino;
			m.srqn = to_usrq(l.srq)->srq_num;
			m.psn &= 0xffffff;
			m.tgt_qpn &= 0xffffff;
			if (m.kind == UR_XRC_REPLY) {
				pthread_mutex_lock(&tq->lock);
				m.tgt_qpn = ur_qp_num(tq);
				m.psn = tq->resp.psn;
				m.gen = tq->xrc_gen;
				m.srqn = tq->resp.xrc_srqn;
				pthread_mutex_unlock(&tq->lock);
			}
		}
		memcpy(msg, &m, sizeof(m));
	}
	ur_recv_local_msg(to_uctx(fz.ctx)->stack, msg, len);
}

/* Stores each packet's ICRC as the sender would, under the header's addresses. */
static void seal_batch(uint8_t *d, size_t len)
{
	struct ur_fwd_hdr h;
	struct ur_roce_ip ip;
	size_t seg;

	memcpy(&h, d, sizeof(h));
	if (ur_udp_fwd_hdr_check(&h, &ip) || h.kind != UR_FWD_PACKETS)
		return;
	ip.df = true;   /* every RoCEv2 sender sets it; the IPv4 check insists */
	d += sizeof(h);
	len -= sizeof(h);
	seg = h.seg && h.seg < len ? h.seg : len;
	for (size_t off = 0; off < len; off += seg) {
		size_t n = len - off < seg ? len - off : seg;
		struct iovec iov = { d + off, n - 4 };

		if (n < UR_BTH_BYTES + 4)
			continue;
		ur_put_le32(d + off + n - 4, ur_icrc_calc(&ip, &iov, 1, n - 4));
	}
}

static void one_datagram(uint8_t sel, uint8_t *d, size_t len)
{
	if ((sel & SEL_FWD_VALID) && len >= sizeof(struct ur_fwd_hdr)) {
		struct ur_fwd_hdr h;

		memcpy(&h, d, sizeof(h));
		h.magic = UR_FWD_MAGIC;
		h.version = UR_FWD_VERSION;
		memcpy(d, &h, sizeof(h));
		if (sel & SEL_FWD_ICRC)
			seal_batch(d, len);
	}
	ur_udp_on_fwd_datagram(l.udp, d, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ur_stack *s;
	uint64_t before;
	uint8_t *copy;

	if (!l.ready)
		setup_local();
	if (size < 2 || size > 65536)
		return 0;
	s = to_uctx(fz.ctx)->stack;
	before = __atomic_load_n(&l.udp->stats.malformed, __ATOMIC_RELAXED) +
		 __atomic_load_n(&s->malformed, __ATOMIC_RELAXED);
	copy = malloc(size - 1);   /* exact size: ASan sees overreads */
	FUZZ_ASSERT(copy);
	memcpy(copy, data + 1, size - 1);
	refill_srq();
	if (data[0] & SEL_FWD)
		one_datagram(data[0], copy, size - 1);
	else
		one_message(data[0], copy, size - 1);
	free(copy);
	fuzz_dropped = __atomic_load_n(&l.udp->stats.malformed, __ATOMIC_RELAXED) +
		       __atomic_load_n(&s->malformed, __ATOMIC_RELAXED) != before;
	fuzz_stack_tidy();
	return 0;
}
