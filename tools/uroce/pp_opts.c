/* uroce pingpong: options, help, and which operations each QP type allows. */
#include "pp.h"
#include "uroce.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char *const op_names[PP_NOPS] = {
	[PP_SEND] = "send",   [PP_SEND_IMM] = "send-imm", [PP_WRITE] = "write",
	[PP_WRITE_IMM] = "write-imm", [PP_READ] = "read", [PP_CAS] = "cas",
	[PP_FAA] = "faa",
};

const char *pp_op_name(enum pp_op op)
{
	return op < PP_NOPS ? op_names[op] : "?";
}

const char *pp_qpt_name(enum ibv_qp_type t)
{
	return t == IBV_QPT_RC ? "rc" : t == IBV_QPT_UC ? "uc" : t == IBV_QPT_UD ? "ud" : "?";
}

bool pp_op_one_sided(enum pp_op op)
{
	return op == PP_READ || op == PP_CAS || op == PP_FAA;
}

bool pp_op_atomic(enum pp_op op)
{
	return op == PP_CAS || op == PP_FAA;
}

static const char pp_help[] =
	"usage: uroce pingpong [OPTIONS] [SERVERNAME]\n"
	"\n"
	"Ping-pong over one QP between two processes, like ibv_rc_pingpong but for every\n"
	"operation and QP type.  Without SERVERNAME it waits for a client on TCP port\n"
	"-p; with it, it connects there.  Give both sides the same --op, --qp, -s, -n\n"
	"and --validate (they are compared, and a difference is reported).\n"
	"\n"
	"  send, send-imm     the client sends, the server answers with the same (both\n"
	"                     sides post receives); -imm carries the iteration number\n"
	"  write, write-imm   the client writes into the server's buffer and tells it\n"
	"                     (a SEND after the WRITE, or the immediate); it writes back\n"
	"  read               the client reads the server's buffer (the server is passive)\n"
	"  cas, faa           8-byte compare-and-swap / fetch-and-add on the server's\n"
	"                     buffer; returned values are checked with --validate\n"
	"RC allows all; UC send, send-imm, write, write-imm; UD send and send-imm, at\n"
	"most one packet (the path MTU).\n"
	"\n"
	"options:\n"
	"  -d, --ib-dev=DEV      device (default: the one holding the address that\n"
	"                        reaches the peer, else the first)\n"
	"  -i, --ib-port=PORT    device port (default 1)\n"
	"  -g, --gid-idx=INDEX   GID index (default: the one whose address reaches the\n"
	"                        peer; see `uroce gid`)\n"
	"  -p, --port=PORT       TCP port of the exchange (default 18515)\n"
	"      --op=OP           send|send-imm|write|write-imm|read|cas|faa (default send)\n"
	"      --qp=TYPE         rc|uc|ud (default rc)\n"
	"  -s, --size=BYTES      message size (default 4096; atomics: 8)\n"
	"  -n, --iters=N         iterations (default 1000)\n"
	"  -m, --mtu=BYTES       path MTU 256..4096 (default: the smaller active MTU)\n"
	"  -e, --events          sleep on completion events instead of polling\n"
	"  -c, --validate        check every byte of every message (a different pattern\n"
	"                        per iteration, so a stale buffer is caught) and every\n"
	"                        atomic's result; a mismatch fails with exit 1\n"
	"      --inline          send data inline (sends and writes)\n"
	"  -h, --help            this text\n"
	"\n"
	"It prints the local and remote QP addresses, then, as ibv_rc_pingpong does:\n"
	"  8192000 bytes in 0.06 seconds = 1092.27 Mbit/sec\n"
	"  1000 iters in 0.06 seconds = 60.00 usec/iter\n"
	"Exit status: 0 done, 1 failed (no server, RTR refused, bad data...), 2 bad arguments.\n"
	"\n"
	"examples:\n"
	"  uroce run -- uroce pingpong                          (server)\n"
	"  uroce run -- uroce pingpong 127.0.0.1                (client)\n"
	"  uroce pingpong --op write-imm -s 65536 --validate    (server, then the client:)\n"
	"  uroce pingpong --op write-imm -s 65536 --validate 10.0.0.1\n"
	"  uroce pingpong --qp ud --op send-imm -s 1024 -e 10.0.0.1\n"
	"  uroce pingpong --op cas -n 10000 --validate 10.0.0.1\n";

static int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, "uroce pingpong: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n(see `uroce pingpong --help`)\n");
	return UR_EXIT_USAGE;
}

static bool parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s == '-')
		return false;
	v = strtoul(s, &end, 0);
	if (*end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

/* Why OP cannot run on QPT, or NULL. */
static const char *op_refused(enum pp_op op, enum ibv_qp_type qpt)
{
	if (qpt == IBV_QPT_UC && (op == PP_READ || pp_op_atomic(op)))
		return "UC carries SEND and RDMA WRITE only (no READ, no atomics): use --qp rc";
	if (qpt == IBV_QPT_UD && op != PP_SEND && op != PP_SEND_IMM)
		return "UD carries SEND and SEND with immediate only: use --qp rc (or uc for writes)";
	return NULL;
}

static int check_combination(struct pp_opts *o, bool size_given)
{
	const char *why = op_refused(o->op, o->qpt);
	char msg[256];

	if (why) {
		snprintf(msg, sizeof(msg), "--op %s is not possible on a %s QP: %s",
			 pp_op_name(o->op), o->qpt == IBV_QPT_UC ? "UC" : "UD", why);
		return usage_error("%s", msg);
	}
	if (pp_op_atomic(o->op)) {
		if (size_given && o->size != 8)
			return usage_error("%s: atomics operate on 8 bytes; drop -s",
					   pp_op_name(o->op));
		o->size = 8;
	}
	if (o->use_inline && pp_op_one_sided(o->op))
		return usage_error("--inline applies to sends and writes, not to --op %s",
				   pp_op_name(o->op));
	if (o->qpt == IBV_QPT_UD && o->size > 4096)
		return usage_error("%s: a UD message is one packet, at most the path MTU (4096 at "
				   "most, 1024 on a 1500-byte Ethernet MTU): use -s 4096 or less",
				   "-s too large");
	if (o->mtu && o->qpt == IBV_QPT_UD && o->size > (uint32_t)ur_mtu_bytes(o->mtu))
		return usage_error("%s: a UD message must fit in the MTU (-m): use a smaller -s",
				   "-s larger than -m");
	return 0;
}

int pp_parse(int argc, char **argv, struct pp_opts *o)
{
	enum { OPT_OP = 256, OPT_QP, OPT_INLINE };
	static const struct option longs[] = {
		{ "ib-dev", required_argument, NULL, 'd' },
		{ "ib-port", required_argument, NULL, 'i' },
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "port", required_argument, NULL, 'p' },
		{ "op", required_argument, NULL, OPT_OP },
		{ "qp", required_argument, NULL, OPT_QP },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "events", no_argument, NULL, 'e' },
		{ "validate", no_argument, NULL, 'c' },
		{ "chk", no_argument, NULL, 'c' },
		{ "inline", no_argument, NULL, OPT_INLINE },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	bool size_given = false;
	unsigned long v;
	int c;

	*o = (struct pp_opts){ .ib_port = 1, .gid_index = -1, .tcp_port = UR_CONN_DEFAULT_PORT,
			       .op = PP_SEND, .qpt = IBV_QPT_RC, .size = 4096, .iters = 1000 };
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:i:g:p:s:n:m:ech", longs, NULL)) != -1) {
		switch (c) {
		case 'd':
			o->dev_name = optarg;
			break;
		case 'i':
			if (!parse_uint(optarg, 1, 255, &v))
				return usage_error("-i %s: a port number, 1 to 255", optarg);
			o->ib_port = (int)v;
			break;
		case 'g':
			if (!parse_uint(optarg, 0, 255, &v))
				return usage_error("-g %s: a GID index, 0 to 255 (see `uroce gid`)",
						   optarg);
			o->gid_index = (int)v;
			break;
		case 'p':
			if (!parse_uint(optarg, 1, 65535, &v))
				return usage_error("-p %s: a TCP port, 1 to 65535", optarg);
			o->tcp_port = (int)v;
			break;
		case OPT_OP: {
			int i;

			for (i = 0; i < PP_NOPS && strcmp(optarg, op_names[i]); i++)
				;
			if (i == PP_NOPS)
				return usage_error("--op %s: one of send, send-imm, write, write-imm, "
						   "read, cas, faa", optarg);
			o->op = (enum pp_op)i;
			break;
		}
		case OPT_QP:
			if (!strcmp(optarg, "rc"))
				o->qpt = IBV_QPT_RC;
			else if (!strcmp(optarg, "uc"))
				o->qpt = IBV_QPT_UC;
			else if (!strcmp(optarg, "ud"))
				o->qpt = IBV_QPT_UD;
			else
				return usage_error("--qp %s: one of rc, uc, ud", optarg);
			break;
		case 's':
			if (!parse_uint(optarg, 1, 1u << 30, &v))
				return usage_error("-s %s: a size in bytes, 1 to 1073741824", optarg);
			o->size = (uint32_t)v;
			size_given = true;
			break;
		case 'n':
			if (!parse_uint(optarg, 1, 1u << 31, &v))
				return usage_error("-n %s: a number of iterations, at least 1", optarg);
			o->iters = (uint32_t)v;
			break;
		case 'm':
			if (!parse_uint(optarg, 256, 4096, &v) || !ur_mtu_from_bytes((int)v))
				return usage_error("-m %s: one of 256, 512, 1024, 2048, 4096", optarg);
			o->mtu = ur_mtu_from_bytes((int)v);
			break;
		case 'e':
			o->events = true;
			break;
		case 'c':
			o->validate = true;
			break;
		case OPT_INLINE:
			o->use_inline = true;
			break;
		case 'h':
			fputs(pp_help, stdout);
			return -1;
		case ':':
			return usage_error("%s needs a value", argv[optind - 1]);
		default:
			return usage_error("unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		o->server = argv[optind++];
	if (optind < argc)
		return usage_error("unexpected argument '%s': one SERVERNAME at most", argv[optind]);
	return check_combination(o, size_given);
}
