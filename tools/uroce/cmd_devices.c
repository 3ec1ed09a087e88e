/* uroce devices (ibv_devices' table) and uroce netdev (ibdev2netdev's lines):
 * which RDMA devices exist and which network interface each one sits on. */
#include <endian.h>
#include <getopt.h>
#include <inttypes.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dev_open.h"
#include "devinfo.h"
#include "uroce.h"

static const char devices_help[] =
	"usage: uroce devices\n"
	"\n"
	"Lists the RDMA devices and their node GUIDs, as ibv_devices does.\n"
	"\n"
	"examples:\n"
	"  uroce devices\n"
	"  UROCE_DEVICES=lo uroce devices      (only the device on lo)\n";

static const char netdev_help[] =
	"usage: uroce netdev [-v]\n"
	"\n"
	"Shows the network interface under each RDMA device, as ibdev2netdev does:\n"
	"  uroce1 port 1 ==> eth0 (Up)\n"
	"  -v   also print each port's state and active MTU\n"
	"\n"
	"examples:\n"
	"  uroce netdev\n"
	"  uroce netdev -v\n";

/* Only --help/-h and, for netdev, -v: anything else is a usage error.
 * Returns UR_CONTINUE, or the exit code to leave with. */
static int parse_simple(int argc, char **argv, const char *help, bool *verbose)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, verbose ? "hv" : "h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(help, stdout);
			return UR_EXIT_OK;
		}
		if (c == 'v' && verbose) {
			*verbose = true;
			continue;
		}
		fputs(help, stderr);
		return UR_EXIT_USAGE;
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
		return UR_EXIT_USAGE;
	}
	return UR_CONTINUE;
}

int cmd_devices(int argc, char **argv)
{
	struct ibv_device **list;
	int n, rc = parse_simple(argc, argv, devices_help, NULL);

	if (rc != UR_CONTINUE)
		return rc;
	list = ibv_get_device_list(&n);
	if (!list) {
		perror("uroce devices: ibv_get_device_list");
		return UR_EXIT_FAIL;
	}
	printf("    %-16s\t   node GUID\n", "device");
	printf("    %-16s\t----------------\n", "------");
	for (int i = 0; i < n; i++)
		printf("    %-16s\t%016" PRIx64 "\n", ibv_get_device_name(list[i]),
		       be64toh(ibv_get_device_guid(list[i])));
	ibv_free_device_list(list);
	if (n == 0)
		fprintf(stderr, "no RDMA devices found: is uroce's libibverbs.so.1 in use? "
				"(`uroce run -- PROG`, see uroce-run(1))\n");
	return n ? UR_EXIT_OK : UR_EXIT_FAIL;
}

/* "Up" when the interface is administratively up and has carrier, as
 * ibdev2netdev reads operstate. */
static const char *netdev_state(const char *ifname)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool up = false;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (fd >= 0 && ioctl(fd, SIOCGIFFLAGS, &ifr) == 0)
		up = (ifr.ifr_flags & IFF_UP) && (ifr.ifr_flags & IFF_RUNNING);
	if (fd >= 0)
		close(fd);
	return up ? "Up" : "Down";
}

/* The interface under PORT: the netdev of its first Ethernet GID. */
int ur_port_netdev(struct ibv_context *ctx, unsigned char port, char *name, unsigned long len)
{
	struct ur_gid_info t[64];
	int n = ur_gid_table(ctx, port, t, 64);

	for (int i = 0; i < n; i++)
		if (t[i].netdev[0]) {
			snprintf(name, len, "%s", t[i].netdev);
			return 0;
		}
	return -1;
}

int cmd_netdev(int argc, char **argv)
{
	struct ibv_device **list;
	bool verbose = false;
	int n, rc = parse_simple(argc, argv, netdev_help, &verbose);

	if (rc != UR_CONTINUE)
		return rc;
	list = ibv_get_device_list(&n);
	if (!list) {
		perror("uroce netdev: ibv_get_device_list");
		return UR_EXIT_FAIL;
	}
	rc = n ? UR_EXIT_OK : UR_EXIT_FAIL;
	for (int i = 0; i < n; i++) {
		struct ibv_context *ctx = ibv_open_device(list[i]);
		struct ibv_device_attr da;

		if (!ctx || ibv_query_device(ctx, &da)) {
			fprintf(stderr, "cannot open %s\n", ibv_get_device_name(list[i]));
			rc = UR_EXIT_FAIL;
			if (ctx)
				ibv_close_device(ctx);
			continue;
		}
		for (uint8_t p = 1; p <= da.phys_port_cnt; p++) {
			struct ibv_port_attr pa;
			char nd[IF_NAMESIZE] = "";

			if (ur_port_netdev(ctx, p, nd, sizeof(nd)) || ibv_query_port(ctx, p, &pa)) {
				printf("%s port %u ==> (none)\n", ibv_get_device_name(list[i]), p);
				continue;
			}
			printf("%s port %u ==> %s (%s)", ibv_get_device_name(list[i]), p, nd,
			       netdev_state(nd));
			if (verbose)
				printf(" state %s mtu %d", ur_port_state_str(pa.state),
				       128 << pa.active_mtu);
			printf("\n");
		}
		ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
	return rc;
}
