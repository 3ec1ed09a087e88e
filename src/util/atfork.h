/* The process's one fork handler.  Each part that must act around fork()
 * registers its hooks here when it starts (any of them may be NULL); the
 * one pthread_atfork registration calls the prepare hooks in the order of
 * the slots below, which is the lock order (docs/design.md, "Locks",
 * outermost first), and the parent and child hooks in the reverse order,
 * so that each part finds the parts it nests in still held.
 *
 * And the one way to tell a child of fork() from its parent: the fork
 * generation.  State that is the process's own (a mapping, a thread, an fd
 * set) records the generation it was made in; a child finds the record
 * older than its generation and makes its own, on first use, where locks
 * may be taken and memory freed (a child hook may do neither safely).
 * What needs neither to start again (a list head, a lock) a child hook
 * resets (core/process.c). */
#ifndef UROCE_UTIL_ATFORK_H
#define UROCE_UTIL_ATFORK_H

enum ur_atfork_slot {
	UR_ATFORK_STACK,        /* rel/stack_open.c: opening the stack */
	UR_ATFORK_SHARE_MOVER,  /* core/mr_share.c: the shared-region mover */
	UR_ATFORK_VM_SHARE,     /* util/vm_share.c: shared ranges of memory */
	UR_ATFORK_DEVICES,      /* core/process.c: the device list */
	UR_ATFORK_REGISTRY,     /* host/registry_slots.c: the host registry's view */
	UR_ATFORK_XRCDS,        /* core/process.c: the XRC domains */
	UR_ATFORK_UDP_PORT,     /* xport/udp/udp_host_port.c: a child lets port 4791 go (no lock) */
	UR_ATFORK_SLOTS
};

struct ur_atfork_hooks {
	void (*prepare)(void);
	void (*parent)(void);
	void (*child)(void);
};

/* Fills SLOT (once; a later call for it does nothing).  Hooks registered
 * while another thread forks take part from the next fork on. */
void ur_atfork_register(enum ur_atfork_slot slot, const struct ur_atfork_hooks *hooks);

/* This process's fork generation: 1 in the process that loaded the
 * library, one more in each child of fork() than in its parent, never 0,
 * so that zeroed state reads as made by no process.  A child made without
 * fork handlers (a raw clone(2), _Fork()) is not told apart, as glibc's
 * own handlers do not see it either. */
unsigned ur_fork_generation(void);

#endif
