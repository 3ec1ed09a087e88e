#include "core/cq.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/context.h"
#include "core/limits.h"
#include "engine/engine.h"
#include "util/clock.h"
#include "util/log.h"

/* ---- completion channels ------------------------------------------------ */

struct ur_chan_event {
	struct ur_list link;
	struct ur_cq *cq;
};

struct ur_comp_channel *ur_channel_create(struct ur_context *ctx)
{
	struct ur_comp_channel *ch = calloc(1, sizeof(*ch));
	int fds[2];

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	if (pipe2(fds, O_CLOEXEC)) {
		free(ch);
		return NULL;
	}
	fcntl(fds[1], F_SETFL, O_NONBLOCK);
	ch->ibch.context = &ctx->vctx.context;
	ch->ibch.fd = fds[0];
	ch->ibch.refcnt = 0;
	ch->wfd = fds[1];
	pthread_mutex_init(&ch->lock, NULL);
	ur_list_init(&ch->events);
	return ch;
}

int ur_channel_destroy(struct ur_comp_channel *ch)
{
	struct ur_list *pos, *tmp;

	if (ch->ibch.refcnt)
		return -EBUSY;
	ur_list_for_each_safe(pos, tmp, &ch->events) {
		ur_list_del(pos);
		free(ur_list_entry(pos, struct ur_chan_event, link));
	}
	pthread_mutex_destroy(&ch->lock);
	close(ch->ibch.fd);
	close(ch->wfd);
	free(ch);
	return 0;
}

int ur_channel_get_event(struct ur_comp_channel *ch, struct ur_cq **cq)
{
	for (;;) {
		struct ur_chan_event *ev = NULL;
		ssize_t n;
		char b;

		do
			n = read(ch->ibch.fd, &b, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			return n < 0 ? -errno : -EIO;
		pthread_mutex_lock(&ch->lock);
		if (!ur_list_empty(&ch->events)) {
			ev = ur_list_entry(ch->events.next, struct ur_chan_event, link);
			ur_list_del(&ev->link);
			/* Counted while the channel lock keeps the CQ from being
			 * destroyed: from now on it waits for this event's ack. */
			pthread_mutex_lock(&ev->cq->ibcq.mutex);
			ev->cq->events_reported++;
			pthread_mutex_unlock(&ev->cq->ibcq.mutex);
		}
		pthread_mutex_unlock(&ch->lock);
		if (ev) {
			*cq = ev->cq;
			free(ev);
			return 0;
		}
		/* The byte of an event whose CQ was destroyed unread: next. */
	}
}

/* cq->lock held: queues the channel event and disarms. */
static void fire_event(struct ur_cq *cq)
{
	struct ur_comp_channel *ch = cq->ibcq.channel ? to_uchan(cq->ibcq.channel) : NULL;
	struct ur_chan_event *ev;
	char b = 1;

	cq->armed = false;
	cq->mod_pending = 0;
	if (cq->mod_timer.deadline)
		ur_engine_timer_cancel(&cq->mod_timer);
	if (!ch)
		return;
	ev = calloc(1, sizeof(*ev));
	if (!ev) {
		ur_warn_ratelimited(NULL, "completion event lost: out of memory");
		return;
	}
	ev->cq = cq;
	pthread_mutex_lock(&ch->lock);
	ur_list_add_tail(&ch->events, &ev->link);
	pthread_mutex_unlock(&ch->lock);
	if (write(ch->wfd, &b, 1) != 1)
		ur_warn_ratelimited(NULL, "completion channel write failed: %s",
				    strerror(errno));
}

/* Drops the events of cq still queued on its channel, unread. */
static void drop_channel_events(struct ur_cq *cq)
{
	struct ur_comp_channel *ch = to_uchan(cq->ibcq.channel);
	struct ur_list *pos, *tmp;

	pthread_mutex_lock(&ch->lock);
	ur_list_for_each_safe(pos, tmp, &ch->events) {
		struct ur_chan_event *ev = ur_list_entry(pos, struct ur_chan_event, link);

		if (ev->cq == cq) {
			ur_list_del(pos);
			free(ev);
		}
	}
	pthread_mutex_unlock(&ch->lock);
}

/* Called with cq->lock held, after a completion was added. */
static void notify(struct ur_cq *cq, bool solicited, bool error)
{
	if (!cq->armed || (cq->solicited_only && !solicited && !error))
		return;
	if (!error && (cq->mod_count > 1 || cq->mod_period_us)) {
		cq->mod_pending++;
		if (!cq->mod_count || cq->mod_pending < cq->mod_count) {
			if (cq->mod_period_us && !cq->mod_timer.deadline)
				ur_engine_timer_arm(&cq->mod_timer,
						    ur_now_ns() + cq->mod_period_us * 1000ull);
			return;
		}
	}
	fire_event(cq);
}

static void moderation_expired(struct ur_timer *t)
{
	struct ur_cq *cq = container_of(t, struct ur_cq, mod_timer);

	pthread_spin_lock(&cq->lock);
	if (cq->armed && cq->mod_pending)
		fire_event(cq);
	pthread_spin_unlock(&cq->lock);
}

int ur_cq_modify(struct ur_cq *cq, const struct ibv_modify_cq_attr *attr)
{
	if (attr->attr_mask & ~(uint32_t)IBV_CQ_ATTR_MODERATE)
		return -EINVAL;
	if (!ur_engine_get())
		return -errno;
	pthread_spin_lock(&cq->lock);
	if (attr->attr_mask & IBV_CQ_ATTR_MODERATE) {
		cq->mod_count = attr->moderate.cq_count;
		cq->mod_period_us = attr->moderate.cq_period;
	}
	pthread_spin_unlock(&cq->lock);
	return 0;
}

/* ---- the extended polling interface ------------------------------------- */

static inline struct ur_cq *ex_to_ucq(struct ibv_cq_ex *ex)
{
	return container_of(ex, struct ur_cq, ibcq);
}

static void load_cur(struct ur_cq *cq)
{
	cq->cur = cq->ring[cq->head & (cq->size - 1)];
	cq->head++;
	cq->ibcq.wr_id = cq->cur.wc.wr_id;
	cq->ibcq.status = cq->cur.wc.status;
}

static int ex_start_poll(struct ibv_cq_ex *ex, struct ibv_poll_cq_attr *attr)
{
	struct ur_cq *cq = ex_to_ucq(ex);

	if (attr->comp_mask)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	if (cq->head == cq->tail) {
		pthread_spin_unlock(&cq->lock);
		ur_engine_poll(ur_engine_get());
		pthread_spin_lock(&cq->lock);
		if (cq->head == cq->tail) {
			pthread_spin_unlock(&cq->lock);
			return ENOENT;
		}
	}
	load_cur(cq);
	return 0;   /* the lock is held until ibv_end_poll */
}

static int ex_next_poll(struct ibv_cq_ex *ex)
{
	struct ur_cq *cq = ex_to_ucq(ex);

	if (cq->head == cq->tail)
		return ENOENT;
	load_cur(cq);
	return 0;
}

static void ex_end_poll(struct ibv_cq_ex *ex)
{
	pthread_spin_unlock(&ex_to_ucq(ex)->lock);
}

#define CUR(ex) (ex_to_ucq(ex)->cur.wc)

static enum ibv_wc_opcode ex_read_opcode(struct ibv_cq_ex *ex) { return CUR(ex).opcode; }
static uint32_t ex_read_vendor_err(struct ibv_cq_ex *ex) { return CUR(ex).vendor_err; }
static uint32_t ex_read_byte_len(struct ibv_cq_ex *ex) { return CUR(ex).byte_len; }
static __be32 ex_read_imm_data(struct ibv_cq_ex *ex) { return CUR(ex).imm_data; }
static uint32_t ex_read_qp_num(struct ibv_cq_ex *ex) { return CUR(ex).qp_num; }
static uint32_t ex_read_src_qp(struct ibv_cq_ex *ex) { return CUR(ex).src_qp; }
static unsigned int ex_read_wc_flags(struct ibv_cq_ex *ex) { return CUR(ex).wc_flags; }
static uint32_t ex_read_slid(struct ibv_cq_ex *ex) { return CUR(ex).slid; }
static uint8_t ex_read_sl(struct ibv_cq_ex *ex) { return CUR(ex).sl; }
static uint8_t ex_read_dlid_path_bits(struct ibv_cq_ex *ex) { return CUR(ex).dlid_path_bits; }
static uint64_t ex_read_completion_ts(struct ibv_cq_ex *ex) { return ex_to_ucq(ex)->cur.ts_ns; }
static uint16_t ex_read_cvlan(struct ibv_cq_ex *ex) { return 0; }
static uint32_t ex_read_flow_tag(struct ibv_cq_ex *ex) { return 0; }

static uint64_t ex_read_completion_wallclock_ns(struct ibv_cq_ex *ex)
{
	/* Completion times are taken on CLOCK_MONOTONIC; convert by the
	 * current offset to CLOCK_REALTIME. */
	struct timespec rt, mono;
	int64_t off;

	clock_gettime(CLOCK_REALTIME, &rt);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	off = ((int64_t)rt.tv_sec - mono.tv_sec) * 1000000000ll +
	      (rt.tv_nsec - mono.tv_nsec);
	return ex_to_ucq(ex)->cur.ts_ns + (uint64_t)off;
}

static void ex_read_tm_info(struct ibv_cq_ex *ex, struct ibv_wc_tm_info *tm)
{
	memset(tm, 0, sizeof(*tm));
}

#define UR_CQ_SUPPORTED_WC_FLAGS                                           \
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM | \
	 IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |      \
	 IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |  \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

static void set_ex_ops(struct ur_cq *cq)
{
	struct ibv_cq_ex *ex = &cq->ibcq;

	ex->start_poll = ex_start_poll;
	ex->next_poll = ex_next_poll;
	ex->end_poll = ex_end_poll;
	ex->read_opcode = ex_read_opcode;
	ex->read_vendor_err = ex_read_vendor_err;
	ex->read_byte_len = ex_read_byte_len;
	ex->read_imm_data = ex_read_imm_data;
	ex->read_qp_num = ex_read_qp_num;
	ex->read_src_qp = ex_read_src_qp;
	ex->read_wc_flags = ex_read_wc_flags;
	ex->read_slid = ex_read_slid;
	ex->read_sl = ex_read_sl;
	ex->read_dlid_path_bits = ex_read_dlid_path_bits;
	ex->read_completion_ts = ex_read_completion_ts;
	ex->read_completion_wallclock_ns = ex_read_completion_wallclock_ns;
	ex->read_cvlan = ex_read_cvlan;
	ex->read_flow_tag = ex_read_flow_tag;
	ex->read_tm_info = ex_read_tm_info;
}

/* ---- CQ objects --------------------------------------------------------- */

static uint32_t ring_size_for(uint32_t depth)
{
	uint32_t size = 1;

	while (size <= depth)
		size <<= 1;
	return size;
}

struct ur_cq *ur_cq_create(struct ur_context *ctx, const struct ibv_cq_init_attr_ex *attr)
{
	struct ur_cq *cq;

	if (attr->cqe < 1 || attr->cqe > UR_MAX_CQE) {
		ur_err(ctx->dev->ibdev.name, "CQ of %u entries: the device allows 1..%d",
		       attr->cqe, UR_MAX_CQE);
		errno = EINVAL;
		return NULL;
	}
	if (attr->wc_flags & ~(uint64_t)UR_CQ_SUPPORTED_WC_FLAGS) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->depth = attr->cqe;
	cq->size = ring_size_for(cq->depth);
	cq->ring = calloc(cq->size, sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->ctx = ctx;
	cq->wc_flags_ex = attr->wc_flags;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	cq->ibcq.context = &ctx->vctx.context;
	cq->ibcq.channel = attr->channel;
	cq->ibcq.cq_context = attr->cq_context;
	cq->ibcq.cqe = (int)cq->depth;
	pthread_mutex_init(&cq->ibcq.mutex, NULL);
	pthread_cond_init(&cq->ibcq.cond, NULL);
	set_ex_ops(cq);
	ur_list_init(&cq->mod_timer.link);
	cq->mod_timer.fire = moderation_expired;
	if (attr->channel)
		__atomic_add_fetch(&attr->channel->refcnt, 1, __ATOMIC_RELAXED);
	return cq;
}

int ur_cq_destroy(struct ur_cq *cq)
{
	if (__atomic_load_n(&cq->users, __ATOMIC_ACQUIRE))
		return -EBUSY;
	if (cq->mod_count || cq->mod_period_us) {
		ur_engine_timer_cancel(&cq->mod_timer);
		ur_engine_quiesce(ur_engine_get());   /* a firing timer is done */
	}
	/* As the kernel does: events still queued unread go with the CQ, and
	 * destroy waits until every event the application did read has been
	 * acknowledged with ibv_ack_cq_events. */
	if (cq->ibcq.channel)
		drop_channel_events(cq);
	pthread_mutex_lock(&cq->ibcq.mutex);
	while (cq->ibcq.comp_events_completed != cq->events_reported)
		pthread_cond_wait(&cq->ibcq.cond, &cq->ibcq.mutex);
	pthread_mutex_unlock(&cq->ibcq.mutex);
	if (cq->ibcq.channel)
		__atomic_sub_fetch(&cq->ibcq.channel->refcnt, 1, __ATOMIC_RELAXED);
	ur_async_forget(&cq->ctx->async, cq);
	pthread_spin_destroy(&cq->lock);
	free(cq->ring);
	free(cq);
	return 0;
}

int ur_cq_resize(struct ur_cq *cq, int cqe)
{
	uint32_t nsize, used;
	struct ur_cqe *nring;

	if (cqe < 1 || cqe > UR_MAX_CQE)
		return -EINVAL;
	nsize = ring_size_for((uint32_t)cqe);
	nring = calloc(nsize, sizeof(*nring));
	if (!nring)
		return -ENOMEM;
	pthread_spin_lock(&cq->lock);
	used = cq->tail - cq->head;
	if (used > (uint32_t)cqe) {
		pthread_spin_unlock(&cq->lock);
		free(nring);
		return -EINVAL;   /* would drop completions still queued */
	}
	for (uint32_t i = 0; i < used; i++)
		nring[i] = cq->ring[(cq->head + i) & (cq->size - 1)];
	free(cq->ring);
	cq->ring = nring;
	cq->size = nsize;
	cq->depth = (uint32_t)cqe;
	cq->head = 0;
	cq->tail = used;
	cq->ibcq.cqe = cqe;
	pthread_spin_unlock(&cq->lock);
	return 0;
}

int ur_cq_poll(struct ur_cq *cq, int n, struct ibv_wc *wc)
{
	int i = 0;

	pthread_spin_lock(&cq->lock);
	while (i < n && cq->head != cq->tail) {
		wc[i++] = cq->ring[cq->head & (cq->size - 1)].wc;
		cq->head++;
	}
	pthread_spin_unlock(&cq->lock);
	return i;
}

void ur_cq_purge_qp(struct ur_cq *cq, uint32_t qp_num)
{
	uint32_t keep = cq->head;

	pthread_spin_lock(&cq->lock);
	keep = cq->head;
	for (uint32_t i = cq->head; i != cq->tail; i++) {
		struct ur_cqe *e = &cq->ring[i & (cq->size - 1)];

		if (e->wc.qp_num != qp_num)
			cq->ring[keep++ & (cq->size - 1)] = *e;
	}
	cq->tail = keep;
	pthread_spin_unlock(&cq->lock);
}

int ur_cq_req_notify(struct ur_cq *cq, int solicited_only)
{
	pthread_spin_lock(&cq->lock);
	cq->armed = true;
	cq->solicited_only = solicited_only != 0;
	pthread_spin_unlock(&cq->lock);
	return 0;
}

int ur_cq_push(struct ur_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	struct ur_cqe *e;

	pthread_spin_lock(&cq->lock);
	/* Once overrun, the CQ is in error: nothing more is written to it,
	 * even when polling has made room. */
	if (cq->overrun || cq->tail - cq->head >= cq->depth) {
		bool first = !cq->overrun;

		cq->overrun = true;
		pthread_spin_unlock(&cq->lock);
		if (first) {
			struct ibv_async_event ev = { .event_type = IBV_EVENT_CQ_ERR };

			ev.element.cq = (struct ibv_cq *)&cq->ibcq;
			ur_err(cq->ctx->dev->ibdev.name,
			       "CQ overrun: more than %u completions unpolled", cq->depth);
			ur_async_post(&cq->ctx->async, &ev);
		}
		return -ENOSPC;
	}
	e = &cq->ring[cq->tail & (cq->size - 1)];
	e->wc = *wc;
	e->ts_ns = (cq->wc_flags_ex & (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
				       IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK))
			   ? ur_now_ns() : 0;
	cq->tail++;
	notify(cq, solicited, wc->status != IBV_WC_SUCCESS);
	pthread_spin_unlock(&cq->lock);
	return 0;
}
