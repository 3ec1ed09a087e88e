/* The user as the machine sees it, for the names of files that a user's
 * processes share in /dev/shm.  A process in a user namespace of the user's
 * own (unshare -Ur) is uid 0 there; named by that uid, its files would meet
 * root's, which it may not open (a namespace's registry, named by the
 * namespace's inode number, which the kernel reuses once it is gone). */
#ifndef UROCE_UTIL_HOST_UID_H
#define UROCE_UTIL_HOST_UID_H

#include <sys/types.h>

/* The effective uid mapped through /proc/self/uid_map to the parent user
 * namespace (the machine's, for one level of nesting); geteuid() where
 * there is no map. */
uid_t ur_host_uid(void);

#endif
