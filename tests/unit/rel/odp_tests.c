/* On-demand paging.  Implicit (ibv_reg_mr(pd, NULL, SIZE_MAX, ON_DEMAND)):
 * the region is the whole address space, so a peer may name any address.
 * Mapped, permitted memory is reached; an address the process never
 * mapped or may not touch, or a page it may not write, is a remote
 * access error (NAK, IBV_WC_REM_ACCESS_ERR) and the process does not
 * fault. */
#include <sys/mman.h>

/* One request through b's implicit region at va; the requester's
 * completion status.  The pair is closed after. */
static enum ibv_wc_status odp_one(enum ibv_wr_opcode op, uint64_t va, uint32_t len,
				  const void *expect_at_va)
{
	struct t_opts o = { .mtu = IBV_MTU_256 };
	struct t_pair p;
	struct t_mem la;
	struct ibv_mr *imr;
	struct ibv_wc wc;
	enum ibv_wc_status st = IBV_WC_GENERAL_ERR;

	if (t_pair_open(&p, &o))
		return st;
	t_mem_reg(&la, &p.a, 4096, IBV_ACCESS_LOCAL_WRITE, 1);
	imr = ibv_reg_mr(&p.b.pd->ibpd, NULL, SIZE_MAX, T_ALL_ACCESS | IBV_ACCESS_ON_DEMAND);
	UT_CHECK(imr != NULL);
	if (!imr) {
		t_mem_free(&la);
		t_pair_close(&p);
		return st;
	}
	UT_EQ((uintptr_t)imr->addr, 0);
	UT_EQ(imr->length, SIZE_MAX);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
		UT_EQ(t_post_atomic(&p.a, 1, op, la.buf, la.mr->lkey, va, imr->rkey, 1, 0), 0);
	else
		UT_EQ(t_post_rdma(&p.a, 1, op, la.buf, len, la.mr->lkey, va, imr->rkey), 0);
	t_run();
	if (t_poll(p.a.scq, &wc, 1) == 1) {
		st = wc.status;
		if (st == IBV_WC_SUCCESS && expect_at_va && op == IBV_WR_RDMA_WRITE)
			UT_MEMEQ((const void *)(uintptr_t)va, la.buf, len);
		if (st == IBV_WC_SUCCESS && expect_at_va && op == IBV_WR_RDMA_READ)
			UT_MEMEQ(la.buf, expect_at_va, len);
	}
	UT_EQ(ibv_dereg_mr(imr), 0);
	t_mem_free(&la);
	t_pair_close(&p);
	return st;
}

static void test_odp_implicit(void)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *heap = malloc(3000), *gone, *ro;

	/* Ordinary memory: WRITE, READ and atomics reach it. */
	UT_EQ(odp_one(IBV_WR_RDMA_WRITE, (uintptr_t)heap, 3000, heap), IBV_WC_SUCCESS);
	memset(heap, 0x5a, 3000);
	UT_EQ(odp_one(IBV_WR_RDMA_READ, (uintptr_t)heap, 3000, heap), IBV_WC_SUCCESS);
	memset(heap, 0, 8);
	UT_EQ(odp_one(IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)heap, 8, NULL), IBV_WC_SUCCESS);
	UT_EQ(*(uint64_t *)heap, 1u);
	/* An address no access reaches, for every operation.  Held with
	 * PROT_NONE rather than unmapped: a hole is mapped again by the next
	 * allocation that fits (ASan's allocator did, between two of these
	 * requests), and to a peer both look the same. */
	gone = mmap(NULL, (size_t)page * 2, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	UT_CHECK(gone != MAP_FAILED);
	UT_EQ(odp_one(IBV_WR_RDMA_WRITE, (uintptr_t)gone, 600, NULL), IBV_WC_REM_ACCESS_ERR);
	UT_EQ(odp_one(IBV_WR_RDMA_READ, (uintptr_t)gone, 600, NULL), IBV_WC_REM_ACCESS_ERR);
	UT_EQ(odp_one(IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)gone, 8, NULL), IBV_WC_REM_ACCESS_ERR);
	UT_EQ(odp_one(IBV_WR_RDMA_WRITE, 0, 16, NULL), IBV_WC_REM_ACCESS_ERR);
	munmap(gone, (size_t)page * 2);
	/* A read-only page: read, never written. */
	ro = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	UT_CHECK(ro != MAP_FAILED);
	memset(ro, 0x33, (size_t)page);
	UT_EQ(mprotect(ro, (size_t)page, PROT_READ), 0);
	UT_EQ(odp_one(IBV_WR_RDMA_READ, (uintptr_t)ro, 256, ro), IBV_WC_SUCCESS);
	UT_EQ(odp_one(IBV_WR_RDMA_WRITE, (uintptr_t)ro, 16, NULL), IBV_WC_REM_ACCESS_ERR);
	UT_EQ(odp_one(IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)ro, 8, NULL), IBV_WC_REM_ACCESS_ERR);
	UT_EQ(ro[0], 0x33);
	munmap(ro, (size_t)page);
	/* Straddling the end of a mapping into a page no access reaches
	 * (PROT_NONE, as above): refused whole. */
	ro = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	UT_CHECK(ro != MAP_FAILED);
	UT_EQ(mprotect(ro + page, (size_t)page, PROT_NONE), 0);
	memset(ro, 0x44, (size_t)page);
	UT_EQ(odp_one(IBV_WR_RDMA_WRITE, (uintptr_t)ro + (uintptr_t)page - 8, 16, NULL),
	      IBV_WC_REM_ACCESS_ERR);
	UT_EQ(ro[page - 1], 0x44);
	UT_EQ(odp_one(IBV_WR_RDMA_WRITE, (uintptr_t)ro + (uintptr_t)page - 16, 16, ro + page - 16),
	      IBV_WC_SUCCESS);
	munmap(ro, (size_t)page * 2);
	free(heap);
}

/* An explicit on-demand region over memory never touched: registering it
 * faults nothing in (uroce pins nothing); a remote WRITE into its middle
 * brings in only the pages it lands on, and the bytes are right. */
static void test_odp_touched_after_registration(void)
{
	struct t_opts o = { .mtu = IBV_MTU_1024 };
	long page = sysconf(_SC_PAGESIZE);
	size_t len = 256 * (size_t)page, npages = 256, resident = 0;
	unsigned char vec[256];
	struct t_pair p;
	struct t_mem la;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	uint8_t *area;

	if (t_pair_open(&p, &o))
		return;
	area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	UT_CHECK(area != MAP_FAILED);
	t_mem_reg(&la, &p.a, 3000, IBV_ACCESS_LOCAL_WRITE, 1);
	mr = ibv_reg_mr(&p.b.pd->ibpd, area, len, T_ALL_ACCESS | IBV_ACCESS_ON_DEMAND);
	UT_CHECK(mr != NULL);
	UT_EQ(mincore(area, len, vec), 0);
	for (size_t i = 0; i < npages; i++)
		resident += vec[i] & 1;
	UT_EQ(resident, 0);                   /* nothing touched by registering */
	UT_EQ(t_post_rdma(&p.a, 1, IBV_WR_RDMA_WRITE, la.buf, 3000, la.mr->lkey,
			  (uintptr_t)area + 100 * (size_t)page + 10, mr ? mr->rkey : 0), 0);
	t_run();
	t_expect_wc(p.a.scq, &wc, 1, IBV_WC_SUCCESS);
	UT_MEMEQ(area + 100 * (size_t)page + 10, la.buf, 3000);
	UT_EQ(mincore(area, len, vec), 0);
	resident = 0;
	for (size_t i = 0; i < npages; i++)
		resident += vec[i] & 1;
	UT_EQ(resident, (3000 + 10 + (size_t)page - 1) / (size_t)page);   /* the pages written */
	UT_CHECK(vec[100] & 1);
	if (mr)
		UT_EQ(ibv_dereg_mr(mr), 0);
	t_mem_free(&la);
	munmap(area, len);
	t_pair_close(&p);
}
