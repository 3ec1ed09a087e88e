/* fork() support: ibv_fork_init, ibv_is_fork_initialized and the
 * ibv_dontfork_range/ibv_dofork_range pair that providers call around
 * registered memory.
 *
 * Why rdma-core needs them: a kernel RDMA device DMAs into the physical pages
 * pinned at ibv_reg_mr time.  After fork(), copy-on-write gives the parent
 * new physical pages on its next write while the HCA keeps using the old
 * ones, so received data silently lands in the child's copy.  rdma-core
 * works around it by marking registered ranges MADV_DONTFORK once
 * ibv_fork_init() has been called, unless the kernel already copies pinned
 * pages at fork (then ibv_is_fork_initialized() says IBV_FORK_UNNEEDED).
 *
 * Why uroce does not: nothing is pinned.  The device is code in this process
 * that reads and writes registered memory through the process's own virtual
 * addresses, so after fork() it always sees whatever page currently backs an
 * address in this process: the copy-on-write hazard cannot arise.  Fork is
 * therefore always safe, which is exactly what IBV_FORK_UNNEEDED reports, and
 * the range calls have nothing to do.  (As with any verbs library, the child
 * must not use the parent's verbs objects: it inherits none of the device's
 * threads.  A child that opens the device anew gets a stack, registry slot
 * and CM of its own: rel/stack_open.c, host/registry_slots.c, rdmacm/cma.c.)  This holds as long as no transport hands application memory to
 * the kernel for later use (io_uring fixed buffers, AF_XDP umem, vmsplice):
 * a transport that does must revisit this file.  Shared regions
 * (util/vm_share.h) are memory a peer maps: their child hook in the
 * process's fork handler (util/atfork.h) gives the child private copies
 * before fork() returns, so this still holds.
 *
 * Consequences mirrored from rdma-core with a copy-on-fork kernel:
 * RDMAV_FORK_SAFE / IBV_FORK_SAFE need no action, ibv_fork_init() succeeds at
 * any time (rdma-core's EINVAL "too late" case only exists when it has to
 * madvise), and madvise() is never called on application memory.
 */
#include <stddef.h>

#include <infiniband/verbs.h>

#include "util/compiler.h"

/* Prototypes of rdma-core 44's infiniband/driver.h (not installed). */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

UR_EXPORT int ibv_fork_init(void)
{
	return 0;
}

UR_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

UR_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	return 0;
}

UR_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	return 0;
}
