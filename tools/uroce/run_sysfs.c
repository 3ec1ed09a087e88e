/* The /sys/class view of `uroce run`: programs and scripts that open
 * /sys/class/infiniband/... themselves (rdma-core's pyverbs tests look for
 * DEV/device/net/, ibdev2netdev and show_gids read the same tree) find
 * uroce's devices there as the kernel would show them.
 *
 * The program gets a mount namespace of its own (as root; otherwise inside a
 * user namespace that maps only the caller's own uid and gid, where the
 * kernel allows one).  There a tmpfs covers /sys/class: every real class
 * directory is bind-mounted back into it (live: interfaces that come and go
 * show as before), and infiniband/, infiniband_verbs/, infiniband_cm/ are
 * directories of the tmpfs holding the kernel's own entries (links to the
 * same ../../devices/... targets, as they were at the start) and uroce's
 * devices, written by `uroce sysfs` through the library at the start.  The
 * tmpfs is then made read-only.  Nothing outside the namespace changes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run_sysfs.h"

#define CLASS "/sys/class"
#define VIEW_FLAGS (MS_NOSUID | MS_NODEV | MS_NOEXEC)
#define VIEW_SOURCE "uroce-sysfs"   /* the tmpfs's name in the mount table */

/* The classes uroce's devices are added to; the rest are bound back whole. */
static bool is_rdma_class(const char *name)
{
	return !strcmp(name, "infiniband") || !strcmp(name, "infiniband_verbs") ||
	       !strcmp(name, "infiniband_cm");
}

static int write_text(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t len = (ssize_t)strlen(text), n;

	if (fd < 0)
		return -1;
	n = write(fd, text, (size_t)len);
	close(fd);
	return n == len ? 0 : -1;
}

/* In a new user namespace: the caller keeps its own uid and gid (so the
 * program sees itself as before) and holds the capabilities to mount in the
 * mount namespace made with it; they are dropped again when PROG is executed
 * under a non-zero uid.  Files of other users show as the overflow id.  The
 * ids are those of before the unshare: getuid() answers the overflow uid
 * until the map is written. */
static uid_t own_uid;
static gid_t own_gid;

static int map_own_ids(void)
{
	char map[64];

	/* setgroups must be denied before an unprivileged gid_map is written. */
	if (write_text("/proc/self/setgroups", "deny"))
		return -1;
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)own_uid, (unsigned)own_uid);
	if (write_text("/proc/self/uid_map", map))
		return -1;
	snprintf(map, sizeof(map), "%u %u 1", (unsigned)own_gid, (unsigned)own_gid);
	return write_text("/proc/self/gid_map", map);
}

/* Bind-mounts SRC (a path into the real /sys/class) over DST, made first as
 * an empty directory or file. */
static int bind_back(const char *src, const char *dst, bool dir)
{
	int fd;

	if (dir) {
		if (mkdir(dst, 0755))
			return -1;
	} else {
		fd = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
		if (fd < 0)
			return -1;
		close(fd);
	}
	return mount(src, dst, NULL, MS_BIND | MS_REC, NULL);
}

/* Recreates the entries of the real class directory REAL/NAME in DST: links
 * with the same targets, files bound back. */
static int mirror_class(int real, const char *name, const char *dst)
{
	char src[64 + NAME_MAX], to[PATH_MAX], target[PATH_MAX];
	int fd = openat(real, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *e;
	DIR *d;
	int rc = 0;

	if (mkdir(dst, 0755) || fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while (!rc && (e = readdir(d))) {
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(to, sizeof(to), "%s/%s", dst, e->d_name);
		n = readlinkat(fd, e->d_name, target, sizeof(target) - 1);
		if (n >= 0) {
			target[n] = '\0';
			rc = symlink(target, to);
		} else {
			snprintf(src, sizeof(src), "/proc/self/fd/%d/%s", fd, e->d_name);
			rc = bind_back(src, to, e->d_type == DT_DIR);
		}
	}
	closedir(d);
	return rc;
}

/* Covers /sys/class with a tmpfs holding the real classes, reached through
 * REAL (the real directory, opened before it was covered). */
static int cover_classes(int real, char *why, size_t whylen)
{
	char src[64 + NAME_MAX], dst[sizeof(CLASS) + NAME_MAX + 1];
	int dupfd = dup(real);
	struct dirent *e;
	DIR *d;

	if (mount(VIEW_SOURCE, CLASS, "tmpfs", VIEW_FLAGS, "mode=0755,size=8m")) {
		snprintf(why, whylen, "mount tmpfs on " CLASS ": %s", strerror(errno));
		return -1;
	}
	if (dupfd < 0 || !(d = fdopendir(dupfd))) {
		snprintf(why, whylen, "reading " CLASS ": %s", strerror(errno));
		if (dupfd >= 0)
			close(dupfd);
		goto err_umount;
	}
	while ((e = readdir(d))) {
		int rc;

		if (e->d_name[0] == '.')
			continue;
		snprintf(dst, sizeof(dst), CLASS "/%s", e->d_name);
		snprintf(src, sizeof(src), "/proc/self/fd/%d/%s", real, e->d_name);
		rc = is_rdma_class(e->d_name) ? mirror_class(real, e->d_name, dst)
					      : bind_back(src, dst, e->d_type == DT_DIR);
		if (rc) {
			snprintf(why, whylen, "%s: %s", dst, strerror(errno));
			closedir(d);
			goto err_umount;
		}
	}
	closedir(d);
	return 0;
err_umount:
	/* The real /sys/class again, rather than part of it. */
	umount2(CLASS, MNT_DETACH);
	return -1;
}

/* Runs `uroce sysfs /sys/class` (this binary, with the library path the
 * program gets) to write uroce's devices into the view. */
static int write_devices(char *why, size_t whylen)
{
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		snprintf(why, whylen, "fork: %s", strerror(errno));
		return -1;
	}
	if (!pid) {
		/* Warnings of opening the devices (port 4791 taken, say) are the
		 * program's to give when it opens them; errors still show. */
		setenv("UROCE_LOG", "error", 0);
		execl("/proc/self/exe", "uroce", "sysfs", CLASS, (char *)NULL);
		fprintf(stderr, "uroce run: cannot run uroce sysfs: %s\n", strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			snprintf(why, whylen, "waitpid: %s", strerror(errno));
			return -1;
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(why, whylen, "uroce sysfs failed (status 0x%x)", status);
		return -1;
	}
	return 0;
}

/* Whether /sys/class is already a view (a `uroce run` inside another): the
 * last mount on it, in /proc/self/mountinfo's order, is the view's tmpfs
 * ("... /sys/class ... - tmpfs " VIEW_SOURCE " ..."). */
static bool have_view(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[1024], point[256], fstype[64], source[64];
	bool view = false;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");

		if (sscanf(line, "%*s %*s %*s %*s %255s", point) != 1 || strcmp(point, CLASS) ||
		    !sep || sscanf(sep, " - %63s %63s", fstype, source) != 2)
			continue;
		view = !strcmp(fstype, "tmpfs") && !strcmp(source, VIEW_SOURCE);
	}
	fclose(f);
	return view;
}

int ur_run_sysfs_view(void)
{
	char why[512] = "";
	bool userns = false;
	int real;

	if (have_view())
		return 0;
	own_uid = geteuid();
	own_gid = getegid();
	if (unshare(CLONE_NEWNS)) {
		int err = errno;

		if (err == EPERM && !unshare(CLONE_NEWUSER | CLONE_NEWNS)) {
			/* No way back from here: a program left in a user namespace
			 * without its uid mapped would run as the overflow uid. */
			if (map_own_ids()) {
				fprintf(stderr, "uroce run: cannot map uid %u in the user namespace "
					"made for the /sys/class view: %s (uroce run --no-sysfs runs "
					"without it)\n", (unsigned)own_uid, strerror(errno));
				return -2;
			}
			userns = true;
		} else {
			fprintf(stderr, "uroce run: no /sys/class view for the program (unshare: %s; "
				"it needs root or unprivileged user namespaces): it will not find "
				"uroce's devices under /sys/class/infiniband\n",
				strerror(err == EPERM ? errno : err));
			return -1;
		}
	}
	/* Mounts made here stay here; the host's later mounts still reach in. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL)) {
		snprintf(why, sizeof(why), "making / a slave: %s", strerror(errno));
		goto fail;
	}
	real = open(CLASS, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (real < 0) {
		snprintf(why, sizeof(why), CLASS ": %s", strerror(errno));
		goto fail;
	}
	if (cover_classes(real, why, sizeof(why))) {
		close(real);
		goto fail;
	}
	close(real);
	if (write_devices(why, sizeof(why)))
		fprintf(stderr, "uroce run: the /sys/class view lacks uroce's devices: %s\n", why);
	if (mount(NULL, CLASS, NULL, MS_REMOUNT | MS_RDONLY | VIEW_FLAGS, NULL))
		fprintf(stderr, "uroce run: the /sys/class view stays writable: %s\n",
			strerror(errno));
	return 0;
fail:
	fprintf(stderr, "uroce run: no /sys/class view for the program (%s%s)\n", why,
		userns ? ", in a user namespace" : "");
	return -1;
}
