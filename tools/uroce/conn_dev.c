/* The connection layer, device side: open the device that reaches the peer,
 * pick its GID index, PD, completion channel, CQs and MRs. */
#include "conn.h"
#include "dev_open.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *ur_dev_name(const struct ur_dev *d)
{
	return ibv_get_device_name(d->ctx->device);
}

/* The GID index of CTX/PORT holding IP as a RoCE v2 entry, or -1. */
static int gid_index_of_ip(struct ibv_context *ctx, uint8_t port, const char *ip)
{
	struct ur_gid_info t[64];
	int n = ur_gid_table(ctx, port, t, 64);

	for (int i = 0; i < n; i++)
		if (t[i].e.gid_type == IBV_GID_TYPE_ROCE_V2 && !strcmp(t[i].ip, ip))
			return (int)t[i].e.gid_index;
	return -1;
}

/* The name of the device whose port holds IP, into NAME; false if none. */
static bool device_with_ip(const char *ip, uint8_t port, char *name, size_t len)
{
	struct ibv_device **list;
	bool found = false;
	int n;

	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !found; i++) {
		struct ibv_context *c = ibv_open_device(list[i]);

		if (!c)
			continue;
		if (gid_index_of_ip(c, port, ip) >= 0) {
			snprintf(name, len, "%s", ibv_get_device_name(list[i]));
			found = true;
		}
		ibv_close_device(c);
	}
	if (list)
		ibv_free_device_list(list);
	return found;
}

/* Fills d->gid_index following the order ur_dev_setup documents. */
static int pick_gid(struct ur_dev *d, const struct ur_dev_opts *o)
{
	char why[256];
	int idx;

	if (o->gid_index >= 0) {
		if (ibv_query_gid(d->ctx, d->port, o->gid_index, &d->gid) ||
		    !memcmp(&d->gid, &(union ibv_gid){ 0 }, sizeof(d->gid))) {
			fprintf(stderr, "GID index %d is not in %s port %u's table "
					"(see `uroce gid -d %s`)\n",
				o->gid_index, ur_dev_name(d), d->port, ur_dev_name(d));
			return -EINVAL;
		}
		d->gid_index = o->gid_index;
		return 0;
	}
	if (o->peer) {
		idx = ur_gid_for_peer(d->ctx, d->port, o->peer, why, sizeof(why));
		if (idx < 0) {
			fprintf(stderr, "no GID index of %s reaches %s: %s\n", ur_dev_name(d),
				o->peer, why);
			return idx;
		}
	} else if (o->local_ip && (idx = gid_index_of_ip(d->ctx, d->port, o->local_ip)) >= 0) {
		;
	} else {
		idx = ur_gid_default(d->ctx, d->port);
	}
	d->gid_index = idx;
	if (ibv_query_gid(d->ctx, d->port, idx, &d->gid)) {
		fprintf(stderr, "cannot read GID index %d of %s: %s\n", idx, ur_dev_name(d),
			strerror(errno));
		return -errno;
	}
	return 0;
}

int ur_dev_setup(struct ur_dev *d, const struct ur_dev_opts *o)
{
	const char *name = o->dev_name;
	char ip[UR_GID_STRLEN], found[64];
	int rc = -EINVAL;

	memset(d, 0, sizeof(*d));
	d->port = o->ib_port > 0 ? (uint8_t)o->ib_port : 1;
	snprintf(d->gid_flag, sizeof(d->gid_flag), "%s", o->gid_flag ? o->gid_flag : "-g");
	snprintf(d->peer, sizeof(d->peer), "%s", o->peer ? o->peer : "");
	if (!name) {
		const char *local = o->local_ip;

		if (!local && o->peer && !ur_route_source(o->peer, ip, sizeof(ip)))
			local = ip;
		if (local && device_with_ip(local, d->port, found, sizeof(found)))
			name = found;
	}
	d->ctx = ur_dev_open(name);
	if (!d->ctx)
		return -ENODEV;
	if (ibv_query_device(d->ctx, &d->attr) || ibv_query_port(d->ctx, d->port, &d->port_attr)) {
		fprintf(stderr, "cannot query %s port %u: %s\n", ur_dev_name(d), d->port,
			strerror(errno));
		goto err_close;
	}
	if (d->port_attr.state != IBV_PORT_ACTIVE)
		fprintf(stderr, "warning: %s port %u is not active (state %s)\n", ur_dev_name(d),
			d->port, ibv_port_state_str(d->port_attr.state));
	rc = pick_gid(d, o);
	if (rc)
		goto err_close;
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd) {
		rc = -errno;
		fprintf(stderr, "cannot allocate a PD on %s: %s\n", ur_dev_name(d), strerror(errno));
		goto err_close;
	}
	if (o->events) {
		d->channel = ibv_create_comp_channel(d->ctx);
		if (!d->channel) {
			rc = -errno;
			fprintf(stderr, "cannot create a completion channel on %s: %s\n",
				ur_dev_name(d), strerror(errno));
			goto err_free_pd;
		}
	}
	return 0;

err_free_pd:
	ibv_dealloc_pd(d->pd);
err_close:
	ibv_close_device(d->ctx);
	d->ctx = NULL;
	return rc;
}

int ur_dev_check(const char *name, int port, int gid_index)
{
	struct ibv_context *ctx;
	union ibv_gid gid;
	int rc = 0;

	if (!name && gid_index < 0)
		return 0;
	ctx = ur_dev_open(name);
	if (!ctx)
		return -ENODEV;
	if (gid_index >= 0 && (ibv_query_gid(ctx, (uint8_t)port, gid_index, &gid) ||
			       !memcmp(&gid, &(union ibv_gid){ 0 }, sizeof(gid)))) {
		fprintf(stderr, "GID index %d is not in %s port %d's table (see `uroce gid -d %s`)\n",
			gid_index, ibv_get_device_name(ctx->device), port,
			ibv_get_device_name(ctx->device));
		rc = -EINVAL;
	}
	ibv_close_device(ctx);
	return rc;
}

void ur_dev_teardown(struct ur_dev *d)
{
	if (!d->ctx)
		return;
	if (d->channel)
		ibv_destroy_comp_channel(d->channel);
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	ibv_close_device(d->ctx);
	memset(d, 0, sizeof(*d));
}

struct ibv_cq *ur_cq_new(struct ur_dev *d, int depth)
{
	struct ibv_cq *cq = ibv_create_cq(d->ctx, depth, NULL, d->channel, 0);

	if (!cq) {
		fprintf(stderr, "cannot create a CQ of %d entries on %s: %s (device max_cqe %d, "
				"max_cq %d)\n",
			depth, ur_dev_name(d), strerror(errno), d->attr.max_cqe, d->attr.max_cq);
		return NULL;
	}
	if (d->channel && ibv_req_notify_cq(cq, 0)) {
		fprintf(stderr, "cannot arm the CQ for events: %s\n", strerror(errno));
		ibv_destroy_cq(cq);
		return NULL;
	}
	return cq;
}

struct ibv_cq *ur_cq_wait(struct ur_dev *d)
{
	struct ibv_cq *cq;
	void *cq_ctx;

	if (ibv_get_cq_event(d->channel, &cq, &cq_ctx)) {
		fprintf(stderr, "waiting for a completion event failed: %s\n", strerror(errno));
		return NULL;
	}
	ibv_ack_cq_events(cq, 1);
	/* Re-arm before the caller polls, so a completion arriving between its
	 * last poll and the next wait still raises an event. */
	if (ibv_req_notify_cq(cq, 0)) {
		fprintf(stderr, "cannot re-arm the CQ for events: %s\n", strerror(errno));
		return NULL;
	}
	return cq;
}

void *ur_buf_alloc(size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	if (posix_memalign(&p, (size_t)page, len ? len : 1)) {
		fprintf(stderr, "cannot allocate %zu bytes\n", len);
		return NULL;
	}
	memset(p, 0, len);
	return p;
}

struct ibv_mr *ur_mr_new(struct ur_dev *d, void *buf, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(d->pd, buf, len, access);

	if (!mr)
		fprintf(stderr, "cannot register %zu bytes (access 0x%x) on %s: %s%s\n", len,
			access, ur_dev_name(d), strerror(errno),
			errno == ENOMEM ? " (check `ulimit -l`, the locked-memory limit)" : "");
	return mr;
}
