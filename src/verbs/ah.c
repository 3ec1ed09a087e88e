/* Address handles and multicast at the ABI boundary. */
#include <string.h>

#include "core/ah.h"
#include "core/context.h"
#include "core/pd.h"
#include "core/qp.h"
#include "rel/mcast.h"
#include "wire/grh.h"
#include "verbs/verbs_priv.h"

UR_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct ur_ah *ah = NULL;
	int ret = ur_ah_create(to_upd(pd), attr, &ah);

	return ur_ret_obj(ret, ret ? NULL : &ah->ibah);
}

UR_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	return ur_ret_errno(ur_ah_destroy(to_uah(ah)));
}

UR_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
				  struct ibv_wc *wc, struct ibv_grh *grh,
				  struct ibv_ah_attr *ah_attr)
{
	struct ur_grh_fields g;
	struct ur_netdev nd;
	int sgid_index = -1;

	memset(ah_attr, 0, sizeof(*ah_attr));
	/* A RoCE port routes by GID: without a GRH there is no address. */
	if (!(wc->wc_flags & IBV_WC_GRH) || !grh || ur_grh_parse((const uint8_t *)grh, &g))
		return ur_ret_minus1(-EINVAL);
	ur_device_snapshot(to_uctx(context)->dev, &nd);
	for (unsigned i = 0; i < nd.ngid; i++)
		if (nd.gid[i].valid && !memcmp(&nd.gid[i].gid, &g.dgid, sizeof(g.dgid)))
			sgid_index = (int)i;
	if (sgid_index < 0) {
		errno = ENOENT;    /* the packet was not addressed to this device */
		return -1;
	}
	ah_attr->is_global = 1;
	ah_attr->grh.dgid = g.sgid;
	ah_attr->grh.sgid_index = (uint8_t)sgid_index;
	ah_attr->grh.hop_limit = 0xff;
	ah_attr->grh.traffic_class = g.traffic_class;
	ah_attr->grh.flow_label = g.flow_label;
	ah_attr->sl = wc->sl;
	ah_attr->port_num = port_num;
	return 0;
}

UR_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
					       struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr attr;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}

UR_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return ur_ret_errno(ur_mcast_attach(to_uqp(qp), gid));
}

UR_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return ur_ret_errno(ur_mcast_detach(to_uqp(qp), gid));
}
