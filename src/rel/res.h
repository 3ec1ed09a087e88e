/* The resource window: this process's live objects (QPs, CQs, MRs, and
 * the connection manager's ids), answered on request to `uroce res`
 * through a socket of its own (rel/res_proto.h).
 *
 * Nothing is kept up to date for it: the snapshot is taken when asked, by
 * a thread started for it (never the engine's, which must keep the
 * receive path and timers going), object by object under each object's
 * own lock, so the data path pays nothing and each line is consistent. */
#ifndef UROCE_REL_RES_H
#define UROCE_REL_RES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

struct ur_stack;

/* Writes the CM's ids as snapshot lines ("cm_id ..."); the snapshot's thread. */
typedef void (*ur_res_cm_fn)(void *arg, FILE *f);

struct ur_res {
	int fd;                      /* the query socket; -1: none */
	bool busy;                   /* a snapshot is being taken (atomic) */
	pthread_mutex_t cm_lock;     /* cm_dump, cm_arg; held while it runs */
	ur_res_cm_fn cm_dump;
	void *cm_arg;
};

/* Binds the query socket and watches it on the engine thread.  A process
 * that cannot (its name taken, no socket) still runs, unseen by `uroce
 * res`: 0 or -errno, said in the log. */
int ur_res_open(struct ur_stack *s);
/* Stops serving (a stack that could not start, before any query came). */
void ur_res_close(struct ur_stack *s);

/* Makes fn the writer of the CM's lines (NULL: none, waiting for a call
 * in progress to end). */
void ur_res_attach_cm(struct ur_stack *s, ur_res_cm_fn fn, void *arg);

/* The snapshot (res_dump.c): every object of the process, one a line. */
void ur_res_dump(struct ur_stack *s, FILE *f);

#endif
