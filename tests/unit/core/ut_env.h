/* The environment of unit tests that create uroce objects: a private network
 * namespace (its own host registry in /dev/shm and its own UDP port 4791, so
 * that no other uroce process on the machine is disturbed), lo up, quiet
 * logs, and the registry files removed at exit.
 *
 * Header-only (static functions): each test executable is one translation
 * unit that includes the files it tests.
 */
#ifndef UROCE_TESTS_UT_ENV_H
#define UROCE_TESTS_UT_ENV_H

#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "private_ns.h"
#include "util/log.h"
#include "host/registry.h"

/* Sets or clears flags on an interface of the current namespace. */
static inline int ut_if_flags(const char *ifname, short set, short clear)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr))
		ret = -errno;
	if (!ret) {
		ifr.ifr_flags = (short)((ifr.ifr_flags | set) & ~clear);
		if (ioctl(fd, SIOCSIFFLAGS, &ifr))
			ret = -errno;
	}
	close(fd);
	return ret;
}

static inline int ut_if_mtu(const char *ifname, int mtu)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_mtu = mtu;
	if (ioctl(fd, SIOCSIFMTU, &ifr))
		ret = -errno;
	close(fd);
	return ret;
}

static inline void ut_env_cleanup(void)
{
	char path[128];

	/* Runs after the engine's own exit handler has detached. */
	ur_registry_file_path(path, sizeof(path));
	unlink(path);
	ur_registry_router_lock_path(path, sizeof(path));
	unlink(path);
}

/* Call first in main(), before anything creates a device or the engine.
 * devices: the UROCE_DEVICES value the test wants ("ut0:lo"). */
static inline void ut_env_init(const char *devices)
{
	int err = ur_test_private_ns(0);

	if (err) {
		fprintf(stderr, "no private network namespace (%s): these tests need root, "
			"or a kernel that lets users make user namespaces (unshare -Urn), so "
			"that they do not touch the host's uroce registry and port 4791: "
			"skipped\n", strerror(-err));
		exit(77);                /* CTest: skipped (SKIP_RETURN_CODE) */
	}
	if (ut_if_flags("lo", IFF_UP, 0)) {
		fprintf(stderr, "cannot bring lo up: %s\n", strerror(errno));
		exit(1);
	}
	setenv("UROCE_DEVICES", devices, 1);
	/* Error paths are exercised on purpose: keep them quiet unless asked. */
	if (!getenv("UROCE_LOG"))
		ur_log_level = -1;
	atexit(ut_env_cleanup);
}

#endif
