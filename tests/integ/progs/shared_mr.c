/* Registered memory moved into a memfd (util/vm_share.h), in one process:
 *
 *   shared_mr DEVICE GID_INDEX CASE
 *
 * CASE writer: a thread writes a 32 MiB buffer without pause (word after
 *   word, each the number of its pass) while the main thread registers and
 *   deregisters it with remote access 20 times; the buffer then holds
 *   every write made (pass p up to the last word written, p - 1 after).
 * CASE back: a registered region, deregistered, is private anonymous
 *   memory again with its bytes, the neighbours of its first and last
 *   pages intact, and MADV_DONTNEED zeroes it as an allocator expects.
 * CASE fallback: regions that cannot move are registered all the same,
 *   their pages left where they are (the log says why): on the stack, on
 *   a thread's stack (registered by it, and by another), an mlocked
 *   buffer, a MAP_PRIVATE file mapping, a MAP_SHARED one whose file is no
 *   longer open.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

static void *writer(void *arg)
{
	uint64_t pass = 1;

	(void)arg;
	for (;;) {
		for (size_t i = 0; i < WORDS; i++) {
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

static void case_writer(void)
{
	pthread_t t;
	size_t bad = 0, first = 0;
	int shared = 0;

	vt_case = "writer";
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
		shared += in_memfd(words, WORDS * sizeof(*words));
		usleep(20000);
		if (ibv_dereg_mr(mr))
			die("ibv_dereg_mr");
		usleep(5000);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	VT_EXPECT_EQ("registrations that moved the buffer into a memfd", 20, shared);
	for (size_t i = 0; i < WORDS; i++) {
		uint64_t want = i <= last_index ? last_pass : last_pass - 1;

		if (words[i] != want && !bad++)
			first = i;
	}
	vt_check(last_pass > 2 && !bad,
		 "a thread writing through %llu passes while the buffer moved 40 times: %zu words "
		 "lost (first %zu)", (unsigned long long)last_pass, bad, first);
	munmap(words, WORDS * sizeof(*words));
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
	fallback_one("another thread's stack", other_stack, 3 * 4096);
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

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 4) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX writer|back|fallback\n", argv[0]);
		return 2;
	}
	vt_dev_open(&dev, argv[1], atoi(argv[2]));
	if (!strcmp(argv[3], "writer"))
		case_writer();
	else if (!strcmp(argv[3], "back"))
		case_back();
	else if (!strcmp(argv[3], "fallback"))
		case_fallback();
	else
		return 2;
	vt_dev_close(&dev);
	fprintf(stderr, "%d checks, %d failed\n", vt_checks, vt_failures);
	return vt_failures || !vt_checks ? 1 : 0;
}
