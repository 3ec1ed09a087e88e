/* Assembling the stack: the reactor and its thread, the transports with
 * their hooks wired to the protocol, the host registry, housekeeping, and
 * what is left to send at exit. */
#include "rel/stack_open.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/context.h"
#include "core/device.h"
#include "core/process.h"
#include "host/registry.h"
#include "rel/progress.h"
#include "rel/recv.h"
#include "rel/res.h"
#include "rel/resp_batch.h"
#include "rel/stack.h"
#include "util/atfork.h"
#include "util/clock.h"
#include "util/config.h"
#include "util/log.h"

#define UR_HOUSEKEEPING_NS 200000000ull   /* 200 ms */

/* ---- the transports' hooks ---------------------------------------------- */

static void on_rx(void *arg, const uint8_t *pkt, size_t len, const struct ur_rx_meta *meta)
{
	ur_recv_packet(arg, pkt, len, meta);
}

static void on_rx_batch(void *arg, bool begin)
{
	if (begin)
		ur_resp_batch_begin();
	else
		ur_resp_batch_end();
}

static void on_local_msg(void *arg, const uint8_t *msg, size_t len)
{
	ur_recv_local_msg(arg, msg, len);
}

static void on_writable(void *arg)
{
	ur_progress_resume(arg);
}

static void on_dropped(void *arg, enum ur_xport_drop why, const union ibv_gid *dgid)
{
	static const enum ur_counter cnt[] = {
		[UR_XPORT_DROP_ICRC] = UR_CNT_ICRC_ERRORS,
		[UR_XPORT_DROP_MALFORMED] = UR_CNT_MALFORMED,
		[UR_XPORT_DROP_HOST_LOST] = UR_CNT_HOST_LOST,
	};

	(void)arg;
	if (dgid)
		ur_device_count_by_gid(dgid, cnt[why]);
}

static void on_injected(void *arg, enum ur_xport_fault what, const union ibv_gid *dgid)
{
	static const enum ur_counter cnt[] = {
		[UR_XPORT_FAULT_LOSS] = UR_CNT_INJECTED_LOSS,
		[UR_XPORT_FAULT_REORDER] = UR_CNT_INJECTED_REORDER,
		[UR_XPORT_FAULT_DUP] = UR_CNT_INJECTED_DUP,
		[UR_XPORT_FAULT_CORRUPT] = UR_CNT_INJECTED_CORRUPT,
	};

	(void)arg;
	ur_device_count_by_gid(dgid, cnt[what]);
}

/* ---- housekeeping (engine thread) ---------------------------------------- */

/* Port-4791 elections, port and GID events, counters published for other
 * processes to read: a few times a second. */
static void housekeeping(struct ur_timer *t)
{
	struct ur_stack *s = container_of(t, struct ur_stack, housekeeping);
	uint64_t now = ur_now_ns();

	ur_xports_tick(&s->xports, now);
	ur_device_watch();
	ur_device_publish_counters(s->reg);
	ur_engine_timer_arm(s->engine, t, now + UR_HOUSEKEEPING_NS);
}

/* ---- assembly ------------------------------------------------------------ */

static struct ur_stack *alloc_stack(void)
{
	struct ur_stack *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (ur_qp_table_init(&s->qps)) {
		free(s);
		return NULL;
	}
	pthread_rwlock_init(&s->qps_lock, NULL);
	pthread_mutex_init(&s->waiting_lock, NULL);
	pthread_mutex_init(&s->gsi_lock, NULL);
	s->res.fd = -1;
	pthread_mutex_init(&s->res.cm_lock, NULL);
	ur_list_init(&s->waiting);
	/* On unless UROCE_SELECTIVE_RETRANSMIT=0: a requester whose
	 * responder does not hold (rxe, a NIC without out-of-order
	 * placement) learns so from its answers and goes back as before
	 * (comp.c, docs/reliability.md). */
	s->selective = ur_config()->selective;
	/* Opt-in as on NICs (mlx5's out-of-order data placement is a QP
	 * creation flag): a real loss is NAKed a few packets later. */
	s->ooo = ur_config()->ooo;
	ur_mcast_init(&s->mcast);
	return s;
}

static void free_stack(struct ur_stack *s)
{
	ur_qp_table_fini(&s->qps);
	pthread_rwlock_destroy(&s->qps_lock);
	pthread_mutex_destroy(&s->waiting_lock);
	pthread_mutex_destroy(&s->gsi_lock);
	pthread_mutex_destroy(&s->res.cm_lock);
	free(s);
}

/* The one stack that ends with the process. */
static struct ur_stack *exiting;
static bool atexit_set;

/* The last ACKs of a finished run must not be lost in a queue; then the
 * host's port goes to the next process at once (udp_host_port.c). */
static void stack_atexit(void)
{
	/* The registry stays attached when the stack failed (no `exiting`),
	 * and an atexit handler gets no argument: the process's, from its
	 * object. */
	struct ur_registry *reg = &ur_process()->registry;

	if (exiting) {
		ur_xports_drain(&exiting->xports, 500);
		ur_xports_leave(&exiting->xports);
	}
	ur_device_publish_counters(reg);
	ur_registry_detach(reg);
}

static int open_stack(const struct ur_xports *given, unsigned engine_flags,
		      struct ur_stack **out)
{
	const struct ur_xport_hooks hooks = {
		.rx = on_rx, .rx_batch = on_rx_batch, .local_msg = on_local_msg,
		.writable = on_writable,
		.dropped = on_dropped,
		.injected = on_injected,
	};
	struct ur_xport_hooks h = hooks;
	struct ur_stack *s;
	int ret;

	*out = NULL;            /* a child of fork() must not keep its parent's */
	ur_log_init();
	s = alloc_stack();
	if (!s)
		return -ENOMEM;
	h.arg = s;
	/* The registry is the process's (core/process.h): the stack attaches
	 * it and passes it down.  It stays attached on failure: the slot is
	 * the process's, given back at exit. */
	s->reg = &ur_process()->registry;
	ret = ur_registry_attach(s->reg);
	if (ret)
		goto err_free_stack;
	if (!atexit_set) {   /* once: a child of fork() inherits the parent's */
		atexit(stack_atexit);
		atexit_set = true;
	}
	ret = ur_engine_create(engine_flags, "uroce-engine", &s->engine);
	if (ret)
		goto err_free_stack;
	if (given)
		s->xports = *given;
	else
		ret = ur_xports_open(&s->xports, s->engine, s->reg, &h);   /* none open on failure */
	if (ret)
		goto err_destroy_engine;
	if (!(engine_flags & UR_ENGINE_NO_THREAD))
		ur_res_open(s);         /* unseen by `uroce res` without it, still working */
	ret = ur_engine_timer_init(s->engine, &s->housekeeping, housekeeping);
	if (ret)
		goto err_close_xports;
	if (!(engine_flags & UR_ENGINE_NO_THREAD))
		ur_engine_timer_arm(s->engine, &s->housekeeping, ur_now_ns());
	exiting = s;
	*out = s;
	return 0;

	/* Undone while the engine's threads still run (the transports and
	 * the resource window unwatch their fds and wait for callbacks in
	 * progress), then the engine stops and joins them. */
err_close_xports:
	ur_res_close(s);
	if (!given)             /* the caller's */
		ur_xports_close(&s->xports);
err_destroy_engine:
	ur_engine_destroy(s->engine);
err_free_stack:
	free_stack(s);
	ur_err(NULL, "cannot start the uroce engine: %s", strerror(-ret));
	return ret;
}

/* The process's stack.  A child of fork() inherits its parent's, without
 * the engine thread that ran it: the child's first use opens a stack of
 * its own (the parent's objects stay unusable in the child, as the verbs
 * contract has it), so a program that forks workers after looking at the
 * devices (pyverbs' rdma_cm tests, multiprocessing servers) works. */
static struct ur_stack *the_stack;
static int the_err;
static unsigned the_gen;          /* the fork generation that opened it; 0: none */
static pthread_mutex_t the_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;

/* A fork while another thread opens the stack must not leave the child's
 * copy of the lock held. */
static void lock_for_fork(void)
{
	pthread_mutex_lock(&the_lock);
	/* A call, not a jump: the lock-order recorder (tests/lockorder) names
	 * a lock by where its call returns, which a jump would leave in the
	 * fork handler (util/atfork.c), a file of no row. */
	__asm__ volatile("" ::: "memory");
}

static void unlock_after_fork(void)
{
	pthread_mutex_unlock(&the_lock);
}

static void watch_forks(void)
{
	static const struct ur_atfork_hooks hooks = {
		lock_for_fork, unlock_after_fork, unlock_after_fork,
	};

	ur_atfork_register(UR_ATFORK_STACK, &hooks);
}

int ur_stack_get(struct ur_stack **out)
{
	unsigned gen;
	int err;

	pthread_once(&fork_once, watch_forks);
	gen = ur_fork_generation();
	pthread_mutex_lock(&the_lock);
	if (the_gen != gen) {
		the_gen = gen;
		exiting = NULL;   /* the parent's: not drained at this exit */
		the_err = open_stack(NULL, 0, &the_stack);
	}
	err = the_err;
	*out = the_stack;
	pthread_mutex_unlock(&the_lock);
	return err;
}

int ur_stack_create_threadless(const struct ur_xports *xports, struct ur_stack **out)
{
	return open_stack(xports, UR_ENGINE_NO_THREAD, out);
}

void ur_stack_bind(struct ur_stack *s, int err, struct ur_context *ctx)
{
	if (!s) {
		ctx->stack_err = err ? err : -EIO;
		return;
	}
	ctx->stack = s;
	ctx->engine = s->engine;
	ctx->xports = &s->xports;
	ctx->stack_err = 0;
}
