/* Which live processes of this host own a QP number, in whatever network
 * namespace.  The registries of all namespaces lie side by side in
 * /dev/shm, one per user and namespace (registry_file.c): a requester
 * whose peer falls silent asks whether that peer is a process here, which
 * may be waiting for a CPU rather than gone (rel/starved.c).  The files are
 * mapped read-only, process-wide, and the directory is looked at again at
 * most once a second. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/registry_priv.h"
#include "util/clock.h"
#include "util/host_uid.h"

#define UR_PEER_MAPS 32u
#define UR_PEER_RESCAN_NS 1000000000ull
/* An answer this young serves every QP whose peer's number is in the same
 * block at the same address: each answer reads /proc files (liveness, the
 * namespace's addresses), and a thousand QPs to one process asked every
 * retry period. */
#define UR_PEER_ANSWER_REUSE_NS (2u * 1000 * 1000)
#define UR_PEER_ANSWERS 8u
#define UR_PEER_ANSWER_PIDS 4

struct peer_answer {
	uint64_t at;            /* 0: none */
	uint32_t block;
	union ibv_gid gid;
	int n;
	pid_t pids[UR_PEER_ANSWER_PIDS];
};

struct peer_map {
	dev_t dev;
	ino_t ino;
	const struct ur_reg_shm *shm;
	bool seen;
};

/* Taken with trylock only: a child of fork() whose parent held it keeps
 * answering "not known", which costs it nothing but this look. */
static struct {
	pthread_mutex_t lock;
	uint64_t scanned_ns;
	unsigned n;
	struct peer_map map[UR_PEER_MAPS];
	struct peer_answer answers[UR_PEER_ANSWERS];
	unsigned next_answer;
} peers = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* "uroce-UID-netINODE-vVERSION", this user's and this layout's. */
static bool is_registry(const char *name, const char *prefix, const char *suffix)
{
	size_t lp = strlen(prefix), ls = strlen(suffix), ln = strlen(name);

	if (ln <= lp + ls || strncmp(name, prefix, lp) || strcmp(name + ln - ls, suffix))
		return false;
	for (size_t i = lp; i < ln - ls; i++)
		if (name[i] < '0' || name[i] > '9')
			return false;
	return true;
}

static void map_one(int dirfd, const char *name)
{
	struct peer_map *m;
	struct stat st;
	void *p;
	int fd;

	if (fstatat(dirfd, name, &st, 0))
		return;
	for (unsigned i = 0; i < peers.n; i++)
		if (peers.map[i].dev == st.st_dev && peers.map[i].ino == st.st_ino) {
			peers.map[i].seen = true;
			return;
		}
	if (peers.n == UR_PEER_MAPS || (size_t)st.st_size < sizeof(struct ur_reg_shm))
		return;
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	p = mmap(NULL, sizeof(struct ur_reg_shm), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return;
	m = &peers.map[peers.n++];
	*m = (struct peer_map){ .dev = st.st_dev, .ino = st.st_ino, .shm = p, .seen = true };
}

/* Maps the registries that appeared, lets go of those that went. */
static void rescan(void)
{
	char prefix[32], suffix[16];
	struct dirent *d;
	unsigned keep = 0;
	DIR *dir = opendir("/dev/shm");

	if (!dir)
		return;
	snprintf(prefix, sizeof(prefix), "uroce-%u-net", (unsigned)ur_host_uid());
	snprintf(suffix, sizeof(suffix), "-v%u", UR_REG_VERSION);
	for (unsigned i = 0; i < peers.n; i++)
		peers.map[i].seen = false;
	while ((d = readdir(dir)))
		if (is_registry(d->d_name, prefix, suffix))
			map_one(dirfd(dir), d->d_name);
	closedir(dir);
	for (unsigned i = 0; i < peers.n; i++) {
		if (peers.map[i].seen)
			peers.map[keep++] = peers.map[i];
		else
			munmap((void *)peers.map[i].shm, sizeof(struct ur_reg_shm));
	}
	peers.n = keep;
}

/* Whether a line of /proc/PID/net/fib_trie names the address: "|-- A.B.C.D". */
static bool trie_names(const char *line, const char *want)
{
	const char *p = strstr(line, "-- ");

	return p && !strcmp(p + 3, want);
}

/* Whether gid (IPv4-mapped or IPv6) is an address of the network
 * namespace pid lives in: a local host route in its fib_trie, or a line of
 * its if_inet6. */
static bool ns_has_addr(pid_t pid, const union ibv_gid *gid)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	bool v4 = !memcmp(gid->raw, v4mapped, sizeof(v4mapped)), last = false, found = false;
	char path[64], want[40], line[256];
	FILE *f;

	if (v4)
		snprintf(want, sizeof(want), "%u.%u.%u.%u", gid->raw[12], gid->raw[13],
			 gid->raw[14], gid->raw[15]);
	else
		for (int i = 0; i < 16; i++)
			snprintf(want + 2 * i, 3, "%02x", gid->raw[i]);
	snprintf(path, sizeof(path), "/proc/%d/net/%s", (int)pid, v4 ? "fib_trie" : "if_inet6");
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!v4)
			found = !strncmp(line, want, 32);
		else if (strstr(line, "/32 host LOCAL"))
			found = last;
		else if (strstr(line, "-- "))
			last = trie_names(line, want);
	}
	fclose(f);
	return found;
}

/* Whether pid shares this process's network namespace. */
static bool same_netns(pid_t pid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	return !stat(path, &a) && !stat("/proc/self/ns/net", &b) && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev;
}

/* Where the peer at gid can be: an address of this namespace (loopback
 * among them, which every namespace has) is reached in this namespace
 * only; any other, in a namespace that has it. */
static bool may_be_peer(pid_t pid, const union ibv_gid *gid, bool ours)
{
	return ours ? same_netns(pid) : ns_has_addr(pid, gid);
}

/* The live process holding qpn's block in one registry, or 0. */
static pid_t owner_in(const struct ur_reg_shm *shm, uint32_t qpn)
{
	uint32_t block = (qpn & 0xffffffu) >> UR_REG_BLOCK_SHIFT;
	const struct ur_reg_slot *s;
	uint16_t owner;
	pid_t pid;

	if (shm->magic != UR_REG_MAGIC || shm->version != UR_REG_VERSION)
		return 0;
	owner = atomic_load((_Atomic uint16_t *)&shm->block_owner[block]);
	if (!owner || owner > UR_REG_SLOTS)
		return 0;
	s = &shm->slot[owner - 1];
	pid = (pid_t)atomic_load((_Atomic uint32_t *)&s->pid);
	return pid && pid != getpid() && ur_reg_slot_alive(s) ? pid : 0;
}

/* A recent answer for qpn's block at gid, or NULL.  peers.lock held. */
static const struct peer_answer *recent_answer(uint32_t block, const union ibv_gid *gid,
					       uint64_t now)
{
	for (unsigned i = 0; i < UR_PEER_ANSWERS; i++) {
		const struct peer_answer *a = &peers.answers[i];

		if (a->at && a->block == block && now >= a->at &&
		    now - a->at <= UR_PEER_ANSWER_REUSE_NS && !memcmp(&a->gid, gid, sizeof(*gid)))
			return a;
	}
	return NULL;
}

static void keep_answer(uint32_t block, const union ibv_gid *gid, uint64_t now,
			const pid_t *pids, int n)
{
	struct peer_answer *a = &peers.answers[peers.next_answer++ % UR_PEER_ANSWERS];

	*a = (struct peer_answer){ .at = now, .block = block, .gid = *gid, .n = n };
	memcpy(a->pids, pids, (size_t)n * sizeof(*pids));
}

int ur_registry_host_owners(uint32_t qpn, const union ibv_gid *gid, pid_t *pids, int max)
{
	uint32_t block = (qpn & 0xffffffu) >> UR_REG_BLOCK_SHIFT;
	uint64_t now = ur_now_ns();
	const struct peer_answer *a;
	int n = 0, ours = -1;   /* gid an address of this namespace: read once an owner is found */

	if (pthread_mutex_trylock(&peers.lock))
		return -EAGAIN;
	a = max == UR_PEER_ANSWER_PIDS ? recent_answer(block, gid, now) : NULL;
	if (a) {
		n = a->n;
		memcpy(pids, a->pids, (size_t)n * sizeof(*pids));
		pthread_mutex_unlock(&peers.lock);
		return n;
	}
	if (!peers.scanned_ns || now - peers.scanned_ns >= UR_PEER_RESCAN_NS) {
		rescan();
		peers.scanned_ns = now;
	}
	for (unsigned i = 0; i < peers.n && n < max; i++) {
		pid_t pid = owner_in(peers.map[i].shm, qpn);

		/* QP numbers repeat from namespace to namespace: the owner
		 * counts where the peer's address is. */
		if (!pid)
			continue;
		if (ours < 0)
			ours = ns_has_addr(getpid(), gid);
		if (may_be_peer(pid, gid, ours))
			pids[n++] = pid;
	}
	if (max == UR_PEER_ANSWER_PIDS)
		keep_answer(block, gid, now, pids, n);
	pthread_mutex_unlock(&peers.lock);
	return n;
}
