/* uroce bench: options (perftest's flags where they exist), help, and which
 * QP types each operation allows. */
#include "bench.h"
#include "opts.h"
#include "uroce.h"

#include <string.h>
#include <strings.h>

static const char *const op_names[] = {
	[BENCH_WRITE] = "write", [BENCH_READ] = "read", [BENCH_SEND] = "send",
	[BENCH_ATOMIC] = "atomic",
};

const char *bench_op_name(enum bench_op op)
{
	return op_names[op];
}

const char *bench_qpt_name(enum ibv_qp_type t)
{
	return t == IBV_QPT_RC ? "RC" : t == IBV_QPT_UC ? "UC" : t == IBV_QPT_UD ? "UD" : "?";
}

/* perftest's test titles */
const char *bench_title(const struct bench_opts *o)
{
	static const char *const bw[] = {
		[BENCH_WRITE] = "RDMA_Write BW Test", [BENCH_READ] = "RDMA_Read BW Test",
		[BENCH_SEND] = "Send BW Test", [BENCH_ATOMIC] = "Atomic FETCH_AND_ADD BW Test",
	};
	static const char *const lat[] = {
		[BENCH_WRITE] = "RDMA_Write Latency Test", [BENCH_READ] = "RDMA_Read Latency Test",
		[BENCH_SEND] = "Send Latency Test", [BENCH_ATOMIC] = "Atomic FETCH_AND_ADD Latency Test",
	};

	if (o->op == BENCH_ATOMIC && o->atomic == BENCH_CAS)
		return o->lat ? "Atomic CMP_AND_SWAP Latency Test" : "Atomic CMP_AND_SWAP BW Test";
	return o->lat ? lat[o->op] : bw[o->op];
}

static const char bench_help[] =
	"usage: uroce bench write|read|send|atomic [--bw|--lat] [OPTIONS] [SERVERNAME]\n"
	"\n"
	"Bandwidth (--bw, the default) or latency (--lat) of one operation between two\n"
	"processes, like perftest's ib_{write,read,send,atomic}_{bw,lat}, with the same\n"
	"flags and tables.  Without SERVERNAME it waits for a client on TCP port -p;\n"
	"with it, it connects there.  Give both sides the same operation and options\n"
	"(they are compared).\n"
	"\n"
	"  write    RDMA WRITE (RC, UC); latency: both sides write into each other's\n"
	"           buffer and poll its last byte (ping-pong, half round trip)\n"
	"  read     RDMA READ (RC); latency: one read's round trip\n"
	"  send     SEND/RECV (RC, UC, UD); latency: send/recv ping-pong, half round trip\n"
	"  atomic   8-byte FETCH_AND_ADD or CMP_AND_SWAP (RC); latency: one round trip\n"
	"\n"
	"perftest options:\n"
	"  -d, --ib-dev=DEV        device (default: the one reaching the peer)\n"
	"  -i, --ib-port=PORT      device port (default 1)\n"
	"  -x, --gid-index=INDEX   GID index (default: the one reaching the peer)\n"
	"  -p, --port=PORT         TCP port of the exchange (default 18515)\n"
	"  -s, --size=BYTES        message size (default: bw 65536, lat 2, atomic 8)\n"
	"  -a, --all               sweep sizes 2 B .. 8 MiB (UD: up to the MTU; atomic: 8)\n"
	"  -n, --iters=N           iterations (default: bw 5000, lat 1000); bw: per QP\n"
	"  -q, --qp=N              QPs per thread (default 1, at most 64)\n"
	"  -b, --bidirectional     both sides send at once (bw only); sums both ways\n"
	"      --report_gbits      bandwidth in Gb/sec instead of MB/sec (2^20 bytes)\n"
	"  -c, --connection=TYPE   RC, UC or UD (write: RC/UC; read, atomic: RC;\n"
	"                          send: RC/UC/UD); default RC\n"
	"  -m, --mtu=BYTES         path MTU 256..4096 (default: the smaller active MTU)\n"
	"  -t, --tx-depth=N        operations in flight per QP (default: bw 128, lat 1)\n"
	"  -I, --inline_size=N     send data of up to N bytes inline (write, send)\n"
	"  -e, --events            sleep on completion events instead of polling\n"
	"  -A, --atomic_type=TYPE  FETCH_AND_ADD (default) or CMP_AND_SWAP\n"
	"  -F, --CPU-freq          accepted and ignored (no cycle counter is used)\n"
	"beyond perftest:\n"
	"      --bw, --lat         what to measure\n"
	"  -T, --threads=N         N threads (default 1, at most 16), each with its own\n"
	"                          CQ and -q QPs: N*q QPs in all; results are summed\n"
	"                          (bw) or pooled (lat samples)\n"
	"      --json=FILE|-       one JSON record per size with every number\n"
	"      --csv=FILE|-        the same as CSV with a header line\n"
	"      --plot=FILE.svg     an SVG chart: bandwidth (MB/s) and latency (usec)\n"
	"                          against the message size (log2), for a sweep (-a)\n"
	"  -h, --help              this text\n"
	"\n"
	"Latency tables add p50/p99/p99.9/max columns (usec).\n"
	"Exit status: 0 done, 1 failed (no server, RTR refused, lost messages...),\n"
	"2 bad arguments.\n"
	"\n"
	"examples:\n"
	"  uroce run -- uroce bench write                        (server)\n"
	"  uroce run -- uroce bench write 127.0.0.1              (client)\n"
	"  uroce bench send --lat -c UD -a 10.0.0.1\n"
	"  uroce bench read -q 4 -T 2 --report_gbits 10.0.0.1\n"
	"  uroce bench write -a -n 100 --json - --plot sweep.svg 10.0.0.1\n"
	"  uroce bench atomic -A CMP_AND_SWAP --lat 10.0.0.1\n";

/* Which QP types each operation runs on (perftest's rules). */
static const char *qpt_refused(enum bench_op op, enum ibv_qp_type t)
{
	if (t == IBV_QPT_UD && op != BENCH_SEND)
		return "UD carries SEND only: use -c RC (or UC for write)";
	if (t == IBV_QPT_UC && (op == BENCH_READ || op == BENCH_ATOMIC))
		return "UC carries SEND and RDMA WRITE only: use -c RC";
	return NULL;
}

static int check_combination(struct ur_optparse *p, struct bench_opts *o,
			     bool size_given, bool iters_given, bool depth_given)
{
	const char *why = qpt_refused(o->op, o->qpt);

	if (why)
		return ur_opt_error(p, "%s over %s: %s", bench_op_name(o->op),
				    bench_qpt_name(o->qpt), why);
	if (o->bidir && o->lat)
		return ur_opt_error(p, "-b with --lat: -b (bidirectional) applies to --bw; latency "
				    "tests are ping-pongs already");
	if (o->op == BENCH_ATOMIC) {
		if (size_given && o->sizes[0] != 8)
			return ur_opt_error(p, "-s: atomics operate on 8 bytes; drop -s");
		o->sizes[0] = 8;
		o->nsizes = 1;
	} else if (o->all_sizes) {
		uint32_t max = BENCH_MAX_SIZE;

		if (o->qpt == IBV_QPT_UD)   /* cut at the path MTU */
			max = o->conn.mtu ? (uint32_t)ur_mtu_bytes(o->conn.mtu) : 4096;
		o->nsizes = 0;
		for (uint32_t s = 2; s <= max; s <<= 1)
			o->sizes[o->nsizes++] = s;
	} else if (!size_given) {
		o->sizes[0] = o->lat ? 2 : 65536;
		o->nsizes = 1;
	}
	if (o->qpt == IBV_QPT_UD && !o->all_sizes && o->sizes[0] > 4096)
		return ur_opt_error(p, "-s: a UD message is one packet, at most the path MTU: use "
				    "-s 4096 or less (1024 on a 1500-byte Ethernet MTU)");
	if (!iters_given)
		o->iters = o->lat ? 1000 : 5000;
	if (!depth_given)
		o->tx_depth = o->lat ? 1 : 128;
	if (o->inline_size && (o->op == BENCH_READ || o->op == BENCH_ATOMIC))
		return ur_opt_error(p, "-I: inline data applies to write and send, not %s",
				    bench_op_name(o->op));
	return 0;
}

static int parse_op(struct ur_optparse *p, const char *word, struct bench_opts *o)
{
	for (unsigned i = 0; i < sizeof(op_names) / sizeof(op_names[0]); i++)
		if (!strcmp(word, op_names[i])) {
			o->op = (enum bench_op)i;
			return 0;
		}
	return ur_opt_error(p, "'%s': the operation is one of write, read, send, atomic", word);
}

enum { OPT_BW = 256, OPT_LAT, OPT_GBITS, OPT_JSON, OPT_CSV, OPT_PLOT };

/* Which flags the user gave: their defaults depend on the others. */
struct given {
	bool size, iters, depth;
};

/* One option c of the bench's own (the shared ones are ur_opt_next's). */
static int bench_opt(struct ur_optparse *p, int c, struct bench_opts *o, struct given *g)
{
	switch (c) {
	case 's':
		ur_opt_range(p, "a size in bytes", 1, BENCH_MAX_SIZE, &o->sizes[0]);
		o->nsizes = 1;
		g->size = true;
		break;
	case 'a':
		o->all_sizes = true;
		break;
	case 'n':
		ur_opt_count(p, "a number of iterations", 1, 1u << 30, &o->iters);
		g->iters = true;
		break;
	case 'q':
		ur_opt_range(p, "a number of QPs", 1, BENCH_MAX_QPS, &o->qps);
		break;
	case 'T':
		ur_opt_range(p, "a number of threads", 1, BENCH_MAX_THREADS, &o->threads);
		break;
	case 'b':
		o->bidir = true;
		break;
	case OPT_GBITS:
		o->gbits = true;
		break;
	case 'c':
		if (!strcasecmp(optarg, "RC"))
			o->qpt = IBV_QPT_RC;
		else if (!strcasecmp(optarg, "UC"))
			o->qpt = IBV_QPT_UC;
		else if (!strcasecmp(optarg, "UD"))
			o->qpt = IBV_QPT_UD;
		else
			return ur_opt_error(p, "-c %s: one of RC, UC, UD", optarg);
		break;
	case 't':
		ur_opt_range(p, "a queue depth", 1, 8192, &o->tx_depth);
		g->depth = true;
		break;
	case 'I':
		ur_opt_range(p, "an inline size in bytes", 0, 4096, &o->inline_size);
		break;
	case 'e':
		o->events = true;
		break;
	case 'A':
		if (!strcmp(optarg, "FETCH_AND_ADD"))
			o->atomic = BENCH_FAA;
		else if (!strcmp(optarg, "CMP_AND_SWAP"))
			o->atomic = BENCH_CAS;
		else
			return ur_opt_error(p, "-A %s: FETCH_AND_ADD or CMP_AND_SWAP", optarg);
		break;
	case 'F':
		break;
	case OPT_BW:
		o->lat = false;
		break;
	case OPT_LAT:
		o->lat = true;
		break;
	case OPT_JSON:
		o->json = optarg;
		break;
	case OPT_CSV:
		o->csv = optarg;
		break;
	case OPT_PLOT:
		o->plot = optarg;
		break;
	}
	return 0;
}

int bench_parse(int argc, char **argv, struct bench_opts *o)
{
	static const struct option longs[] = {
		UR_OPT_LONGS_SHARED,
		{ "gid-index", required_argument, NULL, 'x' },
		{ "size", required_argument, NULL, 's' },
		{ "all", no_argument, NULL, 'a' },
		{ "iters", required_argument, NULL, 'n' },
		{ "qp", required_argument, NULL, 'q' },
		{ "bidirectional", no_argument, NULL, 'b' },
		{ "report_gbits", no_argument, NULL, OPT_GBITS },
		{ "connection", required_argument, NULL, 'c' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "tx-depth", required_argument, NULL, 't' },
		{ "inline_size", required_argument, NULL, 'I' },
		{ "events", no_argument, NULL, 'e' },
		{ "atomic_type", required_argument, NULL, 'A' },
		{ "CPU-freq", no_argument, NULL, 'F' },
		{ "threads", required_argument, NULL, 'T' },
		{ "bw", no_argument, NULL, OPT_BW },
		{ "lat", no_argument, NULL, OPT_LAT },
		{ "json", required_argument, NULL, OPT_JSON },
		{ "csv", required_argument, NULL, OPT_CSV },
		{ "plot", required_argument, NULL, OPT_PLOT },
		{ 0 },
	};
	/* argv[1] is the operation; the options follow it. */
	struct ur_optparse p = { .cmd = "bench", .help = bench_help, .argc = argc - 1,
				 .argv = argv + 1, .shorts = ":d:i:x:p:s:an:q:bc:m:t:I:eA:FT:h",
				 .longs = longs, .conn = &o->conn, .gid_hint = true };
	struct given g = { 0 };
	int c;

	*o = (struct bench_opts){ .conn = UR_CONN_OPTS_DEFAULT, .qpt = IBV_QPT_RC, .qps = 1,
				  .threads = 1 };
	if (argc < 2) {
		fputs(bench_help, stderr);
		return UR_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		fputs(bench_help, stdout);
		return UR_OPT_HELP;
	}
	if (parse_op(&p, argv[1], o))
		return UR_EXIT_USAGE;
	while ((c = ur_opt_next(&p)) != -1) {
		if (bench_opt(&p, c, o, &g))
			return p.rc;
	}
	if (p.rc)       /* help printed, or a usage error */
		return p.rc;
	if (optind < p.argc)
		o->server = p.argv[optind++];
	if (optind < p.argc)
		return ur_opt_error(&p, "unexpected argument '%s': one SERVERNAME at most",
				    p.argv[optind]);
	if (o->op != BENCH_ATOMIC && o->atomic == BENCH_CAS)
		return ur_opt_error(&p, "-A applies to `bench atomic`, not %s", bench_op_name(o->op));
	return check_combination(&p, o, g.size, g.iters, g.depth);
}
