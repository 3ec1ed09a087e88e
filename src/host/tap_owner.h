/* The process behind a tap device: a virtual machine's emulator (qemu)
 * whose guest is the peer of a QP on the tap's uroce device.
 *
 * A peer in a guest of this host is served by that process: when the host's
 * scheduler keeps it off the CPU, the guest's RDMA stack is silent as a
 * starved uroce process is (rel/starved.c), and the QP's retries should
 * not count either.  The registry knows only uroce processes; the tap's
 * holder is found by the kernel's fdinfo of its open tun file ("iff:"). */
#ifndef UROCE_HOST_TAP_OWNER_H
#define UROCE_HOST_TAP_OWNER_H

#include <sys/types.h>

/* The pid of a process of this network namespace that holds the tap
 * device ifname open, or 0 (not a tap, nobody found, or not ours to
 * read).  The first look at a tap reads /proc; later ones check the
 * process found is still there. */
pid_t ur_tap_owner(const char *ifname);

/* Whether the line of an fdinfo file names the tun device ifname
 * ("iff:\tNAME"); for the tests. */
int ur_tap_fdinfo_names(const char *fdinfo, const char *ifname);

#endif
