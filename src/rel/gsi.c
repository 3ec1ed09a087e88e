#include "rel/gsi.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "core/context.h"
#include "core/route.h"
#include "rel/stack.h"
#include "util/log.h"
#include "wire/opcode.h"
#include "wire/roce_hdr.h"

#define UR_GSI_QKEY_VALUE 0x80010000u

int ur_gsi_attach(struct ur_stack *s, ur_gsi_rx_fn fn, void *arg)
{
	int ret = 0;

	pthread_mutex_lock(&s->gsi_lock);
	if (fn && s->gsi_rx)
		ret = -EBUSY;
	else {
		s->gsi_arg = arg;
		__atomic_store_n(&s->gsi_rx, fn, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&s->gsi_lock);
	/* A receiver detaching must not be running once this returns. */
	if (!fn)
		ur_engine_quiesce(s->engine);
	return ret;
}

int ur_gsi_send(struct ur_context *ctx, const struct ibv_ah_attr *ah, const void *mad,
		size_t len)
{
	static uint32_t psn;
	struct ur_tx_pkt pkt;
	struct ur_path path;
	char why[160];
	int ret;

	if (!ctx->xports)
		return ctx->stack_err ? ctx->stack_err : -ENODEV;
	if (len & 3 || len > 1024)
		return -EINVAL;
	ret = ur_route_resolve(ctx, ah, UR_GSI_QPN, &path, why, sizeof(why));
	if (ret) {
		ur_dbg(NULL, "CM MAD not sent: %s", why);
		return ret;
	}
	memset(&pkt, 0, sizeof(pkt));
	pkt.hdr_len = UR_BTH_BYTES + UR_DETH_BYTES;
	bth_init(pkt.hdr, UR_OP_UD_SEND_ONLY, false, 0, UR_DEFAULT_PKEY, UR_GSI_QPN, false,
		 __atomic_add_fetch(&psn, 1, __ATOMIC_RELAXED) & UR_QPN_MASK);
	deth_set_qkey(pkt.hdr + UR_BTH_BYTES, UR_GSI_QKEY_VALUE);
	deth_set_sqp(pkt.hdr + UR_BTH_BYTES, UR_GSI_QPN);
	pkt.paylen = (uint32_t)len;
	pkt.niov = 1;
	pkt.iov[0] = (struct iovec){ (void *)mad, len };
	/* Never on the engine thread (the CM has its own): waiting a little
	 * for room in a peer's full queue beats losing the MAD to a second's
	 * retransmission when many connections start at once. */
	for (int tries = 0; tries < 200; tries++) {
		ret = ur_xport_send(&path, &pkt);
		if (ret != -EAGAIN)
			break;
		ur_xports_flush(ctx->xports);
		usleep(500);
	}
	if (!ret)
		ret = ur_xports_flush(ctx->xports);
	/* A MAD kept for lack of room leaves when there is room; a lost one
	 * is the CM's to retry. */
	return ret == -EAGAIN ? 0 : ret;
}

void ur_gsi_rx(struct ur_stack *s, const struct ur_pkt_view *v, const struct ur_rx_meta *meta)
{
	ur_gsi_rx_fn fn = __atomic_load_n(&s->gsi_rx, __ATOMIC_ACQUIRE);
	const uint8_t *deth = v->bth + UR_BTH_BYTES;

	if (v->opcode != UR_OP_UD_SEND_ONLY || deth_qkey(deth) != UR_GSI_QKEY_VALUE ||
	    bth_pkey(v->bth) != UR_DEFAULT_PKEY) {
		__atomic_add_fetch(&s->malformed, 1, __ATOMIC_RELAXED);
		return;
	}
	if (!fn) {
		__atomic_add_fetch(&s->no_qp, 1, __ATOMIC_RELAXED);
		ur_dbg(NULL, "dropped a MAD for QP1: no connection manager in this process");
		return;
	}
	fn(s->gsi_arg, v->payload, v->paylen, &meta->sgid, &meta->dgid);
}
