/* The process's CM: its devices, QP1's receiver and its thread.
 *
 * MADs arrive on uroce's engine thread (cma_gsi_rx), which only copies
 * them into a queue and wakes this library's thread; that thread parses
 * them and runs the state machines under cma.lock, and fires their timers.
 * So the engine never waits for the CM's lock, and QPs are moved (which
 * takes their locks) outside the engine's callbacks. */
#include "rdmacm/cma.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "util/atfork.h"
#include "verbs/cm_abi.h"

struct cma cma = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.acked = PTHREAD_COND_INITIALIZER,
	.rx_lock = PTHREAD_MUTEX_INITIALIZER,
	.wake_fd = -1,
};

static const struct cma_upcalls *upcalls;   /* conn_rx.c's, set at load */

void cma_set_upcalls(const struct cma_upcalls *up)
{
	upcalls = up;
}

struct cma_rx {
	struct ur_list link;
	union ibv_gid sgid, dgid;
	size_t len;
	uint8_t mad[UR_MAD_BYTES];
};

uint64_t cma_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void cma_wake(void)
{
	uint64_t one = 1;

	if (write(cma.wake_fd, &one, sizeof(one)) < 0) {
		/* The counter is already non-zero: the thread wakes anyway. */
	}
}

static void cma_gsi_rx(void *arg, const uint8_t *mad, size_t len, const union ibv_gid *sgid,
		       const union ibv_gid *dgid)
{
	struct cma_rx *r;

	(void)arg;
	if (len < UR_MAD_BYTES)
		return;
	r = malloc(sizeof(*r));
	if (!r)
		return;   /* a lost MAD: the peer sends it again */
	r->sgid = *sgid;
	r->dgid = *dgid;
	r->len = UR_MAD_BYTES;
	memcpy(r->mad, mad, UR_MAD_BYTES);
	pthread_mutex_lock(&cma.rx_lock);
	ur_list_add_tail(&cma.rx, &r->link);
	pthread_mutex_unlock(&cma.rx_lock);
	cma_wake();
}

static void handle_rx(struct cma_rx *r)
{
	struct ur_cm_msg m;
	int gid_index, dev;

	if (ur_cm_parse(r->mad, r->len, &m))
		return;
	dev = cma_dev_of_gid(&r->dgid, &gid_index);
	if (dev < 0)
		return;
	if (upcalls)
		upcalls->on_mad(&m, dev, gid_index, &r->sgid);
}

static void *cma_thread(void *arg)
{
	(void)arg;
	for (;;) {
		uint64_t next = 0, now, v;
		struct pollfd pfd = { .fd = cma.wake_fd, .events = POLLIN };
		int timeout;
		struct ur_list q;

		pthread_mutex_lock(&cma.lock);
		if (upcalls)
			upcalls->tick(cma_now(), &next);
		pthread_mutex_unlock(&cma.lock);
		now = cma_now();
		timeout = !next ? 1000 : next <= now ? 0 : (int)((next - now) / 1000000 + 1);
		if (poll(&pfd, 1, timeout) > 0 && read(cma.wake_fd, &v, sizeof(v)) < 0) {
			/* Nothing counted: spurious. */
		}
		ur_list_init(&q);
		pthread_mutex_lock(&cma.rx_lock);
		while (!ur_list_empty(&cma.rx)) {
			struct ur_list *l = cma.rx.next;

			ur_list_del(l);
			ur_list_add_tail(&q, l);
		}
		pthread_mutex_unlock(&cma.rx_lock);
		while (!ur_list_empty(&q)) {
			struct cma_rx *r = ur_list_entry(q.next, struct cma_rx, link);

			ur_list_del(&r->link);
			pthread_mutex_lock(&cma.lock);
			handle_rx(r);
			pthread_mutex_unlock(&cma.lock);
			free(r);
		}
	}
	return NULL;
}

static int open_devices(void)
{
	struct ibv_device **list;
	int n, ret;

	list = ibv_get_device_list(&n);
	if (!list)
		return -errno;
	cma.verbs_list = calloc((size_t)n + 1, sizeof(*cma.verbs_list));
	if (!cma.verbs_list) {
		ibv_free_device_list(list);
		return -ENOMEM;
	}
	for (int i = 0; i < n && cma.ndev < CMA_MAX_DEVS; i++) {
		struct cma_dev *d = &cma.devs[cma.ndev];
		struct ibv_port_attr pa;
		struct ibv_device_attr da;

		d->verbs = ibv_open_device(list[i]);
		if (!d->verbs)
			continue;
		d->guid = be64toh(ibv_get_device_guid(list[i]));
		d->mtu = ibv_query_port(d->verbs, 1, &pa) ? IBV_MTU_1024 : pa.active_mtu;
		d->max_rd_atom = ibv_query_device(d->verbs, &da) ? 1 :
				 (uint8_t)(da.max_qp_rd_atom > 255 ? 255 : da.max_qp_rd_atom);
		cma.verbs_list[cma.ndev++] = d->verbs;
	}
	ibv_free_device_list(list);
	if (!cma.ndev)
		return -ENODEV;
	ret = uroce_gsi_attach(cma.devs[0].verbs, cma_gsi_rx, NULL);
	if (ret)
		return ret;
	ret = uroce_res_cm_attach(cma.devs[0].verbs, cma_res_dump, NULL);
	if (ret)
		return ret;
	/* Listed as a process with a CM: a REQ nobody listens for comes to
	 * one of those, which rejects it. */
	return uroce_cm_listen(0, 1);
}

struct ibv_pd *cma_dev_pd(int dev)
{
	if (!cma.devs[dev].pd)
		cma.devs[dev].pd = ibv_alloc_pd(cma.devs[dev].verbs);
	return cma.devs[dev].pd;
}

struct ibv_xrcd *cma_dev_xrcd(int dev)
{
	struct ibv_xrcd_init_attr a = { .comp_mask = IBV_XRCD_INIT_ATTR_FD |
						    IBV_XRCD_INIT_ATTR_OFLAGS,
					.fd = -1, .oflags = O_CREAT };

	if (!cma.devs[dev].xrcd)
		cma.devs[dev].xrcd = ibv_open_xrcd(cma.devs[dev].verbs, &a);
	return cma.devs[dev].xrcd;
}

void cma_id_set_dev(struct cma_id *c, int dev)
{
	c->dev = dev;
	c->id.verbs = cma.devs[dev].verbs;
	c->id.port_num = 1;
	if (!c->id.pd)
		c->id.pd = cma_dev_pd(dev);
}

/* A child of fork() inherits the parent's CM: its ids, its devices (opened
 * on the parent's stack), its thread's state but not the thread.  None of
 * it works in the child, as with the kernel's rdma_cm the parent's ids are
 * not the child's to use; the child starts a CM of its own. */
static void forget_parent(void)
{
	pthread_mutex_init(&cma.lock, NULL);
	pthread_cond_init(&cma.acked, NULL);
	pthread_mutex_init(&cma.rx_lock, NULL);
	if (cma.wake_fd >= 0)
		close(cma.wake_fd);
	cma.wake_fd = -1;
	cma.ready = false;
	cma.init_err = 0;
	memset(cma.devs, 0, sizeof(cma.devs));
	cma.ndev = 0;
	cma.verbs_list = NULL;   /* the parent's: left as it is */
}

int cma_init(void)
{
	unsigned gen = ur_fork_generation();
	int ret;

	if (cma.gen != gen) {
		if (cma.gen)
			forget_parent();
		cma.gen = gen;
	}
	pthread_mutex_lock(&cma.lock);
	if (cma.ready || cma.init_err) {
		ret = cma.init_err;
		pthread_mutex_unlock(&cma.lock);
		return ret;
	}
	ur_list_init(&cma.ids);
	ur_list_init(&cma.rx);
	ret = -EPROTO;
	if (uroce_cm_abi_version() != UROCE_CM_ABI_VERSION)
		goto out;
	cma.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (cma.wake_fd < 0) {
		ret = -errno;
		goto out;
	}
	ret = open_devices();
	if (ret)
		goto out;
	ret = -pthread_create(&cma.thread, NULL, cma_thread, NULL);
	if (!ret)
		pthread_detach(cma.thread);
out:
	if (ret)
		cma.init_err = ret;
	else
		cma.ready = true;
	pthread_mutex_unlock(&cma.lock);
	return ret;
}

int cma_dev_of_gid(const union ibv_gid *gid, int *gid_index)
{
	for (int d = 0; d < cma.ndev; d++) {
		struct ibv_port_attr pa;

		if (ibv_query_port(cma.devs[d].verbs, 1, &pa))
			continue;
		for (int i = 0; i < pa.gid_tbl_len; i++) {
			union ibv_gid g;

			if (ibv_query_gid(cma.devs[d].verbs, 1, i, &g) == 0 &&
			    !memcmp(&g, gid, sizeof(g))) {
				*gid_index = i;
				return d;
			}
		}
	}
	return -ENODEV;
}

int cma_dev_of_verbs(struct ibv_context *verbs)
{
	for (int d = 0; d < cma.ndev; d++)
		if (cma.devs[d].verbs == verbs)
			return d;
	return -ENODEV;
}

struct cma_id *cma_find_comm(uint32_t comm_id)
{
	struct ur_list *l;

	ur_list_for_each(l, &cma.ids) {
		struct cma_id *c = ur_list_entry(l, struct cma_id, link);

		if (c->conn.local_id == comm_id && comm_id)
			return c;
	}
	return NULL;
}

void cma_send_to(int dev, int gid_index, const union ibv_gid *dgid, const struct ur_cm_msg *m)
{
	struct ibv_ah_attr ah = {
		.is_global = 1,
		.port_num = 1,
		.grh = { .dgid = *dgid, .sgid_index = (uint8_t)gid_index, .hop_limit = 64 },
	};
	uint8_t mad[UR_MAD_BYTES];

	if (ur_cm_pack(m, mad))
		return;
	/* Lost or refused: the state machine's timer sends it again. */
	(void)uroce_gsi_send(cma.devs[dev].verbs, &ah, mad, sizeof(mad));
}

void cma_send(struct cma_id *c, const struct ur_cm_msg *m)
{
	if (c->dev >= 0)
		cma_send_to(c->dev, c->gid_index, &c->dgid, m);
}
