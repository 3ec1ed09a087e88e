/* Reading one value under the lock that guards it. */
#ifndef UROCE_UTIL_LOCK_H
#define UROCE_UTIL_LOCK_H

#include <pthread.h>

/* The value of EXPR read with LOCK (a pthread KIND lock: mutex or spin)
 * held, for a caller that only looks at it: the lock is taken and dropped
 * around that one read. */
#define ur_read_locked(kind, lock, expr)                                    \
	({                                                                  \
		typeof(expr) ur_value_;                                     \
									    \
		pthread_##kind##_lock(lock);                                \
		ur_value_ = (expr);                                         \
		pthread_##kind##_unlock(lock);                              \
		ur_value_;                                                  \
	})

#endif
