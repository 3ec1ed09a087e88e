/* uroce srq-server: options and help. */
#include "opts.h"
#include "srq_srv.h"
#include "uroce.h"

#include <stdlib.h>

static const char srv_help[] =
	"usage: uroce srq-server [OPTIONS]\n"
	"       uroce srq-client [OPTIONS] SERVER     (see `uroce srq-client --help`)\n"
	"\n"
	"Serves RC clients, each on its own QP, all receiving from ONE shared receive\n"
	"queue (SRQ) into ONE completion queue, the way storage targets (SPDK, NVMe-oF)\n"
	"serve thousands of initiators.  Clients connect over TCP (port -p); every\n"
	"completion is mapped back to its connection by its QP number through a hash\n"
	"table, every message is checked (client id, sequence number, content) and its\n"
	"buffer goes back on the SRQ.  A client that disconnects or dies has its QP\n"
	"flushed and destroyed without disturbing the others.\n"
	"\n"
	"It exits when -q clients have come and gone, after --duration, or on\n"
	"SIGINT/SIGTERM, printing one row per client and the totals:\n"
	"  client  peer                    QPN        msgs       bytes  state\n"
	"       0  127.0.0.1:40312         0x000101   1000       64000  done\n"
	"\n"
	"options:\n"
	"  -d, --ib-dev=DEV       device (default: the one holding the address the first\n"
	"                         client reached)\n"
	"  -i, --ib-port=PORT     device port (default 1)\n"
	"  -g, --gid-idx=INDEX    GID index (default: the one reaching the first client)\n"
	"  -p, --port=PORT        TCP port (default 18515)\n"
	"  -q, --clients=N        clients to serve, at most (default 16)\n"
	"  -r, --srq-depth=N      receive WRs on the SRQ (default 4096)\n"
	"  -s, --size=BYTES       receive buffer size, the largest message (default 4096)\n"
	"  -n, --msgs=N           messages each client must send (default: what it says)\n"
	"      --duration=S       stop after S seconds\n"
	"  -v, --verbose          a line per client as it connects\n"
	"  -h, --help             this text\n"
	"\n"
	"Exit status: 0 every client finished and every message was right; 1 a message\n"
	"was wrong or missing, a client was refused or disconnected before it finished\n"
	"(the table says which); 2 bad arguments.\n"
	"\n"
	"examples:\n"
	"  uroce srq-server -q 100 -n 1000                  (then, elsewhere:)\n"
	"  uroce srq-client -c 25 -n 1000 10.0.0.1          (four times)\n"
	"  uroce srq-server -q 1000 -r 8192 --duration 60\n";

int srv_parse(int argc, char **argv, struct srv_opts *o)
{
	enum { OPT_DURATION = 256 };
	static const struct option longs[] = {
		UR_OPT_LONGS_SHARED,
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "clients", required_argument, NULL, 'q' },
		{ "srq-depth", required_argument, NULL, 'r' },
		{ "size", required_argument, NULL, 's' },
		{ "msgs", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "verbose", no_argument, NULL, 'v' },
		{ 0 },
	};
	struct ur_optparse p = { .cmd = "srq-server", .help = srv_help, .argc = argc,
				 .argv = argv, .shorts = ":d:i:g:p:q:r:s:n:vh", .longs = longs,
				 .conn = &o->conn };
	char *end;
	int c;

	*o = (struct srv_opts){ .conn = UR_CONN_OPTS_DEFAULT, .max_clients = 16, .depth = 4096,
				.max_size = 4096 };
	while ((c = ur_opt_next(&p)) != -1) {
		switch (c) {
		case 'v':
			o->verbose = true;
			break;
		case 'q':
			ur_opt_count(&p, "a number of clients", 1, 1u << 20, &o->max_clients);
			break;
		case 'r':
			ur_opt_count(&p, "an SRQ depth", 1, 1u << 24, &o->depth);
			break;
		case 's':
			srq_opt_size(&p, &o->max_size);
			break;
		case 'n':
			ur_opt_count(&p, "a number of messages", 1, UINT32_MAX, &o->msgs);
			break;
		case OPT_DURATION:
			o->duration = strtod(optarg, &end);
			if (*end || !(o->duration > 0))
				return ur_opt_error(&p, "--duration %s: seconds, more than 0", optarg);
			break;
		}
	}
	if (p.rc)       /* help printed, or a usage error */
		return p.rc;
	if (optind < argc)
		return ur_opt_error(&p, "unexpected argument '%s' (the server takes no address)",
				    argv[optind]);
	return 0;
}
