#include "util/vm_share.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/atfork.h"
#include "util/fault_guard.h"
#include "util/vm_pages.h"
#include "util/vm_query.h"
#include "util/wp_hold.h"

/* A range that moved, with the regions that share it. */
struct share {
	struct share *next;
	struct ur_vm_share sh;
	unsigned refs;
	uintptr_t lo, hi;       /* the addresses it serves here */
	bool own;               /* the application's shared file: nothing moved */
	bool by_signal;         /* moved under the SIGSEGV hold: so is its way back */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;   /* list, next_id, moves */
static struct share *list;
static uint64_t next_id = 1;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static int fork_pipe[2] = { -1, -1 };

static uintptr_t page_size(void)
{
	static uintptr_t pg;

	if (!pg)
		pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	return pg;
}

/* One mapping of /proc/self/smaps that [lo, hi) overlaps: whether it
 * can move, else why not. */
static const char *refuse(const char *head, const char *flags)
{
	char perms[8] = "", name[256] = "";
	unsigned long long ino = 1;
	int n = 0;

	if (sscanf(head, "%*x-%*x %7s %*x %*s %llu %n", perms, &ino, &n) < 2)
		return "unreadable mapping";
	sscanf(head + n, "%255[^\n]", name);
	if (strcmp(perms, "rw-p"))
		return perms[3] == 's' ? "a shared mapping" : "not private read-write memory";
	if (ino || (name[0] && strcmp(name, "[heap]")))
		return !strcmp(name, "[stack]") ? "the stack" : "a private file mapping";
	/* VmFlags: two letters a flag. */
	for (const char *f = flags; f && f[0] && f[1]; f += 3) {
		if (!strncmp(f, "lo", 2))
			return "locked";
		if (!strncmp(f, "ht", 2) || !strncmp(f, "hg", 2))
			return "huge pages";
		if (!strncmp(f, "gd", 2))
			return "the stack";
		/* MAP_STACK (Linux 6.7 on; or MADV_NOHUGEPAGE): a thread's
		 * stack may be the mover's, or take a signal while read-only. */
		if (!strncmp(f, "nh", 2))
			return "a thread's stack (or no huge pages asked)";
		if (!strncmp(f, "um", 2) || !strncmp(f, "uw", 2) || !strncmp(f, "ui", 2))
			return "watched by userfaultfd";
		if (f[2] != ' ')
			break;
	}
	return NULL;
}

/* Whether [lo, hi) overlaps this thread's stack: read-only while it
 * moves, the mover's own writes there would wait for themselves. */
static bool on_my_stack(uintptr_t lo, uintptr_t hi)
{
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	pthread_attr_t attr;
	size_t size = 0;
	void *addr = NULL;

	struct ur_vma v;

	if (here >= lo && here < hi)
		return true;
	/* The mapping our frame is in (pthread_getattr_np reads all of
	 * /proc/self/maps for the main thread). */
	if (ur_vma_query(here, &v) != -ENOTTY)
		return v.start <= here && lo < v.end && hi > v.start;
	if (pthread_getattr_np(pthread_self(), &attr))
		return false;
	pthread_attr_getstack(&attr, &addr, &size);
	pthread_attr_destroy(&attr);
	return addr && lo < (uintptr_t)addr + size && hi > (uintptr_t)addr;
}

/* Whether the process holds locked memory (mlock): only smaps tells
 * which. */
static bool any_locked(void)
{
	char line[128];
	long kib = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return true;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %ld", &kib) == 1)
			break;
	fclose(f);
	return kib != 0;
}

/* movable(), one mapping at a time (util/vm_query.h): 1 or 0 (*why), or
 * -ENOTTY where only smaps can tell: an older kernel, locked memory in
 * the process.  Under userfaultfd's hold the flags only smaps shows but
 * this does not matter: a thread's stack may move (its owner's writes
 * wait in their fault, no signal comes); a range advised MADV_HUGEPAGE
 * moves to small pages, as transparent huge pages do; a range another
 * userfaultfd watches refuses our registration, and stays private. */
static int movable_fast(uintptr_t lo, uintptr_t hi, const char **why)
{
	uintptr_t cur = lo;
	struct ur_vma v;

	if (any_locked())
		return -ENOTTY;
	while (cur < hi) {
		int ret = ur_vma_query(cur, &v);

		if (ret == -ENOTTY)
			return ret;
		if (ret || v.start > cur) {
			*why = "no mapping";
			return 0;
		}
		if (!v.readable || !v.writable || v.shared) {
			*why = v.shared ? "a shared mapping" : "not private read-write memory";
			return 0;
		}
		if (v.page_size != page_size()) {
			*why = "huge pages";
			return 0;
		}
		if (v.inode || (v.name[0] && strcmp(v.name, "[heap]") && strncmp(v.name, "[anon:", 6))) {
			*why = !strcmp(v.name, "[stack]") ? "the stack" : "a private file mapping";
			return 0;
		}
		cur = v.end;
	}
	return 1;
}

/* Whether every page of [lo, hi) is memory that can move; *why if not. */
static bool movable(uintptr_t lo, uintptr_t hi, bool by_signal, const char **why)
{
	char line[512], head[512] = "";
	uintptr_t cur = lo, a = 0, b = 0;
	bool in = false, ok = false;
	FILE *f;

	*why = "no mapping";
	if (on_my_stack(lo, hi)) {
		*why = "the stack";
		return false;
	}
	if (!by_signal) {
		int fast = movable_fast(lo, hi, why);

		if (fast >= 0)
			return fast;
	}
	f = fopen("/proc/self/smaps", "re");
	if (!f) {
		*why = "no /proc/self/smaps";
		return false;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long x, y;
		char c;

		if (sscanf(line, "%llx-%llx %c", &x, &y, &c) == 3 && strchr(line, '-') &&
		    strchr(line, '-') < strchr(line, ' ')) {
			a = (uintptr_t)x;
			b = (uintptr_t)y;
			in = b > cur && a < hi;
			if (in && a > cur)
				break;          /* a hole */
			if (in)
				snprintf(head, sizeof(head), "%s", line);
			continue;
		}
		if (!in || strncmp(line, "VmFlags:", 8))
			continue;
		if ((*why = refuse(head, line + 9)))
			break;
		cur = b;
		if (cur >= hi) {
			ok = true;
			break;
		}
		in = false;
	}
	fclose(f);
	if (!ok && !*why)
		*why = "no mapping";
	return ok;
}

/* Holds writers off [lo, hi) while it moves: userfaultfd's write
 * protection (a writer sleeps in its fault), or with by_signal the range
 * made read-only and a writer waiting in the fault guard's handler. */
struct move_hold {
	struct ur_wp_hold wp;
	int guard;
};

static int hold_writers(struct move_hold *m, uintptr_t lo, uintptr_t hi, bool by_signal)
{
	m->wp.uffd = m->guard = -1;
	if (!by_signal)
		return ur_wp_hold(&m->wp, lo, hi);
	m->guard = ur_fault_guard_hold(lo, hi);
	if (m->guard < 0)
		return m->guard;
	if (mprotect((void *)lo, hi - lo, PROT_READ)) {
		int ret = -errno;

		ur_fault_guard_release(m->guard);
		return ret;
	}
	return 0;
}

/* moved: new backing is in place (read-write); else the held pages are
 * still there and are made writable again. */
static void release_writers(struct move_hold *m, uintptr_t lo, uintptr_t hi, bool moved)
{
	if (m->guard < 0) {
		ur_wp_release(&m->wp);
		return;
	}
	if (!moved)
		mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE);
	ur_fault_guard_release(m->guard);
}

/* Moves [lo, hi) into fd at offset off (its pages holding data written
 * there), then maps fd over it, writers held off meanwhile.  Lock held. */
static int move_in(uintptr_t lo, uintptr_t hi, int fd, off_t off, bool by_signal)
{
	size_t len = hi - lo;
	struct move_hold m;
	int ret;

	ret = hold_writers(&m, lo, hi, by_signal);
	if (ret)
		return ret;
	ret = ur_pages_to_file(fd, off, (const void *)lo, len);
	if (!ret) {
		void *at = mmap((void *)lo, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, off);
		ret = at == MAP_FAILED ? -errno : 0;
	}
	release_writers(&m, lo, hi, !ret);
	return ret;
}

/* A private anonymous copy of fd's [off, off+len), ready to be put in
 * place with mremap, or MAP_FAILED. */
static void *private_copy(int fd, off_t off, size_t len)
{
	void *tmp = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (tmp != MAP_FAILED && ur_pages_from_file(tmp, fd, off, len)) {
		munmap(tmp, len);
		tmp = MAP_FAILED;
	}
	return tmp;
}

/* Puts private anonymous memory holding fd's bytes in place of [lo, hi),
 * mapped from fd at off, writers held off meanwhile.  Lock held. */
static int move_out(uintptr_t lo, uintptr_t hi, int fd, off_t off, bool by_signal)
{
	size_t len = hi - lo;
	struct move_hold m;
	void *tmp;
	int ret;

	ret = hold_writers(&m, lo, hi, by_signal);
	if (ret)
		return ret;
	tmp = private_copy(fd, off, len);
	if (tmp == MAP_FAILED) {
		ret = -ENOMEM;
	} else if (mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, (void *)lo) == MAP_FAILED) {
		/* The pages themselves, not a copy of them: mremap. */
		ret = -errno;
		munmap(tmp, len);
	}
	release_writers(&m, lo, hi, !ret);
	return ret;
}

/* foreach_still_ours' parts, one mapping at a time: how many, or
 * UINT_MAX where the kernel cannot answer so. */
static unsigned still_ours_fast(uintptr_t lo, uintptr_t hi, uint64_t ino, uintptr_t part[64][2])
{
	uintptr_t cur = lo;
	unsigned n = 0;
	struct ur_vma v;

	while (cur < hi && n < 64) {
		int ret = ur_vma_query(cur, &v);

		if (ret == -ENOTTY)
			return UINT_MAX;
		if (ret || v.start >= hi)
			break;
		if (v.inode == ino && v.offset == v.start - lo) {
			part[n][0] = v.start > lo ? v.start : lo;
			part[n][1] = v.end < hi ? v.end : hi;
			n++;
		}
		cur = v.end;
	}
	return n;
}

/* The parts of [sh->base, +len) still mapped from sh's memfd at their own
 * offsets (the application may have unmapped or remapped some), each
 * handed to fn.  Lock held. */
static void foreach_still_ours(const struct share *s, void (*fn)(const struct share *, uintptr_t,
									 uintptr_t))
{
	const struct ur_vm_share *sh = &s->sh;
	uintptr_t lo = sh->base, hi = sh->base + sh->len;
	uintptr_t part[64][2];
	unsigned n = 0;
	char line[512];
	struct stat st;
	FILE *f;

	if (fstat(sh->fd, &st))
		return;
	n = still_ours_fast(lo, hi, st.st_ino, part);
	if (n != UINT_MAX)
		goto found;
	n = 0;
	if (!(f = fopen("/proc/self/maps", "re")))
		return;
	while (n < 64 && fgets(line, sizeof(line), f)) {
		unsigned long long a, b, off, ino;

		if (sscanf(line, "%llx-%llx %*s %llx %*s %llu", &a, &b, &off, &ino) != 4)
			continue;
		if (b <= lo || a >= hi || ino != (unsigned long long)st.st_ino ||
		    off != a - lo)
			continue;
		part[n][0] = a > lo ? (uintptr_t)a : lo;
		part[n][1] = b < hi ? (uintptr_t)b : hi;
		n++;
	}
	fclose(f);
found:
	for (unsigned i = 0; i < n; i++)
		fn(s, part[i][0], part[i][1]);
}

static void move_back(const struct share *s, uintptr_t lo, uintptr_t hi)
{
	move_out(lo, hi, s->sh.fd, (off_t)(lo - s->sh.base), s->by_signal);
}

/* Child of fork(), its only thread: its own copy of every shared range,
 * before fork() returns, then the parent may go on. */
static void child_copy(const struct share *s, uintptr_t lo, uintptr_t hi)
{
	size_t len = hi - lo;
	void *tmp = private_copy(s->sh.fd, (off_t)(lo - s->sh.base), len);

	if (tmp == MAP_FAILED || mremap(tmp, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
					(void *)lo) == MAP_FAILED) {
		/* No room for the copy: the child must not share; it loses
		 * the range instead (as with MADV_DONTFORK). */
		if (tmp != MAP_FAILED)
			munmap(tmp, len);
		munmap((void *)lo, len);
	}
}

static void at_prepare(void)
{
	pthread_mutex_lock(&lock);
	if (list && pipe2(fork_pipe, O_CLOEXEC))
		fork_pipe[0] = fork_pipe[1] = -1;
}

static void at_parent(void)
{
	char c;

	if (fork_pipe[0] >= 0) {
		close(fork_pipe[1]);
		/* EOF: the child copied, or died. */
		while (read(fork_pipe[0], &c, 1) < 0 && errno == EINTR)
			;
		close(fork_pipe[0]);
		fork_pipe[0] = fork_pipe[1] = -1;
	}
	pthread_mutex_unlock(&lock);
}

static void at_child(void)
{
	struct share *s, *next;

	for (s = list; s; s = next) {
		next = s->next;
		/* The application's own shared file: shared by its choice. */
		if (!s->own)
			foreach_still_ours(s, child_copy);
		close(s->sh.fd);
		free(s);
	}
	list = NULL;
	if (fork_pipe[0] >= 0) {
		close(fork_pipe[0]);
		close(fork_pipe[1]);
		fork_pipe[0] = fork_pipe[1] = -1;
	}
	pthread_mutex_unlock(&lock);
}

/* An fd of this process open on the file (dev, ino), dup'd, or -1. */
static int find_fd(unsigned dev_major, unsigned dev_minor, unsigned long long ino)
{
	struct dirent *d;
	DIR *dir = opendir("/proc/self/fd");
	int found = -1;

	if (!dir)
		return -1;
	while (found < 0 && (d = readdir(dir))) {
		struct stat st;
		int fd = atoi(d->d_name);

		if (d->d_name[0] == '.' || fd == dirfd(dir) || fstat(fd, &st) ||
		    !S_ISREG(st.st_mode) || st.st_ino != ino || major(st.st_dev) != dev_major ||
		    minor(st.st_dev) != dev_minor)
			continue;
		found = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	}
	closedir(dir);
	return found;
}

/* [lo, hi) inside one MAP_SHARED read-write mapping of a file this
 * process holds open (a memfd, a file in /dev/shm): that file, as it is,
 * for peers to map; its byte 0 where it would be here.  Lock held. */
static int own_object(uintptr_t lo, uintptr_t hi, struct ur_vm_share *sh, uintptr_t *vlo,
		      uintptr_t *vhi)
{
	char line[512], perms[8];
	unsigned long long a, b, off, ino;
	unsigned maj, min;
	bool hit = false;
	struct stat st;
	struct ur_vma v;
	FILE *f;

	if (ur_vma_query(lo, &v) != -ENOTTY) {
		hit = v.start <= lo && v.end >= hi && v.readable && v.writable && v.shared &&
		      v.inode && v.offset <= v.start;
		a = v.start;
		b = v.end;
		off = v.offset;
		ino = v.inode;
		maj = v.dev_major;
		min = v.dev_minor;
		goto found;
	}
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu", &a, &b, perms, &off, &maj, &min,
			   &ino) != 7 || b <= lo || a >= hi)
			continue;
		hit = a <= lo && b >= hi && !strcmp(perms, "rw-s") && ino && off <= a;
		break;
	}
	fclose(f);
found:
	if (!hit)
		return -ENOENT;
	sh->fd = find_fd(maj, min, ino);
	if (sh->fd < 0)
		return -ENOENT;
	sh->base = (uintptr_t)(a - off);
	sh->len = (size_t)(b - sh->base);
	*vlo = (uintptr_t)a;
	*vhi = (uintptr_t)b;
	if (fstat(sh->fd, &st) || (uint64_t)st.st_size < sh->len) {
		close(sh->fd);
		return -ENOENT;
	}
	return 0;
}

static void atfork_install(void)
{
	static const struct ur_atfork_hooks hooks = { at_prepare, at_parent, at_child };

	ur_atfork_register(UR_ATFORK_VM_SHARE, &hooks);
}

int ur_vm_share_get(void *addr, size_t len, enum ur_vm_move how, struct ur_vm_share *out,
		    const char **why)
{
	const char *refused = NULL;
	enum ur_wp_kind wp;
	uintptr_t pg = page_size(), lo = (uintptr_t)addr & ~(pg - 1);
	uintptr_t hi = ((uintptr_t)addr + len + pg - 1) & ~(pg - 1);
	struct share *s;
	int fd, ret;

	*why = NULL;
	if (!len || hi < lo) {
		*why = "empty";
		return -EINVAL;
	}
	ur_fault_guard_install();
	pthread_once(&atfork_once, atfork_install);
	pthread_mutex_lock(&lock);
	for (s = list; s; s = s->next) {
		if (lo >= s->lo && hi <= s->hi) {
			s->refs++;
			*out = s->sh;
			pthread_mutex_unlock(&lock);
			return 0;
		}
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	if (!own_object(lo, hi, &s->sh, &s->lo, &s->hi)) {
		s->own = true;
		goto add;
	}
	if (how == UR_VM_MOVE_NEVER) {
		*why = "private memory may not move";
		ret = -EOPNOTSUPP;
		goto err_free;
	}
	/* Writers are held in their page fault where userfaultfd allows it,
	 * the kernel's writes for system calls too; where only user-mode
	 * faults can be held, or userfaultfd is refused (then by the SIGSEGV
	 * hold), only when asked. */
	wp = ur_wp_kind(&refused);
	s->by_signal = wp == UR_WP_NONE;
	if (wp != UR_WP_ALL && how != UR_VM_MOVE_ANY) {
		*why = wp == UR_WP_USER ? "without CAP_SYS_PTRACE userfaultfd holds only user-mode "
					  "writes: a system call writing these pages while they moved "
					  "would fail" : refused;
		ret = -EOPNOTSUPP;
		goto err_free;
	}
	if (!movable(lo, hi, s->by_signal, why)) {
		ret = -EOPNOTSUPP;
		goto err_free;
	}
	fd = memfd_create("uroce-mr", MFD_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		*why = "memfd_create failed";
		goto err_free;
	}
	if (ftruncate(fd, (off_t)(hi - lo))) {
		ret = -errno;
		*why = "no room for the memfd";
		goto err_close;
	}
	ret = move_in(lo, hi, fd, 0, s->by_signal);
	if (ret) {
		*why = "the pages could not move";
		goto err_close;
	}
	s->sh.fd = fd;
	s->sh.base = s->lo = lo;
	s->sh.len = hi - lo;
	s->hi = hi;
add:
	s->sh.id = next_id++;
	s->refs = 1;
	s->next = list;
	list = s;
	*out = s->sh;
	pthread_mutex_unlock(&lock);
	return 0;

err_close:
	close(fd);
err_free:
	free(s);
err_unlock:
	pthread_mutex_unlock(&lock);
	return ret;
}

void ur_vm_share_put(const struct ur_vm_share *sh)
{
	struct share **pp, *s;

	pthread_mutex_lock(&lock);
	for (pp = &list; (s = *pp); pp = &s->next)
		if (s->sh.id == sh->id)
			break;
	if (s && !--s->refs) {
		*pp = s->next;
		if (!s->own)
			foreach_still_ours(s, move_back);
		close(s->sh.fd);
		free(s);
	}
	pthread_mutex_unlock(&lock);
}
