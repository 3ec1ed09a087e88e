/* The resource dump (`uroce res`, `rdma resource` through the sysfs view)
 * beside a thread that registers regions: every region it lists comes
 * with its keys.  The dump once read a new region's lkey before the
 * registration had set it (ThreadSanitizer in CI; a dump line with key 0
 * otherwise). */
#include <pthread.h>

#include "core/mr.h"
#include "rel/res.h"

struct reg_churn {
	struct q_env *q;
	bool stop;
	unsigned made;
	int err;
};

static void *reg_churn(void *arg)
{
	static uint8_t buf[4096];
	struct reg_churn *r = arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		struct ur_mr *mr;

		r->err = ur_mr_create(&r->q->pd->ibpd, buf, sizeof(buf), (uintptr_t)buf,
				      IBV_ACCESS_LOCAL_WRITE, false, &mr);
		if (r->err)
			break;
		ur_mr_destroy(r->q->ctx, mr);
		r->made++;
	}
	return NULL;
}

/* Lines of the dump naming a region; *bad: those whose keys are not a
 * registered region's (lkey = rkey, nonzero, its index the mrn). */
static unsigned mr_lines(const char *text, unsigned *bad)
{
	unsigned n = 0;

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *p = strstr(l, "mrn=");
		unsigned mrn, rkey, lkey;

		if (strncmp(l, "mr ", 3))
			continue;
		if (!p || sscanf(p, "mrn=%u +rkey=0x%x +lkey=0x%x", &mrn, &rkey, &lkey) != 3 ||
		    !lkey || lkey != rkey || lkey >> 8 != mrn)
			(*bad)++;
		n++;
	}
	return n;
}

static void test_res_dump_beside_reg(void)
{
	static uint8_t kept[4096];
	struct reg_churn r = { 0 };
	struct q_env q;
	struct ur_mr *mr;
	unsigned lines = 0, bad = 0;
	pthread_t t;

	if (q_open(&q, IBV_QPT_RC))
		return;
	r.q = &q;
	UT_EQ(ur_mr_create(&q.pd->ibpd, kept, sizeof(kept), (uintptr_t)kept,
			   IBV_ACCESS_LOCAL_WRITE, false, &mr), 0);
	UT_EQ(pthread_create(&t, NULL, reg_churn, &r), 0);
	for (int i = 0; i < 3000; i++) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		if (!f)
			break;
		ur_res_dump(ut_stack(), f);
		fclose(f);
		lines += mr_lines(text, &bad);
		free(text);
	}
	__atomic_store_n(&r.stop, true, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	UT_EQ(r.err, 0);
	UT_CHECK(lines >= 3000);        /* the kept region, each time */
	UT_EQ(bad, 0);
	printf("# %u regions listed, %u registrations beside\n", lines, r.made);
	ur_mr_destroy(q.ctx, mr);
	q_close(&q);
}
