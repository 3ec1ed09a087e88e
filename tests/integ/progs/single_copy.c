/* RDMA WRITEs between two processes of one host, where uroce copies large
 * ones straight into the responder's memory (or, with
 * UROCE_SHM_SINGLE_COPY=0, through its rings): the same checks either way.
 *
 *   single_copy DEVICE GID_INDEX -s PORT MODE            the responder
 *   single_copy DEVICE GID_INDEX -c HOST PORT MODE       the requester
 *
 * MODE sizes: WRITEs and WRITEs with immediate of 1 B .. 8 MiB at odd
 *   offsets on both sides, from one or three SGEs; after each the
 *   responder compares its whole region and the guard bytes around it with
 *   what must be there (the written range the requester's stream, every
 *   other byte unchanged), and the requester READs the range back to an
 *   odd offset and compares it.  Last, a 1 MiB WRITE straddling the region's end
 *   by one byte: IBV_WC_REM_ACCESS_ERR, and not one byte changed.
 * MODE fork: before the sizes, the responder forks a child after
 *   registering: the child sees the region as it was at fork(), not a
 *   byte the parent writes after fork() returns, and its own writes over
 *   the whole region stay in the child; then the sizes as above (the
 *   requester's WRITEs land in the parent alone).
 * MODE forkinit: fork, the program having called ibv_fork_init() first,
 *   as rdma-core asks of a program that forks (it must succeed).
 * MODE memfd: the sizes into a region the responder mapped MAP_SHARED from
 *   a memfd it keeps open: peers map that memfd as it is.
 * MODE uc: the same WRITEs on UC (no READ back, no straddling WRITE: UC
 *   has neither READ nor NAK).
 * MODE dereg: the requester keeps 8 MiB WRITEs in flight; the responder
 *   deregisters the region under them, refills it at once and checks 0.5 s
 *   later that nothing landed after ibv_dereg_mr returned; the requester
 *   ends with IBV_WC_REM_ACCESS_ERR after some successes, and where it
 *   mapped the region (shared) drops that mapping within seconds.
 * MODE killed: the requester keeps 8 MiB WRITEs in flight until it is
 *   killed (by the test); the responder, seeing its side channel close,
 *   deregisters within a second (a copier that died holds nothing) and
 *   finds the guard bytes around the region intact.
 * MODE neighbours: the responder registers NB_REGIONS regions of 64 KiB
 *   one after another at an address that is not page-aligned (as fio's
 *   buffers are), so that each shares its first and last page with its
 *   neighbours; the requester WRITEs 64 KiB into each in turn, each round
 *   its own bytes, at least NB_ROUNDS times (enough for each to move into
 *   a memfd) and, with SC_WAIT_MOVE=1 in the responder's environment,
 *   until the responder has seen its regions move (its /proc/self/maps)
 *   and NB_AFTER rounds more: the move is a thread's of the responder,
 *   which a loaded host may run long after any fixed number of rounds;
 *   the responder then finds in each region the last round's bytes and
 *   every byte around the regions unchanged.
 * MODE atomics: the requester WRITEs the region's first MiB, then at
 *   AT_WORDS words spread over it a FETCH_AND_ADD, a CMP_AND_SWP that
 *   matches and one that does not, each returning the word's value before
 *   it; the responder then finds each word as the matching swap left it
 *   and every other byte as written (the region moved into a memfd when
 *   registered, under UROCE_SHM_SHARE_MR=1: the atomics land in memory a
 *   peer also maps and copies into).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "vt.h"
#include "vt_peer.h"

#define REGION (8u << 20)
#define SRC_SLACK 64u
#define DEPTH 4
#define ALL_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		    IBV_ACCESS_REMOTE_ATOMIC)
#define NB_REGIONS 8
#define NB_LEN (64u << 10)
#define NB_SKEW 16u       /* the first region's distance past a page start */
#define NB_ROUNDS 40
#define NB_AFTER 8        /* rounds after the responder saw the move */
#define NB_MOVE_SECS 60   /* how long the responder waits for it */
#define AT_SPAN (1u << 20)   /* MODE atomics: the bytes written first */
#define AT_WORDS 64
#define AT_KEY 77            /* their stream's key */

/* MODE neighbours: where each region is, and its key. */
struct nb_regions {
	uint64_t addr[NB_REGIONS];
	uint32_t rkey[NB_REGIONS];
};

struct hello {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr;
	union ibv_gid gid;
};

struct wcase {
	uint32_t dst_off, src_off, len;
	int nsge;
	bool imm;
};

static struct vt_dev dev;
static struct vt_qp qp;
static struct vt_buf buf, back;
static int fd;
static bool uc;          /* MODE uc: the sizes on UC (no READ, no NAK) */
static int memfd = -1;   /* MODE memfd: buf is its MAP_SHARED mapping */

static void die(const char *what)
{
	fprintf(stderr, "single_copy: %s\n", what);
	exit(2);
}

/* The cases of MODE sizes, both sides derive the same list. */
static int make_cases(struct wcase *c, int max)
{
	static const uint32_t lens[] = { 1, 4095, 16383, 16384, 16385, 65539, 1u << 20,
					 (1u << 20) + 4095, REGION - 4097, REGION };
	static const uint32_t offs[] = { 0, 1, 7, 4093 };
	int n = 0;

	for (unsigned l = 0; l < sizeof(lens) / sizeof(*lens); l++)
		for (unsigned o = 0; o < sizeof(offs) / sizeof(*offs) && n < max; o++) {
			uint32_t dst = offs[o] * 17 % 65536, len = lens[l];

			if (dst + len > REGION)
				dst = REGION - len;
			c[n++] = (struct wcase){ dst, offs[(o + l) % 4] % SRC_SLACK, len,
						 (l + o) % 3 ? 1 : 3, (l + o) % 4 == 1 };
		}
	return n;
}

static void connect_qp(const struct hello *peer)
{
	struct vt_qp_opts o = { .type = uc ? IBV_QPT_UC : IBV_QPT_RC, .sq = 64, .rq = 64,
				.max_sge = 4 };

	vt_qp_create(&qp, &dev, &o);
	if (vt_qp_connect_remote(&qp, peer->qpn, &peer->gid))
		die("cannot connect the QP");
}

static void hello_out(struct hello *h)
{
	h->qpn = qp.qp->qp_num;
	h->gid = dev.gid;
	vt_xfer(fd, h, sizeof(*h), true);
}

/* ---- the responder -------------------------------------------------------- */

static long first_diff(const uint8_t *shadow, size_t span)
{
	for (size_t j = 0; j < span; j++)
		if (buf.base[j] != shadow[j])
			return (long)j;
	return -1;
}

static void serve_sizes(uint8_t *shadow)
{
	struct wcase c[64];
	int n = make_cases(c, 64);
	size_t span = buf.len + 2 * VT_GUARD;
	char what[160];

	struct ibv_sge sge = vt_sge(&buf, 0, 0);

	/* Each case's receive is posted before the requester may send it (UC
	 * drops a WRITE_WITH_IMM that finds none). */
	if (n && c[0].imm && vt_post_recv(&qp, 0, &sge, 1))
		die("cannot post a receive");
	vt_xfer(fd, &(uint8_t){ 1 }, 1, true);   /* ready */
	for (int i = 0; i < n; i++) {
		uint8_t go;
		long diff;

		vt_xfer(fd, &go, 1, false);  /* its completion came */
		vt_case = uc ? "uc" : "sizes";
		if (c[i].imm) {
			struct ibv_wc wc;

			snprintf(what, sizeof(what), "WRITE_WITH_IMM %u B at +%u: completion", c[i].len,
				 c[i].dst_off);
			if (vt_poll_one(qp.rcq, &wc, 10, what) && wc.status == IBV_WC_SUCCESS)
				VT_EXPECT_EQ("its immediate", i, ntohl(wc.imm_data));
		}
		vt_stream_fill(shadow + VT_GUARD + c[i].dst_off, c[i].len, (uint64_t)i + 1, 0);
		/* UC completes at the requester once sent: give the bytes a
		 * moment to land when they came through a ring. */
		for (double end = vt_now() + (uc ? 5 : 0);;) {
			diff = first_diff(shadow, span);
			if (diff < 0 || vt_now() >= end)
				break;
			vt_sleep(0.001);
		}
		if (diff < 0)
			vt_ok("%s %u B at region +%u from source +%u, %d SGE(s): every byte of the "
			      "region and its guards as it must be", c[i].imm ? "WRITE_WITH_IMM" : "WRITE",
			      c[i].len, c[i].dst_off, c[i].src_off, c[i].nsge);
		else
			vt_fail("%s %u B at region +%u from source +%u, %d SGE(s): span byte %ld is "
				"0x%02x, must be 0x%02x", c[i].imm ? "WRITE_WITH_IMM" : "WRITE", c[i].len,
				c[i].dst_off, c[i].src_off, c[i].nsge, diff, buf.base[diff], shadow[diff]);
		if (i + 1 < n && c[i + 1].imm && vt_post_recv(&qp, (uint64_t)i + 1, &sge, 1))
			die("cannot post a receive");
		vt_xfer(fd, &go, 1, true);
	}
	/* The straddling WRITE: nothing may change. */
	uint8_t go;

	if (uc)
		return;
	vt_xfer(fd, &go, 1, false);
	vt_check(!memcmp(buf.base, shadow, span),
		 "a 1 MiB WRITE past the region's end by 1 byte changed nothing, guards included");
}

static void serve_dereg(void)
{
	uint8_t go = 1, mark[256];
	double t0;

	vt_xfer(fd, &go, 1, false);    /* the requester is writing */
	vt_sleep(0.3);
	t0 = vt_now();
	vt_check(!ibv_dereg_mr(buf.mr), "ibv_dereg_mr under in-flight WRITEs succeeds");
	buf.mr = NULL;
	/* A copy still running would reach the region's end last (copies go
	 * up): mark the end at once, and see whether anything overwrites it. */
	memset(buf.p + buf.len - sizeof(mark), 0xee, sizeof(mark));
	vt_check(vt_now() - t0 < 2.0, "ibv_dereg_mr returned in %.3f s", vt_now() - t0);
	vt_sleep(0.2);
	memset(mark, 0xee, sizeof(mark));
	vt_check(!memcmp(buf.p + buf.len - sizeof(mark), mark, sizeof(mark)),
		 "the region's last %zu bytes, marked as ibv_dereg_mr returned, stay so",
		 sizeof(mark));
	vt_buf_fill(&buf, 0x77);
	vt_sleep(0.5);
	vt_buf_unchanged(&buf, "nothing landed in the region or its guards after ibv_dereg_mr returned");
	vt_xfer(fd, &go, 1, false);    /* the requester saw its error */
}

static bool guards_intact(void)
{
	size_t span = buf.len + 2 * VT_GUARD;

	for (size_t i = 0; i < span; i++) {
		if (i == VT_GUARD)
			i += buf.len;
		if (buf.base[i] != vt_pattern(buf.seed, i))
			return false;
	}
	return true;
}

static void serve_killed(void)
{
	uint8_t go;
	double t0;

	vt_buf_fill(&buf, 0x33);
	vt_xfer(fd, &go, 1, true);     /* begin */
	if (read(fd, &go, 1) != 0)
		die("the requester was to be killed, and said something instead");
	t0 = vt_now();
	vt_check(!ibv_dereg_mr(buf.mr), "ibv_dereg_mr after the requester was killed succeeds");
	buf.mr = NULL;
	vt_check(vt_now() - t0 < 1.0, "ibv_dereg_mr returned in %.3f s (a dead copier holds nothing)",
		 vt_now() - t0);
	vt_check(guards_intact(), "the guard bytes around the region are intact");
}

/* A child forked with the region registered (maybe shared with peers)
 * has its own copy of it: what it writes stays with it, what the parent
 * writes after fork() returns never reaches it. */
static void fork_child_own_copy(void)
{
	size_t span = buf.len + 2 * VT_GUARD;
	uint8_t *before = malloc(span), c = 0;
	int go[2], status = -1;
	pid_t pid;

	if (!before || pipe(go))
		die("fork case setup");
	memcpy(before, buf.base, span);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		int bad = 0;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(3);
		/* The parent wrote buf.p[0] ^ 0xff by now. */
		if (memcmp(before, buf.base, span))
			bad = 4;
		memset(buf.p, 0xee, buf.len);
		if (buf.p[buf.len - 1] != 0xee)
			bad = 5;
		_exit(bad);
	}
	close(go[0]);
	buf.p[0] ^= 0xff;
	if (write(go[1], &c, 1) != 1)
		die("pipe");
	close(go[1]);
	waitpid(pid, &status, 0);
	vt_check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "fork: the child saw the region as at fork() and not the parent's later write "
		 "(status %#x)", status);
	buf.p[0] ^= 0xff;
	vt_check(!memcmp(before, buf.base, span),
		 "fork: the child's writes over the region stayed in the child");
	free(before);
}

/* Whether every page of [p, p + len) is mapped from the memfd regions
 * move into ("uroce-mr", util/vm_share.c), as /proc/self/maps lists them. */
static bool in_memfd(const uint8_t *p, size_t len)
{
	uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095, hi = (uintptr_t)p + len, covered = lo;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long a, b;

		if (sscanf(line, "%lx-%lx", &a, &b) != 2 || b <= lo || a >= hi)
			continue;
		if (!strstr(line, "/memfd:uroce-mr") || a > covered)
			break;   /* a page of the range not (yet) moved */
		covered = b;
	}
	fclose(f);
	return covered >= hi;
}

/* Until the regions moved (or NB_MOVE_SECS passed): whether they did. */
static bool wait_moved(const uint8_t *p, size_t len)
{
	double end = vt_now() + NB_MOVE_SECS;

	while (!in_memfd(p, len)) {
		if (vt_now() > end)
			return false;
		usleep(10000);
	}
	return true;
}

/* The regions carved from buf at NB_SKEW, each NB_LEN: after the
 * requester's rounds each holds the last round's stream and nothing
 * around them changed. */
static void serve_neighbours(void)
{
	struct ibv_mr *mr[NB_REGIONS];
	struct nb_regions r;
	uint8_t *shadow = malloc(buf.len + 2 * VT_GUARD), moved = 1;
	uint32_t rounds;

	if (!shadow)
		die("out of memory");
	memcpy(shadow, buf.base, buf.len + 2 * VT_GUARD);
	for (int i = 0; i < NB_REGIONS; i++) {
		uint8_t *at = buf.p + NB_SKEW + (size_t)i * NB_LEN;

		mr[i] = ibv_reg_mr(dev.pd, at, NB_LEN, ALL_ACCESS);
		if (!mr[i])
			die("ibv_reg_mr of a neighbour region");
		r.addr[i] = (uintptr_t)at;
		r.rkey[i] = mr[i]->rkey;
	}
	vt_xfer(fd, &r, sizeof(r), true);
	if (getenv("SC_WAIT_MOVE")) {
		double t0 = vt_now();

		moved = wait_moved(buf.p + NB_SKEW, (size_t)NB_REGIONS * NB_LEN);
		vt_check(moved, "the %d regions sharing pages are mapped from a memfd %.2f s after "
			 "the requester began (at most %d s)", NB_REGIONS, vt_now() - t0, NB_MOVE_SECS);
	}
	vt_xfer(fd, &moved, 1, true);
	vt_xfer(fd, &rounds, sizeof(rounds), false);   /* the rounds are done */
	for (int i = 0; i < NB_REGIONS; i++)
		vt_stream_fill(shadow + VT_GUARD + NB_SKEW + (size_t)i * NB_LEN, NB_LEN,
			       (uint64_t)rounds * NB_REGIONS + (uint64_t)i, 0);
	vt_check(first_diff(shadow, buf.len + 2 * VT_GUARD) < 0,
		 "each of %d regions sharing pages holds the last of %u rounds of WRITEs, every "
		 "byte around them unchanged (first difference at %ld)", NB_REGIONS, rounds,
		 first_diff(shadow, buf.len + 2 * VT_GUARD));
	for (int i = 0; i < NB_REGIONS; i++)
		if (ibv_dereg_mr(mr[i]))
			vt_fail("ibv_dereg_mr of neighbour region %d", i);
	free(shadow);
}

/* MODE atomics, word i: where it is, and its value once written. */
static uint32_t at_off(int i)
{
	return (uint32_t)i * (AT_SPAN / AT_WORDS) + (uint32_t)(i % 7) * 8;
}

static uint64_t at_written(const uint8_t *stream, int i)
{
	uint64_t v;

	memcpy(&v, stream + at_off(i), sizeof(v));
	return v;
}

/* Each word as the matching swap left it (its value plus i + 1, then
 * inverted), every other byte the WRITE's or untouched. */
static void serve_atomics(uint8_t *shadow)
{
	uint8_t *region = shadow + VT_GUARD, go;
	long diff;

	vt_xfer(fd, &go, 1, false);   /* written and swapped */
	vt_stream_fill(region, AT_SPAN, AT_KEY, 0);
	for (int i = 0; i < AT_WORDS; i++) {
		uint64_t want = ~(at_written(region, i) + (uint64_t)i + 1);

		memcpy(region + at_off(i), &want, sizeof(want));
	}
	diff = first_diff(shadow, buf.len + 2 * VT_GUARD);
	vt_check(diff < 0, "%d words after FETCH_AND_ADD and CMP_AND_SWP as the swaps left them, "
		 "every other byte of the region and its guards as written (first difference at "
		 "%ld)", AT_WORDS, diff);
}

/* The modes that run the sizes. */
static bool sizes_mode(const char *mode)
{
	return !strcmp(mode, "sizes") || !strcmp(mode, "fork") || !strcmp(mode, "forkinit") ||
	       !strcmp(mode, "memfd") || uc;
}

/* A copy of the region with its guards, as it is now. */
static uint8_t *snapshot(void)
{
	uint8_t *copy = malloc(buf.len + 2 * VT_GUARD);

	if (!copy)
		die("out of memory");
	memcpy(copy, buf.base, buf.len + 2 * VT_GUARD);
	return copy;
}

static void serve(const char *port, const char *mode)
{
	struct hello me = { 0 }, peer;
	uint8_t *shadow;

	fd = vt_tcp_accept(port);
	if (!strcmp(mode, "memfd")) {
		/* vt_buf_init's layout, in a memfd of the process's own. */
		memfd = memfd_create("single_copy", MFD_CLOEXEC);
		if (memfd < 0 || ftruncate(memfd, REGION + 2 * VT_GUARD))
			die("memfd");
		buf.base = mmap(NULL, REGION + 2 * VT_GUARD, PROT_READ | PROT_WRITE, MAP_SHARED,
				memfd, 0);
		if (buf.base == MAP_FAILED)
			die("mmap memfd");
		buf.p = buf.base + VT_GUARD;
		buf.len = REGION;
		vt_buf_fill(&buf, 0x21);
		buf.mr = ibv_reg_mr(dev.pd, buf.p, REGION, ALL_ACCESS);
		if (!buf.mr)
			die("ibv_reg_mr over the memfd");
	} else {
		vt_buf_init(&buf, &dev, REGION, ALL_ACCESS, 0x21);
	}
	vt_xfer(fd, &peer, sizeof(peer), false);
	connect_qp(&peer);
	me.rkey = buf.mr->rkey;
	me.addr = (uintptr_t)buf.p;
	hello_out(&me);     /* the requester connects after this: we are at RTR already */
	vt_case = mode;
	if (!strcmp(mode, "fork") || !strcmp(mode, "forkinit"))
		fork_child_own_copy();
	if (sizes_mode(mode)) {
		shadow = snapshot();
		serve_sizes(shadow);
		free(shadow);
	} else if (!strcmp(mode, "dereg")) {
		serve_dereg();
	} else if (!strcmp(mode, "neighbours")) {
		serve_neighbours();
	} else if (!strcmp(mode, "atomics")) {
		shadow = snapshot();
		serve_atomics(shadow);
		free(shadow);
	} else {
		serve_killed();
	}
}

/* ---- the requester -------------------------------------------------------- */

static struct ibv_send_wr write_wr(const struct hello *peer, uint64_t wr_id, struct ibv_sge *sge,
				   int nsge, uint32_t dst_off, uint32_t len)
{
	struct ibv_send_wr wr = vt_wr(wr_id, IBV_WR_RDMA_WRITE, sge);

	wr.num_sge = nsge;
	wr.wr.rdma.remote_addr = peer->addr + dst_off;
	wr.wr.rdma.rkey = peer->rkey;
	(void)len;
	return wr;
}

/* READs what case c wrote back, to an odd offset, and checks it. */
static void read_back(const struct hello *peer, const struct wcase *c, uint64_t key)
{
	uint32_t at = (c->src_off * 5 + 3) % SRC_SLACK;
	struct ibv_sge sge = vt_sge(&back, at, c->len);
	struct ibv_send_wr wr = write_wr(peer, 7, &sge, 1, c->dst_off, c->len);
	struct ibv_wc wc;
	char what[160];
	long diff;

	wr.opcode = IBV_WR_RDMA_READ;
	memset(back.p + at, 0, c->len);
	if (vt_post_send(&qp, &wr))
		die("cannot post a READ");
	snprintf(what, sizeof(what), "READ %u B from region +%u to +%u", c->len, c->dst_off, at);
	if (!vt_poll_one(qp.scq, &wc, 20, what) || !VT_EXPECT_STATUS(what, IBV_WC_SUCCESS, wc.status))
		return;
	diff = vt_stream_diff(back.p + at, c->len, key, 0);
	vt_check(diff < 0, "%s: %s (first difference at byte %ld)", what,
		 diff < 0 ? "every byte what was written" : "WRONG", diff);
}

static void request_sizes(const struct hello *peer)
{
	struct wcase c[64];
	int n = make_cases(c, 64);
	struct ibv_sge sge[3];
	struct ibv_send_wr wr;
	struct ibv_wc wc;
	char what[160];
	uint8_t go = 1;

	vt_xfer(fd, &go, 1, false);   /* the responder is ready */
	for (int i = 0; i < n; i++) {
		uint32_t cut1 = c[i].len / 3, cut2 = c[i].len / 3 * 2;

		vt_stream_fill(buf.p + c[i].src_off, c[i].len, (uint64_t)i + 1, 0);
		if (c[i].nsge == 3) {
			sge[0] = vt_sge(&buf, c[i].src_off, cut1);
			sge[1] = vt_sge(&buf, c[i].src_off + cut1, cut2 - cut1);
			sge[2] = vt_sge(&buf, c[i].src_off + cut2, c[i].len - cut2);
		} else {
			sge[0] = vt_sge(&buf, c[i].src_off, c[i].len);
		}
		wr = write_wr(peer, (uint64_t)i, sge, c[i].nsge, c[i].dst_off, c[i].len);
		if (c[i].imm) {
			wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			wr.imm_data = htonl((uint32_t)i);
		}
		if (vt_post_send(&qp, &wr))
			die("cannot post a WRITE");
		snprintf(what, sizeof(what), "WRITE %u B to +%u: completion", c[i].len, c[i].dst_off);
		if (vt_poll_one(qp.scq, &wc, 20, what))
			VT_EXPECT_STATUS(what, IBV_WC_SUCCESS, wc.status);
		vt_xfer(fd, &go, 1, true);   /* done: look */
		vt_xfer(fd, &go, 1, false);  /* looked */
		if (!uc)
			read_back(peer, &c[i], (uint64_t)i + 1);
	}
	if (uc)
		return;
	sge[0] = vt_sge(&buf, 0, 1u << 20);
	wr = write_wr(peer, 999, sge, 1, REGION - (1u << 20) + 1, 1u << 20);
	if (vt_post_send(&qp, &wr))
		die("cannot post a WRITE");
	if (vt_poll_one(qp.scq, &wc, 20, "a 1 MiB WRITE past the region's end"))
		VT_EXPECT_STATUS("a 1 MiB WRITE past the region's end", IBV_WC_REM_ACCESS_ERR, wc.status);
	vt_xfer(fd, &go, 1, true);
}

/* 8 MiB WRITEs, DEPTH in flight, until one fails: how many succeeded, and
 * the failing status (or -1 if none failed within seconds). */
/* Shared regions mapped in this process: its own moved ones and its
 * peers' that it copies into (/proc/self/maps). */
static int memfd_mappings(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int n = 0;

	if (!f)
		die("/proc/self/maps");
	while (fgets(line, sizeof(line), f))
		n += strstr(line, "memfd:uroce-mr") != NULL;
	fclose(f);
	return n;
}

static int mapped_while_copying = -1;

static int stream_writes(const struct hello *peer, uint8_t *said, double seconds, int *status)
{
	struct ibv_sge sge = vt_sge(&buf, 0, REGION);
	double end = vt_now() + seconds;
	int inflight = 0, ok = 0;

	*status = -1;
	while (vt_now() < end) {
		struct ibv_wc wc[DEPTH];
		int n;

		while (inflight < DEPTH) {
			struct ibv_send_wr wr = write_wr(peer, 1, &sge, 1, 0, REGION);

			if (vt_post_send(&qp, &wr))
				die("cannot post a WRITE");
			inflight++;
		}
		n = ibv_poll_cq(qp.scq, DEPTH, wc);
		for (int i = 0; i < n; i++) {
			inflight--;
			if (wc[i].status != IBV_WC_SUCCESS) {
				*status = wc[i].status;
				return ok;
			}
			if (++ok == 2 && said) {
				uint8_t go = 1;

				mapped_while_copying = memfd_mappings();
				vt_xfer(fd, &go, 1, true);
				*said = 1;
			}
		}
	}
	return ok;
}

static void request_dereg(const struct hello *peer)
{
	uint8_t said = 0, go = 1;
	int status, ok = stream_writes(peer, &said, 20, &status);

	vt_check(ok >= 2, "%d 8 MiB WRITEs succeeded before the region went", ok);
	VT_EXPECT_STATUS("the first WRITE after ibv_dereg_mr", IBV_WC_REM_ACCESS_ERR,
			 (enum ibv_wc_status)status);
	/* The peer's region, mapped while it was shared, is unmapped at the
	 * next tick once its slot no longer names it: its memory goes. */
	if (mapped_while_copying > 0) {
		double end = vt_now() + 3;
		int now;

		while ((now = memfd_mappings()) >= mapped_while_copying && vt_now() < end)
			vt_sleep(0.02);
		vt_check(now < mapped_while_copying, "the deregistered region's mapping dropped: "
			 "%d shared regions mapped while copying, %d after", mapped_while_copying, now);
	}
	if (said)
		vt_xfer(fd, &go, 1, true);
}

static void request_killed(const struct hello *peer)
{
	uint8_t go;
	int status;

	vt_xfer(fd, &go, 1, false);
	printf("streaming\n");
	stream_writes(peer, NULL, 60, &status);
	vt_fail("the requester was not killed within 60 s");
}

static void request_neighbours(const struct hello *peer)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct nb_regions r;
	struct ibv_wc wc;
	uint32_t round, last = NB_ROUNDS;
	uint8_t moved;
	bool told = false;
	int failed = 0;

	(void)peer;
	vt_xfer(fd, &r, sizeof(r), false);
	/* The responder says when its regions moved (at once where it does
	 * not wait for that); NB_AFTER rounds more copy into them mapped. */
	for (round = 1; round <= last || !told; round++) {
		for (int i = 0; i < NB_REGIONS; i++) {
			uint64_t key = (uint64_t)round * NB_REGIONS + (uint64_t)i;
			struct ibv_sge sge = vt_sge(&buf, (size_t)i * NB_LEN, NB_LEN);
			struct ibv_send_wr wr = vt_wr(key, IBV_WR_RDMA_WRITE, &sge);

			vt_stream_fill(buf.p + (size_t)i * NB_LEN, NB_LEN, key, 0);
			wr.wr.rdma.remote_addr = r.addr[i];
			wr.wr.rdma.rkey = r.rkey[i];
			if (vt_post_send(&qp, &wr))
				die("cannot post a WRITE");
			if (vt_poll(qp.scq, &wc, 1, 20) != 1 || wc.status != IBV_WC_SUCCESS)
				failed++;
		}
		if (!told && poll(&pfd, 1, 0) == 1) {
			vt_xfer(fd, &moved, 1, false);
			told = true;
			if (round + NB_AFTER > last)
				last = round + NB_AFTER;
		}
	}
	round--;
	vt_check(!failed, "%u rounds of 64 KiB WRITEs into %d regions sharing pages: %d failed",
		 round, NB_REGIONS, failed);
	vt_xfer(fd, &round, sizeof(round), true);
}

/* One atomic on word i, its old value into back: whether it completed
 * and returned want. */
static bool atomic_returns(const struct hello *peer, int i, enum ibv_wr_opcode op,
			   uint64_t compare_add, uint64_t swap, uint64_t want, const char *what)
{
	struct ibv_sge sge = vt_sge(&back, 0, 8);
	struct ibv_send_wr wr = vt_wr((uint64_t)i, op, &sge);
	struct ibv_wc wc;
	uint64_t got;

	wr.wr.atomic.remote_addr = peer->addr + at_off(i);
	wr.wr.atomic.rkey = peer->rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	memset(back.p, 0, 8);
	if (vt_post_send(&qp, &wr))
		die("cannot post an atomic");
	if (vt_poll(qp.scq, &wc, 1, 20) != 1 || wc.status != IBV_WC_SUCCESS) {
		vt_fail("word %d: %s did not complete", i, what);
		return false;
	}
	memcpy(&got, back.p, sizeof(got));
	if (got == want)
		return true;
	vt_fail("word %d: %s returned 0x%016llx, must be 0x%016llx", i, what,
		(unsigned long long)got, (unsigned long long)want);
	return false;
}

static void request_atomics(const struct hello *peer)
{
	struct ibv_sge sge = vt_sge(&buf, 0, AT_SPAN);
	struct ibv_send_wr wr = write_wr(peer, 1, &sge, 1, 0, AT_SPAN);
	struct ibv_wc wc;
	int good = 0;
	uint8_t go = 1;

	vt_stream_fill(buf.p, AT_SPAN, AT_KEY, 0);
	if (vt_post_send(&qp, &wr))
		die("cannot post a WRITE");
	if (vt_poll(qp.scq, &wc, 1, 20) != 1 || wc.status != IBV_WC_SUCCESS)
		die("the first MiB's WRITE failed");
	for (int i = 0; i < AT_WORDS; i++) {
		uint64_t v = at_written(buf.p, i), added = v + (uint64_t)i + 1;

		good += atomic_returns(peer, i, IBV_WR_ATOMIC_FETCH_AND_ADD, (uint64_t)i + 1, 0, v,
				       "FETCH_AND_ADD") &&
			atomic_returns(peer, i, IBV_WR_ATOMIC_CMP_AND_SWP, added, ~added, added,
				       "CMP_AND_SWP that matches") &&
			atomic_returns(peer, i, IBV_WR_ATOMIC_CMP_AND_SWP, added, 0, ~added,
				       "CMP_AND_SWP that does not match");
	}
	vt_check(good == AT_WORDS, "%d of %d words: each atomic returned the value before it", good,
		 AT_WORDS);
	vt_xfer(fd, &go, 1, true);
}

static void request(const char *host, const char *port, const char *mode)
{
	struct hello me = { 0 }, peer;

	fd = vt_tcp_connect(host, port);
	vt_buf_init(&buf, &dev, REGION + SRC_SLACK, ALL_ACCESS, 0x42);
	vt_buf_init(&back, &dev, REGION + SRC_SLACK, ALL_ACCESS, 0x43);
	vt_qp_create(&qp, &dev, &(struct vt_qp_opts){ .type = uc ? IBV_QPT_UC : IBV_QPT_RC,
						      .sq = 64, .rq = 64, .max_sge = 4 });
	hello_out(&me);
	vt_xfer(fd, &peer, sizeof(peer), false);
	if (vt_qp_connect_remote(&qp, peer.qpn, &peer.gid))
		die("cannot connect the QP");
	vt_case = mode;
	if (sizes_mode(mode))
		request_sizes(&peer);
	else if (!strcmp(mode, "dereg"))
		request_dereg(&peer);
	else if (!strcmp(mode, "neighbours"))
		request_neighbours(&peer);
	else if (!strcmp(mode, "atomics"))
		request_atomics(&peer);
	else
		request_killed(&peer);
}

int main(int argc, char **argv)
{
	const char *mode = argv[argc - 1];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 6 || (strcmp(argv[3], "-s") && strcmp(argv[3], "-c")) ||
	    (!strcmp(argv[3], "-c") && argc < 7) ||
	    (strcmp(mode, "sizes") && strcmp(mode, "uc") && strcmp(mode, "dereg") &&
	     strcmp(mode, "killed") && strcmp(mode, "fork") && strcmp(mode, "memfd") &&
	     strcmp(mode, "neighbours") && strcmp(mode, "atomics") && strcmp(mode, "forkinit"))) {
		fprintf(stderr, "usage: %s DEVICE GID_INDEX -s PORT MODE | -c HOST PORT MODE\n"
			"MODE: sizes, fork, forkinit, memfd, uc, dereg, killed, neighbours or "
			"atomics\n", argv[0]);
		return 2;
	}
	uc = !strcmp(mode, "uc");
	if (!strcmp(mode, "forkinit") && ibv_fork_init())
		die("ibv_fork_init failed");
	vt_dev_open(&dev, argv[1], atoi(argv[2]));
	if (!strcmp(argv[3], "-s"))
		serve(argv[4], mode);
	else
		request(argv[4], argv[5], mode);
	vt_case = "teardown";
	vt_qp_destroy(&qp);
	if (memfd >= 0) {
		if (ibv_dereg_mr(buf.mr))
			vt_fail("ibv_dereg_mr over the memfd");
		munmap(buf.base, REGION + 2 * VT_GUARD);
		close(memfd);
	} else {
		vt_buf_free(&buf);
	}
	if (back.base)
		vt_buf_free(&back);
	close(fd);
	vt_dev_close(&dev);
	fprintf(stderr, "%d checks, %d failed\n", vt_checks, vt_failures);
	return vt_failures || !vt_checks ? 1 : 0;
}
