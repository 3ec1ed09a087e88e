/* The log's file (UROCE_LOG_FILE): a run's messages kept, each line with
 * its time and pid, apart from the program's own output.  A failure seen
 * once (a QP that gave up in a test run beside others) then explains
 * itself afterwards, at the info level's detail, while the program's
 * output stays as its parsers expect it. */
#ifndef UROCE_UTIL_LOG_FILE_H
#define UROCE_UTIL_LOG_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* pattern with each "%p" replaced by pid and "%%" by "%" into out (len
 * bytes): 0, or -ENAMETOOLONG when it does not fit, -EINVAL for a "%"
 * followed by anything else. */
int ur_log_path(char *out, size_t len, const char *pattern, pid_t pid);

/* Opens the file pattern names (ur_log_path with this process's pid) to
 * append to, created 0600 if need be: the descriptor (close-on-exec), or
 * -errno. */
int ur_log_file_open(const char *pattern);

/* "HH:MM:SS.mmm PID " (UTC) into buf: its length. */
size_t ur_log_stamp(char *buf, size_t len);

#endif
