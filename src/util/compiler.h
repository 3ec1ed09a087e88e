/* Small compiler helpers shared by every module. */
#ifndef UROCE_UTIL_COMPILER_H
#define UROCE_UTIL_COMPILER_H

#include <stddef.h>

#define UR_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define UR_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define UR_CACHELINE 64
/* A thread-local on a per-poll path: the static TLS block, no
 * __tls_get_addr call per access (a tenth of an empty poll).  The library
 * holds a few dozen bytes of such; a program that loads it with dlopen
 * (UCX, MPI) takes them from glibc's reserve for that case. */
#define UR_TLS_HOT __attribute__((tls_model("initial-exec")))

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#endif

/* Unique temporaries, so that ur_min(ur_min(a, b), c) does not shadow. */
#define UR__CAT2(a, b) a##b
#define UR__CAT(a, b) UR__CAT2(a, b)
#define UR__MINMAX(a, b, op, n)                                             \
	({                                                                  \
		typeof(a) UR__CAT(_ur_a, n) = (a);                          \
		typeof(b) UR__CAT(_ur_b, n) = (b);                          \
		UR__CAT(_ur_a, n) op UR__CAT(_ur_b, n) ? UR__CAT(_ur_a, n)  \
						       : UR__CAT(_ur_b, n); \
	})
#define ur_min(a, b) UR__MINMAX(a, b, <, __COUNTER__)
#define ur_max(a, b) UR__MINMAX(a, b, >, __COUNTER__)

#endif
