#include "rel/resp_batch.h"

#include "core/qp.h"
#include "core/qp_kind.h"
#include "rel/resp_out.h"

#define UR_RESP_BATCH_QPS 32u

static _Thread_local struct {
	unsigned depth;                /* begin calls not yet ended */
	unsigned n;
	struct ur_qp *qp[UR_RESP_BATCH_QPS];
} batch;

void ur_resp_batch_begin(void)
{
	batch.depth++;
}

void ur_resp_batch_end(void)
{
	if (!batch.depth || --batch.depth)
		return;
	for (unsigned i = 0; i < batch.n; i++) {
		struct ur_qp *qp = batch.qp[i];

		pthread_mutex_lock(&qp->lock);
		qp->resp.ack_held = false;
		if (!qp->dying)
			ur_resp_tx(qp);
		pthread_mutex_unlock(&qp->lock);
	}
	batch.n = 0;
}

bool ur_resp_batch_hold(struct ur_qp *qp)
{
	/* RC only: a DC target's halves and XRC's targets answer as before. */
	if (!batch.depth || !ur_qp_plain_rc(qp))
		return false;
	if (!qp->resp.ack_held) {
		if (batch.n == UR_RESP_BATCH_QPS)
			return false;
		batch.qp[batch.n++] = qp;
		qp->resp.ack_held = true;
	}
	return true;
}

void ur_resp_batch_before_post(struct ur_qp *qp)
{
	if (qp->resp.ack_held && qp->resp.ack_pending)
		ur_resp_tx(qp);   /* ack_held stays: the batch's end sends a newer one */
}
