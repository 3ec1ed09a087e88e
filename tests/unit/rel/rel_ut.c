/* Unit tests of the reliability protocol: requester, completer, responder,
 * memory-window operations, driven packet by packet. */
#include "harness.h"

static void test_smoke(void)
{
	struct t_opts o = { 0 };
	struct t_pair p;
	struct t_mem sa, rb;
	struct ibv_wc wc;

	if (t_pair_open(&p, &o))
		return;
	t_mem_reg(&sa, &p.a, 64, IBV_ACCESS_LOCAL_WRITE, 1);
	t_mem_reg(&rb, &p.b, 64, IBV_ACCESS_LOCAL_WRITE, 2);
	UT_EQ(t_post_recv(&p.b, 7, rb.buf, 64, rb.mr->lkey), 0);
	UT_EQ(t_post_send(&p.a, 9, IBV_WR_SEND, sa.buf, 1, sa.mr->lkey, IBV_SEND_SIGNALED), 0);
	UT_EQ(t_count(), 1);
	UT_EQ(t_op(0), UR_OP_RC_SEND_ONLY);
	t_run();
	t_expect_wc(p.b.rcq, &wc, 7, IBV_WC_SUCCESS);
	t_expect_wc(p.a.scq, &wc, 9, IBV_WC_SUCCESS);
	t_mem_free(&sa);
	t_mem_free(&rb);
	t_pair_close(&p);
}

int main(void)
{
	ut_env_init("ut0:lo");
	UT_RUN(test_smoke);
	return UT_DONE();
}
