/* The process's protocol stack: assembled at the first use, lent to every
 * context that opens. */
#ifndef UROCE_REL_STACK_OPEN_H
#define UROCE_REL_STACK_OPEN_H

#include "xport/xport.h"

struct ur_context;
struct ur_stack;

/* The process's stack, started at the first call: its reactor thread, its
 * transports, its place in the host registry.  0 or -errno.  src/verbs
 * calls it when a device opens: everything below is handed the stack
 * through the context, never looks it up. */
int ur_stack_get(struct ur_stack **out);

/* A stack of one's own (tests): its reactor without a thread, and the
 * given transports instead of this build's (their hooks unused: packets
 * are handed to ur_recv_packet by hand). */
int ur_stack_create_threadless(const struct ur_xports *xports, struct ur_stack **out);

/* Lends a context the stack's reactor and transports (or the error that
 * kept the stack from starting, for what needs it). */
void ur_stack_bind(struct ur_stack *s, int err, struct ur_context *ctx);

#endif
