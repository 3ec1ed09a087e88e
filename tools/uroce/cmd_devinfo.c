/* uroce devinfo: ibv_devinfo's report for one or all devices, with the
 * port counters (packets, retries, NAKs, drops) on request. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dev_open.h"
#include "devinfo.h"
#include "uroce.h"

static const char devinfo_help[] =
	"usage: uroce devinfo [-d DEV] [-i PORT] [-v] [-c]\n"
	"\n"
	"Prints the attributes of RDMA devices in ibv_devinfo's format.\n"
	"  -d, --ib-dev=DEV    only this device (default: all)\n"
	"  -i, --ib-port=PORT  only this port (default: all)\n"
	"  -v, --verbose       every device and port attribute and the GID table\n"
	"  -c, --counters      each port's counters (hw_counters: packets, NAKs,\n"
	"                      retries, duplicates, drops, ICRC errors ...)\n"
	"  -l, --list          only the device names\n"
	"\n"
	"examples:\n"
	"  uroce devinfo\n"
	"  uroce devinfo -d uroce1 -v\n"
	"  uroce devinfo -d uroce0 -c       (after a run: what was retried or dropped)\n";

int cmd_devinfo(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "counters", no_argument, NULL, 'c' },
		{ "list", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *name = NULL;
	bool verbose = false, counters = false, list_only = false, found = false;
	struct ibv_device **list;
	int c, port = 0, n, rc = UR_EXIT_OK;
	char *end;

	optind = 1;
	while ((c = getopt_long(argc, argv, "d:i:vclh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': name = optarg; break;
		case 'i':
			port = (int)strtol(optarg, &end, 0);
			if (*end || port < 1 || port > 255) {
				fprintf(stderr, "uroce devinfo: bad port '%s'\n", optarg);
				return UR_EXIT_USAGE;
			}
			break;
		case 'v': verbose = true; break;
		case 'c': counters = true; break;
		case 'l': list_only = true; break;
		case 'h': fputs(devinfo_help, stdout); return UR_EXIT_OK;
		default: fputs(devinfo_help, stderr); return UR_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "uroce devinfo: unexpected argument '%s'\n", argv[optind]);
		return UR_EXIT_USAGE;
	}
	list = ibv_get_device_list(&n);
	if (!list || n == 0) {
		fprintf(stderr, "uroce devinfo: no RDMA devices found (see `uroce devices`)\n");
		if (list)
			ibv_free_device_list(list);
		return UR_EXIT_FAIL;
	}
	if (list_only)
		printf("%d HCA%s found:\n", n, n == 1 ? "" : "s");
	for (int i = 0; i < n; i++) {
		struct ibv_context *ctx;

		if (name && strcmp(name, ibv_get_device_name(list[i])))
			continue;
		found = true;
		if (list_only) {
			printf("\t%s\n", ibv_get_device_name(list[i]));
			continue;
		}
		ctx = ibv_open_device(list[i]);
		if (!ctx || ur_devinfo_print(ctx, port, verbose, counters)) {
			if (!ctx)
				fprintf(stderr, "uroce devinfo: cannot open %s\n",
					ibv_get_device_name(list[i]));
			rc = UR_EXIT_FAIL;
		}
		if (ctx)
			ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
	if (!found) {
		fprintf(stderr, "uroce devinfo: device '%s' not found (see `uroce devices`)\n", name);
		return UR_EXIT_FAIL;
	}
	return rc;
}
