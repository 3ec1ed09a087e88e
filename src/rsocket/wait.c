/* The one waiting loop of a blocking rsocket call, streams' (data.c) and
 * datagrams' (dgram_io.c) alike: progress, a spin, the CQs armed, then
 * sleep, until done(rs).  rs->lock held throughout (the sleep drops it). */
#include <errno.h>

#include "rsocket/rsocket.h"
#include "util/clock.h"

int rs_wait_loop(struct rsock *rs, const struct rs_wait_ops *ops,
		 bool (*done)(const struct rsock *), bool nonblock, bool learn)
{
	uint64_t start = 0, spin_end = 0;
	bool slept = false;

	for (;;) {
		ops->progress(rs);
		if (done(rs)) {
			if (start && learn)
				rs->spin_ns = rs_spin_next(rs->spin_ns, ur_now_ns() - start, slept);
			return 0;
		}
		if (nonblock)
			return -EAGAIN;
		if (!spin_end) {
			start = ur_now_ns();
			spin_end = start + (learn && rs->spin_ns ? rs->spin_ns
								 : rs_config()->polling_ns);
		}
		if (ur_now_ns() < spin_end)
			continue;
		if (ops->arm(rs))
			continue;   /* what completed before the arming */
		ops->sleep(rs);
		slept = true;
	}
}
