/* Unit tests of the host registry (registry_*.c), white-box, in a private
 * network namespace (its own registry file): QPN uniqueness across many
 * allocations and frees and across processes, block claiming, a dead
 * process's slot, blocks and multicast memberships reclaimed, pid reuse
 * (start time) not fooling the liveness check, multicast member lists,
 * the files of a network namespace that is gone removed (and kept while a
 * process uses them), a fork while another thread holds the registry's lock,
 * the owners of a QP number found across namespaces (never this process,
 * never a dead one).
 *
 * Child processes stand for other uroce processes: right after fork() a
 * child forgets the parent's registry state (as a freshly started process
 * has none) and attaches on its own. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>

#include "ut.h"
#include "ut_env.h"

#include "host/registry_slots.c"
#include "host/registry_file.c"
#include "host/registry_liveness.c"
#include "host/registry_sweep.c"
#include "host/registry_reclaim.c"
#include "host/registry_qpn.c"
#include "host/registry_mcast.c"
#include "host/registry_listen.c"
#include "host/registry_counters.c"
#include "host/registry_peers.c"

/* The registry under test: this process's view, as the process object
 * (core/process.h) holds one in the library. */
static struct ur_registry reg = UR_REGISTRY_INIT;

/* In a child: no registry yet, as in a new process. */
static void forget_parent_registry(void)
{
	if (reg.shm)
		munmap(reg.shm, sizeof(*reg.shm));
	if (reg.fd >= 0)
		close(reg.fd);
	free(reg.blocks);
	reg.shm = NULL;
	reg.fd = -1;
	reg.slot = -1;
	reg.blocks = NULL;
	reg.nblocks = 0;
}

static uint16_t owner_of(uint32_t qpn)
{
	return atomic_load(&reg.shm->block_owner[qpn >> UR_REG_BLOCK_SHIFT]);
}

/* A view is an object, not the process's one global: two views in one
 * process hold two slots, claim QPNs in blocks of their own, and each
 * calls its own QPNs its own and the other's another's (the library has
 * one, the process object's; the transports use the one they are
 * handed). */
static void test_two_views(void)
{
	struct ur_registry other = UR_REGISTRY_INIT;
	struct ur_reg_owner o;
	uint32_t a, b;

	UT_EQ(ur_registry_attach(&reg), 0);
	UT_EQ(ur_registry_attach(&other), 0);
	UT_CHECK(other.slot >= 0 && other.slot != reg.slot);
	UT_EQ(strcmp(ur_registry_path(&other), ur_registry_path(&reg)), 0);
	UT_EQ(ur_registry_alloc_qpn(&reg, &a), 0);
	UT_EQ(ur_registry_alloc_qpn(&other, &b), 0);
	UT_CHECK(a >> UR_REG_BLOCK_SHIFT != b >> UR_REG_BLOCK_SHIFT);
	UT_EQ(owner_of(b), other.slot + 1);
	UT_EQ(ur_registry_lookup(&reg, b, &o), 0);
	UT_CHECK(!o.self && o.pid == getpid());
	UT_EQ(ur_registry_lookup(&other, b, &o), 0);
	UT_CHECK(o.self);
	UT_EQ(ur_registry_lookup(&other, a, &o), 0);
	UT_CHECK(!o.self);
	ur_registry_free_qpn(&reg, a);
	ur_registry_free_qpn(&other, b);
	/* Gone, with all it held: the first view's are untouched. */
	ur_registry_detach(&other);
	UT_EQ(owner_of(b), 0);
	UT_EQ(owner_of(a), reg.slot + 1);
	munmap(other.shm, sizeof(*other.shm));
	close(other.fd);
	free(other.blocks);
}

static void test_alloc_unique(void)
{
	enum { N = 3000 };
	static uint8_t used[1 << 24];
	static uint32_t q[N];
	uint32_t again[N / 2];

	UT_EQ(ur_registry_attach(&reg), 0);
	UT_CHECK(reg.slot >= 0);
	UT_EQ(ur_registry_attach(&reg), 0);          /* idempotent */
	for (int i = 0; i < N; i++) {
		UT_EQ(ur_registry_alloc_qpn(&reg, &q[i]), 0);
		UT_CHECK(q[i] >= UR_REG_BLOCK_QPNS);  /* QPNs 0 and 1 never, nor block 0 */
		UT_CHECK(q[i] <= 0xffffff);
		UT_EQ(used[q[i]], 0);
		used[q[i]] = 1;
		UT_EQ(owner_of(q[i]), reg.slot + 1);
	}
	/* 3000 QPNs: 12 blocks claimed, no more. */
	UT_EQ(reg.nblocks, (N + UR_REG_BLOCK_QPNS - 1) / UR_REG_BLOCK_QPNS);
	/* Free every other one and allocate as many again: still unique
	 * among those in use. */
	for (int i = 0; i < N; i += 2) {
		ur_registry_free_qpn(&reg, q[i]);
		used[q[i]] = 0;
	}
	for (int i = 0; i < N / 2; i++) {
		UT_EQ(ur_registry_alloc_qpn(&reg, &again[i]), 0);
		UT_EQ(used[again[i]], 0);
		used[again[i]] = 1;
	}
	UT_EQ(reg.nblocks, (N + UR_REG_BLOCK_QPNS - 1) / UR_REG_BLOCK_QPNS);
	/* A freed QPN is not handed out again at once while its block has
	 * others free (round robin): a late packet for the old QP does not
	 * find a new one. */
	{
		uint32_t a, b;

		UT_EQ(ur_registry_alloc_qpn(&reg, &a), 0);
		ur_registry_free_qpn(&reg, a);
		UT_EQ(ur_registry_alloc_qpn(&reg, &b), 0);
		UT_CHECK(a != b);
		ur_registry_free_qpn(&reg, b);
	}
	/* Lookups: ours, with our ports; unknown blocks. */
	UT_EQ(ur_registry_set_ports(&reg, 1111, 2222), 0);
	{
		struct ur_reg_owner o;

		UT_EQ(ur_registry_lookup(&reg, q[1], &o), 0);
		UT_EQ(o.pid, getpid());
		UT_CHECK(o.self);
		UT_EQ(o.port4, 1111);
		UT_EQ(o.port6, 2222);
		UT_EQ(ur_registry_lookup(&reg, 0x10, &o), -ENOENT);          /* block 0 */
		UT_EQ(ur_registry_lookup(&reg, 0xfffff0, &o), -ENOENT);
	}
	for (int i = 1; i < N; i += 2)
		ur_registry_free_qpn(&reg, q[i]);
	for (int i = 0; i < N / 2; i++)
		ur_registry_free_qpn(&reg, again[i]);
}

/* Pipes to talk to a child. */
struct kid {
	pid_t pid;
	int to[2], from[2];
};

static void kid_send(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		_exit(90);
}

static bool kid_recv(int fd, void *p, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)p + got, n - got);

		if (r <= 0)
			return false;
		got += (size_t)r;
	}
	return true;
}

/* The child: attaches on its own, allocates n QPNs and reports them,
 * joins a group, then waits for one byte and dies without detaching. */
static void kid_start(struct kid *k, int n)
{
	UT_EQ(pipe(k->to), 0);
	UT_EQ(pipe(k->from), 0);
	k->pid = fork();
	if (k->pid == 0) {
		union ibv_gid g = { .raw = { 0xff, 0x12, [15] = 0x42 } };
		uint32_t qpn;
		char c;
		int slot;

		forget_parent_registry();
		if (ur_registry_attach(&reg))
			_exit(91);
		slot = reg.slot;
		kid_send(k->from[1], &slot, sizeof(slot));
		for (int i = 0; i < n; i++) {
			if (ur_registry_alloc_qpn(&reg, &qpn))
				_exit(92);
			kid_send(k->from[1], &qpn, sizeof(qpn));
		}
		if (ur_registry_mcast_join(&reg, &g, 7) || ur_registry_set_ports(&reg, 3333, 0))
			_exit(93);
		c = 1;
		kid_send(k->from[1], &c, 1);
		if (read(k->to[0], &c, 1) != 1)
			_exit(94);
		_exit(0);                        /* no ur_registry_detach(): a crash */
	}
	close(k->to[0]);
	close(k->from[1]);
}

static void kid_finish(struct kid *k)
{
	char c = 1;
	int st = -1;

	UT_EQ(write(k->to[1], &c, 1), 1);
	UT_EQ(waitpid(k->pid, &st, 0), k->pid);
	UT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(k->to[1]);
	close(k->from[0]);
}

/* Two processes allocating at the same time never share a QPN. */
static void test_two_processes(void)
{
	enum { N = 700 };
	static uint8_t mine[1 << 24];
	struct kid k;
	uint32_t q;
	int slot = -1, dup = 0;
	char c = 0;

	UT_EQ(ur_registry_attach(&reg), 0);
	for (int i = 0; i < N / 2; i++) {
		UT_EQ(ur_registry_alloc_qpn(&reg, &q), 0);
		mine[q] = 1;
	}
	kid_start(&k, N);
	UT_CHECK(kid_recv(k.from[0], &slot, sizeof(slot)));
	UT_CHECK(slot >= 0 && slot != reg.slot);
	for (int i = 0; i < N; i++) {
		uint32_t theirs;

		if (!kid_recv(k.from[0], &theirs, sizeof(theirs))) {
			UT_CHECK(!"child report");
			break;
		}
		dup += mine[theirs];
		UT_EQ(owner_of(theirs), slot + 1);
		/* Interleave our own allocations with the child's. */
		if (i % 2) {
			UT_EQ(ur_registry_alloc_qpn(&reg, &q), 0);
			dup += q == theirs;
			mine[q] = 1;
		}
	}
	UT_CHECK(kid_recv(k.from[0], &c, 1));
	UT_EQ(dup, 0);
	kid_finish(&k);
	ur_registry_reclaim_dead(&reg);
}

/* A process that died without detaching: its slot, blocks and multicast
 * memberships stay until reclaimed, then are free; lookups of its QPNs
 * then fail. */
static void test_dead_reclaimed(void)
{
	union ibv_gid g = { .raw = { 0xff, 0x12, [15] = 0x42 } };
	struct ur_reg_owner o[8];
	struct kid k;
	uint32_t q = 0, last = 0;
	int slot = -1, n;
	char c = 0;

	UT_EQ(ur_registry_attach(&reg), 0);
	UT_EQ(ur_registry_mcast_join(&reg, &g, 7), 0);
	kid_start(&k, 300);
	UT_CHECK(kid_recv(k.from[0], &slot, sizeof(slot)));
	for (int i = 0; i < 300; i++) {
		UT_CHECK(kid_recv(k.from[0], &q, sizeof(q)));
		if (i == 0)
			last = q;
	}
	UT_CHECK(kid_recv(k.from[0], &c, 1));
	/* Alive: two members, the child's QPNs are the child's. */
	n = ur_registry_mcast_members(&reg, &g, o, 8);
	UT_EQ(n, 2);
	UT_EQ(ur_registry_lookup(&reg, last, o), 0);
	UT_EQ(o[0].pid, k.pid);
	UT_CHECK(!o[0].self);
	UT_EQ(o[0].port4, 3333);
	UT_EQ(ur_registry_reclaim_dead(&reg), 0);    /* nobody is dead yet */
	kid_finish(&k);

	/* Dead, not yet reclaimed: the lookup still names it (liveness is not
	 * checked per packet); what is sent there is lost. */
	UT_EQ(ur_registry_lookup(&reg, last, o), 0);
	UT_EQ(o[0].pid, k.pid);
	UT_EQ(kill(k.pid, 0), -1);
	/* Reclaimed: slot free, blocks free, membership gone. */
	UT_EQ(ur_registry_reclaim_dead(&reg), 1);
	UT_EQ(atomic_load(&reg.shm->slot[slot].pid), 0);
	UT_EQ(owner_of(last), 0);
	UT_EQ(owner_of(q), 0);
	UT_EQ(ur_registry_lookup(&reg, last, o), -ENOENT);
	n = ur_registry_mcast_members(&reg, &g, o, 8);
	UT_EQ(n, 1);
	UT_CHECK(n == 1 && o[0].self);
	UT_EQ(ur_registry_reclaim_dead(&reg), 0);
	ur_registry_mcast_leave(&reg, &g, 7);
	UT_EQ(ur_registry_mcast_members(&reg, &g, o, 8), 0);

	/* A process that starts later reclaims at attach, before it needs
	 * room: simulate it by attaching afresh in a child. */
	kid_start(&k, 1);
	UT_CHECK(kid_recv(k.from[0], &slot, sizeof(slot)));
	UT_CHECK(kid_recv(k.from[0], &q, sizeof(q)));
	UT_CHECK(kid_recv(k.from[0], &c, 1));
	kid_finish(&k);
	{
		struct kid k2;
		int slot2 = -1;

		kid_start(&k2, 1);
		UT_CHECK(kid_recv(k2.from[0], &slot2, sizeof(slot2)));
		UT_CHECK(kid_recv(k2.from[0], &q, sizeof(q)));
		UT_CHECK(kid_recv(k2.from[0], &c, 1));
		/* The first child's slot was free again for the second. */
		UT_EQ(slot2, slot);
		kid_finish(&k2);
	}
	ur_registry_reclaim_dead(&reg);
}

/* Liveness is pid and start time: a slot naming a live pid with another
 * start time (the pid was reused) is dead; the true owner is alive. */
static void test_pid_reuse(void)
{
	struct ur_reg_slot *s;
	uint32_t blk = UR_REG_BLOCKS - 3;
	int k = -1;

	UT_EQ(ur_registry_attach(&reg), 0);
	for (unsigned i = 0; i < UR_REG_SLOTS && k < 0; i++)
		if (!atomic_load(&reg.shm->slot[i].pid))
			k = (int)i;
	if (k < 0)
		return;
	s = &reg.shm->slot[k];
	/* Our own pid, our own start time: alive. */
	s->start_time = ur_reg_proc_start_time(getpid());
	UT_CHECK(s->start_time != 0);
	atomic_store(&s->pid, (uint32_t)getpid());
	atomic_store(&reg.shm->block_owner[blk], (uint16_t)(k + 1));
	UT_CHECK(ur_reg_slot_alive(s));
	UT_EQ(ur_registry_reclaim_dead(&reg), 0);
	UT_EQ(atomic_load(&reg.shm->block_owner[blk]), k + 1);
	/* Same pid, another start time: the process that registered it is
	 * gone and the pid belongs to someone else now. */
	s->start_time += 1;
	UT_CHECK(!ur_reg_slot_alive(s));
	UT_EQ(ur_registry_reclaim_dead(&reg), 1);
	UT_EQ(atomic_load(&s->pid), 0);
	UT_EQ(atomic_load(&reg.shm->block_owner[blk]), 0);
	/* A pid that does not exist at all. */
	{
		pid_t gone = fork();

		if (gone == 0)
			_exit(0);
		waitpid(gone, NULL, 0);
		s->start_time = 12345;
		atomic_store(&s->pid, (uint32_t)gone);
		UT_CHECK(!ur_reg_slot_alive(s));
		UT_EQ(ur_registry_reclaim_dead(&reg), 1);
	}
	/* Our own slot is never reclaimed, whatever it says. */
	{
		uint64_t saved = reg.shm->slot[reg.slot].start_time;

		reg.shm->slot[reg.slot].start_time = 1;
		UT_EQ(ur_registry_reclaim_dead(&reg), 0);
		UT_EQ(atomic_load(&reg.shm->slot[reg.slot].pid), (uint32_t)getpid());
		reg.shm->slot[reg.slot].start_time = saved;
	}
	/* The start time parser: a command name with spaces and parentheses. */
	UT_CHECK(ur_reg_proc_start_time(1) != 0 || kill(1, 0) != 0);
	UT_EQ(ur_reg_proc_start_time(0x7ffffff0), 0);
}

static void test_mcast_members(void)
{
	union ibv_gid g1 = { .raw = { 0xff, 0x0e, [15] = 1 } }, g2 = { .raw = { 0xff, 0x0e, [15] = 2 } };
	struct ur_reg_owner o[4];
	int n;

	UT_EQ(ur_registry_attach(&reg), 0);
	UT_EQ(ur_registry_mcast_members(&reg, &g1, o, 4), 0);
	UT_EQ(ur_registry_mcast_join(&reg, &g1, 3), 0);
	UT_EQ(ur_registry_mcast_join(&reg, &g1, 3), 0);     /* twice: still one member */
	n = ur_registry_mcast_members(&reg, &g1, o, 4);
	UT_EQ(n, 1);
	UT_CHECK(o[0].self);
	UT_EQ(o[0].pid, getpid());
	UT_EQ(ur_registry_mcast_members(&reg, &g2, o, 4), 0);
	/* The same group on two interfaces: the process is one member (it
	 * must get each datagram once). */
	UT_EQ(ur_registry_mcast_join(&reg, &g1, 4), 0);
	UT_EQ(ur_registry_mcast_members(&reg, &g1, o, 4), 1);
	ur_registry_mcast_leave(&reg, &g1, 4);
	UT_EQ(ur_registry_mcast_members(&reg, &g1, o, 4), 1);
	ur_registry_mcast_leave(&reg, &g1, 3);
	UT_EQ(ur_registry_mcast_members(&reg, &g1, o, 4), 0);
	/* The table holds UR_REG_MCAST_GROUPS groups; an empty entry is
	 * free again. */
	for (unsigned i = 0; i < UR_REG_MCAST_GROUPS; i++) {
		union ibv_gid g = { .raw = { 0xff, 0x0e, [13] = 1, [14] = (uint8_t)(i >> 8),
					     [15] = (uint8_t)i } };

		UT_EQ(ur_registry_mcast_join(&reg, &g, 1), 0);
	}
	UT_EQ(ur_registry_mcast_join(&reg, &g2, 1), -ENOSPC);
	{
		union ibv_gid g = { .raw = { 0xff, 0x0e, [13] = 1, [14] = 0, [15] = 77 } };

		ur_registry_mcast_leave(&reg, &g, 1);
		UT_EQ(ur_registry_mcast_join(&reg, &g2, 1), 0);
		UT_EQ(ur_registry_mcast_members(&reg, &g2, o, 4), 1);
	}
	for (unsigned i = 0; i < UR_REG_MCAST_GROUPS; i++) {
		union ibv_gid g = { .raw = { 0xff, 0x0e, [13] = 1, [14] = (uint8_t)(i >> 8),
					     [15] = (uint8_t)i } };

		ur_registry_mcast_leave(&reg, &g, 1);
	}
	ur_registry_mcast_leave(&reg, &g2, 1);
	/* Output bounded by max. */
	UT_EQ(ur_registry_mcast_join(&reg, &g1, 3), 0);
	UT_EQ(ur_registry_mcast_members(&reg, &g1, o, 0), 0);
	ur_registry_mcast_leave(&reg, &g1, 3);
}

/* When every block is claimed, QPNs come from blocks a dead process left;
 * if nobody is dead, there are none. */
static void test_blocks_exhausted(void)
{
	uint16_t *owner = (uint16_t *)reg.shm->block_owner;
	int dead = -1, alive = reg.slot;
	uint32_t q;
	pid_t gone;

	UT_EQ(ur_registry_attach(&reg), 0);
	/* Start with no blocks of our own, so the next QPN needs a claim. */
	for (unsigned i = 0; i < reg.nblocks; i++)
		atomic_store(&reg.shm->block_owner[reg.blocks[i].block], 0);
	free(reg.blocks);
	reg.blocks = NULL;
	reg.nblocks = 0;
	for (unsigned i = 0; i < UR_REG_SLOTS && dead < 0; i++)
		if (!atomic_load(&reg.shm->slot[i].pid) && (int)i != reg.slot)
			dead = (int)i;
	/* Every block taken by the live process (us)... */
	for (uint32_t b = 1; b < UR_REG_BLOCKS; b++)
		owner[b] = (uint16_t)(alive + 1);
	UT_EQ(ur_registry_alloc_qpn(&reg, &q), -ENOSPC);
	/* ...or one of them by a process that died since: reclaimed, claimed. */
	gone = fork();
	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);
	reg.shm->slot[dead].start_time = 1;
	atomic_store(&reg.shm->slot[dead].pid, (uint32_t)gone);
	owner[777] = (uint16_t)(dead + 1);
	UT_EQ(ur_registry_alloc_qpn(&reg, &q), 0);
	UT_EQ(q >> UR_REG_BLOCK_SHIFT, 777);
	UT_EQ(atomic_load(&reg.shm->slot[dead].pid), 0);
	for (uint32_t b = 1; b < UR_REG_BLOCKS; b++)
		owner[b] = 0;
	free(reg.blocks);
	reg.blocks = NULL;
	reg.nblocks = 0;
}

/* All slots held by live processes: a new process cannot attach. */
static void test_slots_exhausted(void)
{
	uint64_t me = ur_reg_proc_start_time(getpid());
	pid_t c;
	int st = -1;

	UT_EQ(ur_registry_attach(&reg), 0);
	for (unsigned i = 0; i < UR_REG_SLOTS; i++) {
		if ((int)i == reg.slot)
			continue;
		reg.shm->slot[i].start_time = me;
		atomic_store(&reg.shm->slot[i].pid, (uint32_t)getpid());
	}
	c = fork();
	if (c == 0) {
		forget_parent_registry();
		_exit(ur_registry_attach(&reg) == -EUSERS ? 0 : 1);
	}
	waitpid(c, &st, 0);
	UT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (unsigned i = 0; i < UR_REG_SLOTS; i++)
		if ((int)i != reg.slot)
			atomic_store(&reg.shm->slot[i].pid, 0);
}

/* Detach gives everything back; the file's layout is checked at attach. */
static void test_detach_and_layout(void)
{
	uint32_t q;
	union ibv_gid g = { .raw = { 0xff, 0x0e, [15] = 9 } };
	struct ur_reg_owner o[2];
	int slot;

	UT_EQ(ur_registry_attach(&reg), 0);
	UT_EQ(ur_registry_alloc_qpn(&reg, &q), 0);
	UT_EQ(ur_registry_mcast_join(&reg, &g, 1), 0);
	slot = reg.slot;
	ur_registry_detach(&reg);
	UT_EQ(atomic_load(&reg.shm->slot[slot].pid), 0);
	UT_EQ(owner_of(q), 0);
	UT_EQ(ur_registry_mcast_members(&reg, &g, o, 2), 0);
	UT_EQ(reg.shm->magic, UR_REG_MAGIC);
	UT_EQ(reg.shm->version, UR_REG_VERSION);
	UT_EQ(reg.shm->layout_size, sizeof(struct ur_reg_shm));
	UT_CHECK(strstr(ur_registry_path(&reg), "/dev/shm/uroce-") == ur_registry_path(&reg));
	/* A file of another layout is refused, not trusted, and left alone. */
	{
		char path[128];
		uint32_t v = UR_REG_VERSION;
		int fd;

		snprintf(path, sizeof(path), "%s", ur_registry_path(&reg));
		reg.shm->version = 99;
		forget_parent_registry();
		UT_EQ(ur_registry_attach(&reg), -EPROTO);
		UT_EQ(reg.shm, NULL);
		UT_EQ(ur_registry_alloc_qpn(&reg, &q), -ENODEV);
		fd = open(path, O_RDWR);
		UT_CHECK(fd >= 0);
		UT_EQ(pwrite(fd, &v, sizeof(v), offsetof(struct ur_reg_shm, version)), (ssize_t)sizeof(v));
		close(fd);
	}
	/* Attach again for the tests that follow (and the exit handler). */
	forget_parent_registry();
	UT_EQ(ur_registry_attach(&reg), 0);
}

/* Counters published, then detached: they join the retired totals once.
 * A publish after the detach (an exiting process's engine thread) is
 * refused, and whoever takes the slot next starts from zero: the host's
 * totals count each packet once (the ASan soak counted some twice). */
static void test_counters_once(void)
{
	enum { IFX = 77 };
	uint64_t c[UR_REG_COUNTERS] = { 0 }, total[UR_REG_COUNTERS];
	int slot;

	UT_EQ(ur_registry_attach(&reg), 0);
	c[0] = 1000;
	c[1] = 900;
	UT_EQ(ur_registry_publish_counters(&reg, IFX, c, UR_REG_COUNTERS), 0);
	UT_EQ(ur_registry_read_counters(&reg, IFX, total, UR_REG_COUNTERS), 0);
	UT_EQ(total[0], 1000);
	slot = reg.slot;
	ur_registry_detach(&reg);
	c[0] = 1010;                     /* late: after the detach */
	UT_EQ(ur_registry_publish_counters(&reg, IFX, c, UR_REG_COUNTERS), -ENODEV);
	/* A late write that got in anyway (an older library): stale. */
	atomic_store(&reg.shm->slot_cnt[slot][0].cnt[0], 1010);
	atomic_store(&reg.shm->slot_cnt[slot][0].ifindex, IFX);
	forget_parent_registry();
	UT_EQ(ur_registry_attach(&reg), 0);
	UT_EQ(reg.slot, slot);            /* the first free slot again */
	UT_EQ(ur_registry_read_counters(&reg, IFX, total, UR_REG_COUNTERS), 0);
	UT_EQ(total[0], 1000);            /* retired once, nothing stale */
	UT_EQ(total[1], 900);
}

/* A thread that holds reg.lock for a while, as one claiming a QPN block
 * or publishing counters does; it writes to held[1] once it has it
 * (checked by the test's read: the check counters are the main thread's),
 * and ends only when the test writes to go[1]: a thread that ended
 * unjoined before the fork would be one the child can never join
 * (ThreadSanitizer fails the child's exit for it, a thread leak). */
struct reg_holder {
	int held[2], go[2];
};

static void *hold_reg_lock(void *arg)
{
	struct reg_holder *h = arg;
	char c = 1;
	ssize_t n;

	pthread_mutex_lock(&reg.lock);
	n = write(h->held[1], &c, 1);
	usleep(200 * 1000);
	pthread_mutex_unlock(&reg.lock);
	n = read(h->go[0], &c, 1);
	(void)n;
	return NULL;
}

/* A fork while another thread holds reg.lock: the fork waits for it (the
 * fork handler's registry slot), so the child, whose copy of the lock
 * would otherwise stay taken by a thread it does not have, attaches on its
 * own (the fork generation tells it the view is its parent's). */
static void test_fork_while_held(void)
{
	struct reg_holder h;
	int st = -1;
	pthread_t t;
	pid_t pid;
	char c = 1;

	UT_EQ(ur_registry_attach(&reg), 0);   /* as a process does before any fork */
	UT_EQ(pipe(h.held), 0);
	UT_EQ(pipe(h.go), 0);
	UT_EQ(pthread_create(&t, NULL, hold_reg_lock, &h), 0);
	UT_EQ(read(h.held[0], &c, 1), 1);
	pid = fork();
	if (pid == 0) {
		int parent_slot = reg.slot;

		alarm(5);                        /* a child that waits for ever dies */
		if (ur_registry_attach(&reg) || reg.slot < 0 || reg.slot == parent_slot)
			_exit(1);
		ur_registry_detach(&reg);
		_exit(0);
	}
	UT_CHECK(pid > 0);
	UT_EQ(waitpid(pid, &st, 0), pid);
	UT_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	UT_EQ(write(h.go[1], &c, 1), 1);
	UT_EQ(pthread_join(t, NULL), 0);
	for (int i = 0; i < 2; i++) {
		close(h.held[i]);
		close(h.go[i]);
	}
}

/* A child that stands for a process in a network namespace of its own:
 * attaches there (registry and router lock file), reports both paths,
 * then, if leave, moves back to our namespace (its own is then gone while
 * it still holds the registry), and waits for one byte; dies without
 * detaching. */
static void netns_kid_start(struct kid *k, bool leave, char reg_path[128], char router[128])
{
	char ready;

	UT_EQ(pipe(k->to), 0);
	UT_EQ(pipe(k->from), 0);
	k->pid = fork();
	if (k->pid == 0) {
		char c, path[128];
		int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

		forget_parent_registry();
		if (home < 0 || unshare(CLONE_NEWNET))
			_exit(91);
		if (ur_registry_attach(&reg))
			_exit(92);
		ur_registry_router_lock_path(path, sizeof(path));
		if (ur_registry_open_private(path) < 0)
			_exit(93);
		kid_send(k->from[1], ur_registry_path(&reg), 128);
		kid_send(k->from[1], path, 128);
		if (leave && setns(home, CLONE_NEWNET))
			_exit(94);
		c = 1;
		kid_send(k->from[1], &c, 1);
		if (read(k->to[0], &c, 1) != 1)
			_exit(95);
		_exit(0);
	}
	close(k->to[0]);
	close(k->from[1]);
	UT_CHECK(kid_recv(k->from[0], reg_path, 128));
	UT_CHECK(kid_recv(k->from[0], router, 128));
	UT_CHECK(kid_recv(k->from[0], &ready, 1));
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* A namespace that is gone leaves its registry, router lock file and
 * capture switch; the next attach (here the test hook it calls) removes
 * them.  A namespace with a process in it keeps them. */
static void test_netns_gone_swept(void)
{
	char path[128], router[128], capture[128];
	struct kid k;
	int fd;

	UT_EQ(ur_registry_attach(&reg), 0);
	netns_kid_start(&k, false, path, router);
	UT_CHECK(strcmp(path, ur_registry_path(&reg)) != 0);
	UT_CHECK(exists(path) && exists(router));
	snprintf(capture, sizeof(capture), "/dev/shm/uroce-%u-net%lu.capture", (unsigned)getuid(),
		 strtoul(strstr(path, "-net") + 4, NULL, 10));
	fd = open(capture, O_RDWR | O_CREAT, 0600);
	UT_CHECK(fd >= 0);
	close(fd);
	ur_registry_sweep_dead_netns();
	UT_CHECK(exists(path) && exists(router) && exists(capture));   /* alive: kept */
	kid_finish(&k);
	UT_CHECK(exists(path) && exists(router));          /* nobody swept yet */
	UT_EQ(ur_registry_sweep_dead_netns() >= 1, 1);
	UT_CHECK(!exists(path));
	UT_CHECK(!exists(router));
	UT_CHECK(!exists(capture));
	/* A switch whose registry went before it (an older uroce's sweep). */
	fd = open(capture, O_RDWR | O_CREAT, 0600);
	UT_CHECK(fd >= 0);
	close(fd);
	ur_registry_sweep_dead_netns();
	UT_CHECK(!exists(capture));
	UT_CHECK(exists(ur_registry_path(&reg)));              /* ours stays */
	/* A process that attaches removes them too, as any start does. */
	netns_kid_start(&k, false, path, router);
	kid_finish(&k);
	forget_parent_registry();
	UT_EQ(ur_registry_attach(&reg), 0);
	UT_CHECK(!exists(path) && !exists(router));
}

/* A dead namespace's registry that another process is looking at (its
 * own sweep holds the file's flock for its checks) is removed all the
 * same, once that process lets go: passing it by left it to whoever came
 * next (integ.registry_netns failed so, with another run's processes
 * starting beside it). */
static void test_netns_swept_past_another_sweeper(void)
{
	char path[128], router[128], c;
	int ready[2];
	struct kid k;
	pid_t other;

	UT_EQ(ur_registry_attach(&reg), 0);
	netns_kid_start(&k, false, path, router);
	kid_finish(&k);
	UT_EQ(pipe(ready), 0);
	other = fork();
	if (other == 0) {
		int fd = open(path, O_RDWR | O_CLOEXEC);

		if (fd < 0 || flock(fd, LOCK_EX) || write(ready[1], "x", 1) != 1)
			_exit(1);
		usleep(200 * 1000);
		_exit(0);
	}
	UT_CHECK(other > 0);
	UT_EQ(read(ready[0], &c, 1), 1);
	UT_EQ(ur_registry_sweep_dead_netns() >= 1, 1);
	UT_CHECK(!exists(path) && !exists(router));
	UT_EQ(waitpid(other, NULL, 0), other);
	close(ready[0]);
	close(ready[1]);
}

/* A process still using a registry keeps it after its namespace is gone
 * (it moved elsewhere, or its pid means nothing here: another pid
 * namespace): its slot says so, and when the slot cannot be read as live,
 * its use lock does. */
static void test_netns_user_keeps(void)
{
	char path[128], router[128];
	struct ur_reg_shm *shm;
	struct kid k;
	int fd;

	UT_EQ(ur_registry_attach(&reg), 0);
	netns_kid_start(&k, true, path, router);
	UT_EQ(netns_has_process(strtoul(strstr(path, "-net") + 4, NULL, 10)), false);
	ur_registry_sweep_dead_netns();
	UT_CHECK(exists(path) && exists(router));          /* its slot is live */
	fd = open(path, O_RDWR);
	UT_CHECK(fd >= 0);
	shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	UT_CHECK(shm != MAP_FAILED);
	for (unsigned i = 0; i < UR_REG_SLOTS; i++)
		atomic_store(&shm->slot[i].pid, 0);
	munmap(shm, sizeof(*shm));
	close(fd);
	ur_registry_sweep_dead_netns();
	UT_CHECK(exists(path) && exists(router));          /* its use lock holds */
	kid_finish(&k);
	ur_registry_sweep_dead_netns();
	UT_CHECK(!exists(path) && !exists(router));
}

/* A /dev/shm of the test's own: every uroce process that starts on the
 * host sweeps the registries of gone namespaces there, and one that
 * swept ours between a test's steps made it fail ("nobody swept yet"). */
static void private_dev_shm(void)
{
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", "/dev/shm", "tmpfs", 0, "mode=1777")) {
		fprintf(stderr, "no /dev/shm of our own (%s): the registry tests would race "
			"with the host's uroce processes: skipped\n", strerror(errno));
		exit(77);
	}
}

/* A pid namespace and /proc of the test's own, the tests running in its
 * first process (the caller waits for it and exits as it did): the sweep
 * asks /proc whether a process is in a gone namespace, and the kernel
 * gives a freed namespace's inode number to the next namespace made on
 * the host.  One made beside the test (another test starting) took the
 * number of the one a test had let go, and the sweep rightly kept its
 * registry: test_netns_swept_past_another_sweeper failed so, 1 run in 10
 * with namespaces made beside it. */
static void private_pids(void)
{
	pid_t tests;
	int st = -1;

	if (unshare(CLONE_NEWPID)) {
		fprintf(stderr, "no pid namespace of our own (%s): the sweep tests would see "
			"the host's namespaces: skipped\n", strerror(errno));
		exit(77);
	}
	tests = fork();
	if (tests == 0) {
		if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL)) {
			fprintf(stderr, "cannot mount /proc: %s\n", strerror(errno));
			_exit(1);
		}
		return;
	}
	if (tests < 0 || waitpid(tests, &st, 0) != tests) {
		fprintf(stderr, "cannot start the tests in their pid namespace: %s\n",
			strerror(errno));
		exit(1);
	}
	/* The tests' own exit handlers ran in them, not here. */
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 1);
}

/* A child in a network namespace of its own (a registry of its own) that
 * takes one QPN, reports it, and waits. */
static void netns_qpn_kid_start(struct kid *k)
{
	UT_EQ(pipe(k->to), 0);
	UT_EQ(pipe(k->from), 0);
	k->pid = fork();
	if (k->pid == 0) {
		uint32_t qpn;
		char c;

		forget_parent_registry();
		if (unshare(CLONE_NEWNET) || ur_registry_attach(&reg) ||
		    ur_registry_alloc_qpn(&reg, &qpn))
			_exit(91);
		kid_send(k->from[1], &qpn, sizeof(qpn));
		if (read(k->to[0], &c, 1) != 1)
			_exit(95);
		_exit(0);
	}
	close(k->to[0]);
	close(k->from[1]);
}

/* Who may be the peer at an address owning a QPN, on this host: a process
 * of this namespace, for an address of this namespace (loopback); one of
 * another namespace that does not have the address, never (QP numbers
 * repeat from namespace to namespace: the other one's here is one of
 * ours); nobody for an address no namespace has; this process never; a
 * dead one never. */
static void test_host_owners(void)
{
	const union ibv_gid lo = { .raw = { [10] = 0xff, [11] = 0xff, 127, 0, 0, 1 } };
	const union ibv_gid far = { .raw = { [10] = 0xff, [11] = 0xff, 192, 0, 2, 1 } };
	struct kid here, there;
	uint32_t mine, theirs_here = 0, theirs_there = 0;
	pid_t pids[4];
	int slot, n;
	char c;

	UT_EQ(ur_registry_attach(&reg), 0);
	UT_EQ(ur_registry_alloc_qpn(&reg, &mine), 0);
	kid_start(&here, 1);
	UT_CHECK(kid_recv(here.from[0], &slot, sizeof(slot)));
	UT_CHECK(kid_recv(here.from[0], &theirs_here, sizeof(theirs_here)));
	UT_CHECK(kid_recv(here.from[0], &c, 1));
	netns_qpn_kid_start(&there);
	UT_CHECK(kid_recv(there.from[0], &theirs_there, sizeof(theirs_there)));
	peers.scanned_ns = 0;   /* the new namespace's file: look again */

	n = ur_registry_host_owners(theirs_here, &lo, pids, 4);
	UT_EQ(n, 1);
	UT_EQ(n >= 1 ? pids[0] : 0, here.pid);
	n = ur_registry_host_owners(theirs_there, &lo, pids, 4);
	for (int i = 0; i < n; i++)
		UT_CHECK(pids[i] != there.pid && pids[i] != getpid());
	UT_EQ(ur_registry_host_owners(theirs_here, &far, pids, 4), 0);
	UT_EQ(ur_registry_host_owners(theirs_there, &far, pids, 4), 0);
	UT_EQ(ur_registry_host_owners(mine, &lo, pids, 4), 0);
	kid_finish(&there);
	kid_finish(&here);
	/* An answer serves for 2 ms (many QPs to one peer ask at once). */
	nanosleep(&(struct timespec){ 0, 3 * 1000 * 1000 }, NULL);
	UT_EQ(ur_registry_host_owners(theirs_here, &lo, pids, 4), 0);
	ur_registry_reclaim_dead(&reg);
	ur_registry_sweep_dead_netns();
}

int main(void)
{
	ut_env_init("ut0:lo");
	private_dev_shm();
	private_pids();
	UT_RUN(test_alloc_unique);
	UT_RUN(test_two_views);
	UT_RUN(test_two_processes);
	UT_RUN(test_dead_reclaimed);
	UT_RUN(test_pid_reuse);
	UT_RUN(test_mcast_members);
	UT_RUN(test_blocks_exhausted);
	UT_RUN(test_slots_exhausted);
	UT_RUN(test_detach_and_layout);
	UT_RUN(test_counters_once);
	UT_RUN(test_fork_while_held);
	UT_RUN(test_netns_gone_swept);
	UT_RUN(test_netns_swept_past_another_sweeper);
	UT_RUN(test_netns_user_keeps);
	UT_RUN(test_host_owners);
	ur_registry_detach(&reg);
	return UT_DONE();
}
