/* Regions published to the transports that copy into this process
 * directly, and their pages moved into a memfd for peers to map
 * (docs/design.md, "Shared regions").
 *
 * Moving costs about a millisecond a megabyte, there and back, and gains
 * only where peers copy large WRITEs and READs into the region: so a
 * region moves once peers have copied, by the kernel, twice its size into
 * or out of it (at least UR_SHARE_AFTER_MIN).  The responder's protocol
 * sees each such copy (ur_mr_note_placed) and queues the region; a thread
 * of its own ("uroce-share") moves it, away from every QP's lock: it takes
 * the region back from the peers (their copies in flight waited out, the
 * next ones sent in packets meanwhile: a page a peer's kernel copy has
 * pinned cannot be held), moves its pages, and publishes it again with
 * its memfd.  Memory the program shares already (a MAP_SHARED memfd or
 * /dev/shm file) is published with its file at once: nothing moves.
 *
 * share_lock orders a move against publishing and revoking a region
 * (reg, dereg, rereg): while the mover holds it the region cannot go, and
 * a region revoked is not moved.  A region can be queued again between
 * its revocation and its removal from the key table (a responder still
 * looking it up): ibv_dereg_mr takes it off the queue once no lookup can
 * find it (ur_mr_share_forget).  queue_lock, the innermost, guards the
 * queue alone.
 *
 * Regions whose ranges share a page move together: buffers carved from
 * one allocation at addresses that are not page-aligned (fio's, one
 * region each) would otherwise move one by one, and each move leaves the
 * neighbours' first or last page in the memfd, so they could never move
 * ("a shared mapping"): half of fio's copies stayed the kernel's.  The
 * published private regions are kept on a list (share_lock) for the
 * mover to find them. */
#include "core/mr.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/context.h"
#include "core/device.h"
#include "core/pd.h"
#include "util/atfork.h"
#include "util/config.h"
#include "util/list.h"
#include "util/log.h"
#include "util/vm_share.h"
#include "xport/xport.h"

#define UR_SHARE_AFTER_MIN (1u << 20)

static pthread_mutex_t share_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
static struct ur_list queue = { &queue, &queue };
static struct ur_list privates = { &privates, &privates };  /* published, not shared */
static bool mover_started;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* UROCE_SHM_SHARE_MR=0 keeps every region private; so does single copy
 * off, which would never use the mapping.  By default a region that peers
 * copy into moves (above) where every write to it meanwhile, a system
 * call's too, can be held in its page fault (userfaultfd's write
 * protection, util/wp_hold.h: root, or CAP_SYS_PTRACE).  With
 * UROCE_SHM_SHARE_MR=1 every region with remote access moves when it is
 * registered, and wherever userfaultfd allows only user-mode writes to be
 * held (a system call writing the pages while they move then fails with
 * EFAULT) or is refused (the SIGSEGV hold, which a program that installs
 * its own handler after uroce's and does not pass the fault on, as UCX
 * does, would not survive). */
static enum ur_vm_move share_mode(void)
{
	switch (ur_config()->shm_share_mr) {
	case UR_CONFIG_SHARE_NEVER:
		return UR_VM_MOVE_NEVER;
	case UR_CONFIG_SHARE_ANY:
		return UR_VM_MOVE_ANY;
	default:
		return UR_VM_MOVE_HELD;
	}
}

static bool shareable(struct ur_context *ctx, const struct ur_mr *mr)
{
	return share_mode() != UR_VM_MOVE_NEVER && !mr->implicit && !mr->dm_users &&
	       ur_xports_expose_any(ctx->xports);
}

/* The pages of mr shared through a memfd (moved if how allows), into r's
 * share fields; said at info level when they stay private.  share_lock
 * held, or mr not yet published. */
static bool share(struct ur_context *ctx, struct ur_mr *mr, enum ur_vm_move how,
		  struct ur_xport_region *r)
{
	const char *why = NULL;
	int ret;

	ret = ur_vm_share_get(mr->host, mr->length, how, &mr->share, &why);
	if (ret) {
		if (how != UR_VM_MOVE_NEVER)
			ur_info(NULL, "region %p+%llu stays private (%s): peers copy into it with "
				"the kernel", (void *)mr->host, (unsigned long long)mr->length,
				why ? why : strerror(-ret));
		return false;
	}
	mr->shared = true;
	r->share_id = mr->share.id;
	r->share_fd = mr->share.fd;
	r->share_base = mr->share.base;
	r->share_len = mr->share.len;
	__atomic_add_fetch(&ctx->dev->cnt[UR_CNT_MR_SHARED], 1, __ATOMIC_RELAXED);
	return true;
}

/* On the list of published private regions, or off it; share_lock held. */
static void note_private(struct ur_context *ctx, struct ur_mr *mr)
{
	bool want = mr->exposed && !mr->shared && shareable(ctx, mr);

	if (want == mr->in_private)
		return;
	if (want)
		ur_list_add_tail(&privates, &mr->private_link);
	else
		ur_list_del(&mr->private_link);
	mr->in_private = want;
}

static void mr_unshare(struct ur_mr *mr)
{
	if (mr->shared)
		ur_vm_share_put(&mr->share);
	mr->shared = false;
}

static struct ur_xport_region region_of(const struct ur_mr *mr)
{
	return (struct ur_xport_region){
		.rkey = mr->ke.key,
		.pd = ur_pd_id(mr->pd),
		.access = (uint32_t)mr->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ),
		.iova = mr->iova,
		.length = mr->length,
		.host = mr->host,
	};
}

void ur_mr_expose(struct ur_context *ctx, struct ur_mr *mr)
{
	struct ur_xport_region r = region_of(mr);
	bool tried = false;

	if (!ctx->xports || !r.access || !mr->host)
		return;
	pthread_mutex_lock(&share_lock);
	/* The program's own shared file at once; private memory now only
	 * when asked (UROCE_SHM_SHARE_MR=1), else once peers copy into it. */
	if (shareable(ctx, mr))
		tried = share(ctx, mr, share_mode() == UR_VM_MOVE_ANY ? UR_VM_MOVE_ANY
								  : UR_VM_MOVE_NEVER, &r) ||
			share_mode() == UR_VM_MOVE_ANY;
	__atomic_store_n(&mr->placed_by_kernel, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&mr->share_tried, tried, __ATOMIC_RELAXED);
	mr->exposed = !ur_xports_expose_region(ctx->xports, &r);
	if (!mr->exposed)
		mr_unshare(mr);
	note_private(ctx, mr);
	pthread_mutex_unlock(&share_lock);
}

/* Off the queue; share_lock held. */
static void dequeue(struct ur_mr *mr)
{
	pthread_mutex_lock(&queue_lock);
	if (mr->share_queued) {
		ur_list_del(&mr->share_link);
		mr->share_queued = false;
	}
	pthread_mutex_unlock(&queue_lock);
}

void ur_mr_revoke(struct ur_context *ctx, struct ur_mr *mr)
{
	pthread_mutex_lock(&share_lock);
	dequeue(mr);
	if (mr->exposed && ctx->xports)
		ur_xports_revoke_region(ctx->xports, mr->ke.key);
	mr->exposed = false;
	/* No peer copies into it now: back to private memory. */
	mr_unshare(mr);
	note_private(ctx, mr);
	pthread_mutex_unlock(&share_lock);
}

void ur_mr_share_forget(struct ur_mr *mr)
{
	pthread_mutex_lock(&share_lock);
	dequeue(mr);
	pthread_mutex_unlock(&share_lock);
}

void ur_mr_share_forget_context(struct ur_context *ctx)
{
	struct ur_list *l, *next;

	pthread_mutex_lock(&share_lock);
	pthread_mutex_lock(&queue_lock);
	for (l = queue.next; l != &queue; l = next) {
		struct ur_mr *mr = container_of(l, struct ur_mr, share_link);

		next = l->next;
		if (to_uctx(mr->ibmr.context) == ctx) {
			ur_list_del(&mr->share_link);
			mr->share_queued = false;
		}
	}
	pthread_mutex_unlock(&queue_lock);
	pthread_mutex_unlock(&share_lock);
}

/* ---- the mover ----------------------------------------------------------- */

/* The pages [*lo, *hi) of a region. */
static void pages_of(const struct ur_mr *mr, uintptr_t *lo, uintptr_t *hi)
{
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);

	*lo = (uintptr_t)mr->host & ~(pg - 1);
	*hi = ((uintptr_t)mr->host + mr->length + pg - 1) & ~(pg - 1);
}

/* The published private regions that share a page with [*lo, *hi), and
 * theirs with them, moved to the front of the list (after mr) and counted;
 * [*lo, *hi) grows to hold them all.  share_lock held. */
static unsigned gather(struct ur_mr *mr, uintptr_t *lo, uintptr_t *hi)
{
	struct ur_list *end = &mr->private_link;  /* the group: privates.next .. end */
	unsigned n = 1;
	bool grew = true;

	ur_list_del(&mr->private_link);
	ur_list_add(&privates, &mr->private_link);
	while (grew) {
		grew = false;
		for (struct ur_list *l = end->next, *next; l != &privates; l = next) {
			struct ur_mr *m = container_of(l, struct ur_mr, private_link);
			uintptr_t mlo, mhi;

			next = l->next;
			pages_of(m, &mlo, &mhi);
			if (mhi <= *lo || mlo >= *hi)
				continue;
			*lo = mlo < *lo ? mlo : *lo;
			*hi = mhi > *hi ? mhi : *hi;
			ur_list_del(l);
			ur_list_add(end, l);
			end = l;
			n++;
			grew = true;
		}
	}
	return n;
}

/* Moves one region's pages, already taken back from the peers, and
 * publishes it again with them (or private, as before).  share_lock held. */
static void republish(struct ur_mr *mr, bool moved_with_neighbours)
{
	struct ur_context *ctx = to_uctx(mr->ibmr.context);
	struct ur_xport_region r = region_of(mr);

	dequeue(mr);
	__atomic_store_n(&mr->share_tried, true, __ATOMIC_RELAXED);
	if (share(ctx, mr, share_mode(), &r))
		ur_info(NULL, "region %p+%llu moved into a memfd after peers copied %llu bytes "
			"into and out of it by the kernel%s: they copy with memcpy now",
			(void *)mr->host, (unsigned long long)mr->length,
			(unsigned long long)__atomic_load_n(&mr->placed_by_kernel, __ATOMIC_RELAXED),
			moved_with_neighbours ? " (with the regions it shares pages with)" : "");
	mr->exposed = !ur_xports_expose_region(ctx->xports, &r);
	if (!mr->exposed)
		mr_unshare(mr);
	note_private(ctx, mr);
}

/* Moves mr's pages, with those of every published private region that
 * shares a page with it, and publishes them again (share_lock held: mr is
 * alive and exposed, or revoked and off the queue). */
static void move_one(struct ur_mr *mr)
{
	struct ur_list *l, *next, *stop;
	struct ur_vm_share together;
	const char *why = NULL;
	bool together_ok;
	uintptr_t lo, hi;
	unsigned n;

	if (!mr->exposed || !mr->in_private)
		return;
	pages_of(mr, &lo, &hi);
	n = gather(mr, &lo, &hi);
	stop = privates.next;
	for (unsigned i = 0; i < n; i++)
		stop = stop->next;
	/* No peer may copy meanwhile: a page its kernel copy pinned would
	 * take writes the move does not see. */
	for (l = privates.next; l != stop; l = l->next) {
		struct ur_mr *m = container_of(l, struct ur_mr, private_link);

		ur_xports_revoke_region(to_uctx(m->ibmr.context)->xports, m->ke.key);
	}
	/* The pages of the group move at once; each region then takes its
	 * reference on the memfd they are in.  If they cannot, each tries
	 * alone and says why it stays. */
	together_ok = n > 1 && !ur_vm_share_get((void *)lo, hi - lo, share_mode(), &together, &why);
	if (n > 1 && !together_ok)
		ur_info(NULL, "regions %p..%p (%u sharing pages) cannot move together (%s)",
			(void *)lo, (void *)hi, n, why ? why : "the move failed");
	for (l = privates.next; l != stop; l = next) {
		next = l->next;
		republish(container_of(l, struct ur_mr, private_link), together_ok);
	}
	if (together_ok)
		ur_vm_share_put(&together);
}

static void *mover(void *arg)
{
	(void)arg;
	for (;;) {
		struct ur_mr *mr = NULL;

		pthread_mutex_lock(&queue_lock);
		while (ur_list_empty(&queue))
			pthread_cond_wait(&queue_cond, &queue_lock);
		pthread_mutex_unlock(&queue_lock);
		/* share_lock before taking one off: a region cannot be
		 * revoked (and freed) between the two. */
		pthread_mutex_lock(&share_lock);
		pthread_mutex_lock(&queue_lock);
		if (!ur_list_empty(&queue)) {
			mr = container_of(queue.next, struct ur_mr, share_link);
			ur_list_del(&mr->share_link);
			mr->share_queued = false;
		}
		pthread_mutex_unlock(&queue_lock);
		if (mr)
			move_one(mr);
		pthread_mutex_unlock(&share_lock);
	}
	return NULL;
}

/* A child of fork() has no mover, and none of the parent's regions. */
static void at_child(void)
{
	ur_list_init(&queue);
	ur_list_init(&privates);
	mover_started = false;
	pthread_mutex_init(&queue_lock, NULL);
	pthread_mutex_init(&share_lock, NULL);
	pthread_cond_init(&queue_cond, NULL);
}

static void atfork_install(void)
{
	static const struct ur_atfork_hooks hooks = { .child = at_child };

	ur_atfork_register(UR_ATFORK_SHARE_MOVER, &hooks);
}

/* queue_lock held. */
static void start_mover(void)
{
	pthread_attr_t attr;
	pthread_t t;

	if (mover_started)
		return;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (!pthread_create(&t, &attr, mover, NULL)) {
		pthread_setname_np(t, "uroce-share");
		mover_started = true;
	}
	pthread_attr_destroy(&attr);
}

void ur_mr_note_placed(struct ur_context *ctx, struct ur_mr *mr, uint64_t len)
{
	uint64_t placed, want;

	/* Tried: shared already (it is the program's own file, or moved), or
	 * queued, or it could not move. */
	if (__atomic_load_n(&mr->share_tried, __ATOMIC_RELAXED) || !shareable(ctx, mr))
		return;
	placed = __atomic_add_fetch(&mr->placed_by_kernel, len, __ATOMIC_RELAXED);
	want = mr->length * 2 > UR_SHARE_AFTER_MIN ? mr->length * 2 : UR_SHARE_AFTER_MIN;
	if (placed < want || __atomic_exchange_n(&mr->share_tried, true, __ATOMIC_RELAXED))
		return;
	pthread_once(&atfork_once, atfork_install);
	pthread_mutex_lock(&queue_lock);
	ur_list_add_tail(&queue, &mr->share_link);
	mr->share_queued = true;
	start_mover();
	pthread_cond_signal(&queue_cond);
	pthread_mutex_unlock(&queue_lock);
}
