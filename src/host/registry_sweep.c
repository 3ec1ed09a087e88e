/* The sweep of registries left by network namespaces that are gone: nobody
 * opens such a file again, so every attach looks for them in /dev/shm and
 * removes one (with its router lock file and capture switch) once nothing
 * uses it and nothing of its namespace is left. */
#include "host/registry_priv.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

/* A namespace lives while a process is in it or a mount holds it ("ip
 * netns add" binds one under /run/netns, with no process in it). */
static bool netns_mounted(unsigned long ino)
{
	char want[48], line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	bool found = false;

	if (!f)
		return true;          /* cannot tell: alive */
	/* Field 4, the mount's root, is "net:[INODE]" for a namespace. */
	snprintf(want, sizeof(want), " net:[%lu] ", ino);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, want) != NULL;
	fclose(f);
	return found;
}

/* Processes whose namespace we may not read (another user's) are not
 * seen: the use lock and the slots speak for this user's. */
static bool netns_has_process(unsigned long ino)
{
	DIR *dir = opendir("/proc");
	struct dirent *d;
	bool found = false;

	if (!dir)
		return true;
	while (!found && (d = readdir(dir))) {
		char path[300];
		struct stat st;

		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/ns/net", d->d_name);
		found = !stat(path, &st) && (unsigned long)st.st_ino == ino;
	}
	closedir(dir);
	return found;
}

/* Under the registry file's flock: a process holds its use lock, or a
 * slot names a live process (a build before the use lock). */
static bool registry_in_use(int fd, const struct stat *st)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
	const struct ur_reg_shm *shm;
	bool used = false;

	if (fcntl(fd, F_OFD_GETLK, &fl) || fl.l_type != F_UNLCK)
		return true;
	if ((size_t)st->st_size != sizeof(struct ur_reg_shm))
		return false;         /* nothing in it a process could use */
	shm = mmap(NULL, sizeof(*shm), PROT_READ, MAP_SHARED, fd, 0);
	if (shm == MAP_FAILED)
		return true;
	if (__atomic_load_n(&shm->magic, __ATOMIC_ACQUIRE) == UR_REG_MAGIC)
		for (unsigned i = 0; i < UR_REG_SLOTS && !used; i++)
			used = ur_reg_slot_alive(&shm->slot[i]);
	munmap((void *)shm, sizeof(*shm));
	return used;
}

/* The registry NAME (in /dev/shm) of namespace ino, its router lock file
 * and capture switch, removed if they are this user's, nobody uses them
 * and the namespace is gone.  The registry's flock, held from the checks to the
 * unlink, keeps a process of that namespace from starting to use the
 * file meanwhile; one that opened it first finds it unlinked once it has
 * the lock (ur_reg_map_file) and opens it anew.  1 if removed. */
static int sweep_netns_registry(const char *name, unsigned uid, unsigned long ino)
{
	char path[300], router[128];
	struct stat st, now;
	int fd, rfd, removed = 0;

	snprintf(path, sizeof(path), "/dev/shm/%s", name);
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
		goto out;
	/* Waited for, not tried: the holder is another process sweeping (or
	 * one of the namespace's, changing a slot), and holds it for a few
	 * checks.  Passing it by left the files to whoever came next, and when
	 * the other sweep had looked while the last user still lived, to
	 * nobody until then.  It is the only file lock held while waiting, so
	 * two sweepers cannot wait on each other. */
	while (flock(fd, LOCK_EX) && errno == EINTR)
		;
	if (registry_in_use(fd, &st) || netns_mounted(ino) || netns_has_process(ino))
		goto out;
	/* Still the file of that name, not one made since we opened ours. */
	if (stat(path, &now) || now.st_ino != st.st_ino || now.st_dev != st.st_dev)
		goto out;
	/* The router lock file is opened only by a process with a slot here,
	 * which there is none of; one holding its lock is left alone. */
	snprintf(router, sizeof(router), "/dev/shm/uroce-%u-net%lu.router", uid, ino);
	rfd = open(router, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (rfd >= 0) {
		if (!fstat(rfd, &now) && S_ISREG(now.st_mode) && now.st_uid == geteuid() &&
		    !flock(rfd, LOCK_EX | LOCK_NB))
			unlink(router);
		close(rfd);
	}
	/* The capture switch (xport/capture.h): mapped only by processes of
	 * that namespace, and there are none. */
	snprintf(router, sizeof(router), "/dev/shm/uroce-%u-net%lu.capture", uid, ino);
	if (!lstat(router, &now) && S_ISREG(now.st_mode) && now.st_uid == geteuid())
		unlink(router);
	removed = !unlink(path);
	if (removed)
		ur_dbg(NULL, "removed %s: its network namespace is gone", path);
out:
	close(fd);
	return removed;
}

/* A capture switch (xport/capture.h) left by a namespace whose registry
 * is gone already (swept by a uroce that did not know the switch): removed
 * once nothing of the namespace is left. */
static void sweep_capture_orphan(const char *name, unsigned uid, unsigned long ino)
{
	char path[300], registry[128];
	struct stat st;

	snprintf(registry, sizeof(registry), "/dev/shm/uroce-%u-net%lu-v%u", uid, ino,
		 UR_REG_VERSION);
	if (!access(registry, F_OK) || netns_mounted(ino) || netns_has_process(ino))
		return;
	snprintf(path, sizeof(path), "/dev/shm/%s", name);
	if (!lstat(path, &st) && S_ISREG(st.st_mode) && st.st_uid == geteuid())
		unlink(path);
}

/* Registries of this version in /dev/shm, other than ours, whose
 * namespace is gone (and capture switches left without theirs).  The uid
 * in a name is not checked against ours: one made in a user namespace by
 * an earlier uroce carries the uid seen there (now the machine's,
 * ur_host_uid), and the file's owner is what says whose it is. */
int ur_registry_sweep_dead_netns(void)
{
	DIR *dir = opendir("/dev/shm");
	unsigned long mine = ur_reg_netns_id();
	struct dirent *d;
	int n = 0;

	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		unsigned uid, version;
		unsigned long ino;
		int end = 0;

		if (strncmp(d->d_name, "uroce-", 6))
			continue;
		if (sscanf(d->d_name, "uroce-%u-net%lu.capture%n", &uid, &ino, &end) == 2 && end &&
		    !d->d_name[end] && ino && ino != mine) {
			sweep_capture_orphan(d->d_name, uid, ino);
			continue;
		}
		end = 0;
		if (sscanf(d->d_name, "uroce-%u-net%lu-v%u%n", &uid, &ino, &version, &end) != 3 ||
		    d->d_name[end] || version != UR_REG_VERSION || !ino || ino == mine)
			continue;
		n += sweep_netns_registry(d->d_name, uid, ino);
	}
	closedir(dir);
	return n;
}
