/* What registering memory costs: ibv_reg_mr with remote access and
 * ibv_dereg_mr of one buffer (written once, as a program's buffer is),
 * over and over, for each size; microseconds a pair.  On uroce a region
 * with remote access may move into a memfd for peers on the host to map
 * (docs/design.md, "Shared regions"); run it again with
 * UROCE_SHM_SHARE_MR=0 to see the cost without.  Only the public verbs
 * API: it runs on any RDMA device.
 *
 *   bench_reg_mr [DEVICE [SECONDS_PER_SIZE]]   (default: the first device, 0.5 s)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <infiniband/verbs.h>

#include "../bench_verbs.h"

#define ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 4096, 65536, 1u << 20, 16u << 20, 256u << 20 };
	const char *name = argc > 1 ? argv[1] : NULL;
	double secs = argc > 2 ? atof(argv[2]) : 0.5;
	struct ibv_context *ctx = bench_open_dev(name);
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;

	if (!pd) {
		fprintf(stderr, "bench_reg_mr: cannot open %s and a PD on it\n", name ? name : "a device");
		return 1;
	}
	printf("%12s %12s %10s\n", "bytes", "us/pair", "pairs");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t len = sizes[i];
		char *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		unsigned long pairs = 0;
		double t0, t;

		if (buf == MAP_FAILED)
			return 1;
		memset(buf, 0x5a, len);
		t0 = bench_now();
		do {
			struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, ACCESS);

			if (!mr) {
				perror("bench_reg_mr: ibv_reg_mr");
				return 1;
			}
			if (ibv_dereg_mr(mr)) {
				perror("bench_reg_mr: ibv_dereg_mr");
				return 1;
			}
			pairs++;
			t = bench_now();
		} while (t - t0 < secs);
		printf("%12zu %12.1f %10lu\n", len, (t - t0) / pairs * 1e6, pairs);
		munmap(buf, len);
	}
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return 0;
}
