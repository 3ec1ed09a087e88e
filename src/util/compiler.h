/* Small compiler helpers shared by every module. */
#ifndef UROCE_UTIL_COMPILER_H
#define UROCE_UTIL_COMPILER_H

#include <stddef.h>

#define UR_EXPORT __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define UR_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define UR_CACHELINE 64

#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)((char *)(ptr) - offsetof(type, member)))
#endif

#define ur_min(a, b) ({ typeof(a) _a = (a); typeof(b) _b = (b); _a < _b ? _a : _b; })
#define ur_max(a, b) ({ typeof(a) _a = (a); typeof(b) _b = (b); _a > _b ? _a : _b; })

#endif
