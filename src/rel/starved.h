/* A silent peer that is a process of this host waiting for a CPU.
 *
 * A QP's timeout and retry count bound how long its responder may stay
 * silent; on a NIC the responder is hardware, here it is a process, and a
 * loaded host's scheduler can keep a process off the CPU for longer than
 * a QP's 7 x 67 ms (this kernel kept a whole session's threads waiting
 * for seconds: docs/reliability.md).  A retry does not count while the
 * peer has a thread runnable (on a CPU or waiting for one) at this look
 * and at the one before, a timeout earlier, and its threads ran less than
 * a quarter of the time between: it is behind, not silent.  A
 * peer that is stopped (SIGSTOP, a debugger) waits for no CPU, and one
 * that is gone or on another host is not found: they count as before.
 * A peer that is no uroce process but a guest behind the device's tap
 * (the kernel's rxe in a qemu guest) is judged by its emulator's process
 * (host/tap_owner.h).  The same looks tell a peer that is behind on what
 * it was sent but runs (it reads it, slowly: rel/timers.c) from one that
 * does not (frozen, stopped).  qp->lock held. */
#ifndef UROCE_REL_STARVED_H
#define UROCE_REL_STARVED_H

#include <stdbool.h>
#include <stdint.h>

struct ur_qp;

/* Over span ns, a process whose threads ran ran ns, with a thread
 * runnable at the look before and at this one: kept off the CPU? */
bool ur_starved_judge(uint64_t span, uint64_t ran, bool runnable_before, bool runnable_now);

/* What two looks at the peer's process, a QP timeout apart, say. */
enum ur_peer_cpu {
	UR_PEER_CPU_UNKNOWN,   /* not a process of this host, a first look, or
				* kept off the CPU past UR_MAX_STARVED_WAIT */
	UR_PEER_CPU_STARVED,   /* runnable and kept off the CPU: the retry does
				* not count */
	UR_PEER_CPU_RUNS,      /* its threads ran at least 1/16 of the time: it
				* reads what it was sent, if slowly */
	UR_PEER_CPU_STILL,     /* ran less, waiting for no CPU: asleep, frozen
				* or stopped */
};

/* Over span ns, a process whose threads ran ran ns: running, so reading
 * what waits for it (the verdict UR_PEER_CPU_RUNS)? */
bool ur_runs_judge(uint64_t span, uint64_t ran);

/* Looks at the peer (qpt the QP's timeout in ns) and judges it from this
 * look and the one before; STARVED for at most UR_MAX_STARVED_WAIT
 * timeouts since the first such look. */
enum ur_peer_cpu ur_peer_cpu_look(struct ur_qp *qp, uint64_t now, uint64_t qpt);

#endif
