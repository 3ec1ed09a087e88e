/* sysfs view of uroce's devices, for ibv_read_sysfs_file().
 *
 * Programs read device attributes straight from sysfs by path (ibv_devinfo
 * reads <ibdev_path>/board_id), and uroce's devices have no sysfs entries,
 * so ibv_read_sysfs_file() asks the device layer first.
 */
#ifndef UROCE_CORE_DEVICE_SYSFS_H
#define UROCE_CORE_DEVICE_SYSFS_H

#include <stddef.h>

/* Read attribute `file` of the device directory `dir`, as read(2) would:
 * write at most `size` bytes of content to `buf` (a trailing newline is
 * allowed; the caller strips it and adds the terminating NUL).
 * Returns the length written, or -ENOENT if `dir` is not one of uroce's
 * device directories (the caller then reads the real file), or another
 * -errno (no fallback: ibv_read_sysfs_file() fails with that errno). */
int ur_device_sysfs_read(const char *dir, const char *file, char *buf,
			 size_t size);

#endif
