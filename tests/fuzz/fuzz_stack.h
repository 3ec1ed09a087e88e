/* A live uroce stack for the fuzz targets that feed its receive side: one
 * device (uroce0, on lo), an MR between PROT_NONE guard pages, four QPs
 * in RTS (RC, UC, UD, XRC target, whose domain has an XRC SRQ), each
 * "connected" to ::ffff:127.0.0.1 QP 0x123456, and a DC target in RTR
 * (key FUZZ_DC_KEY, receiving on an SRQ of its own), which makes a half
 * for each initiator the packets name.  Their replies go to a
 * transport that drops them, so the fuzzer is the only peer.  The RC QP
 * keeps a SEND, WRITE, READ and atomics outstanding, so responses reach
 * the completer.  Shared by fuzz_rx and fuzz_local. */
#ifndef UROCE_TESTS_FUZZ_STACK_H
#define UROCE_TESTS_FUZZ_STACK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <infiniband/verbs.h>

#define FUZZ_ASSERT(c) do { if (!(c)) { fprintf(stderr, "fuzz: %s\n", #c); abort(); } } while (0)
#define FUZZ_NQP 5
#define FUZZ_XRC_TGT 3          /* fz.qp[] indexes */
#define FUZZ_DCT 4
#define FUZZ_DC_KEY 0x0123456789abcdefull
#define FUZZ_MR_BYTES (64 * 1024)

struct fuzz_stack {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq, *xcq;
	struct ibv_mr *mr;
	uint8_t *buf;
	struct ibv_srq *xsrq;
	struct ibv_xrcd *xrcd;
	struct ibv_srq *srq;           /* the DCT's */
	struct ibv_qp *qp[FUZZ_NQP];   /* RC, UC, UD, XRC target, DCT */
	union ibv_gid peer;
	int ready;
};

extern struct fuzz_stack fz;

/* Once: opens the device and brings the QPs up.  Unless built for replay
 * (UR_FUZZ_REPLAY: the replay's main did it), first moves to a private
 * network namespace when it can (root), so that the stack's sockets and
 * host registry touch nothing else. */
void fuzz_stack_setup(void);
/* An XRC SRQ of domain xrcd (64 receives of max_sge pieces) completing on
 * cq, in fz.pd. */
struct ibv_srq *fuzz_xrc_srq(struct ibv_xrcd *xrcd, struct ibv_cq *cq, uint32_t max_sge);
/* After each input: drains the CQs, fires the timers the input armed,
 * reconnects QPs that ended in ERROR or ran out of requests, and reposts
 * receives. */
void fuzz_stack_tidy(void);

#endif
