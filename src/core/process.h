/* What belongs to the process rather than to one of its contexts: the
 * device list and the XRC domains, in one object (ur_process()).  Its
 * locks come in the lock order of docs/design.md ("Locks"): the device
 * list's, then (after a device's contexts' and the host registry's) the
 * XRC domains'.
 *
 * Made with the library (statically: nothing has to start) and kept until
 * the process ends, so there is nothing to take apart: a device is never
 * freed (an interface that goes away leaves its device, not present), an
 * XRC domain goes with its last close.  Around fork() both locks are held
 * (util/atfork.h's slots, in the lock order), so a child's copy is whole;
 * the child keeps its parent's devices (the host's interfaces, the same in
 * the child) but not its XRC domains (each names a parent's context).
 *
 * What else is the process's lies where the folders allow
 * (docs/design.md, "Process state"): the host registry's view
 * (host/registry_priv.h), which the transports below core use too; the
 * stack (rel/stack_open.c) and the CM (rdmacm/cma.c) above; the
 * configuration and the fork handler in util. */
#ifndef UROCE_CORE_PROCESS_H
#define UROCE_CORE_PROCESS_H

#include <pthread.h>

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
	struct ur_xrcd_list xrcds;
};

/* The process's one. */
struct ur_process *ur_process(void);

#endif
