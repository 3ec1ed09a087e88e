/* libFuzzer target: the host registry as another process left it.
 *
 * The registry (src/host/registry_*.c) is a table in /dev/shm that every uroce
 * process of a user writes.  Only that user can open it, but a process of
 * that user may be an older build, buggy, or killed halfway through an
 * update: whatever it left, the others must read it without crashing, without
 * touching memory outside the table, and without handing out a QP number
 * that the table says someone else owns.
 *
 * One input = patches to the live table of an attached process: a stream of
 * 7-byte records, a 3-byte little-endian word index (counted from the end of
 * the 32-byte header, modulo the table's words) and the 4-byte value to store
 * there (gen_registry_corpus.py names the fields).  Then this process uses it as
 * the library does: looks up QP numbers, reads multicast members and CM
 * listeners, sums counters, reclaims dead processes' slots, claims and
 * frees QP numbers, joins and leaves a group; and checks what it gets.  The table is reset after each
 * input.  Runs in private network and mount namespaces (the registry's name
 * carries the namespace); without them (not root) it does not run. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "private_ns.h"

#include "host/registry.h"

static struct ur_registry reg = UR_REGISTRY_INIT;

#define FUZZ_ASSERT(c) do { if (!(c)) { fprintf(stderr, "fuzz_registry: %s\n", #c); abort(); } } while (0)
#define HEADER_BYTES 32u    /* magic, version, sizes, cursor: checked at attach only */

/* The corpus replay's verdict hook: this target does not judge inputs. */
int fuzz_dropped = -1;

static struct {
	uint8_t *table;         /* our own mapping of the file, as another process has it */
	uint8_t *clean;
	size_t size;
	int ready;
} r;

/* Private namespaces, so that the registry is ours alone; false if not root. */
static int isolate(void)
{
	int err = ur_test_private_ns(CLONE_NEWNS);

	if (err)
		return err;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", "/dev/shm", "tmpfs", 0, "mode=1777"))
		return -errno;
	return 0;
}

static void setup(void)
{
	struct stat st;
	int fd;

	if (isolate()) {
		fprintf(stderr, "fuzz_registry: needs root (private namespaces): skipped\n");
		exit(77);
	}
	FUZZ_ASSERT(ur_registry_attach(&reg) == 0);
	fd = open(ur_registry_path(&reg), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	FUZZ_ASSERT(fd >= 0 && !fstat(fd, &st));
	r.size = (size_t)st.st_size;
	r.table = mmap(NULL, r.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	FUZZ_ASSERT(r.table != MAP_FAILED);
	close(fd);
	r.clean = malloc(r.size);
	FUZZ_ASSERT(r.clean);
	memcpy(r.clean, r.table, r.size);
	r.ready = 1;
}

static void use_registry(const uint8_t *data, size_t size)
{
	struct ur_reg_owner o, members[16];
	union ibv_gid gid;
	uint64_t cnt[UR_REG_COUNTERS];
	uint32_t qpn[4];
	int n;

	for (size_t i = 0; i + 4 <= size && i < 64; i += 4) {
		uint32_t q;

		memcpy(&q, data + i, 4);
		if (ur_registry_lookup(&reg, q & 0xffffff, &o) == 0)
			FUZZ_ASSERT(o.pid != 0);
	}
	memset(&gid, 0, sizeof(gid));
	memcpy(gid.raw, data, size < 16 ? size : 16);
	n = ur_registry_mcast_members(&reg, &gid, members, 16);
	FUZZ_ASSERT(n >= 0 && n <= 16);
	for (int i = 0; i < n; i++)
		FUZZ_ASSERT(members[i].pid != 0);
	(void)ur_registry_cm_listener(&reg, size, &o);
	FUZZ_ASSERT(ur_registry_read_counters(&reg, 1, cnt, UR_REG_COUNTERS) == 0);
	(void)ur_registry_reclaim_dead(&reg);
	/* QP numbers still come out valid.  (Which process the table names
	 * as their owner is whatever was written there: a process that
	 * scribbles over the table misroutes packets, within this user.) */
	for (int i = 0; i < 4; i++) {
		if (ur_registry_alloc_qpn(&reg, &qpn[i])) {
			qpn[i] = 0;
			continue;
		}
		FUZZ_ASSERT(qpn[i] > 1 && qpn[i] <= 0xffffff);
		n = ur_registry_lookup(&reg, qpn[i], &o);
		FUZZ_ASSERT(n == 0 || n == -ENOENT);
	}
	for (int i = 0; i < 4; i++)
		if (qpn[i])
			ur_registry_free_qpn(&reg, qpn[i]);
	(void)ur_registry_mcast_join(&reg, &gid, 1);
	ur_registry_mcast_leave(&reg, &gid, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t words;

	if (!r.ready)
		setup();
	words = (r.size - HEADER_BYTES) / 4;
	for (size_t i = 0; i + 7 <= size; i += 7) {
		uint32_t idx = (uint32_t)data[i] | (uint32_t)data[i + 1] << 8 |
			       (uint32_t)data[i + 2] << 16;

		memcpy(r.table + HEADER_BYTES + 4 * (idx % words), data + i + 3, 4);
	}
	use_registry(data, size);
	memcpy(r.table, r.clean, r.size);
	return 0;
}
