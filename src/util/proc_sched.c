#include "util/proc_sched.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Recent looks, by pid.  A look reads two /proc files a thread of the
 * process: a 1000-QP storm's QPs each looking at their one peer every
 * retry period made 15 000 looks a second, half of the time of the thread
 * that runs the timers and should have read the peer's answers (under
 * AddressSanitizer), and the process fell behind for good. */
#define UR_SCHED_MEMO 8
static pthread_mutex_t memo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	pid_t pid;
	struct ur_sched_look look;
} memo[UR_SCHED_MEMO];

/* The file tid/name, read whole into buf (NUL-terminated): 0 or -errno. */
static int read_file(int dirfd, const char *tid, const char *name, char *buf, size_t len)
{
	char path[288];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tid, name);
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	return 0;
}

/* One thread: its time run, and whether it is runnable ("pid (comm) S"). */
static int read_thread(int dirfd, const char *tid, uint64_t *ran, unsigned *runnable)
{
	char buf[512], *p;
	unsigned long long r;

	if (read_file(dirfd, tid, "schedstat", buf, sizeof(buf)) || sscanf(buf, "%llu", &r) != 1)
		return -EIO;
	if (read_file(dirfd, tid, "stat", buf, sizeof(buf)))
		return -EIO;
	p = strrchr(buf, ')');   /* the command name may hold anything */
	if (!p || p[1] != ' ')
		return -EIO;
	*ran += r;
	*runnable += p[2] == 'R';
	return 0;
}

int ur_proc_sched(pid_t pid, uint64_t *ran_ns, unsigned *runnable)
{
	char path[32];
	struct dirent *d;
	unsigned threads = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	*ran_ns = 0;
	*runnable = 0;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.' && !read_thread(dirfd(dir), d->d_name, ran_ns, runnable))
			threads++;
	closedir(dir);
	return threads ? 0 : -ESRCH;
}

bool ur_proc_stopped(pid_t pid)
{
	char path[32], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return !p || p[1] != ' ' || strchr("TtZXx", p[2]);
}

int ur_proc_sched_recent(pid_t pid, uint64_t now, uint64_t max_age_ns, struct ur_sched_look *l)
{
	unsigned oldest = 0;
	int ret;

	pthread_mutex_lock(&memo_lock);
	for (unsigned i = 0; i < UR_SCHED_MEMO; i++) {
		if (memo[i].pid == pid && now >= memo[i].look.at &&
		    now - memo[i].look.at <= max_age_ns) {
			*l = memo[i].look;
			pthread_mutex_unlock(&memo_lock);
			return 0;
		}
		if (memo[i].look.at < memo[oldest].look.at)
			oldest = i;
	}
	pthread_mutex_unlock(&memo_lock);
	/* Read unlocked: two threads may both look, which costs a look. */
	ret = ur_proc_sched(pid, &l->ran, &l->runnable);
	if (ret)
		return ret;
	l->at = now;
	pthread_mutex_lock(&memo_lock);
	memo[oldest].pid = pid;
	memo[oldest].look = *l;
	pthread_mutex_unlock(&memo_lock);
	return 0;
}
