/* MPI_Alltoall of SIZE bytes per pair of ranks, timed, every byte checked
 * (bench/mpi_alltoall.sh runs it over uroce and over UCX's TCP).  Each
 * block carries its sender, its receiver and the round, so a stale or
 * misplaced block shows.  Rank 0 prints one line:
 *   figure: ranks=R size=S rounds=N alltoall_us=T aggregate_MBps=B bad=K
 * T is the slowest rank's mean time of a round; B the bytes every rank
 * sent to every other in a round over T.  Exit status 0 when no byte was
 * wrong.
 *
 *   bench_mpi_alltoall [SIZE [ROUNDS]]   (defaults 65536 and 50)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t pattern(size_t i, int from, int to, int round)
{
	return (uint8_t)(i * 131 + (size_t)from * 29 + (size_t)to * 7 + (size_t)round * 3 + (i >> 12));
}

static void fill(uint8_t *send, size_t size, int rank, int ranks, int round)
{
	for (int to = 0; to < ranks; to++)
		for (size_t i = 0; i < size; i++)
			send[(size_t)to * size + i] = pattern(i, rank, to, round);
}

static long bad_bytes(const uint8_t *recv, size_t size, int rank, int ranks, int round)
{
	long bad = 0;

	for (int from = 0; from < ranks; from++)
		for (size_t i = 0; i < size; i++)
			bad += recv[(size_t)from * size + i] != pattern(i, from, rank, round);
	return bad;
}

int main(int argc, char **argv)
{
	size_t size = argc > 1 ? strtoul(argv[1], NULL, 0) : 65536;
	int rounds = argc > 2 ? atoi(argv[2]) : 50;
	int rank, ranks;
	long bad = 0, all_bad;
	double busy = 0, slowest;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);
	if (!size || rounds < 1) {
		if (!rank)
			fprintf(stderr, "usage: bench_mpi_alltoall [SIZE [ROUNDS]]\n");
		MPI_Finalize();
		return 2;
	}

	uint8_t *send = malloc(size * (size_t)ranks), *recv = malloc(size * (size_t)ranks);

	if (!send || !recv) {
		fprintf(stderr, "bench_mpi_alltoall: out of memory for %zu B x %d\n", size, ranks);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
	/* Two rounds of warm-up (connections, registrations), then the timed
	 * ones; filling and checking stay outside the timed call. */
	for (int round = -2; round < rounds; round++) {
		fill(send, size, rank, ranks, round + 2);
		memset(recv, 0, size * (size_t)ranks);
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = MPI_Wtime();
		MPI_Alltoall(send, (int)size, MPI_BYTE, recv, (int)size, MPI_BYTE, MPI_COMM_WORLD);
		if (round >= 0)
			busy += MPI_Wtime() - t0;
		bad += bad_bytes(recv, size, rank, ranks, round + 2);
	}
	MPI_Reduce(&busy, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	MPI_Allreduce(&bad, &all_bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (!rank) {
		double t = slowest / rounds;

		printf("figure: ranks=%d size=%zu rounds=%d alltoall_us=%.1f aggregate_MBps=%.1f bad=%ld\n",
		       ranks, size, rounds, t * 1e6,
		       (double)ranks * (ranks - 1) * (double)size / t / 1e6, all_bad);
	}
	free(send);
	free(recv);
	MPI_Finalize();
	return all_bad != 0;
}
