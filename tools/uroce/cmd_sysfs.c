/* uroce sysfs DIR: writes uroce's devices under DIR as the kernel lays out an
 * RDMA device under /sys/class, so that programs and scripts that open those
 * files themselves (rdma-core's pyverbs tests, ibdev2netdev, show_gids) find
 * them.  `uroce run` calls it on the tmpfs it mounts over /sys/class.
 *
 * Everything is read through the library: the device files through
 * ibv_read_sysfs_file (uroce's library answers them from its own state, the
 * same answers a program asking the library gets), the GID table through
 * ibv_query_gid_table, the port's state and rate through ibv_query_port.
 * What is written is a snapshot of that moment; the counters, which move
 * all the time, are left to the library (uroce devinfo -c). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dev_open.h"
#include "devinfo.h"
#include "uroce.h"

static const char sysfs_help[] =
	"usage: uroce sysfs DIR\n"
	"\n"
	"Writes the uroce devices under DIR as the kernel shows an RDMA device\n"
	"under /sys/class: DIR/infiniband/DEV/{node_guid,node_type,fw_ver,...,\n"
	"ports/1/{state,rate,gids/N,gid_attrs/...},device/net/IF}\n"
	"and DIR/infiniband_verbs/uverbs-DEV/ibdev.  A snapshot: the values of now.\n"
	"'uroce run' writes them over a private /sys/class (see uroce-run(1)).\n";

/* The device files the library answers, copied as they are. */
static const char *const dev_files[] = {
	"node_guid", "sys_image_guid", "node_type", "node_desc", "fw_ver",
	"hca_type", "board_id", "hw_rev",
};

/* Makes every missing directory of PATH (which names a file: its last part
 * is left alone). */
static int make_parents(char *path)
{
	for (char *s = strchr(path + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		if (mkdir(path, 0755) && errno != EEXIST) {
			*s = '/';
			return -1;
		}
		*s = '/';
	}
	return 0;
}

/* Writes TEXT into the file BASE/REL (printf-style), making its
 * directories; read-only, as sysfs attributes of an unprivileged view are. */
static int put(const char *base, const char *text, const char *rel, ...)
{
	char path[PATH_MAX];
	size_t len = strlen(text);
	va_list ap;
	int fd, n;

	n = snprintf(path, sizeof(path), "%s/", base);
	va_start(ap, rel);
	vsnprintf(path + n, sizeof(path) - (size_t)n, rel, ap);
	va_end(ap);
	if (make_parents(path))
		goto err;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
	if (fd < 0)
		goto err;
	if (write(fd, text, len) != (ssize_t)len) {
		close(fd);
		goto err;
	}
	close(fd);
	return 0;
err:
	fprintf(stderr, "uroce sysfs: %s: %s\n", path, strerror(errno));
	return -1;
}

/* Copies FILE of the library's answer for DEV's IBDEV_PATH into the view,
 * newline-terminated as sysfs attributes are.  Nothing is written where the
 * library has no value (an empty GID's type): the kernel's file then fails
 * with EINVAL when read, which a plain file cannot do. */
static int copy_file(const char *devdir, const char *ibdev_path, const char *file)
{
	char val[256], text[260];

	if (ibv_read_sysfs_file(ibdev_path, file, val, sizeof(val)) < 0)
		return errno == EINVAL || errno == ENOENT ? 0 : -1;
	snprintf(text, sizeof(text), "%s\n", val);
	return put(devdir, text, "%s", file);
}

static const char *const port_states[] = {
	[IBV_PORT_NOP] = "NOP", [IBV_PORT_DOWN] = "DOWN", [IBV_PORT_INIT] = "INIT",
	[IBV_PORT_ARMED] = "ARMED", [IBV_PORT_ACTIVE] = "ACTIVE",
	[IBV_PORT_ACTIVE_DEFER] = "ACTIVE_DEFER",
};

static const char *const phys_states[] = {
	[1] = "Sleep", [2] = "Polling", [3] = "Disabled", [4] = "PortConfigurationTraining",
	[5] = "LinkUp", [6] = "LinkErrorRecovery", [7] = "Phy Test",
};

/* "100 Gb/sec (4X EDR)", the kernel's rate file: lane speed in tenths of
 * Gb/s by IB speed bit, times the lanes of the width bit. */
static void rate_text(const struct ibv_port_attr *pa, char *out, size_t len)
{
	static const struct { unsigned bit, tenths; const char *name; } speeds[] = {
		{ 1, 25, " SDR" }, { 2, 50, " DDR" }, { 4, 100, " QDR" }, { 8, 100, " FDR10" },
		{ 16, 140, " FDR" }, { 32, 250, " EDR" }, { 64, 500, " HDR" }, { 128, 1000, " NDR" },
	};
	static const struct { unsigned bit, lanes; } widths[] = {
		{ 1, 1 }, { 2, 4 }, { 4, 8 }, { 8, 12 }, { 16, 2 },
	};
	unsigned tenths = 25, lanes = 1;
	const char *name = "";

	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		if (pa->active_speed == speeds[i].bit) {
			tenths = speeds[i].tenths;
			name = speeds[i].name;
		}
	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++)
		if (pa->active_width == widths[i].bit)
			lanes = widths[i].lanes;
	tenths *= lanes;
	snprintf(out, len, "%u%s Gb/sec (%uX%s)\n", tenths / 10, tenths % 10 ? ".5" : "", lanes,
		 name);
}

/* gids/N for every slot of the table (zeros where empty, as the kernel
 * shows them), gid_attrs/{types,ndevs}/N for the valid ones.  One table
 * query: the per-file answers of ibv_read_sysfs_file cost a millisecond or
 * so each, and a table has tens of slots. */
static int write_gids(struct ibv_context *ctx, const char *devdir, uint8_t port, int len)
{
	struct ur_gid_info t[256];
	int n = ur_gid_table(ctx, port, t, 256), rc = 0;
	char text[sizeof(t[0].netdev) + 48];

	if (n < 0)
		return -1;
	for (int i = 0; i < len && i < 256; i++) {
		const struct ur_gid_info *g = NULL;
		uint8_t raw[16] = { 0 };

		for (int k = 0; k < n && !g; k++)
			if ((int)t[k].e.gid_index == i)
				g = &t[k];
		if (g)
			memcpy(raw, g->e.gid.raw, sizeof(raw));
		snprintf(text, sizeof(text), "%02x%02x:%02x%02x:%02x%02x:%02x%02x:"
			 "%02x%02x:%02x%02x:%02x%02x:%02x%02x\n", raw[0], raw[1], raw[2], raw[3],
			 raw[4], raw[5], raw[6], raw[7], raw[8], raw[9], raw[10], raw[11], raw[12],
			 raw[13], raw[14], raw[15]);
		rc |= put(devdir, text, "ports/%u/gids/%d", port, i);
		/* An empty slot's type and interface fail with EINVAL in the
		 * kernel; a file cannot, so there is none. */
		if (!g)
			continue;
		rc |= put(devdir, g->e.gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2\n" : "IB/RoCE v1\n",
			  "ports/%u/gid_attrs/types/%d", port, i);
		if (g->netdev[0]) {
			snprintf(text, sizeof(text), "%s\n", g->netdev);
			rc |= put(devdir, text, "ports/%u/gid_attrs/ndevs/%d", port, i);
		}
	}
	return rc ? -1 : 0;
}

static int write_port(struct ibv_context *ctx, const char *devdir, uint8_t port)
{
	char text[128], nd[IF_NAMESIZE] = "";
	struct ibv_port_attr pa;
	int rc = 0;

	if (ibv_query_port(ctx, port, &pa))
		return -1;
	snprintf(text, sizeof(text), "%d: %s\n", pa.state,
		 pa.state <= IBV_PORT_ACTIVE_DEFER ? port_states[pa.state] : "UNKNOWN");
	rc |= put(devdir, text, "ports/%u/state", port);
	snprintf(text, sizeof(text), "%u: %s\n", pa.phys_state,
		 pa.phys_state >= 1 && pa.phys_state <= 7 ? phys_states[pa.phys_state] : "<unknown>");
	rc |= put(devdir, text, "ports/%u/phys_state", port);
	rc |= put(devdir, pa.link_layer == IBV_LINK_LAYER_INFINIBAND ? "InfiniBand\n" : "Ethernet\n",
		  "ports/%u/link_layer", port);
	rate_text(&pa, text, sizeof(text));
	rc |= put(devdir, text, "ports/%u/rate", port);
	snprintf(text, sizeof(text), "0x%x\n", pa.lid);
	rc |= put(devdir, text, "ports/%u/lid", port);
	snprintf(text, sizeof(text), "0x%x\n", pa.sm_lid);
	rc |= put(devdir, text, "ports/%u/sm_lid", port);
	snprintf(text, sizeof(text), "%u\n", pa.lmc);
	rc |= put(devdir, text, "ports/%u/lid_mask_count", port);
	snprintf(text, sizeof(text), "%u\n", pa.sm_sl);
	rc |= put(devdir, text, "ports/%u/sm_sl", port);
	snprintf(text, sizeof(text), "0x%08x\n", pa.port_cap_flags);
	rc |= put(devdir, text, "ports/%u/cap_mask", port);
	rc |= write_gids(ctx, devdir, port, pa.gid_tbl_len);
	/* No hw_counters/: a file written now would never move while the
	 * program's traffic does; the library answers them live. */
	/* DEV/device/net/IF: the kernel's is the interface's directory under the
	 * device both share; here a link to the interface's real entry. */
	if (!ur_port_netdev(ctx, port, nd, sizeof(nd))) {
		char link[PATH_MAX + IF_NAMESIZE + 16], target[IF_NAMESIZE + 16];

		snprintf(link, sizeof(link), "%s/device/net/%s", devdir, nd);
		snprintf(target, sizeof(target), "../../../../net/%s", nd);
		if (make_parents(link) || (symlink(target, link) && errno != EEXIST)) {
			fprintf(stderr, "uroce sysfs: %s: %s\n", link, strerror(errno));
			rc = -1;
		}
	}
	return rc ? -1 : 0;
}

static int write_device(struct ibv_device *dev, const char *dir)
{
	const char *name = ibv_get_device_name(dev);
	char devdir[PATH_MAX], text[IBV_SYSFS_NAME_MAX + 2];
	struct ibv_device_attr da;
	struct ibv_context *ctx;
	int rc = 0;

	snprintf(devdir, sizeof(devdir), "%s/infiniband/%s", dir, name);
	for (size_t i = 0; i < sizeof(dev_files) / sizeof(dev_files[0]); i++)
		rc |= copy_file(devdir, dev->ibdev_path, dev_files[i]);
	/* The character device the library names (dev_path's last part), so that
	 * ibv_device's dev_path resolves in the view. */
	snprintf(text, sizeof(text), "%s\n", name);
	rc |= put(dir, text, "infiniband_verbs/%s/ibdev", dev->dev_name);
	ctx = ibv_open_device(dev);
	if (!ctx || ibv_query_device(ctx, &da)) {
		fprintf(stderr, "uroce sysfs: cannot open %s\n", name);
		if (ctx)
			ibv_close_device(ctx);
		return -1;
	}
	for (uint8_t p = 1; p <= da.phys_port_cnt; p++)
		rc |= write_port(ctx, devdir, p);
	ibv_close_device(ctx);
	return rc ? -1 : 0;
}

int cmd_sysfs(int argc, char **argv)
{
	struct ibv_device **list;
	int n, rc = UR_EXIT_OK;

	if (argc != 2 || argv[1][0] == '-') {
		bool help = argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"));

		fputs(sysfs_help, help ? stdout : stderr);
		return help ? UR_EXIT_OK : UR_EXIT_USAGE;
	}
	list = ibv_get_device_list(&n);
	if (!list) {
		perror("uroce sysfs: ibv_get_device_list");
		return UR_EXIT_FAIL;
	}
	for (int i = 0; i < n; i++)
		if (write_device(list[i], argv[1]))
			rc = UR_EXIT_FAIL;
	ibv_free_device_list(list);
	return rc;
}
