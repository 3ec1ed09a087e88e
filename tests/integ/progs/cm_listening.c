/* cm_listening PORT [SECONDS]: waits until a process of this host listens
 * through uroce's librdmacm.so.1 on rdma_cm TCP, UDP or IB port PORT (exit 0), or
 * SECONDS pass (default 30; exit 1).  The rdma_cm tests start a client only
 * then, as the TCP tests wait for a listening socket: a client turned away
 * (REJECTED) sends some programs into retry paths of their own (perftest
 * 4.5's reuses what it freed).  It asks the host's CM directory, the one
 * thing uroce's own librdmacm uses to find a listener. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

/* From uroce's libibverbs.so.1 (its private version node, src/verbs/cm_abi.h). */
int uroce_cm_listen_check(uint64_t service_id);

#define CMA_SID_BASE 0x0000000001000000ull
#define CMA_PS_TCP 0x0106ull
#define CMA_PS_UDP 0x0111ull
#define CMA_PS_IB 0x013Full

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	double limit = argc > 2 ? atof(argv[2]) : 30;
	struct timespec t0, t;
	int port, n, ret = 1;

	if (argc < 2 || (port = atoi(argv[1])) <= 0 || port > 65535) {
		fprintf(stderr, "usage: cm_listening PORT [SECONDS]\n");
		return 2;
	}
	/* The host registry is reached through an open device. */
	list = ibv_get_device_list(&n);
	if (list && n > 0)
		ctx = ibv_open_device(list[0]);
	if (!ctx) {
		fprintf(stderr, "cm_listening: no uroce device to open\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (uroce_cm_listen_check(CMA_SID_BASE | CMA_PS_TCP << 16 | (unsigned)port) ||
		    uroce_cm_listen_check(CMA_SID_BASE | CMA_PS_UDP << 16 | (unsigned)port) ||
		    uroce_cm_listen_check(CMA_SID_BASE | CMA_PS_IB << 16 | (unsigned)port)) {
			ret = 0;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 > limit) {
			fprintf(stderr, "cm_listening: nobody listens on port %d after %.0f s\n",
				port, limit);
			break;
		}
		usleep(50000);
	}
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return ret;
}
