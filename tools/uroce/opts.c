/* Option parsing shared by the subcommands that talk to a peer (opts.h). */
#include "opts.h"
#include "uroce.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ur_opt_error(struct ur_optparse *p, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "uroce %s: ", p->cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(see `uroce %s --help`)\n", p->cmd);
	p->rc = UR_EXIT_USAGE;
	return UR_EXIT_USAGE;
}

bool ur_parse_uint(const char *s, unsigned long min, unsigned long max, unsigned long *out)
{
	char *end;
	unsigned long v;

	if (!s || !*s || *s == '-')     /* strtoul would take "-1" as ULONG_MAX */
		return false;
	v = strtoul(s, &end, 0);
	if (*end || v < min || v > max)
		return false;
	*out = v;
	return true;
}

static bool is_short(const struct ur_optparse *p, int c)
{
	return c > 0 && c < 256 && c != ':' && strchr(p->shorts, c);
}

/* The current option as messages name it: "-s" (also for --size), or
 * "--inflight" for one without a letter. */
static const char *flag_name(const struct ur_optparse *p, char *buf, size_t len)
{
	snprintf(buf, len, "-%c", p->opt);
	if (is_short(p, p->opt))
		return buf;
	for (const struct option *l = p->longs; l->name; l++)
		if (l->val == p->opt) {
			snprintf(buf, len, "--%s", l->name);
			break;
		}
	return buf;
}

/* optarg in [MIN, MAX], else the error says so: "at least MIN" for a count,
 * then TAIL. */
static int number(struct ur_optparse *p, const char *what, bool count, const char *tail,
		  unsigned long min, unsigned long max, unsigned long *out)
{
	char flag[48];

	if (ur_parse_uint(optarg, min, max, out))
		return 0;
	flag_name(p, flag, sizeof(flag));
	if (count)
		return ur_opt_error(p, "%s %s: %s, at least %lu%s", flag, optarg, what, min, tail);
	return ur_opt_error(p, "%s %s: %s, %lu to %lu%s", flag, optarg, what, min, max, tail);
}

static int int_number(struct ur_optparse *p, const char *what, const char *tail,
		      unsigned long min, unsigned long max, int *out)
{
	unsigned long v;
	int rc = number(p, what, false, tail, min, max, &v);

	if (!rc)
		*out = (int)v;
	return rc;
}

void ur_opt_range(struct ur_optparse *p, const char *what, unsigned long min,
		  unsigned long max, uint32_t *out)
{
	unsigned long v;

	if (!number(p, what, false, "", min, max, &v))
		*out = (uint32_t)v;
}

void ur_opt_count(struct ur_optparse *p, const char *what, unsigned long min,
		  unsigned long max, uint32_t *out)
{
	unsigned long v;

	if (!number(p, what, true, "", min, max, &v))
		*out = (uint32_t)v;
}

/* getopt's '?': an unknown letter is in optopt; an unknown long option
 * leaves optopt 0, and a value given to an option that takes none leaves
 * that option's value there.  The last two are named as typed. */
static int unknown_option(struct ur_optparse *p)
{
	if (optopt && optopt < 256 && !is_short(p, optopt))
		return ur_opt_error(p, "unknown option -%c", optopt);
	return ur_opt_error(p, "unknown option %s", p->argv[optind - 1]);
}

/* A shared option: 0, or UR_OPT_HELP or UR_EXIT_USAGE. */
static int shared_option(struct ur_optparse *p)
{
	struct ur_conn_opts *o = p->conn;
	unsigned long v;

	switch (p->opt) {
	case 'd':
		o->dev_name = optarg;
		return 0;
	case 'i':
		return int_number(p, "a port number", "", 1, 255, &o->ib_port);
	case 'g':               /* ibv_rc_pingpong's letter */
	case 'x':               /* perftest's */
		return int_number(p, "a GID index", p->gid_hint ? " (see `uroce gid`)" : "", 0, 255,
				  &o->gid_index);
	case 'p':
		return int_number(p, "a TCP port", "", 1, 65535, &o->tcp_port);
	case 'm':
		if (!ur_parse_uint(optarg, 256, 4096, &v) || !ur_mtu_from_bytes((int)v))
			return ur_opt_error(p, "-m %s: one of 256, 512, 1024, 2048, 4096", optarg);
		o->mtu = ur_mtu_from_bytes((int)v);
		return 0;
	case 'h':
		fputs(p->help, stdout);
		return UR_OPT_HELP;
	case ':':
		return ur_opt_error(p, "%s needs a value", p->argv[optind - 1]);
	default:
		return unknown_option(p);
	}
}

static bool is_shared(int c)
{
	return c == '?' || c == ':' || (c > 0 && c < 256 && strchr("dixgpmh", c));
}

int ur_opt_next(struct ur_optparse *p)
{
	if (!p->begun) {
		optind = 0;     /* 0: glibc's getopt forgets any earlier parse */
		opterr = 0;     /* the errors are ours (':' and '?') */
		p->begun = true;
	}
	while (!p->rc) {
		p->opt = getopt_long(p->argc, p->argv, p->shorts, p->longs, NULL);
		if (p->opt == -1 || !is_shared(p->opt))
			return p->opt;
		p->rc = shared_option(p);
	}
	return -1;
}
