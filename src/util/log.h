/* Logging: one macro family, level from UROCE_LOG (error|warn|info|debug).
 *
 * Every macro adds the function name, and leaves errno as it found it (the
 * one place below src/verbs that writes errno is log.c, restoring it), so
 * a log line can sit between a failing call and the code that reads its
 * errno.  Data-path
 * debug logs (ur_dbg) vanish from Release builds; per-packet warnings go
 * through ur_warn_ratelimited.
 */
#ifndef UROCE_UTIL_LOG_H
#define UROCE_UTIL_LOG_H

#include <errno.h>
#include <stdbool.h>

enum ur_log_level {
	UR_LOG_ERR = 0,
	UR_LOG_WARN = 1,
	UR_LOG_INFO = 2,
	UR_LOG_DBG = 3,
};

extern int ur_log_level;

void ur_log_init(void);
void ur_log_emit(int level, const char *dev, const char *func,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
bool ur_log_ratelimit_ok(unsigned *last_sec, unsigned *count);

#define ur_log(level, dev, fmt, ...)                                        \
	do {                                                                \
		if ((level) <= ur_log_level)                                \
			ur_log_emit(level, dev, __func__, fmt, ##__VA_ARGS__); \
	} while (0)

#define ur_err(dev, fmt, ...) ur_log(UR_LOG_ERR, dev, fmt, ##__VA_ARGS__)
#define ur_warn(dev, fmt, ...) ur_log(UR_LOG_WARN, dev, fmt, ##__VA_ARGS__)
#define ur_info(dev, fmt, ...) ur_log(UR_LOG_INFO, dev, fmt, ##__VA_ARGS__)
#ifdef UROCE_NDEBUG_LOG
#define ur_dbg(dev, fmt, ...) do { } while (0)
#else
#define ur_dbg(dev, fmt, ...) ur_log(UR_LOG_DBG, dev, fmt, ##__VA_ARGS__)
#endif

/* At most 10 lines a second per call site. */
#define ur_warn_ratelimited(dev, fmt, ...)                                  \
	do {                                                                \
		static unsigned _rl_sec, _rl_cnt;                           \
		if (UR_LOG_WARN <= ur_log_level &&                          \
		    ur_log_ratelimit_ok(&_rl_sec, &_rl_cnt))                \
			ur_warn(dev, fmt, ##__VA_ARGS__);                   \
	} while (0)

#endif
