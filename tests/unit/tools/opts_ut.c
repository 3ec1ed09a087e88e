/* Unit tests of the tool's option parsing (tools/uroce/opts.c): numbers and
 * their ranges, the shared options, and the usage errors' exact words --
 * what the subcommands' messages and exit codes rest on. */
#include "ut.h"

#include "../../../tools/uroce/opts.c"

/* The connection layer's helper opts.c calls (-m). */
enum ibv_mtu ur_mtu_from_bytes(int bytes)
{
	for (enum ibv_mtu m = IBV_MTU_256; m <= IBV_MTU_4096; m++)
		if ((128 << m) == bytes)
			return m;
	return 0;
}

/* A subcommand "t" with two options of its own: -q (a range) and --many
 * (a count without a letter). */
struct t_opts {
	struct ur_conn_opts conn;
	uint32_t q, many;
};

static char err[512];
static char line_buf[256];      /* the parsed words point into it */

/* Parses LINE ("t" first) as subcommand t would; what it said on stderr
 * lands in err. */
static int parse(struct t_opts *o, const char *line)
{
	enum { OPT_MANY = 256 };
	static const struct option longs[] = {
		UR_OPT_LONGS_SHARED,
		{ "gid-idx", required_argument, NULL, 'g' },
		{ "mtu", required_argument, NULL, 'm' },
		{ "flag", no_argument, NULL, 'f' },
		{ "many", required_argument, NULL, OPT_MANY },
		{ 0 },
	};
	char *argv[32];
	struct ur_optparse p = { .cmd = "t", .help = "help of t\n", .argv = argv,
				 .shorts = ":d:i:g:p:m:q:fh", .longs = longs, .conn = &o->conn };
	FILE *saved_err = stderr, *saved_out = stdout;
	int c;

	snprintf(line_buf, sizeof(line_buf), "%s", line);
	for (char *t = strtok(line_buf, " "); t && p.argc < 31; t = strtok(NULL, " "))
		argv[p.argc++] = t;
	argv[p.argc] = NULL;
	*o = (struct t_opts){ .conn = UR_CONN_OPTS_DEFAULT, .q = 5, .many = 7 };
	stderr = fmemopen(err, sizeof(err), "w");
	stdout = fopen("/dev/null", "w");
	while ((c = ur_opt_next(&p)) != -1) {
		switch (c) {
		case 'q':
			ur_opt_range(&p, "a number", 1, 9, &o->q);
			break;
		case OPT_MANY:
			ur_opt_count(&p, "a count", 1, 1000, &o->many);
			break;
		}
	}
	fclose(stderr);
	fclose(stdout);
	stderr = saved_err;
	stdout = saved_out;
	return p.rc;
}

static void test_numbers(void)
{
	unsigned long v = 0;

	UT_CHECK(ur_parse_uint("0x10", 0, 100, &v) && v == 16);
	UT_CHECK(ur_parse_uint("255", 0, 255, &v) && v == 255);
	UT_CHECK(!ur_parse_uint("256", 0, 255, &v));
	UT_CHECK(!ur_parse_uint("0", 1, 255, &v));
	UT_CHECK(!ur_parse_uint("-1", 0, ~0ul, &v));  /* not ULONG_MAX */
	UT_CHECK(!ur_parse_uint("", 0, 1, &v));
	UT_CHECK(!ur_parse_uint("12x", 0, 100, &v));
	UT_CHECK(!ur_parse_uint(NULL, 0, 1, &v));
}

static void test_shared(void)
{
	struct t_opts o;

	UT_EQ(parse(&o, "t"), 0);
	UT_CHECK(!o.conn.dev_name && o.conn.ib_port == 1 && o.conn.gid_index == -1);
	UT_EQ(o.conn.tcp_port, UR_CONN_DEFAULT_PORT);
	UT_EQ(o.conn.mtu, 0);

	UT_EQ(parse(&o, "t -d dev1 -i 2 -g 3 -p 4000 -m 1024 -q 9 --many=1000 -f"), 0);
	UT_CHECK(o.conn.dev_name && !strcmp(o.conn.dev_name, "dev1"));
	UT_EQ(o.conn.ib_port, 2);
	UT_EQ(o.conn.gid_index, 3);
	UT_EQ(o.conn.tcp_port, 4000);
	UT_EQ(o.conn.mtu, IBV_MTU_1024);
	UT_EQ(o.q, 9);
	UT_EQ(o.many, 1000);
	UT_EQ(err[0], 0);

	UT_EQ(parse(&o, "t --ib-dev=dev2 --ib-port 3 --gid-idx=0 --port=1"), 0);
	UT_CHECK(!strcmp(o.conn.dev_name, "dev2") && o.conn.ib_port == 3);
	UT_CHECK(o.conn.gid_index == 0 && o.conn.tcp_port == 1);

	UT_EQ(parse(&o, "t -q 2 -h -q 3"), UR_OPT_HELP);
	UT_EQ(o.q, 2);                              /* nothing after the help */
	UT_EQ(parse(&o, "t --help"), UR_OPT_HELP);
}

/* Each bad line: its exit code and exactly what it says. */
static void test_errors(void)
{
	static const struct {
		const char *line, *says;
	} cases[] = {
		{ "t -q 0", "-q 0: a number, 1 to 9" },
		{ "t -q 10", "-q 10: a number, 1 to 9" },
		{ "t -q -1", "-q -1: a number, 1 to 9" },
		{ "t --many 0", "--many 0: a count, at least 1" },
		{ "t --many=1001", "--many 1001: a count, at least 1" },
		{ "t -i 0", "-i 0: a port number, 1 to 255" },
		{ "t --ib-port=256", "-i 256: a port number, 1 to 255" },
		{ "t -g 256", "-g 256: a GID index, 0 to 255" },
		{ "t -p 65536", "-p 65536: a TCP port, 1 to 65535" },
		{ "t -m 1000", "-m 1000: one of 256, 512, 1024, 2048, 4096" },
		{ "t -p", "-p needs a value" },
		{ "t --port", "--port needs a value" },
		{ "t -z", "unknown option -z" },
		{ "t -fz", "unknown option -z" },
		{ "t -zf", "unknown option -z" },
		{ "t --nope", "unknown option --nope" },
		{ "t --flag=1", "unknown option --flag=1" },
		{ "t -x 1", "unknown option -x" },          /* not in this one's letters */
	};
	char want[256];
	struct t_opts o;

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		UT_EQ(parse(&o, cases[i].line), UR_EXIT_USAGE);
		snprintf(want, sizeof(want), "uroce t: %s\n(see `uroce t --help`)\n", cases[i].says);
		if (strcmp(err, want))
			fprintf(stderr, "'%s' said: %s", cases[i].line, err);
		UT_CHECK(!strcmp(err, want));
	}

	/* The first error ends the parse: nothing after it is taken. */
	UT_EQ(parse(&o, "t -q 0 -i 3 -q 4"), UR_EXIT_USAGE);
	UT_EQ(o.conn.ib_port, 1);
	UT_EQ(o.q, 5);
	UT_EQ(parse(&o, "t -i 3"), 0);              /* and the next parse starts afresh */
	UT_EQ(o.conn.ib_port, 3);
}

int main(void)
{
	UT_RUN(test_numbers);
	UT_RUN(test_shared);
	UT_RUN(test_errors);
	return UT_DONE();
}
