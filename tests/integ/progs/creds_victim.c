/* The first user's process in integ.local_creds: an RC QP in RTR with a
 * region open to remote writes, as any verbs server has.  It writes what a
 * sender would need to reach that region (its pid, the QPN, the PSN the QP
 * expects, the rkey and address) to $CREDS_DIR/info, then answers the
 * script: for every file $CREDS_DIR/ask.N it writes $CREDS_DIR/told.N with
 * how many bytes of the region (and of the guard bytes around it) differ
 * from how they started; $CREDS_DIR/quit ends it.
 *
 *   creds_victim DEVICE GID_INDEX    (environment: CREDS_DIR)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt.h"

static unsigned changed(const struct vt_buf *b, uint8_t *init, size_t span)
{
	unsigned n = 0;

	for (size_t i = 0; i < span; i++)
		n += b->base[i] != init[i];
	return n;
}

static void case_serve(struct vt_dev *d)
{
	const char *dir = getenv("CREDS_DIR");
	size_t span = 64 + 2 * VT_GUARD;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct vt_qp a, b;
	struct vt_buf target;
	char path[512];
	uint8_t *start;
	FILE *f;

	if (!dir) {
		vt_fail("CREDS_DIR is not set");
		return;
	}
	vt_rc_pair(d, &a, NULL, &b, NULL);
	vt_buf_init(&target, d, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0x3c);
	start = malloc(span);
	memcpy(start, target.base, span);
	if (ibv_query_qp(b.qp, &attr, IBV_QP_RQ_PSN, &init)) {
		vt_fail("ibv_query_qp");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/info.tmp", dir);
	f = fopen(path, "w");
	if (!f) {
		vt_fail("cannot write %s", path);
		goto out;
	}
	fprintf(f, "%d %u %u %u %llu\n", (int)getpid(), b.qp->qp_num, attr.rq_psn,
		target.mr->rkey, (unsigned long long)(uintptr_t)target.p);
	fclose(f);
	{
		char final[512];

		snprintf(final, sizeof(final), "%s/info", dir);
		rename(path, final);
	}
	for (unsigned n = 0;;) {
		snprintf(path, sizeof(path), "%s/quit", dir);
		if (access(path, F_OK) == 0)
			break;
		snprintf(path, sizeof(path), "%s/ask.%u", dir, n);
		if (access(path, F_OK)) {
			vt_sleep(0.02);
			continue;
		}
		vt_sleep(0.2);                /* what was sent has been handled */
		snprintf(path, sizeof(path), "%s/told.%u", dir, n);
		f = fopen(path, "w");
		if (f) {
			fprintf(f, "%u\n", changed(&target, start, span));
			fclose(f);
		}
		n++;
	}
	vt_check(true, "served until told to quit");
out:
	free(start);
	vt_qp_destroy(&a);
	vt_qp_destroy(&b);
	vt_buf_free(&target);
}

static const struct vt_case cases[] = {
	{ "serve", case_serve },
	{ NULL, NULL },
};

VT_MAIN(cases)
