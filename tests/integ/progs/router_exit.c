/* integ.router_exit's program: a process whose exit takes long, as one
 * killed in a mount namespace of its own or unmapping a large address
 * space does.  It opens DEVICE and an RC QP on it (the first uroce process
 * of a namespace serves UDP port 4791 for it), prints "serving", and
 * returns from main (given UNTIL, once a file of that name exists); an
 * atexit handler registered before the device was opened runs after
 * uroce's, prints "lingering" and sleeps SECONDS.  Given CHILD, it forks
 * first a child that does not exec, prints "child PID", and sleeps CHILD
 * seconds: a child that outlives its parent.
 *
 *   router_exit DEVICE SECONDS [UNTIL|- [CHILD]]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static unsigned linger;

static void linger_at_exit(void)
{
	printf("lingering %u s\n", linger);
	fflush(stdout);
	sleep(linger);
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 1, .max_recv_wr = 1,
						.max_send_sge = 1, .max_recv_sge = 1 } };
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	int n;

	if (argc < 3 || argc > 5) {
		fprintf(stderr, "usage: %s DEVICE SECONDS [UNTIL|- [CHILD]]\n", argv[0]);
		return 2;
	}
	linger = (unsigned)atoi(argv[2]);
	atexit(linger_at_exit);      /* before uroce's: it runs after */
	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n && !ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), argv[1]))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "FAIL: cannot open %s\n", argv[1]);
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 2, NULL, NULL, 0) : NULL;
	qa.send_cq = qa.recv_cq = cq;
	if (!cq || !ibv_create_qp(pd, &qa)) {
		fprintf(stderr, "FAIL: cannot create an RC QP on %s\n", argv[1]);
		return 1;
	}
	printf("serving\n");
	fflush(stdout);
	if (argc == 5) {
		pid_t child = fork();

		if (child < 0) {
			perror("FAIL: fork");
			return 1;
		}
		if (!child) {
			sleep((unsigned)atoi(argv[4]));
			_exit(0);
		}
		printf("child %d\n", (int)child);
		fflush(stdout);
	}
	for (int i = 0; argc >= 4 && strcmp(argv[3], "-") && access(argv[3], F_OK) && i < 60000; i++)
		usleep(1000);
	return 0;      /* the device stays open: exit() tears it down */
}
