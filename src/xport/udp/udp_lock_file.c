/* What the router lock file says: "ROUTER TAKER", the pid of the process
 * that serves port 4791 for the namespace and of the one it chose to take
 * the port after it (the holder of its copy in reserve, or the process it
 * hands the port to as it exits; 0: none).
 *
 * The others watch the router's exit by the first.  The second decides
 * which copy of the port is served when the router has ended: a process
 * may hold a copy the router gave it and then chose another over (it was
 * stopped, and the router kept a new copy with another; or the router
 * handed the port to another as it exited).  Both copies are the same
 * sockets and the same lock (an flock belongs to the open file, and the
 * copy's flock succeeds again), so a copy served by anyone but the chosen
 * process would make a second reader of the port.
 *
 * Fixed width and written in place, not truncated first: a reader sees
 * the record whole, and an older process that wrote "PID\n" is
 * overwritten whole; one that reads "%d" still finds the router first.
 * A router that frees the port empties the file (udp_host_port.c), which
 * names nobody. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "xport/udp/udp_priv.h"

#define UR_LOCK_RECORD "%10d %10d\n"
#define UR_LOCK_RECORD_LEN 22

int ur_udp_lock_record(struct ur_udp *u, pid_t taker)
{
	char buf[UR_LOCK_RECORD_LEN + 1];

	snprintf(buf, sizeof(buf), UR_LOCK_RECORD, (int)getpid(), (int)taker);
	if (u->router_lock_fd < 0)
		return -EBADF;
	return pwrite(u->router_lock_fd, buf, UR_LOCK_RECORD_LEN, 0) == UR_LOCK_RECORD_LEN ?
		       0 : -errno;
}

void ur_udp_lock_read(struct ur_udp *u, pid_t *router, pid_t *taker)
{
	char buf[UR_LOCK_RECORD_LEN + 1] = { 0 };
	ssize_t n = u->router_lock_fd >= 0 ?
			    pread(u->router_lock_fd, buf, UR_LOCK_RECORD_LEN, 0) : -1;
	int r = 0, t = 0;

	if (n <= 0 || sscanf(buf, "%d %d", &r, &t) < 1 || r < 0 || t < 0)
		r = t = 0;
	*router = r;
	*taker = t;
}
