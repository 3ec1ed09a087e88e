/* uroce run -- PROG ARGS: run an unmodified verbs program on uroce by
 * putting uroce's libibverbs.so.1 first in the library search path, with
 * the settings middleware needs on uroce that it cannot find itself. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uroce.h"

static const char run_help[] =
	"usage: uroce run [--] PROG [ARGS...]\n"
	"\n"
	"Runs PROG with uroce's libibverbs.so.1 and librdmacm.so.1 ahead of the\n"
	"system's, so that an unmodified verbs or rdma_cm program (ibv_rc_pingpong,\n"
	"perftest, rping, your own) sees the software RoCE devices uroce0, uroce1,\n"
	"... (one per network interface) and connects through uroce's CM.\n"
	"\n"
	"The same without this command:\n"
	"  LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PROG ARGS\n"
	"\n"
	"Environment: UROCE_LIBDIR overrides where the library is looked for;\n"
	"UROCE_LOG=error|warn|info|debug sets the library's log level.\n"
	"UCX_IB_REG_METHODS is set to rcache,direct unless already set (UCX\n"
	"registers memory directly rather than through one implicit on-demand\n"
	"region, which UCX 1.13 fails to tear down and uroce serves slowly).\n"
	"Setuid and static programs cannot be redirected this way.\n"
	"\n"
	"examples:\n"
	"  uroce run -- ibv_devinfo -v\n"
	"  uroce run -- ibv_rc_pingpong -d uroce0 -g 1            (server)\n"
	"  uroce run -- ibv_rc_pingpong -d uroce0 -g 1 127.0.0.1  (client)\n"
	"  uroce run -- ib_write_bw -d uroce0 -x 1\n"
	"  uroce run -- rping -s -a 127.0.0.1                     (rdma_cm server)\n"
	"  uroce run -- rping -c -a 127.0.0.1 -C 10 -v            (rdma_cm client)\n";

static int has_lib(const char *dir)
{
	char p[PATH_MAX + 32];
	struct stat st;

	snprintf(p, sizeof(p), "%s/libibverbs.so.1", dir);
	return stat(p, &st) == 0;
}

const char *ur_tool_libdir(void)
{
	static char dir[PATH_MAX];
	const char *env = getenv("UROCE_LIBDIR");
	static const char *const rel[] = { "/../lib", "/../lib/uroce", "/../lib64/uroce" };
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (env && *env)
		return has_lib(env) ? env : NULL;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	for (unsigned i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char cand[PATH_MAX];

		snprintf(cand, sizeof(cand), "%s%s", exe, rel[i]);
		if (has_lib(cand) && realpath(cand, dir))
			return dir;
	}
	return NULL;
}

/* UCX without memory events (UCX_MEM_EVENTS=no, or hooks it cannot
 * install) has no registration cache and takes its next method, one
 * implicit on-demand region, where the device offers implicit ODP as
 * uroce's does.  UCX 1.13 crashes tearing that region down
 * (uct_ib_md_release_reg_method; gone in 1.14), and uroce checks every
 * access through it against the process's mappings.  Direct registration
 * serves UCX well; with memory events on, the cache comes first anyway. */
static void set_ucx_defaults(void)
{
	setenv("UCX_IB_REG_METHODS", "rcache,direct", 0);
}

int cmd_run(int argc, char **argv)
{
	const char *libdir = ur_tool_libdir(), *old;
	char *path;
	int first = 1;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf(run_help, libdir ? libdir : "LIBDIR");
		return UR_EXIT_OK;
	}
	if (argc > 1 && !strcmp(argv[1], "--"))
		first = 2;
	if (first >= argc) {
		fprintf(stderr, "uroce run: no program given\n");
		fprintf(stderr, run_help, libdir ? libdir : "LIBDIR");
		return UR_EXIT_USAGE;
	}
	if (!libdir) {
		fprintf(stderr, "uroce run: cannot find uroce's libibverbs.so.1 next to this "
			"program; set UROCE_LIBDIR to the directory holding it\n");
		return UR_EXIT_FAIL;
	}
	old = getenv("LD_LIBRARY_PATH");
	if (asprintf(&path, "%s%s%s", libdir, old && *old ? ":" : "", old ? old : "") < 0)
		return UR_EXIT_FAIL;
	setenv("LD_LIBRARY_PATH", path, 1);
	free(path);
	set_ucx_defaults();
	execvp(argv[first], &argv[first]);
	fprintf(stderr, "uroce run: cannot run '%s': %s\n", argv[first], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
