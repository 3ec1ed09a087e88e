/* uroce pingpong: options, help, and which operations each QP type allows. */
#include "opts.h"
#include "pp.h"
#include "uroce.h"

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

/* Why OP cannot run on QPT, or NULL. */
static const char *op_refused(enum pp_op op, enum ibv_qp_type qpt)
{
	if (qpt == IBV_QPT_UC && (op == PP_READ || pp_op_atomic(op)))
		return "UC carries SEND and RDMA WRITE only (no READ, no atomics): use --qp rc";
	if (qpt == IBV_QPT_UD && op != PP_SEND && op != PP_SEND_IMM)
		return "UD carries SEND and SEND with immediate only: use --qp rc (or uc for writes)";
	return NULL;
}

static int check_combination(struct ur_optparse *p, struct pp_opts *o, bool size_given)
{
	const char *why = op_refused(o->op, o->qpt);

	if (why)
		return ur_opt_error(p, "--op %s is not possible on a %s QP: %s", pp_op_name(o->op),
				    o->qpt == IBV_QPT_UC ? "UC" : "UD", why);
	if (pp_op_atomic(o->op)) {
		if (size_given && o->size != 8)
			return ur_opt_error(p, "%s: atomics operate on 8 bytes; drop -s",
					    pp_op_name(o->op));
		o->size = 8;
	}
	if (o->use_inline && pp_op_one_sided(o->op))
		return ur_opt_error(p, "--inline applies to sends and writes, not to --op %s",
				    pp_op_name(o->op));
	if (o->qpt == IBV_QPT_UD && o->size > 4096)
		return ur_opt_error(p, "-s too large: a UD message is one packet, at most the path "
				    "MTU (4096 at most, 1024 on a 1500-byte Ethernet MTU): use -s 4096 "
				    "or less");
	if (o->conn.mtu && o->qpt == IBV_QPT_UD && o->size > (uint32_t)ur_mtu_bytes(o->conn.mtu))
		return ur_opt_error(p, "-s larger than -m: a UD message must fit in the MTU (-m): "
				    "use a smaller -s");
	return 0;
}

/* --op's word; -1 when it names no operation. */
static int op_from_name(const char *name)
{
	for (int i = 0; i < PP_NOPS; i++)
		if (!strcmp(name, op_names[i]))
			return i;
	return -1;
}

int pp_parse(int argc, char **argv, struct pp_opts *o)
{
	enum { OPT_OP = 256, OPT_QP, OPT_INLINE };
	static const struct option longs[] = {
		UR_OPT_LONGS_SHARED,
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "op", required_argument, NULL, OPT_OP },
		{ "qp", required_argument, NULL, OPT_QP },
		{ "size", required_argument, NULL, 's' },
		{ "iters", required_argument, NULL, 'n' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "events", no_argument, NULL, 'e' },
		{ "validate", no_argument, NULL, 'c' },
		{ "chk", no_argument, NULL, 'c' },
		{ "inline", no_argument, NULL, OPT_INLINE },
		{ 0 },
	};
	struct ur_optparse p = { .cmd = "pingpong", .help = pp_help, .argc = argc, .argv = argv,
				 .shorts = ":d:i:g:p:s:n:m:ech", .longs = longs, .conn = &o->conn,
				 .gid_hint = true };
	bool size_given = false;
	int c, op;

	*o = (struct pp_opts){ .conn = UR_CONN_OPTS_DEFAULT, .op = PP_SEND, .qpt = IBV_QPT_RC,
			       .size = 4096, .iters = 1000 };
	while ((c = ur_opt_next(&p)) != -1) {
		switch (c) {
		case OPT_OP:
			op = op_from_name(optarg);
			if (op < 0)
				return ur_opt_error(&p, "--op %s: one of send, send-imm, write, "
						    "write-imm, read, cas, faa", optarg);
			o->op = (enum pp_op)op;
			break;
		case OPT_QP:
			if (!strcmp(optarg, "rc"))
				o->qpt = IBV_QPT_RC;
			else if (!strcmp(optarg, "uc"))
				o->qpt = IBV_QPT_UC;
			else if (!strcmp(optarg, "ud"))
				o->qpt = IBV_QPT_UD;
			else
				return ur_opt_error(&p, "--qp %s: one of rc, uc, ud", optarg);
			break;
		case 's':
			ur_opt_range(&p, "a size in bytes", 1, 1u << 30, &o->size);
			size_given = true;
			break;
		case 'n':
			ur_opt_count(&p, "a number of iterations", 1, 1u << 31, &o->iters);
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
		}
	}
	if (p.rc)       /* help printed, or a usage error */
		return p.rc;
	if (optind < argc)
		o->server = argv[optind++];
	if (optind < argc)
		return ur_opt_error(&p, "unexpected argument '%s': one SERVERNAME at most",
				    argv[optind]);
	return check_combination(&p, o, size_given);
}
