/* uroce gid: the GID tables with the address each GID encodes, which index
 * reaches a given peer, and GID<->IP conversion. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_open.h"
#include "uroce.h"

static const char gid_help[] =
	"usage: uroce gid [-d DEV] [-i PORT]                 the GID table(s)\n"
	"       uroce gid [-d DEV] [-i PORT] --ip ADDR [-q]  the GID index that reaches ADDR\n"
	"       uroce gid --ip ADDR --convert                the GID of an IP address\n"
	"       uroce gid --gid GID                          the IP address of a GID\n"
	"\n"
	"  -d, --ib-dev=DEV    only this device (default: all)\n"
	"  -i, --ib-port=PORT  port (default 1)\n"
	"      --ip=ADDR       the peer to reach: the index whose GID holds the local\n"
	"                      address the kernel routes from towards ADDR\n"
	"  -q, --index-only    with --ip: print only the index\n"
	"      --convert       with --ip: print ADDR as a GID (::ffff:a.b.c.d for IPv4)\n"
	"      --gid=GID       print the IP address GID encodes\n"
	"\n"
	"A RoCE v2 connection must use the GID of the address its packets leave from:\n"
	"the wrong index fails ibv_modify_qp(RTR) with EINVAL, or sends from an address\n"
	"the peer cannot answer. Pass the index as -g (ibv_*_pingpong, uroce pingpong)\n"
	"or -x (perftest, uroce bench).\n"
	"\n"
	"examples:\n"
	"  uroce gid\n"
	"  uroce gid --ip 192.168.1.2          (then: ib_write_bw -x INDEX 192.168.1.2)\n"
	"  uroce gid --ip 10.0.0.1 --convert   (::ffff:10.0.0.1)\n"
	"  uroce gid --gid ::ffff:10.0.0.1     (10.0.0.1)\n";

struct gid_args {
	const char *dev, *ip, *gid;
	int port;
	bool index_only, convert;
};

static int parse(int argc, char **argv, struct gid_args *a)
{
	enum { O_IP = 256, O_GID, O_CONVERT };
	static const struct option opts[] = {
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "ip", required_argument, NULL, O_IP },
		{ "gid", required_argument, NULL, O_GID },
		{ "convert", no_argument, NULL, O_CONVERT },
		{ "index-only", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	char *end;
	int c;

	*a = (struct gid_args){ .port = 1 };
	optind = 1;
	while ((c = getopt_long(argc, argv, "d:i:qh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': a->dev = optarg; break;
		case 'i':
			a->port = (int)strtol(optarg, &end, 0);
			if (*end || a->port < 1 || a->port > 255) {
				fprintf(stderr, "uroce gid: bad port '%s'\n", optarg);
				return UR_EXIT_USAGE;
			}
			break;
		case O_IP: a->ip = optarg; break;
		case O_GID: a->gid = optarg; break;
		case O_CONVERT: a->convert = true; break;
		case 'q': a->index_only = true; break;
		case 'h': fputs(gid_help, stdout); return UR_EXIT_OK;
		default: fputs(gid_help, stderr); return UR_EXIT_USAGE;
		}
	}
	if (optind < argc || (a->ip && a->gid) || (a->convert && !a->ip) ||
	    (a->index_only && !a->ip)) {
		fprintf(stderr, "uroce gid: %s\n", optind < argc ? "unexpected argument" :
			"--ip and --gid exclude each other; --convert and -q go with --ip");
		return UR_EXIT_USAGE;
	}
	return UR_CONTINUE;
}

static int convert_gid(const char *text)
{
	union ibv_gid g;
	char ip[UR_GID_STRLEN];
	bool v4;

	if (ur_gid_parse(text, &g) || ur_gid_to_ip(&g, ip, sizeof(ip), &v4)) {
		fprintf(stderr, "uroce gid: '%s' is not a GID (write it as an IPv6 address, "
				"e.g. ::ffff:10.0.0.1 or fe80::1)\n", text);
		return UR_EXIT_USAGE;
	}
	printf("%s\n", ip);
	return UR_EXIT_OK;
}

static int convert_ip(const char *text)
{
	union ibv_gid g;
	char s[UR_GID_STRLEN];

	if (ur_gid_parse(text, &g)) {
		fprintf(stderr, "uroce gid: '%s' is not an IPv4 or IPv6 address\n", text);
		return UR_EXIT_USAGE;
	}
	ur_gid_to_str(&g, s, sizeof(s));
	printf("%s\n", s);
	return UR_EXIT_OK;
}

static void print_table(struct ibv_context *ctx, int port, bool *header)
{
	struct ur_gid_info t[256];
	int n = ur_gid_table(ctx, (uint8_t)port, t, 256);

	if (!*header) {
		printf("%-10s %-4s %-5s %-40s %-8s %-10s %s\n", "DEV", "PORT", "INDEX", "GID",
		       "TYPE", "NETDEV", "IP");
		*header = true;
	}
	for (int i = 0; i < n; i++) {
		char s[UR_GID_STRLEN];

		ur_gid_to_str(&t[i].e.gid, s, sizeof(s));
		printf("%-10s %-4d %-5u %-40s %-8s %-10s %s\n", ibv_get_device_name(ctx->device),
		       port, t[i].e.gid_index, s, ur_gid_type_str(t[i].e.gid_type),
		       t[i].netdev[0] ? t[i].netdev : "-", t[i].ip[0] ? t[i].ip : "-");
	}
}

/* The index on CTX reaching IP, printed; 0, or 1 with WHY filled. */
static int print_route(struct ibv_context *ctx, const struct gid_args *a, char *why, size_t len)
{
	struct ur_gid_info t[256];
	int idx = ur_gid_for_peer(ctx, (uint8_t)a->port, a->ip, why, len), n;
	char s[UR_GID_STRLEN];

	if (idx < 0)
		return UR_EXIT_FAIL;
	if (a->index_only) {
		printf("%d\n", idx);
		return UR_EXIT_OK;
	}
	n = ur_gid_table(ctx, (uint8_t)a->port, t, 256);
	for (int i = 0; i < n; i++)
		if ((int)t[i].e.gid_index == idx) {
			ur_gid_to_str(&t[i].e.gid, s, sizeof(s));
			printf("%s port %d GID index %d (%s, %s, %s) reaches %s\n",
			       ibv_get_device_name(ctx->device), a->port, idx, s,
			       ur_gid_type_str(t[i].e.gid_type), t[i].netdev, a->ip);
			printf("use: -d %s -g %d (ibv_*_pingpong, uroce pingpong) or -d %s -x %d "
			       "(perftest, uroce bench)\n", ibv_get_device_name(ctx->device), idx,
			       ibv_get_device_name(ctx->device), idx);
		}
	return UR_EXIT_OK;
}

int cmd_gid(int argc, char **argv)
{
	struct gid_args a;
	struct ibv_device **list;
	int n, rc = parse(argc, argv, &a);
	bool header = false, found = false;
	char why[256] = "";

	if (rc != UR_CONTINUE)
		return rc;
	if (a.gid)
		return convert_gid(a.gid);
	if (a.ip && a.convert)
		return convert_ip(a.ip);
	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		fprintf(stderr, "uroce gid: no RDMA devices (see `uroce devices`)\n");
		return UR_EXIT_FAIL;
	}
	rc = UR_EXIT_OK;
	for (int i = 0; i < n && !(a.ip && found); i++) {
		struct ibv_context *ctx;

		if (a.dev && strcmp(a.dev, ibv_get_device_name(list[i])))
			continue;
		found = !a.ip;
		ctx = ibv_open_device(list[i]);
		if (!ctx) {
			fprintf(stderr, "uroce gid: cannot open %s\n", ibv_get_device_name(list[i]));
			rc = UR_EXIT_FAIL;
			continue;
		}
		if (!a.ip)
			print_table(ctx, a.port, &header);
		else if (print_route(ctx, &a, why, sizeof(why)) == UR_EXIT_OK)
			found = true;
		ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
	if (!found) {
		if (a.ip)
			fprintf(stderr, "uroce gid: %s\n", why[0] ? why : "no such device");
		else
			fprintf(stderr, "uroce gid: device '%s' not found (see `uroce devices`)\n",
				a.dev);
		return UR_EXIT_FAIL;
	}
	return rc;
}
