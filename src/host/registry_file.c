/* The registry's file: its name (user, network namespace, version), opening
 * it as this user's alone, the use lock every process holds on it, mapping
 * it and checking its layout. */
#include "host/registry_priv.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/host_uid.h"
#include "util/log.h"

unsigned long ur_reg_netns_id(void)
{
	struct stat st;

	return stat("/proc/self/ns/net", &st) ? 0 : (unsigned long)st.st_ino;
}

int ur_registry_open_private(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		int err = errno;

		close(fd);
		return -err;
	}
	/* /dev/shm is open to everyone: a file someone else created there
	 * first, under our name, would be theirs to read and change. */
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/* Every process using a registry holds a read lock (an open file
 * description's, fcntl F_OFD_SETLK) on its first byte for as long as it
 * has the file open: the kernel drops it when the process ends, however it
 * ends, and whoever can get a write lock there knows nobody uses the file,
 * whatever pid namespace its users run in.  Independent of the flock that
 * serialises changes. */
static int hold_use_lock(int fd)
{
	struct flock fl = { .l_type = F_RDLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };

	return fcntl(fd, F_OFD_SETLK, &fl) ? -errno : 0;
}

int ur_reg_map_file(struct ur_registry *r)
{
	struct stat st;
	void *p;
	int fd;

	ur_registry_file_path(r->path, sizeof(r->path));
again:
	fd = ur_registry_open_private(r->path);
	if (fd < 0) {
		if (fd == -EPERM)
			ur_err(NULL, "the host registry %s is not this user's alone (another user "
			       "created it, or may read or write it): not used; remove it", r->path);
		else
			ur_err(NULL, "cannot open the host registry %s: %s", r->path, strerror(-fd));
		return fd;
	}
	r->fd = fd;
	ur_reg_lock_file(r);
	if (fstat(fd, &st))
		goto err_errno;
	/* Removed between our open and our lock, by a process that took this
	 * namespace for a dead one (sweep_netns_registry): not the file our
	 * namespace's next process would find.  Open it anew. */
	if (st.st_nlink == 0) {
		ur_reg_unlock_file(r);
		close(fd);
		r->fd = -1;
		goto again;
	}
	if (hold_use_lock(fd))
		goto err_errno;
	if (st.st_size == 0) {
		if (ftruncate(fd, sizeof(struct ur_reg_shm)))
			goto err_errno;
	} else if ((size_t)st.st_size != sizeof(struct ur_reg_shm)) {
		goto err_layout;
	}
	p = mmap(NULL, sizeof(struct ur_reg_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto err_errno;
	r->shm = p;
	if (__atomic_load_n(&r->shm->magic, __ATOMIC_ACQUIRE) == 0) {
		r->shm->version = UR_REG_VERSION;
		r->shm->layout_size = sizeof(struct ur_reg_shm);
		r->shm->nslots = UR_REG_SLOTS;
		r->shm->nblocks = UR_REG_BLOCKS;
		/* The fields above are seen by whoever sees the magic. */
		__atomic_store_n(&r->shm->magic, UR_REG_MAGIC, __ATOMIC_RELEASE);
	} else if (__atomic_load_n(&r->shm->magic, __ATOMIC_ACQUIRE) != UR_REG_MAGIC ||
		   r->shm->version != UR_REG_VERSION ||
		   r->shm->layout_size != sizeof(struct ur_reg_shm)) {
		munmap(p, sizeof(struct ur_reg_shm));
		r->shm = NULL;
		goto err_layout;
	}
	return 0;

err_layout:
	ur_reg_unlock_file(r);
	ur_err(NULL, "the host registry %s was written by another uroce version; "
	       "stop the programs using it and remove the file", r->path);
	close(fd);
	r->fd = -1;
	return -EPROTO;
err_errno:
	{
		int err = errno;

		ur_reg_unlock_file(r);
		ur_err(NULL, "host registry %s: %s", r->path, strerror(err));
		close(fd);
		r->fd = -1;
		return -err;
	}
}

int ur_registry_file_path(char *buf, size_t len)
{
	snprintf(buf, len, "/dev/shm/uroce-%u-net%lu-v%u", (unsigned)ur_host_uid(), ur_reg_netns_id(),
		 UR_REG_VERSION);
	return 0;
}

int ur_registry_router_lock_path(char *buf, size_t len)
{
	snprintf(buf, len, "/dev/shm/uroce-%u-net%lu.router", (unsigned)ur_host_uid(), ur_reg_netns_id());
	return 0;
}

const char *ur_registry_path(const struct ur_registry *r)
{
	return r->path;
}
