/* uroce srq-server: options, help, and the per-client table. */
#include "srq_server.h"
#include "uroce.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

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

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "uroce srq-server: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(see `uroce srq-server --help`)\n");
	return UR_EXIT_USAGE;
}

static bool num(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;

	if (!s || !*s || *s == '-')
		return false;
	*out = strtoul(s, &end, 0);
	return !*end && *out >= min && *out <= max;
}

int srv_parse(int argc, char **argv, struct srv_opts *o)
{
	enum { OPT_DURATION = 256 };
	static const struct option longs[] = {
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "port", required_argument, NULL, 'p' },
		{ "clients", required_argument, NULL, 'q' },
		{ "srq-depth", required_argument, NULL, 'r' },
		{ "size", required_argument, NULL, 's' },
		{ "msgs", required_argument, NULL, 'n' },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	unsigned long v;
	char *end;
	int c;

	*o = (struct srv_opts){ .ib_port = 1, .gid_index = -1, .tcp_port = UR_CONN_DEFAULT_PORT,
				.max_clients = 16, .depth = 4096, .max_size = 4096 };
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:i:g:p:q:r:s:n:vh", longs, NULL)) != -1) {
		switch (c) {
		case 'd':
			o->dev_name = optarg;
			break;
		case 'i':
			if (!num(optarg, 1, 255, &v))
				return usage_error("-i %s: a port number, 1 to 255", optarg);
			o->ib_port = (int)v;
			break;
		case 'g':
			if (!num(optarg, 0, 255, &v))
				return usage_error("-g %s: a GID index, 0 to 255", optarg);
			o->gid_index = (int)v;
			break;
		case 'p':
			if (!num(optarg, 1, 65535, &v))
				return usage_error("-p %s: a TCP port, 1 to 65535", optarg);
			o->tcp_port = (int)v;
			break;
		case 'q':
			if (!num(optarg, 1, 1u << 20, &v))
				return usage_error("-q %s: a number of clients, at least 1", optarg);
			o->max_clients = (uint32_t)v;
			break;
		case 'r':
			if (!num(optarg, 1, 1u << 24, &v))
				return usage_error("-r %s: an SRQ depth, at least 1", optarg);
			o->depth = (uint32_t)v;
			break;
		case 's':
			if (!num(optarg, SRQ_HDR_BYTES, 1u << 24, &v))
				return usage_error("-s %s: a size from 16 (the message header) to 16 MiB",
						   optarg);
			o->max_size = (uint32_t)v;
			break;
		case 'n':
			if (!num(optarg, 1, UINT32_MAX, &v))
				return usage_error("-n %s: a number of messages, at least 1", optarg);
			o->msgs = (uint32_t)v;
			break;
		case OPT_DURATION:
			o->duration = strtod(optarg, &end);
			if (*end || !(o->duration > 0))
				return usage_error("--duration %s: seconds, more than 0", optarg);
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'h':
			fputs(srv_help, stdout);
			return -1;
		case ':':
			return usage_error("%s needs a value", argv[optind - 1]);
		default:
			return usage_error("unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s' (the server takes no address)",
				   argv[optind]);
	return 0;
}

int srv_report(struct srv *s)
{
	uint32_t count[CS_REJECTED + 1] = { 0 }, cut = 0;
	double secs = s->t0 ? s->t_end - s->t0 : 0;

	printf("\n %6s  %-22s  %-8s  %10s  %14s  %s\n", "client", "peer", "QPN", "msgs", "bytes",
	       "state");
	for (uint32_t i = 0; i < s->nconns; i++) {
		struct srv_conn *c = s->conns[i];

		count[c->state]++;
		cut += c->cut;
		printf(" %6u  %-22s  0x%06x  %10llu  %14llu  %s%s%s%s\n", c->id, c->peer, c->qpn,
		       (unsigned long long)c->msgs, (unsigned long long)c->bytes,
		       srv_state_name(c->state), c->cut ? " (cut short by the stop)" : "",
		       c->error[0] ? ": " : "", c->error);
	}
	printf("total: %u clients (%u done, %u aborted, %u bad, %u refused, %u still running); "
	       "%llu messages, %llu bytes in %.2f seconds = %.2f Mbit/sec\n",
	       s->nconns, count[CS_DONE], count[CS_ABORTED], count[CS_BAD], count[CS_REJECTED],
	       cut, (unsigned long long)s->msgs, (unsigned long long)s->bytes, secs,
	       secs > 0 ? (double)s->bytes * 8 / secs / 1e6 : 0.0);
	printf("SRQ: depth %u, %llu receives reposted, %llu completions of QPs already gone",
	       s->o.depth, (unsigned long long)s->reposted, (unsigned long long)s->stray);
	if (s->stopped_by)
		printf("; stopped by %s", s->stopped_by);
	printf("\n");
	fflush(stdout);
	return count[CS_ABORTED] || count[CS_BAD] || count[CS_REJECTED] ? UR_EXIT_FAIL : UR_EXIT_OK;
}
