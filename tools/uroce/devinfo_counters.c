/* A port's counters, as the kernel publishes them for RDMA devices in
 * <ibdev_path>/ports/N/hw_counters/: a real NIC's directory is listed; uroce
 * has no directory to list, so the names rxe and uroce use are asked for one
 * by one through ibv_read_sysfs_file, which uroce's library answers. */
#include "devinfo.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const known_names[] = {
	"sent_pkts", "rcvd_pkts", "duplicate_request", "out_of_seq_request",
	"rcvd_rnr_err", "send_rnr_err", "rcvd_seq_err", "ack_deferred",
	"retry_exceeded_err", "retry_rnr_exceeded_err", "completer_retry_err",
	"send_err", "link_downed", "rcvd_nak", "rdma_sends", "rdma_recvs",
	"qkey_violations", "dropped", "icrc_errors", "malformed", "no_qp",
	"wrong_peer",
	"completion_errors", "held_out_of_seq", "selective_resends", "selective_go_backs",
	"gap_reports", "gap_resends",
	"injected_loss",
	"injected_reorder", "injected_dup", "injected_corrupt",
	"mr_shared", "copies_mapped", "copies_kernel", "timer_resends", "acks_inbox",
	"host_lost",
};

static void print_one(const char *ibdev_path, int port, const char *name)
{
	char file[128], val[64];

	snprintf(file, sizeof(file), "ports/%d/hw_counters/%s", port, name);
	if (ibv_read_sysfs_file(ibdev_path, file, val, sizeof(val)) > 0)
		printf("\t\t\t\t%-24s%s\n", name, val);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void ur_devinfo_print_counters(struct ibv_context *ctx, int port)
{
	const char *path = ctx->device->ibdev_path;
	char dir[512], val[32];
	struct dirent *d;
	char *names[256];
	int n = 0;
	DIR *dp;

	/* uroce's receive threads (UROCE_RX_THREADS): a setting, not a count,
	 * but what decides how the receive side's counters grow. */
	if (ibv_read_sysfs_file(path, "uroce_rx_threads", val, sizeof(val)) > 0)
		printf("\t\t\treceive contexts:\t%.*s\n", (int)strcspn(val, "\n"), val);
	printf("\t\t\tcounters:\n");
	snprintf(dir, sizeof(dir), "%s/ports/%d/hw_counters", path, port);
	dp = opendir(dir);
	if (!dp) {
		for (size_t i = 0; i < sizeof(known_names) / sizeof(known_names[0]); i++)
			print_one(path, port, known_names[i]);
		return;
	}
	while ((d = readdir(dp)) && n < 256)
		if (d->d_name[0] != '.' && (names[n] = strdup(d->d_name)))
			n++;
	closedir(dp);
	qsort(names, (size_t)n, sizeof(names[0]), by_name);
	for (int i = 0; i < n; i++) {
		print_one(path, port, names[i]);
		free(names[i]);
	}
}
