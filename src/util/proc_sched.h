/* What the kernel's scheduler does with a process: its threads' time on
 * a CPU (/proc/PID/task/TID/schedstat) and how many of them are runnable
 * now (state R in .../stat: on a CPU or waiting for one).  The time a
 * thread waited for a CPU is added to schedstat only once it runs again,
 * so it cannot tell a wait still going on; "runnable but not running" can. */
#ifndef UROCE_UTIL_PROC_SCHED_H
#define UROCE_UTIL_PROC_SCHED_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* Over pid's threads: 0, or -errno (gone, not ours to read, or a kernel
 * without schedstat). */
int ur_proc_sched(pid_t pid, uint64_t *ran_ns, unsigned *runnable);

/* One look at a process: when (the caller's clock), its threads' time
 * run, and how many were runnable. */
struct ur_sched_look {
	uint64_t at;
	uint64_t ran;
	unsigned runnable;
};

/* ur_proc_sched, or a look at pid no older than max_age_ns at now (the
 * caller's monotonic clock), taken by any thread of this process: many
 * QPs to one peer look at it once.  0, or -errno (not remembered). */
int ur_proc_sched_recent(pid_t pid, uint64_t now, uint64_t max_age_ns, struct ur_sched_look *l);

/* Whether pid is stopped (SIGSTOP, a debugger's trace), a zombie, or
 * not there: a process that will not read what it is sent soon. */
bool ur_proc_stopped(pid_t pid);

#endif
