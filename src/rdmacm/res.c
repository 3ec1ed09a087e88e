/* The CM's ids in the resource window (`uroce res cm_id`): one line each,
 * named as `rdma res show cm_id` names a kernel's, written by the stack's
 * snapshot thread when a process asks (verbs/cm_abi.h, uroce_res_cm_attach). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <time.h>

#include "cma.h"
#include "verbs/cm_abi.h"

/* How long the snapshot waits for cma.lock: a CM busy that long says so
 * rather than hold the answer back. */
#define CMA_RES_WAIT_S 1

static const char *state_of(const struct cma_id *c)
{
	if (c->listening)
		return "LISTEN";
	if (c->disconnected)
		return "DISCONNECT";
	if (c->conn.state != UR_CM_IDLE || c->connect_sent)
		return "CONNECT";
	if (c->path.mtu)
		return "ROUTE_RESOLVED";
	if (c->dev >= 0 && c->dst.ss_family)
		return "ADDR_RESOLVED";
	if (c->bound)
		return "ADDR_BOUND";
	return "IDLE";
}

static const char *ps_name(enum rdma_port_space ps)
{
	switch (ps) {
	case RDMA_PS_TCP: return "TCP";
	case RDMA_PS_UDP: return "UDP";
	case RDMA_PS_IB: return "IB";
	case RDMA_PS_IPOIB: return "IPOIB";
	default: return "UNKNOWN";
	}
}

static const char *qpt_name(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC: return "RC";
	case IBV_QPT_UC: return "UC";
	case IBV_QPT_UD: return "UD";
	case IBV_QPT_XRC_SEND: return "XRC_INI";
	case IBV_QPT_XRC_RECV: return "XRC_TGT";
	default: return "UNKNOWN";
	}
}

/* "ADDR:PORT" ("[ADDR]:PORT" for IPv6); "0.0.0.0:0" when unset, as rdma. */
static void put_addr(FILE *f, const char *key, const struct sockaddr_storage *ss)
{
	char ip[INET6_ADDRSTRLEN] = "0.0.0.0";
	uint16_t port = cma_port_of((const struct sockaddr *)ss);

	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, ip, sizeof(ip));
	} else if (ss->ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, ip, sizeof(ip));
		fprintf(f, " %s=[%s]:%u", key, ip, port);
		return;
	}
	fprintf(f, " %s=%s:%u", key, ip, port);
}

static void id_line(const struct cma_id *c, FILE *f)
{
	fputs("cm_id", f);
	if (c->id.verbs)
		fprintf(f, " ifname=%s port=%u", ibv_get_device_name(c->id.verbs->device),
			c->id.port_num ? c->id.port_num : 1);
	fprintf(f, " cm-idn=%u", c->comm_num);
	if (c->id.qp)
		fprintf(f, " lqpn=%u", c->id.qp->qp_num);
	else if (c->qp_num)
		fprintf(f, " lqpn=%u", c->qp_num);
	fprintf(f, " qp-type=%s state=%s ps=%s", qpt_name(c->id.qp_type), state_of(c),
		ps_name(c->id.ps));
	put_addr(f, "src-addr", &c->src);
	put_addr(f, "dst-addr", &c->dst);
	if (c->listening)
		fprintf(f, " +backlog=%d +pending=%d", c->backlog, c->pending);
	fputc('\n', f);
}

void cma_res_dump(void *arg, FILE *f)
{
	struct timespec until;
	struct ur_list *pos;

	(void)arg;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += CMA_RES_WAIT_S;
	if (pthread_mutex_timedlock(&cma.lock, &until)) {
		fputs("busy what=cm_id\n", f);
		return;
	}
	ur_list_for_each(pos, &cma.ids)
		id_line(ur_list_entry(pos, struct cma_id, link), f);
	pthread_mutex_unlock(&cma.lock);
}
