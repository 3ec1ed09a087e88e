#include "engine/engine.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/device.h"
#include "core/qp.h"
#include "engine/mcast.h"
#include "engine/qp_table.h"
#include "rel/rel.h"
#include "rel/xrc.h"
#include "util/clock.h"
#include "util/log.h"
#include "wire/pkt_parse.h"
#include "host/registry.h"
#include "xport/udp/udp.h"

#define UR_MAX_WATCH 96               /* sockets, timers, and up to 64 local peers */
#define UR_TICK_NS 200000000ull          /* housekeeping at least this often */

struct watch {
	int fd;
	ur_fd_handler fn;
	void *arg;
};

struct ur_engine {
	pthread_t thread;
	int epfd;                            /* every fd the engine serves */
	int wake_fd;                         /* eventfd: new timers, shutdown */
	struct ur_udp *udp;

	pthread_mutex_t rx_lock;             /* one receiver at a time: keeps PSN order */
	pthread_rwlock_t table_lock;         /* qps; read-held while dispatching */
	struct ur_qp_table qps;

	pthread_mutex_t watch_lock;
	struct watch watches[UR_MAX_WATCH];

	pthread_mutex_t timer_lock;          /* timers lists, timer_min, sleep_until */
	struct ur_list timers;               /* QPs with armed timers */
	struct ur_list gtimers;              /* struct ur_timer */
	uint64_t sleep_until;

	pthread_mutex_t blocked_lock;
	struct ur_list blocked;

	uint64_t next_watch_ns;              /* port/GID events (engine thread) */
};

struct ur_engine_counters ur_engine_stats;

static struct ur_engine *the_engine;
static pthread_once_t engine_once = PTHREAD_ONCE_INIT;
static int engine_err;

/* ---- fd watches --------------------------------------------------------- */

int ur_engine_watch_fd(struct ur_engine *e, int fd, uint32_t events, ur_fd_handler fn, void *arg)
{
	struct epoll_event ev = { .events = events };
	int slot = -1;

	pthread_mutex_lock(&e->watch_lock);
	for (int i = 0; i < UR_MAX_WATCH; i++)
		if (!e->watches[i].fn) {
			slot = i;
			break;
		}
	if (slot < 0) {
		pthread_mutex_unlock(&e->watch_lock);
		return -ENOSPC;
	}
	e->watches[slot] = (struct watch){ fd, fn, arg };
	ev.data.ptr = &e->watches[slot];
	if (epoll_ctl(e->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		int err = errno;

		e->watches[slot].fn = NULL;
		pthread_mutex_unlock(&e->watch_lock);
		return -err;
	}
	pthread_mutex_unlock(&e->watch_lock);
	return 0;
}

int ur_engine_rewatch_fd(struct ur_engine *e, int fd, uint32_t events)
{
	int ret = -ENOENT;

	pthread_mutex_lock(&e->watch_lock);
	for (int i = 0; i < UR_MAX_WATCH; i++) {
		if (e->watches[i].fn && e->watches[i].fd == fd) {
			struct epoll_event ev = { .events = events, .data.ptr = &e->watches[i] };

			ret = epoll_ctl(e->epfd, EPOLL_CTL_MOD, fd, &ev) ? -errno : 0;
			break;
		}
	}
	pthread_mutex_unlock(&e->watch_lock);
	return ret;
}

void ur_engine_unwatch_fd(struct ur_engine *e, int fd)
{
	pthread_mutex_lock(&e->watch_lock);
	for (int i = 0; i < UR_MAX_WATCH; i++) {
		if (e->watches[i].fn && e->watches[i].fd == fd) {
			epoll_ctl(e->epfd, EPOLL_CTL_DEL, fd, NULL);
			e->watches[i].fn = NULL;
		}
	}
	pthread_mutex_unlock(&e->watch_lock);
}

static void wake(struct ur_engine *e)
{
	uint64_t one = 1;

	if (write(e->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		ur_warn_ratelimited(NULL, "engine wake-up failed: %s", strerror(errno));
}

/* Set on the engine thread only. */
static _Thread_local bool is_engine_thread;

/* The wake-up tells the engine thread to recompute how long it sleeps.  An
 * application thread polling the same epoll set (ur_engine_poll) sees the
 * event too, and must leave it: had it read the eventfd, the engine would
 * sleep on to its old deadline (up to a tick, 200 ms) past a retransmit or
 * RNR timer armed meanwhile.  Level-triggered, the event stays pending
 * until the engine thread takes it. */
static void on_wake(void *arg, uint32_t events)
{
	struct ur_engine *e = arg;
	uint64_t v;

	if (!is_engine_thread)
		return;
	if (read(e->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		ur_warn_ratelimited(NULL, "engine wake-up read failed: %s", strerror(errno));
}

/* ---- QPs ---------------------------------------------------------------- */

int ur_engine_qp_register(struct ur_engine *e, struct ur_qp *qp)
{
	uint32_t qpn;
	int ret = ur_registry_alloc_qpn(&qpn);

	if (ret)
		return ret;
	qp->qpx.qp_base.qp_num = qpn;
	pthread_rwlock_wrlock(&e->table_lock);
	ret = ur_qp_table_insert(&e->qps, qpn, qp);
	pthread_rwlock_unlock(&e->table_lock);
	if (ret)
		ur_registry_free_qpn(qpn);
	return ret;
}

void ur_engine_qp_unregister(struct ur_engine *e, struct ur_qp *qp)
{
	/* The write lock waits for a dispatch in progress to finish. */
	pthread_rwlock_wrlock(&e->table_lock);
	ur_qp_table_remove(&e->qps, ur_qp_num(qp));
	pthread_mutex_lock(&e->timer_lock);
	ur_list_del(&qp->timer_link);
	pthread_mutex_unlock(&e->timer_lock);
	pthread_mutex_lock(&e->blocked_lock);
	ur_list_del(&qp->blocked_link);
	pthread_mutex_unlock(&e->blocked_lock);
	pthread_rwlock_unlock(&e->table_lock);
	ur_registry_free_qpn(ur_qp_num(qp));
}

void ur_engine_quiesce(struct ur_engine *e)
{
	pthread_rwlock_wrlock(&e->table_lock);
	pthread_rwlock_unlock(&e->table_lock);
}

/* ---- timers ------------------------------------------------------------- */

static uint64_t qp_deadline(const struct ur_qp *qp)
{
	uint64_t a = qp->comp.retrans_deadline, b = qp->comp.rnr_deadline;

	if (!a)
		return b;
	if (!b)
		return a;
	return a < b ? a : b;
}

void ur_engine_timers_changed(struct ur_qp *qp)
{
	struct ur_engine *e = the_engine;
	uint64_t d = qp_deadline(qp);
	bool kick = false;

	pthread_mutex_lock(&e->timer_lock);
	qp->timer_min = d;
	if (d) {
		if (!ur_list_linked(&qp->timer_link))
			ur_list_add_tail(&e->timers, &qp->timer_link);
		kick = d < e->sleep_until;
	}
	pthread_mutex_unlock(&e->timer_lock);
	if (kick)
		wake(e);
}

void ur_engine_timer_arm(struct ur_timer *t, uint64_t deadline)
{
	struct ur_engine *e = the_engine;
	bool kick;

	pthread_mutex_lock(&e->timer_lock);
	t->deadline = deadline;
	if (!ur_list_linked(&t->link))
		ur_list_add_tail(&e->gtimers, &t->link);
	kick = deadline < e->sleep_until;
	pthread_mutex_unlock(&e->timer_lock);
	if (kick)
		wake(e);
}

void ur_engine_timer_cancel(struct ur_timer *t)
{
	struct ur_engine *e = the_engine;

	pthread_mutex_lock(&e->timer_lock);
	t->deadline = 0;
	ur_list_del(&t->link);
	pthread_mutex_unlock(&e->timer_lock);
}

static void run_gtimers(struct ur_engine *e, uint64_t now)
{
	struct ur_list due, *pos, *tmp;

	ur_list_init(&due);
	pthread_mutex_lock(&e->timer_lock);
	ur_list_for_each_safe(pos, tmp, &e->gtimers) {
		struct ur_timer *t = ur_list_entry(pos, struct ur_timer, link);

		if (t->deadline <= now) {
			ur_list_del(pos);
			t->deadline = 0;
			ur_list_add_tail(&due, pos);
		}
	}
	pthread_mutex_unlock(&e->timer_lock);
	ur_list_for_each_safe(pos, tmp, &due) {
		ur_list_del(pos);
		ur_list_entry(pos, struct ur_timer, link)->fire(ur_list_entry(pos, struct ur_timer, link));
	}
}

/* Table read lock held, so listed QPs cannot be freed under us. */
static void run_timers(struct ur_engine *e)
{
	struct ur_qp *due[64];
	struct ur_list *pos, *tmp;
	uint64_t now = ur_now_ns();
	int n;

	do {
		n = 0;
		pthread_mutex_lock(&e->timer_lock);
		ur_list_for_each_safe(pos, tmp, &e->timers) {
			struct ur_qp *qp = ur_list_entry(pos, struct ur_qp, timer_link);

			if (!qp->timer_min) {
				ur_list_del(pos);
			} else if (qp->timer_min <= now && n < (int)UR_ARRAY_SIZE(due)) {
				ur_list_del(pos);
				qp->timer_min = 0;
				due[n++] = qp;
			}
		}
		pthread_mutex_unlock(&e->timer_lock);
		for (int i = 0; i < n; i++) {
			pthread_mutex_lock(&due[i]->lock);
			ur_comp_timers(due[i], now);
			ur_engine_timers_changed(due[i]);
			pthread_mutex_unlock(&due[i]->lock);
		}
	} while (n == (int)UR_ARRAY_SIZE(due));
	run_gtimers(e, now);
}

static uint64_t next_deadline(struct ur_engine *e, uint64_t now)
{
	uint64_t next = now + UR_TICK_NS;
	struct ur_list *pos;

	pthread_mutex_lock(&e->timer_lock);
	ur_list_for_each(pos, &e->timers) {
		struct ur_qp *qp = ur_list_entry(pos, struct ur_qp, timer_link);

		if (qp->timer_min && qp->timer_min < next)
			next = qp->timer_min;
	}
	ur_list_for_each(pos, &e->gtimers) {
		struct ur_timer *t = ur_list_entry(pos, struct ur_timer, link);

		if (t->deadline < next)
			next = t->deadline;
	}
	e->sleep_until = next;
	pthread_mutex_unlock(&e->timer_lock);
	return next;
}

/* ---- stalled transmission ----------------------------------------------- */

void ur_engine_tx_blocked(struct ur_qp *qp)
{
	struct ur_engine *e = the_engine;

	pthread_mutex_lock(&e->blocked_lock);
	if (!ur_list_linked(&qp->blocked_link))
		ur_list_add_tail(&e->blocked, &qp->blocked_link);
	pthread_mutex_unlock(&e->blocked_lock);
	ur_udp_update_writable(e->udp, true);
}

void ur_engine_writable(struct ur_engine *e)
{
	struct ur_list todo, *pos, *tmp;
	bool more;

	/* Parked batches first: they are older than anything a QP would send.
	 * Some may stay (their peer is still full); QPs sending elsewhere go
	 * on, and those behind them block again. */
	ur_udp_flush_pending(e->udp);
	ur_list_init(&todo);
	pthread_mutex_lock(&e->blocked_lock);
	if (!ur_list_empty(&e->blocked)) {
		todo = e->blocked;
		todo.next->prev = &todo;
		todo.prev->next = &todo;
		ur_list_init(&e->blocked);
	}
	pthread_mutex_unlock(&e->blocked_lock);
	ur_list_for_each_safe(pos, tmp, &todo) {
		struct ur_qp *qp = ur_list_entry(pos, struct ur_qp, blocked_link);

		pthread_mutex_lock(&e->blocked_lock);
		ur_list_del(pos);
		pthread_mutex_unlock(&e->blocked_lock);
		pthread_mutex_lock(&qp->lock);
		qp->req.blocked = false;
		ur_qp_tx(qp);
		pthread_mutex_unlock(&qp->lock);
	}
	pthread_mutex_lock(&e->blocked_lock);
	more = !ur_list_empty(&e->blocked);
	pthread_mutex_unlock(&e->blocked_lock);
	ur_udp_update_writable(e->udp, more);
}

/* ---- receive dispatch --------------------------------------------------- */

void ur_engine_rx(struct ur_engine *e, const uint8_t *pkt, size_t len,
		  const struct ur_rx_meta *meta)
{
	struct ur_pkt_view v;
	struct ur_qp *qp;

	enum ur_parse_result pr = ur_pkt_parse(&v, pkt, len);

	if (pr != UR_PARSE_OK) {
		__atomic_add_fetch(&ur_engine_stats.malformed, 1, __ATOMIC_RELAXED);
		ur_device_count_by_gid(&meta->dgid, UR_CNT_MALFORMED);
		ur_dbg(NULL, "dropped a %zu byte packet: %s", len, ur_parse_result_name[pr]);
		return;
	}
	if (v.qpn == UR_MCAST_QPN) {
		ur_mcast_rx(&v, meta);
		return;
	}
	qp = ur_qp_table_find(&e->qps, v.qpn);
	if (!qp) {
		__atomic_add_fetch(&ur_engine_stats.no_qp, 1, __ATOMIC_RELAXED);
		ur_device_count_by_gid(&meta->dgid, UR_CNT_NO_QP);
		ur_dbg(NULL, "dropped a packet for QP 0x%06x: no such QP here", v.qpn);
		return;
	}
	pthread_mutex_lock(&qp->lock);
	ur_rel_rx(qp, &v, meta);
	pthread_mutex_unlock(&qp->lock);
}

struct ur_qp *ur_engine_find_qp(struct ur_engine *e, uint32_t qpn)
{
	return ur_qp_table_find(&e->qps, qpn);
}

void ur_engine_local_msg(struct ur_engine *e, const uint8_t *msg, size_t len)
{
	ur_xrc_local_rx(e, msg, len);
}

/* ---- the thread, and polling from application threads ------------------- */

/* rx_lock held. */
static void dispatch(struct ur_engine *e, struct epoll_event *evs, int n)
{
	pthread_rwlock_rdlock(&e->table_lock);
	for (int i = 0; i < n; i++) {
		struct watch *w = evs[i].data.ptr;

		if (w->fn)
			w->fn(w->arg, evs[i].events);
	}
	run_timers(e);
	pthread_rwlock_unlock(&e->table_lock);
}

/* A thread that polls an empty CQ gives its core away now and then: when
 * more processes spin than there are cores (several busy-polling programs
 * on a small machine), the process that must forward or answer the packet
 * this one waits for gets to run within microseconds instead of after a
 * whole scheduler time slice.  With a core to itself the yield returns at
 * once. */
#define UR_POLL_YIELD_EVERY 64

void ur_engine_poll(struct ur_engine *e)
{
	static _Thread_local unsigned empty_polls;
	struct epoll_event evs[16];
	int n;

	/* Somebody is already receiving: their completions will show. */
	if (pthread_mutex_trylock(&e->rx_lock))
		n = 0;
	else {
		n = epoll_wait(e->epfd, evs, 16, 0);
		if (n > 0)
			dispatch(e, evs, n);
		pthread_mutex_unlock(&e->rx_lock);
	}
	if (n > 0)
		empty_polls = 0;
	else if (++empty_polls % UR_POLL_YIELD_EVERY == 0)
		sched_yield();
}


/* UROCE_ENGINE_PRIO=idle puts the engine thread in SCHED_IDLE: it then
 * never takes a core from a busy-polling application, which helps latency
 * on small machines, but a passive side (a server blocked in a TCP read)
 * then makes progress only when some core is idle.  Off by default. */
static void set_priority(void)
{
	const char *p = getenv("UROCE_ENGINE_PRIO");
	struct sched_param sp = { 0 };

	if (!p || strcmp(p, "idle"))
		return;
	if (pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp))
		ur_info(NULL, "engine thread stays at normal priority: %s", strerror(errno));
}

static void *engine_main(void *arg)
{
	struct ur_engine *e = arg;
	struct epoll_event evs[32];
	sigset_t all;

	is_engine_thread = true;
	/* Signals belong to the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	set_priority();
	for (;;) {
		uint64_t now = ur_now_ns(), next = next_deadline(e, now);
		struct timespec ts = { 0, 0 };
		int n;

		if (next > now) {
			ts.tv_sec = (time_t)((next - now) / 1000000000ull);
			ts.tv_nsec = (long)((next - now) % 1000000000ull);
		}
		n = epoll_pwait2(e->epfd, evs, 32, &ts, NULL);
		pthread_mutex_lock(&e->timer_lock);
		e->sleep_until = 0;      /* awake: arming a timer needs no wake-up */
		pthread_mutex_unlock(&e->timer_lock);
		if (pthread_mutex_trylock(&e->rx_lock)) {
			/* An application thread is receiving right now: wait for
			 * it rather than spin, then take what it left. */
			pthread_mutex_lock(&e->rx_lock);
			n = epoll_wait(e->epfd, evs, 32, 0);
		}
		dispatch(e, evs, n < 0 ? 0 : n);
		pthread_mutex_unlock(&e->rx_lock);
		ur_udp_tick(e->udp);
		if (now >= e->next_watch_ns) {
			e->next_watch_ns = now + UR_TICK_NS;
			ur_device_watch();
			ur_device_publish_counters();
		}
	}
	return NULL;
}

static void engine_atexit(void)
{
	if (the_engine && the_engine->udp)
		ur_udp_drain(the_engine->udp, 500);
	ur_device_publish_counters();
	ur_registry_detach();
}

static void engine_init(void)
{
	struct ur_engine *e = calloc(1, sizeof(*e));
	int ret;

	ur_log_init();
	if (!e) {
		engine_err = ENOMEM;
		return;
	}
	pthread_mutex_init(&e->rx_lock, NULL);
	pthread_rwlock_init(&e->table_lock, NULL);
	pthread_mutex_init(&e->watch_lock, NULL);
	pthread_mutex_init(&e->timer_lock, NULL);
	pthread_mutex_init(&e->blocked_lock, NULL);
	ur_list_init(&e->timers);
	ur_list_init(&e->gtimers);
	ur_list_init(&e->blocked);
	e->epfd = -1;
	e->wake_fd = -1;
	ret = ur_qp_table_init(&e->qps);
	if (ret)
		goto err;
	ret = ur_registry_attach();
	if (ret)
		goto err;
	atexit(engine_atexit);
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	e->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (e->epfd < 0 || e->wake_fd < 0) {
		ret = -errno;
		goto err;
	}
	ret = ur_engine_watch_fd(e, e->wake_fd, EPOLLIN, on_wake, e);
	if (ret)
		goto err;
	the_engine = e;
	e->udp = ur_udp_create(e);
	if (!e->udp) {
		ret = -errno;
		goto err;
	}
	ret = -pthread_create(&e->thread, NULL, engine_main, e);
	if (ret)
		goto err;
	pthread_setname_np(e->thread, "uroce-engine");
	return;

err:
	ur_err(NULL, "cannot start the uroce engine: %s", strerror(-ret));
	engine_err = -ret;
	the_engine = NULL;
	/* The partial engine is deliberately kept: its fds may be watched. */
}

struct ur_engine *ur_engine_get(void)
{
	pthread_once(&engine_once, engine_init);
	if (!the_engine)
		errno = engine_err ? engine_err : EIO;
	return the_engine;
}

struct ur_xport *ur_engine_xport(struct ur_engine *e)
{
	return ur_udp_xport(e->udp);
}

void ur_engine_counters(struct ur_engine *e, struct ur_engine_counters *out)
{
	*out = ur_engine_stats;
}
