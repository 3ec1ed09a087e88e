/* XRC domains at the ABI boundary (reached through verbs_context ops). */
#include "core/context.h"
#include "core/xrcd.h"
#include "verbs/verbs_priv.h"

struct ibv_xrcd *ur_verbs_open_xrcd(struct ibv_context *context, struct ibv_xrcd_init_attr *attr)
{
	struct ur_xrcd *x = NULL;
	int ret = ur_xrcd_open(to_uctx(context), attr, &x);

	return ur_ret_obj(ret, ret ? NULL : &x->ibxrcd);
}

int ur_verbs_close_xrcd(struct ibv_xrcd *xrcd)
{
	return ur_ret_errno(ur_xrcd_close(to_uxrcd(xrcd)));
}
