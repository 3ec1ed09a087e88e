/* Software RoCE devices: one per network interface with an address.
 *
 * Devices live for the whole process (applications may keep ibv_device
 * pointers after ibv_free_device_list), so the list only grows; a device
 * whose interface vanished reports its port DOWN.
 */
#ifndef UROCE_CORE_DEVICE_H
#define UROCE_CORE_DEVICE_H

#include <pthread.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "core/counters.h"
#include "host/netdev.h"
#include "util/list.h"

#define UR_DEV_NAME_MAX 56   /* leaves room for "uverbs-" in a 64-byte sysfs name */
#define UR_VERSION_STR "0.1.0"

/* Kinds of objects whose number ibv_query_device limits (core/limits.h). */
enum ur_obj_kind { UR_OBJ_PD, UR_OBJ_CQ, UR_OBJ_QP, UR_OBJ_SRQ, UR_OBJ_AH, UR_OBJ_NR };

struct ur_registry;

struct ur_device {
	struct ibv_device ibdev;   /* applications get &ibdev: keep first */
	unsigned index;            /* ibv_get_device_index */
	char netdev_name[IF_NAMESIZE];
	pthread_mutex_t lock;      /* guards nd, refreshed_ns and present */
	struct ur_netdev nd;
	uint64_t refreshed_ns;
	int present;

	/* Open contexts, for port and GID events (ctx_lock). */
	pthread_mutex_t ctx_lock;
	struct ur_list contexts;
	/* What the watcher last reported (ctx_lock). */
	bool watched;
	enum ibv_port_state last_state;
	unsigned last_ngid;
	union ibv_gid last_gid[UR_MAX_GID];

	uint64_t cnt[UR_CNT_NR];   /* this process's counts (atomic adds) */
	uint32_t objs[UR_OBJ_NR];  /* objects alive, by kind (atomic) */
};

static inline struct ur_device *to_udev(struct ibv_device *ibdev)
{
	return (struct ur_device *)ibdev;
}

/* Rescans the interfaces and returns the current devices in *out
 * (malloc'ed, NULL-terminated), their count in *num.  0 or -errno. */
int ur_device_list(struct ur_device ***out, int *num);
struct ur_device *ur_device_by_name(const char *name);
bool ur_device_is_ours(const struct ibv_device *ibdev);

/* A fresh-enough copy of the device's interface and GID table; returns
 * whether the interface is there (taken with the copy). */
bool ur_device_snapshot(struct ur_device *dev, struct ur_netdev *out);
/* Whether the interface was there at the last look (no refresh). */
bool ur_device_snapshot_present(struct ur_device *dev);

void ur_device_attr(struct ur_device *dev, struct ibv_device_attr *attr);

/* Counts one more object of kind on the device: 0, or -ENOMEM when this
 * process already has as many as ibv_query_device allows (the limits are
 * the device's, counted per process: each process has its own uroce).
 * Every successful get is paired with a put when the object goes. */
int ur_device_obj_get(struct ur_device *dev, enum ur_obj_kind kind);
void ur_device_obj_put(struct ur_device *dev, enum ur_obj_kind kind);
/* A zeroed object of size bytes counted as one of kind (ur_device_obj_get);
 * NULL past the limit or out of memory (then not counted). */
void *ur_device_obj_alloc(struct ur_device *dev, enum ur_obj_kind kind, size_t size);
/* Fills the full ibv_port_attr; callers with the 48-byte compat struct
 * copy only its prefix. */
void ur_port_attr(struct ur_device *dev, struct ibv_port_attr *attr);
uint64_t ur_device_guid(struct ur_device *dev);   /* network byte order */

/* Counts a packet dropped before any QP saw it, on the device that owns
 * the destination address (if any). */
void ur_device_count_by_gid(const union ibv_gid *dgid, enum ur_counter c);
/* Publishes this process's counts to the host registry. */
void ur_device_publish_counters(struct ur_registry *r);
/* A counter of the device summed over the host's processes (what
 * hw_counters/<name> reads). */
uint64_t ur_device_counter_total(struct ur_registry *r, struct ur_device *dev,
				 enum ur_counter c);

/* Calls fn on every device created so far. */
void ur_device_foreach(void (*fn)(struct ur_device *dev, void *arg), void *arg);

/* Compares every watched device's port state and GID table with what was
 * last seen and raises PORT_ACTIVE / PORT_ERR / GID_CHANGE / DEVICE_FATAL
 * on its open contexts.  Called by the engine a few times a second. */
void ur_device_watch(void);

/* IB speed/width codes for a link speed in Mb/s (-1: unknown). */
void ur_speed_width(int mbps, uint8_t *speed, uint8_t *width);

#endif
