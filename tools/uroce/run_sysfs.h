/* The /sys/class view `uroce run` gives its program (run_sysfs.c). */
#ifndef UROCE_TOOLS_RUN_SYSFS_H
#define UROCE_TOOLS_RUN_SYSFS_H

/* Moves this process into a mount namespace of its own whose /sys/class
 * also shows uroce's devices, written by `uroce sysfs` with the library
 * path already in the environment.  0; -1 after one line on stderr saying
 * why the program runs without the view; -2 after one line saying why the
 * program cannot run as it is (a user namespace made, its uid not mapped). */
int ur_run_sysfs_view(void);

#endif
