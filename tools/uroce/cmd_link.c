/* uroce link: the ports and their interfaces in `rdma link` style, and the
 * software devices uroce creates: `add`/`delete` edit the devices file that
 * uroce's library reads when a program starts. */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../src/util/config_path.h"   /* the library's own rule, compiled in */
#include "dev_open.h"
#include "devinfo.h"
#include "uroce.h"

static const char link_help[] =
	"usage: uroce link [show [DEV]]\n"
	"       uroce link add NAME netdev NETDEV\n"
	"       uroce link delete NAME\n"
	"\n"
	"show    every port's state and interface, as `rdma link` prints them\n"
	"add     create software device NAME on interface NETDEV (as\n"
	"        `rdma link add NAME type rxe netdev NETDEV` does for rxe)\n"
	"delete  remove software device NAME\n"
	"\n"
	"add and delete edit uroce's devices file, %s\n"
	"($UROCE_DEVICES_FILE, else $XDG_CONFIG_HOME/uroce/devices, else\n"
	"~/.config/uroce/devices), one \"NAME NETDEV\" per line.\n"
	"Programs started afterwards see the change. While the file lists devices,\n"
	"only those exist; with no file (or an empty one) every interface with an\n"
	"address has a device named uroce<N>. UROCE_DEVICES=NETDEV,NAME:NETDEV,...\n"
	"in a program's environment overrides both. No root is needed: the devices\n"
	"are uroce's, per user; on an RDMA NIC use `rdma link` instead.\n"
	"\n"
	"examples:\n"
	"  uroce link\n"
	"  uroce link add roce0 netdev eth0\n"
	"  uroce link delete roce0\n";

static int link_show(const char *only)
{
	struct ibv_device **list;
	int n, shown = 0;

	list = ibv_get_device_list(&n);
	for (int i = 0; list && i < n; i++) {
		struct ibv_context *ctx;
		struct ibv_device_attr da;

		if (only && strcmp(only, ibv_get_device_name(list[i])))
			continue;
		ctx = ibv_open_device(list[i]);
		if (!ctx || ibv_query_device(ctx, &da)) {
			fprintf(stderr, "uroce link: cannot open %s\n", ibv_get_device_name(list[i]));
			if (ctx)
				ibv_close_device(ctx);
			continue;
		}
		for (uint8_t p = 1; p <= da.phys_port_cnt; p++) {
			struct ibv_port_attr pa;
			char nd[IF_NAMESIZE] = "";

			if (ibv_query_port(ctx, p, &pa))
				continue;
			/* rdma link's names: the port state without "PORT_". */
			printf("link %s/%u state %s physical_state %s", ibv_get_device_name(list[i]), p,
			       ur_port_state_str(pa.state) + 5,
			       pa.phys_state == 5 ? "LINK_UP" : pa.phys_state == 3 ? "DISABLED" :
			       "POLLING");
			if (!ur_port_netdev(ctx, p, nd, sizeof(nd)))
				printf(" netdev %s", nd);
			printf("\n");
			shown++;
		}
		ibv_close_device(ctx);
	}
	if (list)
		ibv_free_device_list(list);
	if (only && !shown) {
		fprintf(stderr, "uroce link: device '%s' not found (see `uroce devices`)\n", only);
		return UR_EXIT_FAIL;
	}
	return UR_EXIT_OK;
}

/* The file's lines, in order; *n of them. */
static int read_lines(const char *path, char lines[][256], int max, int *n)
{
	FILE *f = fopen(path, "re");

	*n = 0;
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (*n < max && fgets(lines[*n], 256, f))
		(*n)++;
	fclose(f);
	return 0;
}

/* Writes LINES to PATH through a temporary file and rename, so a program
 * starting meanwhile reads the old file or the new one, never half. */
static int write_lines(const char *path, char lines[][256], int n)
{
	char tmp[PATH_MAX], dir[PATH_MAX], *slash;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		/* ~/.config/uroce, creating ~/.config if need be */
		char *p = strchr(dir + 1, '/');

		while (p) {
			*p = '\0';
			mkdir(dir, 0755);
			*p = '/';
			p = strchr(p + 1, '/');
		}
		mkdir(dir, 0755);
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	for (int i = 0; i < n; i++)
		fputs(lines[i], f);
	if (fclose(f) || rename(tmp, path)) {
		int e = -errno;

		unlink(tmp);
		return e;
	}
	return 0;
}

/* Index of the line naming device NAME, or -1. */
static int find_name(char lines[][256], int n, const char *name)
{
	for (int i = 0; i < n; i++) {
		char a[256], b[256], *hash;
		char l[256];

		snprintf(l, sizeof(l), "%s", lines[i]);
		hash = strchr(l, '#');
		if (hash)
			*hash = '\0';
		if (sscanf(l, "%255s %255s", a, b) == 2 && !strcmp(a, name))
			return i;
	}
	return -1;
}

static bool valid_name(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > 55)
		return false;
	for (const char *c = name; *c; c++)
		if (!(*c == '_' || *c == '-' || *c == '.' || (*c >= '0' && *c <= '9') ||
		      (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
			return false;
	return true;
}

static int link_add(const char *name, const char *netdev, const char *path)
{
	char lines[256][256];
	int n, rc;

	if (!valid_name(name)) {
		fprintf(stderr, "uroce link add: bad device name '%s' (1-55 characters from "
				"[A-Za-z0-9_.-])\n", name);
		return UR_EXIT_USAGE;
	}
	if (!if_nametoindex(netdev)) {
		fprintf(stderr, "uroce link add: no network interface '%s' (see `ip link`)\n",
			netdev);
		return UR_EXIT_FAIL;
	}
	rc = read_lines(path, lines, 255, &n);
	if (rc) {
		fprintf(stderr, "uroce link add: cannot read %s: %s\n", path, strerror(-rc));
		return UR_EXIT_FAIL;
	}
	if (find_name(lines, n, name) >= 0) {
		fprintf(stderr, "uroce link add: %s already exists in %s (delete it first)\n",
			name, path);
		return UR_EXIT_FAIL;
	}
	if (n == 0)
		snprintf(lines[n++], 256, "# uroce software devices: NAME NETDEV (uroce link add)\n");
	snprintf(lines[n++], 256, "%s %s\n", name, netdev);
	rc = write_lines(path, lines, n);
	if (rc) {
		fprintf(stderr, "uroce link add: cannot write %s: %s\n", path, strerror(-rc));
		return UR_EXIT_FAIL;
	}
	printf("added %s on %s (%s); programs started from now on see it\n", name, netdev, path);
	return UR_EXIT_OK;
}

static int link_delete(const char *name, const char *path)
{
	char lines[256][256];
	int n, i, rc;

	rc = read_lines(path, lines, 256, &n);
	if (rc) {
		fprintf(stderr, "uroce link delete: cannot read %s: %s\n", path, strerror(-rc));
		return UR_EXIT_FAIL;
	}
	i = find_name(lines, n, name);
	if (i < 0) {
		fprintf(stderr, "uroce link delete: %s is not in %s; only devices added with "
				"`uroce link add` can be deleted (without a devices file every "
				"interface has one)\n", name, path);
		return UR_EXIT_FAIL;
	}
	memmove(lines[i], lines[i + 1], (size_t)(n - i - 1) * sizeof(lines[0]));
	rc = write_lines(path, lines, n - 1);
	if (rc) {
		fprintf(stderr, "uroce link delete: cannot write %s: %s\n", path, strerror(-rc));
		return UR_EXIT_FAIL;
	}
	printf("deleted %s (%s)\n", name, path);
	return UR_EXIT_OK;
}

/* The devices file, as the library finds it (ur_devices_file_path); NULL,
 * with the reason in WHY, when there is none. */
static const char *devices_file(char *buf, size_t len, const char **why)
{
	int rc = ur_devices_file_path(buf, len);

	*why = rc == -ENOENT ? "UROCE_DEVICES_FILE, XDG_CONFIG_HOME and HOME are unset or empty; "
			       "set UROCE_DEVICES_FILE=PATH" :
			       "its path would be longer than PATH_MAX";
	return rc ? NULL : buf;
}

int cmd_link(int argc, char **argv)
{
	char buf[PATH_MAX], shown[PATH_MAX + 16];
	const char *why, *path = devices_file(buf, sizeof(buf), &why);
	bool edit;

	if (path)
		snprintf(shown, sizeof(shown), "%s", path);
	else
		snprintf(shown, sizeof(shown), "(none: %s)", why);
	if (argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
			  !strcmp(argv[1], "help"))) {
		printf(link_help, shown);
		return UR_EXIT_OK;
	}
	if (argc == 1 || (!strcmp(argv[1], "show") && argc <= 3))
		return link_show(argc == 3 ? argv[2] : NULL);
	edit = (!strcmp(argv[1], "add") && argc == 5 && !strcmp(argv[3], "netdev")) ||
	       ((!strcmp(argv[1], "delete") || !strcmp(argv[1], "del")) && argc == 3);
	if (!edit) {
		fprintf(stderr, link_help, shown);
		return UR_EXIT_USAGE;
	}
	if (!path) {
		/* The library would read no file either: writing one elsewhere
		 * (the current directory, say) would change nothing. */
		fprintf(stderr, "uroce link %s: no devices file: %s\n", argv[1], why);
		return UR_EXIT_FAIL;
	}
	if (!strcmp(argv[1], "add"))
		return link_add(argv[2], argv[4], path);
	return link_delete(argv[2], path);
}
