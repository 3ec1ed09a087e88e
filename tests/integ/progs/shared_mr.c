/* Registered memory moved into a memfd (util/vm_share.h), in one process:
 *
 *   shared_mr DEVICE GID_INDEX CASE
 *
 * CASE writer: a thread writes a 32 MiB buffer without pause (word after
 *   word, each the number of its pass, after checking that the word still
 *   holds the pass before: a write lost in a move shows there) while the
 *   main thread registers and deregisters it with remote access 20 times;
 *   no write is lost, and the buffer ends holding every write made.
 * CASE handler: the same, with a SIGSEGV handler installed after uroce's
 *   that does not pass faults on (as UCX's does): writers are held in
 *   their page fault (userfaultfd), so no signal is delivered.
 * CASE syscall: a thread fills the buffer by pread(2) without pause while
 *   it moves: where the process may hold the kernel's faults (userfaultfd
 *   without UFFD_USER_MODE_ONLY: root) no read fails, and every byte read
 *   is there.
 * CASE sigwriter: writer with userfaultfd refused (a seccomp filter, as in
 *   a container): the SIGSEGV hold moves it, and no write is lost.
 *
 * Every case but probe expects UROCE_SHM_SHARE_MR=1 from the caller, which
 * moves a region when it is registered; without it, expect no move.
 * CASE back: a registered region, deregistered, is private anonymous
 *   memory again with its bytes, the neighbours of its first and last
 *   pages intact, and MADV_DONTNEED zeroes it as an allocator expects.
 * CASE sparse: a 64 MiB region never written moves without becoming
 *   resident, and reads zero.
 * CASE huge: a range advised MADV_HUGEPAGE (transparent huge pages)
 *   moves, to small pages, where writers are held by userfaultfd, and
 *   stays private under the SIGSEGV hold, its bytes kept either way; a
 *   hugetlb mapping, where the host has huge pages reserved, stays
 *   private.  CASE hugesig: the same with userfaultfd refused by seccomp.
 * CASE fallback: regions that cannot move are registered all the same,
 *   their pages left where they are (the log says why): on the stack, on
 *   a thread's stack (registered by it, and by another), an mlocked
 *   buffer, a MAP_PRIVATE file mapping, a MAP_SHARED one whose file is no
 *   longer open.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vt.h"

#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define WORDS ((32u << 20) / sizeof(uint64_t))

static struct vt_dev dev;
static uint64_t *words;
static volatile int stop;
static uint64_t last_pass;
static size_t last_index;

static void die(const char *what)
{
	fprintf(stderr, "shared_mr: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* Whether [p, p+len) is mapped from the memfd of a shared region. */
static bool in_memfd(const void *p, size_t len)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	bool found = false;

	if (!f)
		die("/proc/self/maps");
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b;

		if (sscanf(line, "%llx-%llx", &a, &b) == 2 && a < (uintptr_t)p + len &&
		    b > (uintptr_t)p && strstr(line, "memfd:uroce-mr"))
			found = true;
	}
	fclose(f);
	return found;
}

static size_t lost_writes;
static bool kernel_faults_held(void);
static bool uffd_allowed(void);
/* Whether private memory moves when it is registered: with
 * UROCE_SHM_SHARE_MR=1 (by default only once a peer copies into it, which
 * one process alone never does: integ_single_copy's pairs show that). */
static bool moves;

static void *writer(void *arg)
{
	uint64_t pass = 1;

	(void)arg;
	for (;;) {
		for (size_t i = 0; i < WORDS; i++) {
			/* A write of the last pass that went to the old pages
			 * after they were copied is missing here. */
			if (__atomic_load_n(&words[i], __ATOMIC_RELAXED) != pass - 1)
				lost_writes++;
			__atomic_store_n(&words[i], pass, __ATOMIC_RELAXED);
			if (__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
				last_pass = pass;
				last_index = i;
				return NULL;
			}
		}
		pass++;
	}
}

static void foreign_handler(int sig)
{
	static const char msg[] = "shared_mr: SIGSEGV reached the program's own handler\n";

	(void)sig;
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(3);
}

/* A handler of the program's own, installed after uroce's (its first
 * registration installed that), that kills as UCX's does for a fault it
 * does not know. */
static void install_foreign_handler(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = foreign_handler;
	if (sigaction(SIGSEGV, &sa, NULL))
		die("sigaction");
}

static void case_writer(const char *name, bool moving, bool own_handler)
{
	pthread_t t;
	size_t bad = 0, first = 0;
	int shared = 0;

	vt_case = name;
	words = mmap(NULL, WORDS * sizeof(*words), PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (words == MAP_FAILED)
		die("mmap");
	if (pthread_create(&t, NULL, writer, NULL))
		die("pthread_create");
	for (int i = 0; i < 20; i++) {
		struct ibv_mr *mr = ibv_reg_mr(dev.pd, words, WORDS * sizeof(*words), ACCESS);

		if (!mr)
			die("ibv_reg_mr");
		if (own_handler && !i)
			install_foreign_handler();
		shared += in_memfd(words, WORDS * sizeof(*words));
		usleep(20000);
		if (ibv_dereg_mr(mr))
			die("ibv_dereg_mr");
		usleep(5000);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	VT_EXPECT_EQ("registrations that moved the buffer into a memfd", moving ? 20 : 0, shared);
	for (size_t i = 0; i < WORDS; i++) {
		uint64_t want = i <= last_index ? last_pass : last_pass - 1;

		if (words[i] != want && !bad++)
			first = i;
	}
	vt_check(last_pass > 2 && !lost_writes,
		 "a thread writing through %llu passes while the buffer moved %d times: %zu "
		 "writes lost", (unsigned long long)last_pass, 2 * shared, lost_writes);
	vt_check(!bad, "the buffer holds every write made: %zu words not (first %zu)", bad, first);
	munmap(words, WORDS * sizeof(*words));
}

/* Whether userfaultfd may hold faults the kernel takes for a system
 * call (not only the program's own): uroce holds them then too. */
static bool kernel_faults_held(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Whether userfaultfd serves this process at all (user-mode faults). */
static bool uffd_allowed(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

struct filler {
	uint8_t *buf;
	size_t len;
	int fd;                 /* a file: 4 KiB of 0x5c, then 4 KiB of 0xa3 */
	size_t reads, failed, lost;
	int first_errno;
};

static uint8_t fill_byte(size_t round)
{
	return round % 2 ? 0xa3 : 0x5c;
}

/* Reads a page of the file into each page of the buffer in turn, the
 * other page of the file each round, after checking that the page still
 * holds what the round before read into it: a read lost in a move shows
 * there. */
static void *fill_by_syscall(void *arg)
{
	struct filler *f = arg;

	for (size_t round = 0; !__atomic_load_n(&stop, __ATOMIC_ACQUIRE); round++) {
		for (size_t off = 0; off < f->len && !__atomic_load_n(&stop, __ATOMIC_ACQUIRE);
		     off += 4096) {
			uint8_t before = round ? fill_byte(round - 1) : 0;
			ssize_t n;

			for (size_t i = 0; i < 4096; i += 512)
				f->lost += f->buf[off + i] != before;
			n = pread(f->fd, f->buf + off, 4096, (off_t)(round % 2) * 4096);
			f->reads++;
			if (n != 4096) {
				if (!f->failed++)
					f->first_errno = errno;
				/* Fill it by hand: the next round's check holds. */
				memset(f->buf + off, fill_byte(round), 4096);
			}
		}
	}
	return NULL;
}

static void case_syscall(void)
{
	char path[] = "/tmp/shared_mr.XXXXXX", page[8192];
	struct filler f = { .len = 16u << 20 };
	bool held = kernel_faults_held();
	pthread_t t;
	int shared = 0;

	vt_case = "syscall";
	f.fd = mkstemp(path);
	memset(page, fill_byte(0), 4096);
	memset(page + 4096, fill_byte(1), 4096);
	if (f.fd < 0 || write(f.fd, page, sizeof(page)) != (ssize_t)sizeof(page))
		die("a file");
	unlink(path);
	f.buf = mmap(NULL, f.len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (f.buf == MAP_FAILED)
		die("mmap");
	stop = 0;
	if (pthread_create(&t, NULL, fill_by_syscall, &f))
		die("pthread_create");
	for (int i = 0; i < 20; i++) {
		struct ibv_mr *mr = ibv_reg_mr(dev.pd, f.buf, f.len, ACCESS);

		if (!mr)
			die("ibv_reg_mr");
		shared += in_memfd(f.buf, f.len);
		usleep(10000);
		if (ibv_dereg_mr(mr))
			die("ibv_dereg_mr");
		usleep(2000);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	VT_EXPECT_EQ("registrations that moved the buffer into a memfd", moves ? 20 : 0, shared);
	vt_check(f.reads > 100 && !f.lost, "%zu reads into the moving buffer: %zu bytes checked "
		 "not what was read into them", f.reads, f.lost);
	if (held)
		vt_check(!f.failed, "kernel faults held: no read failed (%zu failed, first %s)",
			 f.failed, f.failed ? strerror(f.first_errno) : "-");
	else
		vt_ok("only user-mode faults held here: %zu of %zu reads failed (%s), as documented",
		      f.failed, f.reads, f.failed ? strerror(f.first_errno) : "-");
	close(f.fd);
	munmap(f.buf, f.len);
}

/* userfaultfd refused, as a container's seccomp profile may: EPERM. */
static void refuse_userfaultfd(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_userfaultfd, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
		die("seccomp");
}

static long rss_shmem_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		die("/proc/self/status");
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "RssShmem: %ld", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

/* A region never written: moving it allocates nothing (its pages read
 * zero and are not copied), and it reads zero. */
static void case_sparse(void)
{
	size_t len = 64u << 20;
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long before = rss_shmem_kib(), after;
	struct ibv_mr *mr;
	bool zero = true;

	vt_case = "sparse";
	if (p == MAP_FAILED)
		die("mmap");
	p[len / 2] = 1;         /* one page written */
	mr = ibv_reg_mr(dev.pd, p, len, ACCESS);
	if (!mr)
		die("ibv_reg_mr");
	after = rss_shmem_kib();
	vt_check(in_memfd(p, len), "registered: the region's pages are a memfd's");
	vt_check(after - before < 1024, "64 MiB with one page written moved: shared memory "
		 "resident grew by %ld KiB", after - before);
	for (size_t i = 0; i < len; i += 4096)
		if (i != len / 2 && p[i])
			zero = false;
	vt_check(zero && p[len / 2] == 1, "its bytes: zero, and the one written");
	ibv_dereg_mr(mr);
	munmap(p, len);
}

static void case_back(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t len = 1u << 20;
	uint8_t *map = mmap(NULL, len + 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0), *p = map + pg + 100;
	struct ibv_mr *mr;
	bool same = true;

	vt_case = "back";
	if (map == MAP_FAILED)
		die("mmap");
	for (size_t i = 0; i < len + 4 * pg; i++)
		map[i] = (uint8_t)(i * 7 + 3);
	mr = ibv_reg_mr(dev.pd, p, len, ACCESS);
	if (!mr)
		die("ibv_reg_mr");
	vt_check(in_memfd(p, len), "registered: the region's pages are a memfd's");
	vt_check(!in_memfd(map, pg) && !in_memfd(p + len + pg, pg),
		 "registered: only the pages holding the region moved");
	p[0] = 0x5a;
	p[len - 1] = 0xa5;
	if (ibv_dereg_mr(mr))
		die("ibv_dereg_mr");
	vt_check(!in_memfd(map, len + 4 * pg), "deregistered: private memory again");
	for (size_t i = 0; i < len + 4 * pg; i++) {
		uint8_t want = (uint8_t)(i * 7 + 3);

		if (map + i == p)
			want = 0x5a;
		else if (map + i == p + len - 1)
			want = 0xa5;
		if (map[i] != want)
			same = false;
	}
	vt_check(same, "deregistered: every byte kept, the region's and its pages' neighbours'");
	if (madvise(map, len + 4 * pg, MADV_DONTNEED))
		die("madvise");
	vt_check(map[pg + 100] == 0 && map[len] == 0, "deregistered: MADV_DONTNEED zeroes it");
	munmap(map, len + 4 * pg);
}

static void fallback_one(const char *what, void *p, size_t len)
{
	struct ibv_mr *mr = ibv_reg_mr(dev.pd, p, len, ACCESS);

	if (!vt_check(mr != NULL, "%s: registered", what))
		return;
	vt_check(!in_memfd(p, len), "%s: its pages stayed where they were", what);
	ibv_dereg_mr(mr);
}

/* Another thread's stack moves where its writes are held in their page
 * fault (nothing is signalled), and stays private under the SIGSEGV
 * hold, where a signal on a read-only stack would kill. */
static void other_stack_one(void *p, size_t len)
{
	const char *what = "another thread's stack";
	bool moved = moves && uffd_allowed();
	struct ibv_mr *mr = ibv_reg_mr(dev.pd, p, len, ACCESS);

	if (!vt_check(mr != NULL, "%s: registered", what))
		return;
	vt_check(in_memfd(p, len) == moved, "%s: %s", what,
		 moved ? "moved (its writes are held without a signal)"
		       : "its pages stayed where they were");
	ibv_dereg_mr(mr);
	vt_check(!in_memfd(p, len), "%s: deregistered, private again", what);
}

static uint8_t *other_stack;
static pthread_barrier_t stack_ready, stack_done;

/* A thread's own stack, registered by that thread (its frames lie on
 * the pages that would move); then kept, for main to register. */
static void *stack_thread(void *arg)
{
	uint8_t buf[3 * 4096];

	(void)arg;
	memset(buf, 2, sizeof(buf));
	fallback_one("a thread's stack, by the thread", buf, sizeof(buf));
	other_stack = buf;
	pthread_barrier_wait(&stack_ready);
	pthread_barrier_wait(&stack_done);
	return NULL;
}

static void case_fallback(void)
{
	pthread_t t;
	uint8_t stack[3 * 4096];
	size_t len = 1u << 20;
	char path[] = "/tmp/shared_mr.XXXXXX";
	uint8_t *locked, *file, *shared;
	int fd = mkstemp(path);

	vt_case = "fallback";
	if (fd < 0 || ftruncate(fd, (off_t)len))
		die("a file");
	unlink(path);
	memset(stack, 1, sizeof(stack));
	fallback_one("the stack", stack, sizeof(stack));
	pthread_barrier_init(&stack_ready, NULL, 2);
	pthread_barrier_init(&stack_done, NULL, 2);
	if (pthread_create(&t, NULL, stack_thread, NULL))
		die("pthread_create");
	pthread_barrier_wait(&stack_ready);
	other_stack_one(other_stack, 3 * 4096);
	pthread_barrier_wait(&stack_done);
	pthread_join(t, NULL);
	locked = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (locked == MAP_FAILED)
		die("mmap");
#if defined(__SANITIZE_ADDRESS__)
	/* AddressSanitizer's mlock succeeds and locks nothing (it would lock
	 * the shadow too): the buffer then rightly moves. */
	vt_ok("an mlocked buffer: mlock is a no-op under AddressSanitizer, not tried");
#else
	if (mlock(locked, 65536) == 0)
		fallback_one("an mlocked buffer", locked, 65536);
	else
		vt_ok("an mlocked buffer: mlock refused (%s), not tried", strerror(errno));
#endif
	file = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	shared = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (file == MAP_FAILED || shared == MAP_FAILED)
		die("mmap a file");
	/* Closed: a shared file the process holds open is mapped by peers
	 * as it is (integ_single_copy memfd). */
	close(fd);
	fallback_one("a MAP_PRIVATE file mapping", file, len);
	fallback_one("a MAP_SHARED file mapping, its fd closed", shared, len);
	munmap(locked, len);
	munmap(file, len);
	munmap(shared, len);
}

/* AnonHugePages of the mappings over [p, p+len), from smaps, in KiB. */
static long anon_huge_kib(const void *p, size_t len)
{
	char line[512];
	FILE *f = fopen("/proc/self/smaps", "r");
	bool over = false;
	long kib = 0, v;

	if (!f)
		die("/proc/self/smaps");
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a, b;

		if (sscanf(line, "%llx-%llx ", &a, &b) == 2)   /* a mapping's first line */
			over = a < (uintptr_t)p + len && b > (uintptr_t)p;
		else if (over && sscanf(line, "AnonHugePages: %ld", &v) == 1)
			kib += v;
	}
	fclose(f);
	return kib;
}

/* Transparent huge pages (a range advised MADV_HUGEPAGE): it moves to
 * small pages where writers are held by userfaultfd, and stays private
 * under the SIGSEGV hold; its bytes are kept either way.  A hugetlb
 * mapping never moves.  What this host cannot give is said, not failed. */
static void case_huge(void)
{
	size_t huge = 2u << 20, len = 4 * huge;
	uint8_t *map = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0), *p, *tlb;
	bool moved = moves && uffd_allowed(), same = true;
	struct ibv_mr *mr;
	long thp;

	vt_case = "huge";
	if (map == MAP_FAILED)
		die("mmap");
	p = (uint8_t *)(((uintptr_t)map + huge - 1) & ~(uintptr_t)(huge - 1));
	if (madvise(p, len, MADV_HUGEPAGE))
		die("madvise(MADV_HUGEPAGE)");
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 13 + 5);
	thp = anon_huge_kib(p, len);
	vt_ok("an 8 MiB range advised MADV_HUGEPAGE: %ld KiB of it in transparent huge pages%s",
	      thp, thp ? "" : " (the kernel gave none: what follows covers small pages only)");
	mr = ibv_reg_mr(dev.pd, p, len, ACCESS);
	if (!mr)
		die("ibv_reg_mr");
	vt_check(in_memfd(p, len) == moved, "transparent huge pages: %s",
		 moved ? "moved into a memfd (small pages)"
		 : moves ? "stayed private (the SIGSEGV hold)"
			 : "stayed private (nothing moves when registered, by default)");
	p[len - 1] = 0x77;
	if (ibv_dereg_mr(mr))
		die("ibv_dereg_mr");
	for (size_t i = 0; i < len; i++)
		if (p[i] != (i == len - 1 ? 0x77 : (uint8_t)(i * 13 + 5)))
			same = false;
	vt_check(same && !in_memfd(p, len), "transparent huge pages: deregistered, private again "
		 "with every byte kept");
	munmap(map, len + huge);
	tlb = mmap(NULL, huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
		   -1, 0);
	if (tlb == MAP_FAILED) {
		vt_ok("a hugetlb mapping: none to be had here (%s; /proc/sys/vm/nr_hugepages), not "
		      "tried", strerror(errno));
		return;
	}
	memset(tlb, 9, huge);
	fallback_one("a hugetlb mapping", tlb, huge);
	vt_check(tlb[0] == 9 && tlb[huge - 1] == 9, "a hugetlb mapping: its bytes kept");
	munmap(tlb, huge);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 4) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX "
			"writer|handler|syscall|sigwriter|back|sparse|fallback|huge|hugesig\n", argv[0]);
		return 2;
	}
	if (!strcmp(argv[3], "probe")) {
		printf("kernel faults held: %s\n", kernel_faults_held() ? "yes" : "no");
		return 0;
	}
	if (!strcmp(argv[3], "sigwriter") || !strcmp(argv[3], "hugesig"))
		refuse_userfaultfd();
	moves = getenv("UROCE_SHM_SHARE_MR") && !strcmp(getenv("UROCE_SHM_SHARE_MR"), "1");
	vt_dev_open(&dev, argv[1], atoi(argv[2]));
	if (!strcmp(argv[3], "writer"))
		case_writer("writer", moves, false);
	else if (!strcmp(argv[3], "handler"))
		case_writer("handler", moves, true);
	else if (!strcmp(argv[3], "sigwriter"))
		case_writer("sigwriter", moves, false);
	else if (!strcmp(argv[3], "syscall"))
		case_syscall();
	else if (!strcmp(argv[3], "sparse"))
		case_sparse();
	else if (!strcmp(argv[3], "back"))
		case_back();
	else if (!strcmp(argv[3], "fallback"))
		case_fallback();
	else if (!strcmp(argv[3], "huge") || !strcmp(argv[3], "hugesig"))
		case_huge();
	else
		return 2;
	vt_dev_close(&dev);
	fprintf(stderr, "%d checks, %d failed\n", vt_checks, vt_failures);
	return vt_failures || !vt_checks ? 1 : 0;
}
