/* The private data of a REQ or SIDR_REQ: rdma_cm's header, which tells the
 * listener the connection's IP addresses and port, then the user's bytes
 * (the same for RC connections and UD's service ID resolution). */
#include <errno.h>
#include <string.h>

#include "rdmacm/cma.h"
#include "wire/mad.h"

int cma_check_priv(const struct rdma_conn_param *p, size_t room)
{
	if (p && p->private_data_len && (!p->private_data || p->private_data_len > room))
		return -EINVAL;
	return 0;
}

void cma_pack_priv(const struct cma_id *c, const struct rdma_conn_param *p, struct ur_cm_msg *m)
{
	struct ur_cma_hdr h = { 0 };

	h.ip_version = c->dst.ss_family == AF_INET ? 4 : 6;
	h.src_port = cma_port_of((const struct sockaddr *)&c->src);
	if (h.ip_version == 4) {
		memcpy(h.src + 12, &((const struct sockaddr_in *)&c->src)->sin_addr, 4);
		memcpy(h.dst + 12, &((const struct sockaddr_in *)&c->dst)->sin_addr, 4);
	} else {
		memcpy(h.src, &((const struct sockaddr_in6 *)&c->src)->sin6_addr, 16);
		memcpy(h.dst, &((const struct sockaddr_in6 *)&c->dst)->sin6_addr, 16);
	}
	ur_cma_hdr_pack(&h, m->priv);
	if (p && p->private_data_len)
		memcpy(m->priv + UR_CMA_HDR_BYTES, p->private_data, p->private_data_len);
	m->priv_len = (uint8_t)(UR_CMA_HDR_BYTES + (p ? p->private_data_len : 0));
}
