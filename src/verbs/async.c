/* Asynchronous events at the ABI boundary. */
#include "core/context.h"
#include "verbs/verbs_priv.h"

UR_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	return ur_ret_minus1(ur_async_get(&to_uctx(context)->async, event));
}

UR_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	/* Destroy does not wait on acknowledgements: queued events about a
	 * destroyed object are dropped instead (ur_async_forget). */
}
