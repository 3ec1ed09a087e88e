/* IBVERBS_PRIVATE_34 stand-ins: every command fails with EOPNOTSUPP in its
 * rdma-core convention and warns exactly once; registration is silent; the
 * two pure helpers compute what rdma-core computes. */
#include <fcntl.h>
#include <unistd.h>

#include "ut.h"

#include "verbs/private_compat.c"

/* errno = EOPNOTSUPP and the positive errno value returned. */
#define EXPECT_EOPNOTSUPP(call)                                             \
	do {                                                                \
		errno = 0;                                                  \
		UT_EQ((call), EOPNOTSUPP);                                  \
		UT_EQ(errno, EOPNOTSUPP);                                   \
	} while (0)

#define EXPECT_NULL_EOPNOTSUPP(call)                                        \
	do {                                                                \
		errno = 0;                                                  \
		UT_CHECK((call) == NULL);                                   \
		UT_EQ(errno, EOPNOTSUPP);                                   \
	} while (0)

static void call_every_stub(void)
{
	struct ibv_send_wr swr = { 0 }, *bad_swr = NULL;
	struct ibv_recv_wr rwr = { 0 }, *bad_rwr = NULL;
	char buf[8];

	EXPECT_EOPNOTSUPP(execute_ioctl(NULL, NULL));
	EXPECT_NULL_EOPNOTSUPP(_verbs_init_and_alloc_context(NULL, -1, 64,
							     NULL, 0));
	EXPECT_NULL_EOPNOTSUPP(verbs_open_device(NULL, NULL));
	verbs_uninit_context(NULL);
	verbs_set_ops(NULL, NULL);
	verbs_init_cq(NULL, NULL, NULL, NULL);
	errno = 0;
	UT_EQ(ibv_read_ibdev_sysfs_file(buf, sizeof(buf), NULL, "%s", "x"), -1);
	UT_EQ(errno, EOPNOTSUPP);

	EXPECT_EOPNOTSUPP(ibv_cmd_get_context(NULL, NULL, 0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_query_context(NULL, NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_create_flow_action_esp(NULL, NULL, NULL, NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_modify_flow_action_esp(NULL, NULL, NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_query_device_any(NULL, NULL, NULL, 0, NULL, NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_query_port(NULL, 1, NULL, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_alloc_pd(NULL, NULL, NULL, 0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_dealloc_pd(NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_open_xrcd(NULL, NULL, 0, NULL, NULL, 0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_close_xrcd(NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_reg_mr(NULL, NULL, 0, 0, 0, NULL, NULL, 0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_rereg_mr(NULL, 0, NULL, 0, 0, 0, NULL, NULL, 0,
					   NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_dereg_mr(NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_query_mr(NULL, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_advise_mr(NULL, IBV_ADVISE_MR_ADVICE_PREFETCH,
					    0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_reg_dmabuf_mr(NULL, 0, 0, 0, -1, 0, NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_alloc_mw(NULL, IBV_MW_TYPE_1, NULL, NULL, 0,
					   NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_dealloc_mw(NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_create_cq(NULL, 1, NULL, 0, NULL, NULL, 0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_create_cq_ex(NULL, NULL, NULL, NULL, 0, NULL, 0, 0));
	errno = 0;
	UT_EQ(ibv_cmd_poll_cq(NULL, 1, NULL), -1);
	UT_EQ(errno, EOPNOTSUPP);
	EXPECT_EOPNOTSUPP(ibv_cmd_req_notify_cq(NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_resize_cq(NULL, 1, NULL, 0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_destroy_cq(NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_modify_cq(NULL, NULL, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_create_srq(NULL, NULL, NULL, NULL, 0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_create_srq_ex(NULL, NULL, NULL, NULL, 0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_modify_srq(NULL, NULL, 0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_query_srq(NULL, NULL, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_destroy_srq(NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_create_qp(NULL, NULL, NULL, NULL, 0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_create_qp_ex(NULL, NULL, NULL, NULL, 0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_create_qp_ex2(NULL, NULL, NULL, NULL, 0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_open_qp(NULL, NULL, 0, NULL, NULL, 0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_query_qp(NULL, NULL, 0, NULL, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_modify_qp(NULL, NULL, 0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_modify_qp_ex(NULL, NULL, 0, NULL, 0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_destroy_qp(NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_post_send(NULL, &swr, &bad_swr));
	UT_CHECK(bad_swr == &swr);
	EXPECT_EOPNOTSUPP(ibv_cmd_post_recv(NULL, &rwr, &bad_rwr));
	UT_CHECK(bad_rwr == &rwr);
	bad_rwr = NULL;
	EXPECT_EOPNOTSUPP(ibv_cmd_post_srq_recv(NULL, &rwr, &bad_rwr));
	UT_CHECK(bad_rwr == &rwr);
	EXPECT_EOPNOTSUPP(ibv_cmd_create_ah(NULL, NULL, NULL, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_destroy_ah(NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_attach_mcast(NULL, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_detach_mcast(NULL, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_create_flow(NULL, NULL, NULL, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_destroy_flow(NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_create_wq(NULL, NULL, NULL, NULL, 0, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_destroy_flow_action(NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_modify_wq(NULL, NULL, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_destroy_wq(NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_create_rwq_ind_table(NULL, NULL, NULL, NULL, 0));
	EXPECT_EOPNOTSUPP(ibv_cmd_destroy_rwq_ind_table(NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_create_counters(NULL, NULL, NULL, NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_destroy_counters(NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_read_counters(NULL, NULL, 0, 0, NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_alloc_dm(NULL, NULL, NULL, NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_free_dm(NULL));
	EXPECT_EOPNOTSUPP(ibv_cmd_reg_dm_mr(NULL, NULL, 0, 0, 0, NULL, NULL));

	verbs_register_driver_34(NULL);
}

/* Entry points of the map's PRIVATE_34 node that are not stubs. */
static const char *const not_stubs[] = {
	"ibv_query_gid_type",           /* real, in gid.c */
	"__verbs_log",
	"__ioctl_final_num_attrs",
	"verbs_register_driver_34",     /* silent */
	"verbs_allow_disassociate_destroy", /* data */
};

static int is_stub(const char *name)
{
	for (size_t i = 0; i < UR_ARRAY_SIZE(not_stubs); i++)
		if (!strcmp(name, not_stubs[i]))
			return 0;
	return 1;
}

static int count_lines_with(const char *log, const char *needle)
{
	int n = 0;

	for (const char *p = log; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Run every stub twice with stderr captured: each stub of the version
 * script's PRIVATE_34 node must have warned exactly once, naming itself,
 * and the non-stubs never. */
static void test_stubs_fail_and_warn_once(void)
{
	char path[] = "/tmp/uroce_priv_ut.XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	char log[1 << 16] = "", line[256], needle[128];
	FILE *map;
	ssize_t n;
	int in_private = 0, stubs = 0;

	UT_CHECK(fd >= 0 && saved >= 0);
	if (fd < 0 || saved < 0)
		return;
	ur_log_level = UR_LOG_WARN;
	fflush(stderr);
	dup2(fd, 2);
	call_every_stub();
	call_every_stub();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, log, sizeof(log) - 1, 0);
	UT_CHECK(n > 0 && n < (ssize_t)sizeof(log) - 1);
	close(fd);
	unlink(path);
	if (ut_failures)                /* checks failed while captured */
		fputs(log, stderr);

	map = fopen(UR_VERBS_MAP, "r");
	UT_CHECK(map != NULL);
	if (!map)
		return;
	while (fgets(line, sizeof(line), map)) {
		char name[96];

		if (strstr(line, "IBVERBS_PRIVATE_34 {")) {
			in_private = 1;
			continue;
		}
		if (!in_private || !strchr(line, ';') || sscanf(line, " %95[A-Za-z0-9_];", name) != 1 ||
		    !strcmp(name, "global"))
			continue;
		snprintf(needle, sizeof(needle), "uroce warning: %s: ", name);
		if (is_stub(name)) {
			stubs++;
			if (count_lines_with(log, needle) != 1) {
				fprintf(stderr, "%s warned %d times\n", name,
					count_lines_with(log, needle));
				UT_EQ(count_lines_with(log, needle), 1);
			}
		} else {
			UT_EQ(count_lines_with(log, needle), 0);
		}
	}
	fclose(map);
	UT_EQ(stubs, 71 - (int)UR_ARRAY_SIZE(not_stubs));
}

static struct ibv_command_buffer *block(unsigned capacity, unsigned used,
					struct ibv_command_buffer *next)
{
	struct ibv_command_buffer *b =
		calloc(1, sizeof(*b) + capacity * sizeof(struct ib_uverbs_attr));

	b->next = next;
	b->next_attr = b->hdr.attrs + used;
	b->last_attr = b->hdr.attrs + capacity;
	return b;
}

static void test_final_num_attrs(void)
{
	struct ibv_command_buffer *c = block(4, 0, NULL);
	struct ibv_command_buffer *b = block(8, 5, c);
	struct ibv_command_buffer *a = block(4, 3, b);

	UT_EQ(__ioctl_final_num_attrs(7, NULL), 7);
	UT_EQ(__ioctl_final_num_attrs(7, c), 7);
	UT_EQ(__ioctl_final_num_attrs(7, b), 12);
	UT_EQ(__ioctl_final_num_attrs(2, a), 10);
	free(a);
	free(b);
	free(c);
}

/* Level and file come from the environment at the first call. */
static void test_verbs_log(void)
{
	char path[] = "/tmp/uroce_verbs_log.XXXXXX";
	int fd = mkstemp(path);
	char got[64] = "";

	UT_CHECK(fd >= 0);
	if (fd < 0)
		return;
	setenv("VERBS_LOG_LEVEL", "2", 1);
	setenv("VERBS_LOG_FILE", path, 1);
	errno = 1234;
	__verbs_log(NULL, 1, "err %d;", 1);
	UT_EQ(errno, 1234);
	__verbs_log(NULL, 2, "warn %s;", "w");
	__verbs_log(NULL, 3, "info;");
	__verbs_log(NULL, 4, "debug;");
	fflush(verbs_log_fp);
	UT_CHECK(pread(fd, got, sizeof(got) - 1, 0) > 0);
	UT_CHECK(!strcmp(got, "err 1;warn w;"));
	close(fd);
	unlink(path);
}

static void test_disassociate_flag(void)
{
	UT_EQ(sizeof(verbs_allow_disassociate_destroy), 1);
	UT_EQ(verbs_allow_disassociate_destroy, false);
}

int main(void)
{
	UT_RUN(test_stubs_fail_and_warn_once);
	UT_RUN(test_final_num_attrs);
	UT_RUN(test_verbs_log);
	UT_RUN(test_disassociate_flag);
	return UT_DONE();
}
