/* Option parsing for the subcommands that talk to a peer (pingpong, bench,
 * srq-server, srq-client): getopt_long set up once, whole numbers checked
 * against their range, every usage error in one form
 *
 *     uroce CMD: -s 0: a size in bytes, 1 to 8388608
 *     (see `uroce CMD --help`)
 *
 * with exit code 2, and the options whose letter means the same in every
 * subcommand: -d, -i, the GID index (-x or -g), -p, -m and -h (so no
 * subcommand gives these letters another meaning).  Those ur_opt_next
 * handles itself; a subcommand's loop sees only its own:
 *
 *     struct ur_optparse p = { .cmd = "pingpong", .help = pp_help, .argc = argc,
 *                              .argv = argv, .shorts = ":d:i:g:p:s:...", .longs = longs,
 *                              .conn = &o->conn };
 *
 *     while ((c = ur_opt_next(&p)) != -1) {
 *             switch (c) {
 *             case 's':
 *                     ur_opt_range(&p, "a size in bytes", 1, 1u << 30, &o->size);
 *                     break;
 *             ...
 *             }
 *     }
 *     if (p.rc)
 *             return p.rc;
 *
 * A usage error ends the parse where it happens: it is said at once, kept
 * in p.rc, and the next ur_opt_next returns -1 (a scanner's sticky error),
 * so a case needs no error path of its own. */
#ifndef UROCE_TOOLS_OPTS_H
#define UROCE_TOOLS_OPTS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include "conn.h"

/* Help printed on request: leave with UR_EXIT_OK. */
#define UR_OPT_HELP (-1)

/* What the shared options set. */
struct ur_conn_opts {
	const char *dev_name;   /* -d; NULL: the device that reaches the peer */
	int ib_port;            /* -i */
	int gid_index;          /* -x or -g; -1: the one that reaches the peer */
	int tcp_port;           /* -p: of the exchange */
	enum ibv_mtu mtu;       /* -m; 0: the smaller active MTU */
};

#define UR_CONN_OPTS_DEFAULT { .ib_port = 1, .gid_index = -1, .tcp_port = UR_CONN_DEFAULT_PORT }

/* The long names of -d, -i, -p and -h, for a subcommand's table; the GID
 * index's is its own ("gid-index" as perftest, "gid-idx" as ibv_rc_pingpong),
 * and so is --mtu where it takes -m. */
#define UR_OPT_LONGS_SHARED                                   \
	{ "ib-dev", required_argument, NULL, 'd' },           \
	{ "ib-port", required_argument, NULL, 'i' },          \
	{ "port", required_argument, NULL, 'p' },             \
	{ "help", no_argument, NULL, 'h' }

/* One subcommand's parse. */
struct ur_optparse {
	const char *cmd;                /* "bench": messages begin "uroce bench: " */
	const char *help;               /* printed on stdout for -h */
	int argc;
	char **argv;                    /* argv[0] is the subcommand's word */
	const char *shorts;             /* getopt's; starts with ':' */
	const struct option *longs;
	struct ur_conn_opts *conn;      /* where the shared options go */
	bool gid_hint;                  /* a bad GID index points at `uroce gid` */
	int rc;                         /* 0, UR_OPT_HELP or UR_EXIT_USAGE (said already) */
	int opt;                        /* the option ur_opt_next returned last */
	bool begun;
};

/* The next of the subcommand's own options (getopt_long: its argument in
 * optarg), after handling any shared ones; -1 at the end of the options
 * (the operands from optind on), after help, or after a usage error: P->rc
 * says which.  The first call starts afresh. */
int ur_opt_next(struct ur_optparse *p);

/* The current option's argument as a whole number in [MIN, MAX] (decimal,
 * 0x hex or 0 octal) into *OUT; else the usage error "FLAG ARG: WHAT, MIN
 * to MAX". */
void ur_opt_range(struct ur_optparse *p, const char *what, unsigned long min,
		  unsigned long max, uint32_t *out);

/* The same for a count whose upper bound only guards the arithmetic: the
 * error says "FLAG ARG: WHAT, at least MIN". */
void ur_opt_count(struct ur_optparse *p, const char *what, unsigned long min,
		  unsigned long max, uint32_t *out);

/* The usage error "uroce CMD: " FMT, then the pointer to --help; ends the
 * parse.  Returns UR_EXIT_USAGE. */
int ur_opt_error(struct ur_optparse *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* S as a whole number in [MIN, MAX]: no sign, nothing after it. */
bool ur_parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out);

#endif
