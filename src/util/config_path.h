/* Where uroce's devices file is: the one rule for the library, which reads
 * it when a program starts (core/device.c), and for `uroce link add/delete`,
 * which edit it (tools/uroce/cmd_link.c).  The tool compiles config_path.c
 * itself (it links only the public verbs API), so this pair includes
 * nothing else of the library. */
#ifndef UROCE_UTIL_CONFIG_PATH_H
#define UROCE_UTIL_CONFIG_PATH_H

#include <stddef.h>

/* Writes the devices file's path into BUF (LEN bytes):
 * $UROCE_DEVICES_FILE, else $XDG_CONFIG_HOME/uroce/devices, else
 * $HOME/.config/uroce/devices, each taken only when set and not empty.
 * Returns 0, -ENOENT when none is set (there is no devices file), or
 * -ENAMETOOLONG when the path does not fit. */
int ur_devices_file_path(char *buf, size_t len);

#endif
