/* A private network namespace for a test process, so that its host registry
 * in /dev/shm and its UDP port 4791 are its own and no other uroce process
 * on the machine is disturbed.  As root, unshare(2) at once; otherwise in a
 * user namespace of the user's own, where the kernel lets users make them
 * (as `unshare -Urn` does: the user is root there, mapped to itself), so that
 * a developer without root runs these tests too.
 *
 * Header-only: each test executable is one translation unit.
 */
#ifndef UROCE_TESTS_PRIVATE_NS_H
#define UROCE_TESTS_PRIVATE_NS_H

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static inline int ur_test_write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;
	size_t len = strlen(text);

	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		ret = -errno;
	close(fd);
	return ret;
}

/* A new network namespace, plus the namespaces in EXTRA (CLONE_NEWNS, say).
 * Call while the process has one thread (a user namespace needs it).
 * 0, or -errno of the last attempt. */
static inline int ur_test_private_ns(int extra)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();
	int ret;

	if (unshare(CLONE_NEWNET | extra) == 0)
		return 0;
	if (errno != EPERM)
		return -errno;
	if (unshare(CLONE_NEWUSER | CLONE_NEWNET | extra))
		return -errno;
	/* setgroups must be denied before an unprivileged gid_map is written. */
	ret = ur_test_write_file("/proc/self/setgroups", "deny");
	if (ret && ret != -ENOENT)
		return ret;
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	ret = ur_test_write_file("/proc/self/uid_map", map);
	if (ret)
		return ret;
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	return ur_test_write_file("/proc/self/gid_map", map);
}

#endif
