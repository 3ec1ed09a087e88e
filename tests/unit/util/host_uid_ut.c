/* ur_host_uid: the user as the machine sees it, from inside a user
 * namespace where the process is another uid (7 here), and outside one. */
#include "ut.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/host_uid.h"

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -EIO;
}

static void test_outside(void)
{
	UT_EQ(ur_host_uid(), geteuid());
}

/* The parent maps the child's uid 7 to its own: allowed to any user. */
static void test_inside(void)
{
	int go[2], done[2], status;
	char path[64], map[64], c = 0;
	uid_t me = geteuid();
	pid_t pid;

	UT_EQ(pipe(go), 0);
	UT_EQ(pipe(done), 0);
	pid = fork();
	if (pid == 0) {
		int ok = unshare(CLONE_NEWUSER) == 0;

		if (write(done[1], &ok, sizeof(ok)) != sizeof(ok) || !ok)
			_exit(2);
		if (read(go[0], &c, 1) != 1)
			_exit(3);
		_exit(geteuid() == 7 && ur_host_uid() == me ? 0 : 1);
	}
	int ok = 0;

	UT_EQ(read(done[0], &ok, sizeof(ok)), (ssize_t)sizeof(ok));
	if (!ok) {
		printf("  no user namespace here: the inside case not run\n");
		waitpid(pid, &status, 0);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	snprintf(map, sizeof(map), "7 %u 1", (unsigned)me);
	UT_EQ(write_file(path, map), 0);
	UT_EQ(write(go[1], &c, 1), 1);
	UT_EQ(waitpid(pid, &status, 0), pid);
	UT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	UT_RUN(test_outside);
	UT_RUN(test_inside);
	return UT_DONE();
}
