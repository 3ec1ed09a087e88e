#include "host/tap_owner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/compiler.h"
#include "util/clock.h"

/* A tap whose holder was not found is looked for again after this long:
 * a look reads every process's descriptors. */
#define UR_TAP_RELOOK_NS 1000000000ull

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char ifname[IF_NAMESIZE];
	pid_t pid;               /* 0: nobody found at looked_ns */
	uint64_t looked_ns;
} cache[4];
static unsigned cache_next;

/* Whether ifname is a tun or tap device (its driver, as "ethtool -i" says):
 * asked of this namespace's kernel, whatever /sys shows. */
static bool is_tun(const char *ifname)
{
	struct ethtool_drvinfo info = { .cmd = ETHTOOL_GDRVINFO };
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool tun;

	if (fd < 0)
		return false;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = (void *)&info;
	tun = !ioctl(fd, SIOCETHTOOL, &ifr) && !strcmp(info.driver, "tun");
	close(fd);
	return tun;
}

int ur_tap_fdinfo_names(const char *fdinfo, const char *ifname)
{
	const char *p = strstr(fdinfo, "\niff:\t");
	size_t n = strlen(ifname);

	if (!p || !n)
		return 0;
	p += strlen("\niff:\t");
	return !strncmp(p, ifname, n) && (p[n] == '\n' || p[n] == '\0');
}

/* Reads the small file path into buf (NUL-terminated): its length or -1. */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n;
}

/* Whether pid has the tun file of ifname open. */
static bool holds_tap(pid_t pid, const char *ifname)
{
	char dir[48], path[320], link[32], info[512];
	bool found = false;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (strcmp(link, "/dev/net/tun"))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", (int)pid, e->d_name);
		found = read_small(path, info, sizeof(info)) > 0 && ur_tap_fdinfo_names(info, ifname);
	}
	closedir(d);
	return found;
}

/* The first process of this network namespace (not this one) holding
 * ifname's tun file, or 0. */
static pid_t scan(const char *ifname)
{
	struct stat me, st;
	pid_t self = getpid(), found = 0;
	struct dirent *e;
	DIR *d;

	if (stat("/proc/self/ns/net", &me))
		return 0;
	d = opendir("/proc");
	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		char path[48], *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 0 || pid == self)
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/ns/net", pid);
		if (stat(path, &st) || st.st_ino != me.st_ino || st.st_dev != me.st_dev)
			continue;
		if (holds_tap((pid_t)pid, ifname))
			found = (pid_t)pid;
	}
	closedir(d);
	return found;
}

/* The cache's slot for ifname, or -1.  cache_lock held. */
static int cached(const char *ifname)
{
	for (unsigned i = 0; i < UR_ARRAY_SIZE(cache); i++)
		if (!strncmp(cache[i].ifname, ifname, IF_NAMESIZE))
			return (int)i;
	return -1;
}

pid_t ur_tap_owner(const char *ifname)
{
	uint64_t now = ur_now_ns();
	pid_t pid = 0;
	bool relook = true;
	int slot;

	if (!ifname[0])
		return 0;
	pthread_mutex_lock(&cache_lock);
	slot = cached(ifname);
	if (slot >= 0) {
		pid = cache[slot].pid;
		relook = pid || now - cache[slot].looked_ns >= UR_TAP_RELOOK_NS;
	}
	pthread_mutex_unlock(&cache_lock);
	if (!relook || (pid && holds_tap(pid, ifname)))
		return pid;
	pid = is_tun(ifname) ? scan(ifname) : 0;
	pthread_mutex_lock(&cache_lock);
	slot = cached(ifname);
	if (slot < 0) {
		slot = (int)(cache_next++ % UR_ARRAY_SIZE(cache));
		snprintf(cache[slot].ifname, IF_NAMESIZE, "%s", ifname);
	}
	cache[slot].pid = pid;
	cache[slot].looked_ns = now;
	pthread_mutex_unlock(&cache_lock);
	return pid;
}
