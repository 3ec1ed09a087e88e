/* sysfs helpers of the libibverbs ABI: ibv_get_sysfs_path and
 * ibv_read_sysfs_file (IBVERBS_1.0; rdma-core declares them in its
 * infiniband/driver.h, which Debian does not install).
 *
 * ibv_read_sysfs_file() serves uroce's own devices first, through the device
 * layer's ur_device_sysfs_read() hook (core/device_sysfs.h), because those
 * devices have no sysfs directory: ibv_devinfo, for one, reads
 * <ibdev_path>/board_id with it.  Any other directory is read from the
 * filesystem exactly as rdma-core 44 does.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "core/device_sysfs.h"
#include "util/compiler.h"

/* Prototypes of rdma-core 44's infiniband/driver.h. */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);

static const char *sysfs_path;

/* $SYSFS_PATH (at most IBV_SYSFS_PATH_MAX characters, trailing slashes
 * trimmed, so "/" becomes ""), or "/sys".  The environment is ignored when
 * running set-user-ID, as in rdma-core.  NULL with errno ENOMEM. */
static char *sysfs_path_from_env(const char *env)
{
	char *dup;
	size_t len;

	if (!env)
		return strdup("/sys");
	dup = strndup(env, IBV_SYSFS_PATH_MAX);
	if (!dup)
		return NULL;
	len = strlen(dup);
	while (len > 0 && dup[len - 1] == '/')
		dup[--len] = '\0';
	return dup;
}

/* Computed once; later changes of $SYSFS_PATH are not seen (as in rdma-core,
 * whose library constructor calls this). */
UR_EXPORT const char *ibv_get_sysfs_path(void)
{
	const char *cur = __atomic_load_n(&sysfs_path, __ATOMIC_ACQUIRE);
	const char *env = NULL;
	char *mine;

	if (cur)
		return cur;
	if (getuid() == geteuid())
		env = getenv("SYSFS_PATH");
	mine = sysfs_path_from_env(env);
	if (!mine)
		return NULL;
	if (!__atomic_compare_exchange_n(&sysfs_path, &cur, mine, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		free(mine);     /* another thread won: cur holds its result */
		return cur;
	}
	return mine;
}

/* Read up to size bytes of dir/file.  Returns the length or -errno. */
static ssize_t read_file(const char *dir, const char *file, char *buf,
			 size_t size)
{
	char *path;
	ssize_t len;
	int fd, err;

	if (asprintf(&path, "%s/%s", dir, file) < 0)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	err = errno;
	free(path);
	if (fd < 0)
		return -err;
	do {
		len = read(fd, buf, size);
	} while (len < 0 && errno == EINTR);
	err = errno;
	close(fd);
	return len < 0 ? -err : len;
}

/* Returns the content's length without its trailing newline, with buf
 * NUL-terminated, or -1 with errno set.  Content that fills buf without a
 * trailing newline cannot be terminated and fails (EOVERFLOW) rather than be
 * passed around unterminated, as rdma-core does (which leaves errno unset). */
UR_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file,
				  char *buf, size_t size)
{
	ssize_t len;

	if (!dir || !file || (!buf && size)) {
		errno = EINVAL;
		return -1;
	}

	len = ur_device_sysfs_read(dir, file, buf, size);
	if (len == -ENOENT)
		len = read_file(dir, file, buf, size);
	if (len < 0) {
		errno = (int)-len;
		return -1;
	}
	if ((size_t)len > size) {       /* a hook that overran buf */
		errno = EIO;
		return -1;
	}

	if (len > 0 && buf[len - 1] == '\n') {
		buf[--len] = '\0';
	} else if ((size_t)len < size) {
		buf[len] = '\0';
	} else if (len > 0) {
		errno = EOVERFLOW;
		return -1;
	}
	return (int)len;
}
