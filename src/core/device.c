#include "core/device.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/limits.h"
#include "core/process.h"
#include "util/compiler.h"
#include "util/clock.h"
#include "util/config.h"
#include "util/lock.h"
#include "util/log.h"

#define UR_NETDEV_REFRESH_NS 1000000000ull   /* GIDs follow address changes within 1 s */


/* Which interfaces become devices, and under which names.
 * UROCE_DEVICES="netdev,name:netdev,..." selects explicitly; otherwise the
 * devices file (UROCE_DEVICES_FILE, or ~/.config/uroce/devices) if it lists
 * any; otherwise every interface with an address becomes uroce<N> in
 * ifindex order. */
struct dev_wish {
	char name[UR_DEV_NAME_MAX];
	char netdev[IF_NAMESIZE];
};

static int parse_wishes(const char *spec, struct dev_wish *w, int max)
{
	char buf[1024], *save = NULL, *tok;
	int n = 0;

	snprintf(buf, sizeof(buf), "%s", spec);
	for (tok = strtok_r(buf, ", \t\n", &save); tok && n < max;
	     tok = strtok_r(NULL, ", \t\n", &save)) {
		char *colon = strchr(tok, ':');

		if (colon) {
			*colon = '\0';
			snprintf(w[n].name, sizeof(w[n].name), "%s", tok);
			snprintf(w[n].netdev, sizeof(w[n].netdev), "%s", colon + 1);
		} else {
			w[n].name[0] = '\0';
			snprintf(w[n].netdev, sizeof(w[n].netdev), "%s", tok);
		}
		n++;
	}
	return n;
}

/* The configuration `uroce link add` writes: one "NAME NETDEV" per line,
 * '#' comments.  -1 when there is no file (or it lists nothing), so that
 * every interface gets a device. */
static int read_devices_file(struct dev_wish *w, int max)
{
	const struct ur_config *cfg = ur_config();
	char line[256];
	FILE *f;
	int n = 0;

	if (cfg->devices_file_err)
		return -1;
	f = fopen(cfg->devices_file, "re");
	if (!f)
		return -1;
	while (n < max && fgets(line, sizeof(line), f)) {
		char name[UR_DEV_NAME_MAX], netdev[IF_NAMESIZE];
		char *hash = strchr(line, '#');

		if (hash)
			*hash = '\0';
		if (sscanf(line, "%55s %15s", name, netdev) != 2)
			continue;
		snprintf(w[n].name, sizeof(w[n].name), "%s", name);
		snprintf(w[n].netdev, sizeof(w[n].netdev), "%s", netdev);
		n++;
	}
	fclose(f);
	return n ? n : -1;
}

/* Whether UROCE_DEVICES_SKIP (interfaces, comma-separated) names netdev:
 * it gets no device, and the others keep the names they would have had
 * (uroce run leaves lo out this way for libfabric's MSG endpoints). */
static bool skipped(const char *netdev)
{
	const char *t = ur_config()->devices_skip;
	size_t len = strlen(netdev);

	while (t && *t) {
		size_t n = strcspn(t, ",");

		if (n == len && !strncmp(t, netdev, n))
			return true;
		t += n + (t[n] == ',');
	}
	return false;
}

/* The helpers below run with devices->lock held. */
static struct ur_device *find_by_netdev(struct ur_device_list *devices, const char *netdev)
{
	for (unsigned i = 0; i < devices->n; i++)
		if (!strcmp(devices->dev[i]->netdev_name, netdev))
			return devices->dev[i];
	return NULL;
}

static bool name_taken(struct ur_device_list *devices, const char *name)
{
	for (unsigned i = 0; i < devices->n; i++)
		if (!strcmp(devices->dev[i]->ibdev.name, name))
			return true;
	return false;
}

static struct ur_device *device_new(struct ur_device_list *devices, const char *name,
				    const struct ur_netdev *nd)
{
	struct ur_device *dev;

	if (devices->n == UR_MAX_DEVICES)
		return NULL;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	pthread_mutex_init(&dev->lock, NULL);
	pthread_mutex_init(&dev->ctx_lock, NULL);
	ur_list_init(&dev->contexts);
	dev->index = devices->n;
	snprintf(dev->netdev_name, sizeof(dev->netdev_name), "%s", nd->name);
	dev->nd = *nd;
	dev->refreshed_ns = ur_now_ns();
	dev->ibdev.node_type = IBV_NODE_CA;
	dev->ibdev.transport_type = IBV_TRANSPORT_IB;
	snprintf(dev->ibdev.name, sizeof(dev->ibdev.name), "%s", name);
	snprintf(dev->ibdev.dev_name, sizeof(dev->ibdev.dev_name), "uverbs-%s", name);
	snprintf(dev->ibdev.dev_path, sizeof(dev->ibdev.dev_path),
		 "/sys/class/infiniband_verbs/uverbs-%s", name);
	snprintf(dev->ibdev.ibdev_path, sizeof(dev->ibdev.ibdev_path),
		 "/sys/class/infiniband/%s", name);
	devices->dev[devices->n++] = dev;
	ur_info(name, "created on interface %s", nd->name);
	return dev;
}

static void auto_name(struct ur_device_list *devices, char *out, size_t len, unsigned pos)
{
	unsigned n = pos;

	do
		snprintf(out, len, "uroce%u", n++);
	while (name_taken(devices, out));
}

int ur_device_list(struct ur_device ***out, int *num)
{
	struct ur_device_list *devices = &ur_process()->devices;
	struct dev_wish wish[UR_MAX_DEVICES];
	const char *spec = ur_config()->devices;
	struct ur_device **list;
	struct ur_netdev *nds;
	unsigned nnd;
	int nwish = -1, count = 0, ret;

	ur_log_init();
	ret = ur_netdev_scan(&nds, &nnd);
	if (ret)
		return ret;
	if (spec)
		nwish = parse_wishes(spec, wish, UR_MAX_DEVICES);
	else
		nwish = read_devices_file(wish, UR_MAX_DEVICES);

	pthread_mutex_lock(&devices->lock);
	for (unsigned i = 0; i < devices->n; i++) {
		pthread_mutex_lock(&devices->dev[i]->lock);
		devices->dev[i]->present = 0;
		pthread_mutex_unlock(&devices->dev[i]->lock);
	}
	for (unsigned i = 0; i < nnd; i++) {
		struct ur_device *dev = find_by_netdev(devices, nds[i].name);
		char name[UR_DEV_NAME_MAX];
		int w = -1;

		if (skipped(nds[i].name))
			continue;
		if (nwish >= 0) {
			for (int k = 0; k < nwish; k++)
				if (!strcmp(wish[k].netdev, nds[i].name))
					w = k;
			if (w < 0)
				continue;
		}
		if (!dev) {
			if (w >= 0 && wish[w].name[0])
				snprintf(name, sizeof(name), "%s", wish[w].name);
			else
				auto_name(devices, name, sizeof(name), w >= 0 ? (unsigned)w : i);
			dev = device_new(devices, name, &nds[i]);
			if (!dev)
				continue;
		}
		pthread_mutex_lock(&dev->lock);
		dev->nd = nds[i];
		dev->refreshed_ns = ur_now_ns();
		dev->present = 1;
		pthread_mutex_unlock(&dev->lock);
	}
	list = calloc(devices->n + 1, sizeof(*list));
	if (list) {
		for (unsigned i = 0; i < devices->n; i++)
			if (ur_device_snapshot_present(devices->dev[i]))
				list[count++] = devices->dev[i];
	}
	pthread_mutex_unlock(&devices->lock);
	free(nds);
	if (!list)
		return -ENOMEM;
	*out = list;
	*num = count;
	return 0;
}

void ur_device_foreach(void (*fn)(struct ur_device *dev, void *arg), void *arg)
{
	struct ur_device_list *devices = &ur_process()->devices;
	struct ur_device *snap[UR_MAX_DEVICES];
	unsigned n;

	pthread_mutex_lock(&devices->lock);
	n = devices->n;
	memcpy(snap, devices->dev, n * sizeof(*snap));
	pthread_mutex_unlock(&devices->lock);
	for (unsigned i = 0; i < n; i++)
		fn(snap[i], arg);
}

struct ur_device *ur_device_by_name(const char *name)
{
	struct ur_device *found = NULL, **list;
	int n;

	if (ur_device_list(&list, &n))
		return NULL;
	for (int i = 0; i < n; i++)
		if (!strcmp(list[i]->ibdev.name, name))
			found = list[i];
	free(list);
	return found;
}

bool ur_device_is_ours(const struct ibv_device *ibdev)
{
	struct ur_device_list *devices = &ur_process()->devices;
	bool ours = false;

	pthread_mutex_lock(&devices->lock);
	for (unsigned i = 0; i < devices->n; i++)
		if (&devices->dev[i]->ibdev == ibdev)
			ours = true;
	pthread_mutex_unlock(&devices->lock);
	return ours;
}

bool ur_device_snapshot_present(struct ur_device *dev)
{
	return ur_read_locked(mutex, &dev->lock, dev->present);
}

bool ur_device_snapshot(struct ur_device *dev, struct ur_netdev *out)
{
	uint64_t now = ur_now_ns();
	bool present;

	pthread_mutex_lock(&dev->lock);
	if (now - dev->refreshed_ns > UR_NETDEV_REFRESH_NS) {
		struct ur_netdev nd;
		int ret = ur_netdev_get(dev->netdev_name, &nd);

		if (!ret) {
			dev->nd = nd;
			dev->present = 1;
		} else if (ret == -ENODEV) {
			dev->present = 0;
			dev->nd.flags = 0;
			dev->nd.ngid = 0;
		}
		dev->refreshed_ns = now;
	}
	*out = dev->nd;
	present = dev->present;
	pthread_mutex_unlock(&dev->lock);
	return present;
}

uint64_t ur_device_guid(struct ur_device *dev)
{
	union ibv_gid gid;
	uint64_t guid;

	pthread_mutex_lock(&dev->lock);
	ur_gid_eui64(&gid, dev->nd.mac);
	pthread_mutex_unlock(&dev->lock);
	memcpy(&guid, &gid.raw[8], 8);
	return guid;
}

int ur_device_obj_get(struct ur_device *dev, enum ur_obj_kind kind)
{
	static const uint32_t limit[UR_OBJ_NR] = {
		[UR_OBJ_PD] = UR_MAX_PD, [UR_OBJ_CQ] = UR_MAX_CQ, [UR_OBJ_QP] = UR_MAX_QP,
		[UR_OBJ_SRQ] = UR_MAX_SRQ, [UR_OBJ_AH] = UR_MAX_AH,
	};
	static const char *const name[UR_OBJ_NR] = {
		[UR_OBJ_PD] = "PDs", [UR_OBJ_CQ] = "CQs", [UR_OBJ_QP] = "QPs",
		[UR_OBJ_SRQ] = "SRQs", [UR_OBJ_AH] = "AHs",
	};

	if (__atomic_add_fetch(&dev->objs[kind], 1, __ATOMIC_RELAXED) <= limit[kind])
		return 0;
	__atomic_sub_fetch(&dev->objs[kind], 1, __ATOMIC_RELAXED);
	/* As with a NIC's limits, some programs find them by asking: debug. */
	ur_dbg(dev->ibdev.name, "%s: this process has the %u the device allows (max_%s); "
	       "destroy some first", name[kind], limit[kind],
	       kind == UR_OBJ_PD ? "pd" : kind == UR_OBJ_CQ ? "cq" : kind == UR_OBJ_QP ? "qp" :
	       kind == UR_OBJ_SRQ ? "srq" : "ah");
	return -ENOMEM;
}

void ur_device_obj_put(struct ur_device *dev, enum ur_obj_kind kind)
{
	__atomic_sub_fetch(&dev->objs[kind], 1, __ATOMIC_RELAXED);
}

void *ur_device_obj_alloc(struct ur_device *dev, enum ur_obj_kind kind, size_t size)
{
	void *obj;

	if (ur_device_obj_get(dev, kind))
		return NULL;
	obj = calloc(1, size);
	if (!obj)
		ur_device_obj_put(dev, kind);
	return obj;
}

void ur_device_attr(struct ur_device *dev, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", UR_VERSION_STR);
	a->node_guid = ur_device_guid(dev);
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = ~0ull;
	a->page_size_cap = 0xfffff000;
	a->vendor_id = 0xffffff;          /* no OUI: a software device, as rxe */
	a->vendor_part_id = ur_config()->has_vendor_part_id ? ur_config()->vendor_part_id
							    : UR_VENDOR_PART_ID;
	a->hw_ver = 0;
	a->max_qp = UR_MAX_QP;
	a->max_qp_wr = UR_MAX_QP_WR;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN |
			      IBV_DEVICE_SYS_IMAGE_GUID |
			      IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_WINDOW_TYPE_2B |
			      IBV_DEVICE_XRC;
	a->max_sge = UR_MAX_SGE;
	a->max_sge_rd = UR_MAX_SGE_RD;
	a->max_cq = UR_MAX_CQ;
	a->max_cqe = UR_MAX_CQE;
	a->max_mr = UR_MAX_MR;
	a->max_pd = UR_MAX_PD;
	a->max_qp_rd_atom = UR_MAX_QP_RD_ATOM;
	a->max_ee_rd_atom = 0;
	a->max_res_rd_atom = UR_MAX_QP_RD_ATOM * UR_MAX_QP;
	a->max_qp_init_rd_atom = UR_MAX_QP_RD_ATOM;
	a->max_ee_init_rd_atom = 0;
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_ee = 0;
	a->max_rdd = 0;
	a->max_mw = UR_MAX_MW;
	a->max_raw_ipv6_qp = 0;
	a->max_raw_ethy_qp = 0;
	a->max_mcast_grp = UR_MAX_MCAST_GRP;
	a->max_mcast_qp_attach = UR_MAX_MCAST_QP_ATTACH;
	a->max_total_mcast_qp_attach = UR_MAX_TOTAL_MCAST_QP_ATTACH;
	a->max_ah = UR_MAX_AH;
	a->max_fmr = 0;
	a->max_map_per_fmr = 0;
	a->max_srq = UR_MAX_SRQ;
	a->max_srq_wr = UR_MAX_SRQ_WR;
	a->max_srq_sge = UR_MAX_SRQ_SGE;
	a->max_pkeys = UR_MAX_PKEYS;
	a->local_ca_ack_delay = UR_LOCAL_ACK_DELAY;
	a->phys_port_cnt = 1;
}

void ur_speed_width(int mbps, uint8_t *speed, uint8_t *width)
{
	/* IB encodings: speed SDR 1 (2.5G), QDR 4 (10G), EDR 32 (25G), HDR 64
	 * (50G), NDR 128 (100G); width 1X 1, 4X 2. */
	static const struct { int mbps; uint8_t speed, width; } map[] = {
		{ 2500, 1, 1 },   { 10000, 4, 1 },  { 25000, 32, 1 },
		{ 40000, 4, 2 },  { 50000, 64, 1 }, { 100000, 32, 2 },
		{ 200000, 64, 2 }, { 400000, 128, 2 },
	};
	unsigned i;

	if (mbps <= 0) {
		/* lo and virtual links have no speed: software moves data at
		 * memory speed, so report a 100G-class link (EDR 4X). */
		*speed = 32;
		*width = 2;
		return;
	}
	for (i = 0; i + 1 < UR_ARRAY_SIZE(map) && map[i + 1].mbps <= mbps; i++)
		;
	*speed = map[i].speed;
	*width = map[i].width;
}

void ur_port_attr(struct ur_device *dev, struct ibv_port_attr *p)
{
	struct ur_netdev nd;
	bool up;

	up = ur_device_snapshot(dev, &nd) && (nd.flags & IFF_UP) && (nd.flags & IFF_RUNNING);
	memset(p, 0, sizeof(*p));
	p->state = up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	p->max_mtu = UR_MAX_MTU;
	p->active_mtu = ur_mtu_from_netdev(nd.mtu);
	p->gid_tbl_len = UR_MAX_GID;
	p->port_cap_flags = IBV_PORT_IP_BASED_GIDS;
	p->max_msg_sz = UR_MAX_MSG_SZ;
	p->pkey_tbl_len = UR_MAX_PKEYS;
	p->max_vl_num = 1;
	p->phys_state = up ? 5 /* LINK_UP */ : 3 /* DISABLED */;
	p->link_layer = IBV_LINK_LAYER_ETHERNET;
	ur_speed_width(nd.speed_mbps, &p->active_speed, &p->active_width);
}
