/* uroce: run programs on the software RoCE device, inspect devices and
 * GIDs, ping-pong every operation and benchmark, on the public verbs API. */
#include <stdio.h>
#include <string.h>

#include "uroce.h"

static const struct ur_cmd cmds[] = {
	{ "run", "run a program with uroce's libibverbs", cmd_run },
	{ "devices", "list RDMA devices (ibv_devices)", cmd_devices },
	{ "devinfo", "device and port attributes, GIDs, counters (ibv_devinfo)", cmd_devinfo },
	{ "netdev", "the network interface of each device (ibdev2netdev)", cmd_netdev },
	{ "link", "show ports; add or delete software devices (rdma link)", cmd_link },
	{ "res", "QPs, CQs, MRs and rdma_cm ids of the host's processes (rdma res)", cmd_res },
	{ "devnodes", "the /dev/infiniband nodes UCX looks for (create as root)", cmd_devnodes },
	{ "sysfs", "write the devices as /sys/class shows RDMA devices (uroce run does)", cmd_sysfs },
	{ "gid", "GID tables, the GID index for a peer, GID<->IP", cmd_gid },
	{ "pingpong", "ping-pong one operation (send/write/read/atomics) over RC/UC/UD", cmd_pingpong },
	{ "srq-server", "serve many RC clients on one SRQ and CQ, counting and checking", cmd_srq_server },
	{ "bench", "bandwidth and latency of write/read/send/atomic (perftest)", cmd_bench },
	{ "srq-client", "open many RC connections to an srq-server and send", cmd_srq_client },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: uroce COMMAND [ARGS...]\n\ncommands:\n");
	for (unsigned i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-12s %s\n", cmds[i].name, cmds[i].summary);
	fprintf(f, "\n'uroce COMMAND --help' describes a command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return UR_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return UR_EXIT_OK;
	}
	for (unsigned i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (!strcmp(argv[1], cmds[i].name))
			return cmds[i].run(argc - 1, argv + 1);
	fprintf(stderr, "uroce: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return UR_EXIT_USAGE;
}
