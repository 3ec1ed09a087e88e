#include "core/xrcd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/context.h"
#include "core/device.h"
#include "core/process.h"
#include "core/srq.h"

/* xrcds->lock held. */
static struct ur_xrcd *find_inode(struct ur_xrcd_list *xrcds, struct ur_context *ctx,
				  dev_t dev, ino_t ino)
{
	struct ur_list *pos;

	ur_list_for_each(pos, &xrcds->all) {
		struct ur_xrcd *x = ur_list_entry(pos, struct ur_xrcd, link);

		if (x->has_inode && x->dev == dev && x->ino == ino && x->ctx->dev == ctx->dev)
			return x;
	}
	return NULL;
}

/* An existing domain of the file (dev, ino) for these flags, or none:
 * 0, or -EEXIST / -ENOENT as open(2) answers.  xrcds->lock held. */
static int lookup(struct ur_xrcd_list *xrcds, struct ur_context *ctx, const struct stat *st,
		  int oflags, struct ur_xrcd **x)
{
	*x = find_inode(xrcds, ctx, st->st_dev, st->st_ino);
	if (*x && (oflags & O_EXCL) && (oflags & O_CREAT))
		return -EEXIST;
	if (!*x && !(oflags & O_CREAT))
		return -ENOENT;
	return 0;
}

int ur_xrcd_open(struct ur_context *ctx, const struct ibv_xrcd_init_attr *attr,
		 struct ur_xrcd **out)
{
	struct ur_xrcd_list *xrcds = &ur_process()->xrcds;
	int fd = (attr->comp_mask & IBV_XRCD_INIT_ATTR_FD) ? attr->fd : -1;
	int oflags = (attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS) ? attr->oflags : 0;
	struct ur_xrcd *x = NULL;
	struct stat st;
	int ret = 0;

	if (attr->comp_mask & ~(uint32_t)(IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS |
					  IBV_XRCD_INIT_ATTR_RESERVED))
		return -EINVAL;
	if (fd >= 0 && fstat(fd, &st))
		return -errno;
	if (fd < 0 && !(oflags & O_CREAT))
		return -EINVAL;    /* an anonymous domain can only be created */
	pthread_mutex_lock(&xrcds->lock);
	if (fd >= 0)
		ret = lookup(xrcds, ctx, &st, oflags, &x);
	if (!ret && x)
		x->opens++;
	if (ret || x)
		goto out;
	x = calloc(1, sizeof(*x));
	if (!x) {
		ret = -ENOMEM;
		goto out;
	}
	x->ctx = ctx;
	x->ibxrcd.context = &ctx->vctx.context;
	x->opens = 1;
	if (fd >= 0) {
		x->has_inode = true;
		x->dev = st.st_dev;
		x->ino = st.st_ino;
	}
	pthread_mutex_init(&x->lock, NULL);
	ur_list_init(&x->srqs);
	ur_list_add_tail(&xrcds->all, &x->link);
out:
	pthread_mutex_unlock(&xrcds->lock);
	if (!ret)
		*out = x;
	return ret;
}

int ur_xrcd_close(struct ur_xrcd *x)
{
	struct ur_xrcd_list *xrcds = &ur_process()->xrcds;

	pthread_mutex_lock(&xrcds->lock);
	if (x->opens == 1 && __atomic_load_n(&x->users, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&xrcds->lock);
		return -EBUSY;
	}
	if (--x->opens) {
		pthread_mutex_unlock(&xrcds->lock);
		return 0;
	}
	ur_list_del(&x->link);
	pthread_mutex_unlock(&xrcds->lock);
	pthread_mutex_destroy(&x->lock);
	free(x);
	return 0;
}

struct ur_srq *ur_xrcd_find_srq(struct ur_xrcd *x, uint32_t srq_num)
{
	struct ur_srq *found = NULL;
	struct ur_list *pos;

	pthread_mutex_lock(&x->lock);
	ur_list_for_each(pos, &x->srqs) {
		struct ur_srq *s = ur_list_entry(pos, struct ur_srq, xrcd_link);

		if (s->srq_num == srq_num) {
			found = s;
			break;
		}
	}
	pthread_mutex_unlock(&x->lock);
	return found;
}

struct ur_srq *ur_xrcd_find_shared_srq(const char *ibdev, uint64_t dev, uint64_t ino,
				       uint32_t srq_num)
{
	struct ur_xrcd_list *xrcds = &ur_process()->xrcds;
	struct ur_srq *found = NULL;
	struct ur_list *pos;

	pthread_mutex_lock(&xrcds->lock);
	ur_list_for_each(pos, &xrcds->all) {
		struct ur_xrcd *x = ur_list_entry(pos, struct ur_xrcd, link);

		if (!x->has_inode || (uint64_t)x->dev != dev || (uint64_t)x->ino != ino ||
		    strcmp(x->ctx->dev->ibdev.name, ibdev))
			continue;
		found = ur_xrcd_find_srq(x, srq_num);
		if (found)
			break;
	}
	pthread_mutex_unlock(&xrcds->lock);
	return found;
}

void ur_xrcd_add_srq(struct ur_xrcd *x, struct ur_srq *srq)
{
	pthread_mutex_lock(&x->lock);
	ur_list_add_tail(&x->srqs, &srq->xrcd_link);
	pthread_mutex_unlock(&x->lock);
	__atomic_add_fetch(&x->users, 1, __ATOMIC_RELAXED);
}

void ur_xrcd_del_srq(struct ur_xrcd *x, struct ur_srq *srq)
{
	pthread_mutex_lock(&x->lock);
	ur_list_del(&srq->xrcd_link);
	pthread_mutex_unlock(&x->lock);
	__atomic_sub_fetch(&x->users, 1, __ATOMIC_RELAXED);
}
