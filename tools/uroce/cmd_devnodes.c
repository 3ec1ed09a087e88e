/* uroce devnodes: the /dev/infiniband entries that UCX looks for.
 *
 * UCX lists an RDMA device only if /dev/infiniband/<ibv_device.dev_name> is
 * a character device the user can read and write; it never opens it.  A
 * software device has no kernel node, so this command makes one per device
 * (uverbs-uroce0, ...) that is the null device (char 1:3, mode 0666):
 * opening it gives what /dev/null gives, reads end at once and writes are
 * dropped, so the node grants nothing to anyone.  Making it needs root
 * (CAP_MKNOD), once per boot: /dev is a tmpfs. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "uroce.h"

#define DEVNODE_DIR "/dev/infiniband"
#define NULL_MAJOR 1
#define NULL_MINOR 3

static const char devnodes_help[] =
	"usage: uroce devnodes [create [DEVICE...] | remove]\n"
	"\n"
	"UCX uses an RDMA device only if /dev/infiniband/<dev_name> exists as a\n"
	"character device the user can read and write (it never opens it).\n"
	"uroce's devices have no kernel node, so this command makes one per\n"
	"device: uverbs-uroce0, ... each the null device (char 1:3, mode 0666,\n"
	"exactly what /dev/null is), harmless to open.\n"
	"\n"
	"  (no argument)      show each device's node: ok, missing or foreign\n"
	"  create [DEVICE...] as root: make the nodes of every device seen here,\n"
	"                     and of the DEVICE names given (devices of other\n"
	"                     network namespaces, or not yet added)\n"
	"  remove             as root: remove the nodes this command makes\n"
	"                     (null devices named uverbs-*), nothing else, and\n"
	"                     /dev/infiniband if that leaves it empty\n"
	"\n"
	"Nodes in /dev last until reboot. Without root UCX does not list uroce's\n"
	"devices; plain verbs programs, perftest and libfabric need no node.\n"
	"\n"
	"examples:\n"
	"  sudo uroce devnodes create\n"
	"  sudo uroce devnodes create uroce0 uroce1 uroce2\n"
	"  uroce devnodes\n";

enum node_state { NODE_MISSING, NODE_OURS, NODE_FOREIGN };

static enum node_state node_state(const char *path, struct stat *st)
{
	if (stat(path, st))
		return NODE_MISSING;
	if (S_ISCHR(st->st_mode) && major(st->st_rdev) == NULL_MAJOR &&
	    minor(st->st_rdev) == NULL_MINOR)
		return NODE_OURS;
	return NODE_FOREIGN;    /* a kernel uverbs node, or something else */
}

/* /dev/infiniband/<dev_name>: dev_name is "uverbs-" + the device's name. */
static void node_path(char *buf, size_t len, const char *dev_name)
{
	snprintf(buf, len, "%s/%s", DEVNODE_DIR, dev_name);
}

static int create_one(const char *dev_name)
{
	char path[sizeof(DEVNODE_DIR) + IBV_SYSFS_NAME_MAX + 8];
	struct stat st;
	mode_t old;
	int ret;

	node_path(path, sizeof(path), dev_name);
	if (node_state(path, &st) != NODE_MISSING) {
		printf("%s: exists\n", path);
		return 0;
	}
	old = umask(0);
	ret = mknod(path, S_IFCHR | 0666, makedev(NULL_MAJOR, NULL_MINOR));
	umask(old);
	/* Another `create` may have made it since the check: fine if ours. */
	if (ret && errno == EEXIST && node_state(path, &st) == NODE_OURS) {
		printf("%s: exists\n", path);
		return 0;
	}
	if (ret) {
		fprintf(stderr, "uroce devnodes: cannot make %s: %s%s\n", path, strerror(errno),
			errno == EPERM ? " (needs root: sudo uroce devnodes create)" : "");
		return -1;
	}
	printf("%s: created (char %d:%d, mode 0666, the null device)\n", path, NULL_MAJOR,
	       NULL_MINOR);
	return 0;
}

static int do_create(int n, char **names)
{
	struct ibv_device **list;
	int ndev, fails = 0;

	if (mkdir(DEVNODE_DIR, 0755) && errno != EEXIST) {
		fprintf(stderr, "uroce devnodes: cannot make %s: %s%s\n", DEVNODE_DIR,
			strerror(errno),
			errno == EACCES || errno == EPERM ? " (needs root: sudo uroce devnodes create)"
							  : "");
		return UR_EXIT_FAIL;
	}
	list = ibv_get_device_list(&ndev);
	for (int i = 0; list && i < ndev; i++)
		fails += create_one(list[i]->dev_name) != 0;
	if (list)
		ibv_free_device_list(list);
	for (int i = 0; i < n; i++) {
		char dev_name[IBV_SYSFS_NAME_MAX + 8];

		if (strchr(names[i], '/') || strlen(names[i]) >= IBV_SYSFS_NAME_MAX - 7) {
			fprintf(stderr, "uroce devnodes: '%s' is not a device name\n", names[i]);
			fails++;
			continue;
		}
		snprintf(dev_name, sizeof(dev_name), "uverbs-%s", names[i]);
		fails += create_one(dev_name) != 0;
	}
	return fails ? UR_EXIT_FAIL : UR_EXIT_OK;
}

static int do_remove(void)
{
	char path[sizeof(DEVNODE_DIR) + 256 + 2];
	struct dirent *e;
	struct stat st;
	int fails = 0;
	DIR *d = opendir(DEVNODE_DIR);

	if (!d)
		return errno == ENOENT ? UR_EXIT_OK : UR_EXIT_FAIL;
	while ((e = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", DEVNODE_DIR, e->d_name);
		if (strncmp(e->d_name, "uverbs-", 7) || node_state(path, &st) != NODE_OURS)
			continue;
		if (unlink(path)) {
			fprintf(stderr, "uroce devnodes: cannot remove %s: %s\n", path,
				strerror(errno));
			fails++;
		} else {
			printf("%s: removed\n", path);
		}
	}
	closedir(d);
	if (!rmdir(DEVNODE_DIR))
		printf("%s: removed (empty)\n", DEVNODE_DIR);
	return fails ? UR_EXIT_FAIL : UR_EXIT_OK;
}

static int do_show(void)
{
	static const char *const what[] = {
		[NODE_MISSING] = "missing (UCX will not list it: sudo uroce devnodes create)",
		[NODE_OURS] = "ok (the null device)",
		[NODE_FOREIGN] = "present (not made by uroce: a kernel device's node?)",
	};
	struct ibv_device **list;
	char path[sizeof(DEVNODE_DIR) + IBV_SYSFS_NAME_MAX + 8];
	struct stat st;
	int ndev, missing = 0;

	list = ibv_get_device_list(&ndev);
	if (!list) {
		perror("uroce devnodes: ibv_get_device_list");
		return UR_EXIT_FAIL;
	}
	for (int i = 0; i < ndev; i++) {
		enum node_state s;

		node_path(path, sizeof(path), list[i]->dev_name);
		s = node_state(path, &st);
		if (s == NODE_OURS && access(path, R_OK | W_OK))
			printf("%-10s %s: not readable and writable by this user\n",
			       list[i]->name, path);
		else
			printf("%-10s %s: %s\n", list[i]->name, path, what[s]);
		missing += s == NODE_MISSING;
	}
	ibv_free_device_list(list);
	return missing ? UR_EXIT_FAIL : UR_EXIT_OK;
}

int cmd_devnodes(int argc, char **argv)
{
	static const struct option opts[] = { { "help", no_argument, NULL, 'h' }, { 0 } };
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(devnodes_help, stdout);
			return UR_EXIT_OK;
		}
		fputs(devnodes_help, stderr);
		return UR_EXIT_USAGE;
	}
	if (optind == argc)
		return do_show();
	if (!strcmp(argv[optind], "create"))
		return do_create(argc - optind - 1, argv + optind + 1);
	if (!strcmp(argv[optind], "remove") && optind + 1 == argc)
		return do_remove();
	fputs(devnodes_help, stderr);
	return UR_EXIT_USAGE;
}
