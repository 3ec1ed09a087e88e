/* uroce run -- PROG ARGS: run an unmodified verbs program on uroce by
 * putting uroce's libibverbs.so.1 first in the library search path, with
 * the settings middleware needs on uroce that it cannot find itself. */
#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <ifaddrs.h>
#include <limits.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/util/config_path.h"   /* the library's own rule, compiled in */
#include "run_sysfs.h"
#include "uroce.h"

static const char run_help[] =
	"usage: uroce run [--no-sysfs] [--rsockets] [--] PROG [ARGS...]\n"
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
	"A UCX program (ucx_*, mpirun, or any with UCX_TLS set) is told when the\n"
	"/dev/infiniband nodes UCX looks for are missing (uroce devnodes); a\n"
	"libfabric program asking for verbs MSG endpoints or verbs;ofi_rxm runs\n"
	"without the device on lo (UROCE_DEVICES_SKIP=lo, unless UROCE_DEVICES or\n"
	"UROCE_DEVICES_SKIP is set): libfabric finds no MSG device while it is\n"
	"listed, and is told so when UROCE_DEVICES names lo.\n"
	"Setuid and static programs cannot be redirected this way.\n"
	"\n"
	"PROG runs in a mount namespace of its own (as root; otherwise in a user\n"
	"namespace keeping the caller's uid, where the kernel allows one) whose\n"
	"/sys/class also lists uroce's devices as the kernel lays them out\n"
	"(infiniband/DEV/..., DEV/device/net/IFACE, infiniband_verbs/), written at\n"
	"the start, for programs that read those files themselves (uroce sysfs).\n"
	"--no-sysfs, or UROCE_SYSFS=0, runs PROG without it.\n"
	"\n"
	"--rsockets runs an unmodified TCP program over rsockets: rdma-core's\n"
	"librspreload.so (Debian: librdmacm1) is preloaded, and its sockets go\n"
	"through uroce's librdmacm.so.1.\n"
	"\n"
	"examples:\n"
	"  uroce run -- ibv_devinfo -v\n"
	"  uroce run -- ibv_rc_pingpong -d uroce0 -g 1            (server)\n"
	"  uroce run -- ibv_rc_pingpong -d uroce0 -g 1 127.0.0.1  (client)\n"
	"  uroce run -- ib_write_bw -d uroce0 -x 1\n"
	"  uroce run -- rping -s -a 127.0.0.1                     (rdma_cm server)\n"
	"  uroce run -- rping -c -a 127.0.0.1 -C 10 -v            (rdma_cm client)\n"
	"  uroce run --rsockets -- iperf3 -c 127.0.0.1            (TCP over rsockets)\n";

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

/* Whether PROG runs UCX: its tools, Open MPI's launchers (whose ranks run
 * over UCX), or anything told which UCX transports to take. */
static bool runs_ucx(const char *prog)
{
	static const char *const launchers[] = { "mpirun", "mpiexec", "orterun", "oshrun" };
	const char *base = strrchr(prog, '/');
	const char *tls = getenv("UCX_TLS");

	base = base ? base + 1 : prog;
	if (tls && *tls)
		return true;
	if (!strncmp(base, "ucx_", 4))
		return true;
	for (unsigned i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++)
		if (!strcmp(base, launchers[i]))
			return true;
	return false;
}

static bool is_node(const char *dev)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "/dev/infiniband/uverbs-%s", dev);
	return !stat(path, &st) && S_ISCHR(st.st_mode);
}

/* Any /dev/infiniband/uverbs-uroce* node. */
static bool any_node(void)
{
	DIR *d = opendir("/dev/infiniband");
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while (!found && (e = readdir(d)))
		found = !strncmp(e->d_name, "uverbs-uroce", 12) && is_node(e->d_name + 7);
	closedir(d);
	return found;
}

/* The nodes of the uroce devices UCX_NET_DEVICES (DEVS) names: the first
 * missing one, in one line. */
static void check_named_nodes(const char *devs)
{
	char name[64];

	while (devs && *devs) {
		size_t n = strcspn(devs, ",:");

		if (n < sizeof(name) && !strncmp(devs, "uroce", 5)) {
			memcpy(name, devs, n);
			name[n] = '\0';
			if (!is_node(name)) {
				fprintf(stderr, "uroce run: /dev/infiniband/uverbs-%s is missing: UCX will "
					"not use %s; make the nodes once per boot with "
					"'sudo uroce devnodes create'\n", name, name);
				return;
			}
		}
		devs = strchr(devs, ',');
		devs = devs ? devs + 1 : NULL;
	}
}

/* UCX lists a device only if its /dev/infiniband node exists, and says
 * nothing when it does not: it falls back to TCP and shared memory, or
 * fails to find the transports it was told to take.  One line names the
 * first device of UCX_NET_DEVICES (or of uroce's, when it names none)
 * without a node, and the command that makes them. */
static void hint_ucx_nodes(void)
{
	const char *devs = getenv("UCX_NET_DEVICES");

	if (devs && *devs && strcmp(devs, "all")) {
		check_named_nodes(devs);
		return;
	}
	if (!any_node())
		fprintf(stderr, "uroce run: no /dev/infiniband/uverbs-uroce* node: UCX will not use "
			"uroce's devices; make the nodes once per boot with "
			"'sudo uroce devnodes create'\n");
}

/* Whether the devices the library will make include one on lo: named in
 * UROCE_DEVICES ("name:netdev" or "netdev"), else in the devices file,
 * else every interface with an address is one, lo too. */
static bool lo_has_device(void)
{
	const char *spec = getenv("UROCE_DEVICES");
	char path[PATH_MAX], line[256], name[64], netdev[IF_NAMESIZE + 1];
	bool listed = false, lo = false;
	FILE *f;

	if (spec && *spec) {
		const char *t = spec;

		while (*t) {
			size_t n = strcspn(t, ",");
			const char *colon = memchr(t, ':', n);
			const char *nd = colon ? colon + 1 : t;

			if ((size_t)(t + n - nd) == 2 && !strncmp(nd, "lo", 2))
				return true;
			t += n + (t[n] == ',');
		}
		return false;
	}
	if (ur_devices_file_path(path, sizeof(path)) || !(f = fopen(path, "r")))
		return true;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %16s", name, netdev) == 2 && name[0] != '#') {
			listed = true;
			lo |= !strcmp(netdev, "lo");
		}
	fclose(f);
	return !listed || lo;
}

/* Whether PROG (a libfabric program, fi_*) asks for the verbs provider's
 * MSG endpoints, directly or under ofi_rxm. */
static bool wants_verbs_msg(const char *prog, char **args)
{
	const char *base = strrchr(prog, '/');
	const char *env = getenv("FI_PROVIDER");

	base = base ? base + 1 : prog;
	if (env && strstr(env, "ofi_rxm"))
		return true;
	if (strncmp(base, "fi_", 3))
		return false;
	for (; *args; args++)
		if (strstr(*args, "ofi_rxm") || !strcmp(*args, "msg") || !strcmp(*args, "FI_EP_MSG"))
			return true;
	return false;
}

/* libfabric's verbs provider offers MSG endpoints on no device of lo's,
 * and picks the devices a process may use by binding "localhost": uroce's
 * device on lo holds that address, so libfabric keeps it alone and finds
 * no MSG device (fi_getinfo -61, and nothing else said).  So the program
 * runs without that device, the others named as ever; where the user's
 * UROCE_DEVICES names lo, one line names the way out, with an interface
 * that is not lo. */
static void libfabric_without_lo(void)
{
	struct ifaddrs *ifa_list = NULL, *ifa;
	const char *ifname = "IFACE", *spec = getenv("UROCE_DEVICES");
	const char *skip = getenv("UROCE_DEVICES_SKIP");

	if ((skip && *skip) || !lo_has_device())
		return;
	if (!spec || !*spec) {
		setenv("UROCE_DEVICES_SKIP", "lo", 1);
		return;
	}
	if (getifaddrs(&ifa_list))
		ifa_list = NULL;
	else {
		for (ifa = ifa_list; ifa; ifa = ifa->ifa_next)
			if (ifa->ifa_addr && (ifa->ifa_flags & IFF_UP) &&
			    !(ifa->ifa_flags & IFF_LOOPBACK) &&
			    (ifa->ifa_addr->sa_family == AF_INET ||
			     ifa->ifa_addr->sa_family == AF_INET6)) {
				ifname = ifa->ifa_name;
				break;
			}
	}
	fprintf(stderr, "uroce run: libfabric's verbs MSG endpoints (and verbs;ofi_rxm) skip the "
		"device on lo and, while it is listed, find none (fi_getinfo -61): leave it out "
		"of UROCE_DEVICES, e.g. UROCE_DEVICES=uroce1:%s\n", ifname);
	if (ifa_list)
		freeifaddrs(ifa_list);
}

/* Adds rdma-core's rsockets preload library (where the distribution puts
 * it) after what LD_PRELOAD already holds (a sanitizer's runtime must stay
 * first).  0, or -1 with the reason said. */
static int preload_rsockets(void)
{
	static const char *const where[] = {
		"/usr/lib/*/rsocket/librspreload.so", "/usr/lib64/rsocket/librspreload.so",
		"/usr/lib/rsocket/librspreload.so", "/usr/local/lib*/rsocket/librspreload.so",
	};
	const char *old = getenv("LD_PRELOAD");
	glob_t g = { 0 };
	char *val = NULL;

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]) && !g.gl_pathc; i++)
		if (glob(where[i], 0, NULL, &g))
			globfree(&g);
	if (!g.gl_pathc) {
		fprintf(stderr, "uroce run: --rsockets needs rdma-core's librspreload.so, found in no "
			"rsocket/ directory under /usr/lib (Debian: apt-get install librdmacm1)\n");
		return -1;
	}
	if (asprintf(&val, "%s%s%s", old && *old ? old : "", old && *old ? " " : "",
		     g.gl_pathv[0]) < 0) {
		globfree(&g);
		return -1;
	}
	setenv("LD_PRELOAD", val, 1);
	free(val);
	globfree(&g);
	return 0;
}

int cmd_run(int argc, char **argv)
{
	const char *libdir = ur_tool_libdir(), *old, *env = getenv("UROCE_SYSFS");
	bool sysfs_view = !env || strcmp(env, "0"), rsockets = false;
	char *path;
	int first = 1;

	if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		printf(run_help, libdir ? libdir : "LIBDIR");
		return UR_EXIT_OK;
	}
	for (; first < argc; first++) {
		if (!strcmp(argv[first], "--no-sysfs"))
			sysfs_view = false;
		else if (!strcmp(argv[first], "--rsockets"))
			rsockets = true;
		else
			break;
	}
	if (first < argc && !strcmp(argv[first], "--"))
		first++;
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
	if (rsockets && preload_rsockets())
		return UR_EXIT_FAIL;
	set_ucx_defaults();
	if (runs_ucx(argv[first]))
		hint_ucx_nodes();
	if (wants_verbs_msg(argv[first], &argv[first + 1]))
		libfabric_without_lo();
	if (sysfs_view && ur_run_sysfs_view() == -2)   /* says why not itself */
		return UR_EXIT_FAIL;
	execvp(argv[first], &argv[first]);
	fprintf(stderr, "uroce run: cannot run '%s': %s\n", argv[first], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
