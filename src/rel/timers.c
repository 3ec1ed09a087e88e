#include "rel/timers.h"

#include "core/qp.h"
#include "engine/engine.h"
#include "rel/rel_priv.h"
#include "util/clock.h"

uint64_t ur_rel_timeout_ns(uint8_t timeout)
{
	uint64_t ns;

	if (!timeout)
		return 0;
	ns = 4096ull << timeout;
	return ns < UR_MIN_RETRANS_NS ? UR_MIN_RETRANS_NS : ns;
}

uint64_t ur_rel_rnr_timer_ns(uint8_t code)
{
	/* IBA table 45, microseconds; code 0 means 655.36 ms. */
	static const uint32_t us[32] = {
		655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
		1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
		40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
	};

	return (uint64_t)us[code & 31] * 1000ull;
}

void ur_timers_update(struct ur_qp *qp)
{
	uint64_t a = qp->comp.retrans_deadline, b = qp->comp.rnr_deadline;
	uint64_t d = !a ? b : !b ? a : a < b ? a : b;
	struct ur_engine *e = qp->ctx->engine;

	if (!e)
		return;
	if (d && !qp->dying)
		ur_engine_timer_arm(e, &qp->timer, d);
	else
		ur_engine_timer_cancel(e, &qp->timer);
}

void ur_timers_arm_retrans(struct ur_qp *qp)
{
	uint64_t t = ur_rel_timeout_ns(qp->attr.timeout);

	qp->comp.retrans_deadline = t && qp->comp.psn != qp->req.psn ? ur_now_ns() + t : 0;
	ur_timers_update(qp);
}

void ur_timers_arm_rnr(struct ur_qp *qp, uint8_t code)
{
	qp->comp.retrans_deadline = 0;
	qp->comp.rnr_deadline = ur_now_ns() + ur_rel_rnr_timer_ns(code);
	ur_timers_update(qp);
}
