/* Two MPI ranks exchanging data with every byte checked, for running Open
 * MPI over uroce (tests/integ/mpi_ucx.test.sh):
 *  - ping-pong of 8 B .. 4 MiB messages, each the sender's pattern with
 *    the iteration stamped at both ends, checked whole by the receiver;
 *  - MPI_Allreduce (sum) of 4 MiB of doubles holding integers, so the
 *    result is exact and checked element by element;
 *  - one-sided MPI_Put and MPI_Get of 1 MiB in a window (UCX's put/get
 *    under osc ucx), checked on both sides.
 * Rank 0 prints "ok: ..." / "FAIL: ..." lines and the figures:
 *   figure: pingpong_8B_us=...  pingpong_4MiB_MBps=...
 * Exit status 0 when every check passed.
 *
 *   mpi_check [ITERATIONS]   (default 200 for 8 B; fewer for large sizes)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, fails, checks;

static void check(int cond, const char *what, long detail)
{
	int all;

	/* Every rank's verdict, printed once by rank 0. */
	MPI_Allreduce(&cond, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
	checks++;
	if (!all)
		fails++;
	if (rank == 0)
		printf("%s: %s (%ld)\n", all ? "ok" : "FAIL", what, detail);
}

static uint8_t pattern(size_t i, int iter, int from)
{
	return (uint8_t)(i * 131 + (size_t)iter * 7 + (size_t)from * 29 + (i >> 12));
}

static void fill(uint8_t *p, size_t n, int iter, int from)
{
	for (size_t i = 0; i < n; i++)
		p[i] = pattern(i, iter, from);
}

static long bad_bytes(const uint8_t *p, size_t n, int iter, int from)
{
	long bad = 0;

	for (size_t i = 0; i < n; i++)
		bad += p[i] != pattern(i, iter, from);
	return bad;
}

/* A message: the sender's reference pattern with the iteration stamped at
 * both ends, so each message differs and a stale or misplaced one shows;
 * built and checked with memcpy/memcmp, fast enough to leave the figures
 * to the transport. */
static void stamp(uint8_t *buf, const uint8_t *ref, size_t size, uint32_t iter)
{
	memcpy(buf, ref, size);
	memcpy(buf, &iter, sizeof(iter));
	memcpy(buf + size - sizeof(iter), &iter, sizeof(iter));
}

static int stamped_ok(const uint8_t *buf, const uint8_t *ref, size_t size, uint32_t iter)
{
	uint32_t a, b;

	memcpy(&a, buf, sizeof(a));
	memcpy(&b, buf + size - sizeof(b), sizeof(b));
	return a == iter && b == iter &&
	       !memcmp(buf + sizeof(a), ref + sizeof(a), size - 2 * sizeof(a));
}

/* Ping-pong of size bytes, iters round trips; returns the seconds of one
 * round trip (rank 0's clock) and counts corrupted messages in *bad.
 * ref[r] is rank r's pattern. */
static double pingpong(uint8_t *buf, uint8_t *const ref[2], size_t size, int iters, long *bad)
{
	int peer = 1 - rank;
	double t0 = 0;

	*bad = 0;
	for (int it = -2; it < iters; it++) {    /* two warm-up rounds */
		uint32_t tag = (uint32_t)(it + 2);

		if (it == 0) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
		if (rank == 0) {
			stamp(buf, ref[0], size, tag);
			MPI_Send(buf, (int)size, MPI_BYTE, peer, (int)tag, MPI_COMM_WORLD);
			MPI_Recv(buf, (int)size, MPI_BYTE, peer, (int)tag, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			*bad += !stamped_ok(buf, ref[1], size, tag);
		} else {
			MPI_Recv(buf, (int)size, MPI_BYTE, peer, (int)tag, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			*bad += !stamped_ok(buf, ref[0], size, tag);
			stamp(buf, ref[1], size, tag);
			MPI_Send(buf, (int)size, MPI_BYTE, peer, (int)tag, MPI_COMM_WORLD);
		}
	}
	return (MPI_Wtime() - t0) / iters;
}

static void test_pingpong(int iters)
{
	size_t max = 4u << 20;
	uint8_t *buf = malloc(max), *ref[2] = { malloc(max), malloc(max) };
	double lat8 = 0, bw = 0;

	fill(ref[0], max, 0, 0);
	fill(ref[1], max, 0, 1);

	for (size_t size = 8; size <= max; size *= 8) {
		int n = size >= (1u << 20) ? (iters / 20 > 4 ? iters / 20 : 4) : iters;
		long bad;
		double rtt;
		char what[96];

		if (size > (1u << 20))
			size = max;
		rtt = pingpong(buf, ref, size, n, &bad);
		snprintf(what, sizeof(what), "ping-pong %zu B x %d: corrupted messages", size, n);
		check(bad == 0, what, bad);
		if (size == 8)
			lat8 = rtt / 2 * 1e6;
		if (size == max)
			bw = 2.0 * (double)size / rtt / 1e6;
		if (size == max)
			break;
	}
	if (rank == 0)
		printf("figure: pingpong_8B_us=%.2f pingpong_4MiB_MBps=%.1f\n", lat8, bw);
	free(buf);
	free(ref[0]);
	free(ref[1]);
}

static void test_allreduce(void)
{
	size_t n = (4u << 20) / sizeof(double);
	double *in = malloc(n * sizeof(double)), *out = malloc(n * sizeof(double));
	long bad = 0;
	int size;

	MPI_Comm_size(MPI_COMM_WORLD, &size);
	for (size_t i = 0; i < n; i++)
		in[i] = (double)((i % 100003) * (size_t)(rank + 1));
	MPI_Allreduce(in, out, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	for (size_t i = 0; i < n; i++)
		bad += out[i] != (double)((i % 100003) * (size_t)(size * (size + 1) / 2));
	check(bad == 0, "allreduce (sum) of 4 MiB of doubles: wrong elements", bad);
	free(in);
	free(out);
}

static void test_rma(void)
{
	size_t n = 1u << 20;
	uint8_t *win_mem, *src = malloc(n), *dst = malloc(n);
	MPI_Win win;
	long bad;

	MPI_Win_allocate((MPI_Aint)n, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_mem, &win);
	fill(win_mem, n, 50, rank);        /* what a Get will read */
	fill(src, n, 60, rank);            /* what a Put will write */
	MPI_Win_fence(0, win);
	if (rank == 0)
		MPI_Get(dst, (int)n, MPI_BYTE, 1, 0, (int)n, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	bad = rank == 0 ? bad_bytes(dst, n, 50, 1) : 0;
	check(bad == 0, "MPI_Get of 1 MiB from rank 1: wrong bytes", bad);
	if (rank == 0)
		MPI_Put(src, (int)n, MPI_BYTE, 1, 0, (int)n, MPI_BYTE, win);
	MPI_Win_fence(0, win);
	bad = rank == 1 ? bad_bytes(win_mem, n, 60, 0) : 0;
	check(bad == 0, "MPI_Put of 1 MiB into rank 1's window: wrong bytes", bad);
	MPI_Win_free(&win);
	free(src);
	free(dst);
}

int main(int argc, char **argv)
{
	int size, iters = argc > 1 ? atoi(argv[1]) : 200;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_check: needs exactly 2 ranks, has %d\n", size);
		MPI_Finalize();
		return 2;
	}
	test_pingpong(iters > 0 ? iters : 200);
	test_allreduce();
	test_rma();
	if (rank == 0)
		printf("%d checks, %d failed\n", checks, fails);
	MPI_Finalize();
	return fails ? 1 : 0;
}
