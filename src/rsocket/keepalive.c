/* SO_KEEPALIVE: a thread, started with the first socket that asks, sends
 * each such connected rsocket a 0-byte RDMA write every TCP_KEEPIDLE
 * seconds (rdma-core's keepalive: no receive is used at the peer, and a
 * peer that is gone turns the write into an error completion, which the
 * socket's next call reports as ECONNRESET). */
#include <time.h>
#include <unistd.h>

#include "rsocket/rsocket.h"
#include "util/clock.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;

void rs_keepalive_send(struct rsock *rs)
{
	uint64_t now = ur_now_ns();

	if (!rs->keepalive || rs->state != RS_CONNECTED || !rs_ctrl_avail(rs))
		return;
	if (!rs->last_keepalive_ns) {
		rs->last_keepalive_ns = now;
		return;
	}
	if (now - rs->last_keepalive_ns < (uint64_t)rs->keepidle * 1000000000ull)
		return;
	rs->last_keepalive_ns = now;
	rs->ctrl_seqno++;
	rs_post_write(rs, NULL, 0, rs_msg(RS_OP_CTRL, RS_CTRL_KEEPALIVE), 0, 0, 0);
}

static void visit(struct rsock *rs)
{
	if (pthread_mutex_trylock(&rs->lock))
		return;   /* busy: it is in use, which is alive enough */
	rs_progress(rs);
	rs_keepalive_send(rs);
	pthread_mutex_unlock(&rs->lock);
}

static void *run(void *arg)
{
	(void)arg;
	for (;;) {
		sleep(1);
		rs_table_each(visit);
	}
	return NULL;
}

static void start(void)
{
	pthread_t t;
	pthread_attr_t a;

	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_create(&t, &a, run, NULL);
	pthread_attr_destroy(&a);
}

void rs_keepalive_start(void)
{
	pthread_once(&once, start);
}
