/* XRC domains: a namespace of XRC SRQs that XRC target QPs deliver into.
 *
 * A domain opened with a file descriptor is identified by that file's
 * inode, so opening the same file again returns the same domain, as the
 * kernel does.  Two processes opening the same file on the same device
 * share the domain: an XRC target QP of one delivers into the XRC SRQs of
 * the other by handing messages over (rel/xrc.c); each process lists
 * only its own SRQs here, and SRQ numbers are unique on the host.
 */
#ifndef UROCE_CORE_XRCD_H
#define UROCE_CORE_XRCD_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

#include "util/compiler.h"
#include "util/list.h"

struct ur_context;
struct ur_srq;

struct ur_xrcd {
	struct ibv_xrcd ibxrcd;
	struct ur_context *ctx;
	dev_t dev;
	ino_t ino;
	bool has_inode;
	int opens;                 /* ibv_open_xrcd calls not yet closed */
	uint32_t users;            /* SRQs and QPs in it: close waits... -> EBUSY */
	pthread_mutex_t lock;      /* srqs */
	struct ur_list srqs;
	struct ur_list link;       /* on the process's list (core/process.h) */
};

static inline struct ur_xrcd *to_uxrcd(struct ibv_xrcd *x)
{
	return container_of(x, struct ur_xrcd, ibxrcd);
}

int ur_xrcd_open(struct ur_context *ctx, const struct ibv_xrcd_init_attr *attr,
		 struct ur_xrcd **out);
int ur_xrcd_close(struct ur_xrcd *xrcd);
/* The XRC SRQ with this number in the domain, or NULL. */
struct ur_srq *ur_xrcd_find_srq(struct ur_xrcd *xrcd, uint32_t srq_num);
/* The XRC SRQ numbered srq_num of this process in the domain of file
 * (dev, ino) on device ibdev, or NULL.  The SRQ stays valid while the
 * caller runs in a reactor callback (destroy quiesces). */
struct ur_srq *ur_xrcd_find_shared_srq(const char *ibdev, uint64_t dev, uint64_t ino,
				       uint32_t srq_num);
void ur_xrcd_add_srq(struct ur_xrcd *xrcd, struct ur_srq *srq);
void ur_xrcd_del_srq(struct ur_xrcd *xrcd, struct ur_srq *srq);

#endif
