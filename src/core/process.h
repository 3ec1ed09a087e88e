/* What belongs to the process rather than to one of its contexts: the
 * device list, its view of the host registry and the XRC domains, in one
 * object (ur_process()).  Their locks come in the lock order of
 * docs/design.md ("Locks"): the device list's, then (after a device's
 * contexts') the registry's, then the XRC domains'.
 *
 * Made with the library (statically: nothing has to start) and kept until
 * the process ends, so there is nothing to take apart: a device is never
 * freed (an interface that goes away leaves its device, not present), the
 * registry is attached by the stack's first open and its slot given back
 * at exit, an XRC domain goes with its last close.  Around fork() each
 * lock is held (util/atfork.h's slots, in the lock order), so a child's
 * copy is whole; the child keeps its parent's devices (the host's
 * interfaces, the same in the child) but not its XRC domains (each names
 * a parent's context), and attaches to the registry as a process of its
 * own (host/registry_slots.c).
 *
 * Who reaches what here: ur_process() is called where an object of the
 * process is made or where an entry point carries no context.  The
 * registry is taken from here by a context as it opens (ctx->reg) and by
 * the stack as it opens (s->reg, which it hands to its transports); below
 * that it is passed.  The device list is reached here by core/device.c,
 * the XRC domains by core/xrcd.c.
 *
 * What else is the process's lies where the folders allow
 * (docs/design.md, "Process state"): the stack (rel/stack_open.c) and the
 * CM (rdmacm/cma.c) above; the configuration and the fork handler in
 * util. */
#ifndef UROCE_CORE_PROCESS_H
#define UROCE_CORE_PROCESS_H

#include <pthread.h>

#include "host/registry.h"
#include "util/list.h"

#define UR_MAX_DEVICES 64

struct ur_device;

/* core/device.c's. */
struct ur_device_list {
	pthread_mutex_t lock;
	struct ur_device *dev[UR_MAX_DEVICES];   /* grows only */
	unsigned n;
};

/* core/xrcd.c's: the domains this process opened (struct ur_xrcd, link). */
struct ur_xrcd_list {
	pthread_mutex_t lock;
	struct ur_list all;
};

struct ur_process {
	struct ur_device_list devices;
	/* host/registry*.c's: attached by the stack (rel/stack_open.c), which
	 * gives the slot back at exit; a child attaches anew. */
	struct ur_registry registry;
	struct ur_xrcd_list xrcds;
};

/* The process's one. */
struct ur_process *ur_process(void);

#endif
