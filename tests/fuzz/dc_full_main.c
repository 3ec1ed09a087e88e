/* A DC target full of initiators, each in the middle of a WRITE, all idle
 * over a second, when one more initiator comes: no half may be given away
 * (none is quiet), and every half must still take its next packet.  The
 * fuzzer found that a half looked at and refused stayed locked, so the
 * next packet for it hung the receive path (src/rel/dc.c idle_half).
 * Packets go through fuzz_rx's target into the live stack of fuzz_stack.h.
 * Needs its own network namespace (root); exits 77 (skip) without one. */
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "private_ns.h"

#include "fuzz_common.h"
#include "fuzz_stack.h"
#include "rel/dc.h"
#include "wire/opcode.h"

#define MTU 1024
#define START_PSN 100
#define CONN 1
/* fuzz_rx's selector: the DC target (0x13 % FUZZ_NQP), with its key in
 * the DCETH (0x02) and the region's rkey in the RETH (0x10). */
#define SEL_DCT 0x13
_Static_assert(SEL_DCT % FUZZ_NQP == FUZZ_DCT, "the selector picks the DC target");

/* One RD-opcode WRITE packet from initiator sqpn: FIRST (with a RETH
 * naming the region's first 2 KiB) or LAST, MTU bytes of fill each.
 * The fuzz target puts in the QPN, the key and the rkey. */
static void send_write(uint32_t sqpn, bool first, uint8_t fill)
{
	static uint8_t in[1 + UR_BTH_BYTES + UR_DCETH_BYTES + UR_RDETH_BYTES + UR_DETH_BYTES +
			  UR_RETH_BYTES + MTU + 4];
	uint8_t *p = in + 1, *h;
	size_t len;

	memset(in, 0, sizeof(in));
	in[0] = SEL_DCT;
	p[0] = first ? UR_OP_RD_RDMA_WRITE_FIRST : UR_OP_RD_RDMA_WRITE_LAST;
	p[1] = 0x40;                                   /* MigReq, no pad, TVer 0 */
	p[2] = p[3] = 0xff;                            /* default P_Key */
	bth_set_psn(p, START_PSN + !first);
	h = p + UR_BTH_BYTES + UR_DCETH_BYTES;
	rdeth_set_een(h, START_PSN);
	h += UR_RDETH_BYTES;
	deth_set_qkey(h, CONN);
	deth_set_sqp(h, sqpn);
	h += UR_DETH_BYTES;
	if (first) {
		reth_set_va(h, (uintptr_t)fz.buf);
		reth_set_len(h, 2 * MTU);
		h += UR_RETH_BYTES;
	}
	memset(h, fill, MTU);
	len = (size_t)(h + MTU + 4 - in);           /* ICRC: not checked behind the parser */
	LLVMFuzzerTestOneInput(in, len);
}

static void hung(int sig)
{
	(void)sig;
	static const char msg[] = "FAIL: the receive path hung on a half it had looked at\n";
	(void)!write(2, msg, sizeof(msg) - 1);
	_exit(1);
}

int main(void)
{
	struct timespec idle = { .tv_sec = 1, .tv_nsec = 200 * 1000 * 1000 };
	int fails = 0;

	if (ur_test_private_ns(0)) {
		fprintf(stderr, "cannot create a network namespace (needs root, or "
			"user namespaces as unshare -Urn makes them): skipped\n");
		return 77;
	}
	fuzz_stack_setup();
	memset(fz.buf, 0, 2 * MTU);
	for (uint32_t sqpn = 1; sqpn <= UR_DC_MAX_HALVES; sqpn++)
		send_write(sqpn, true, 0x11);
	if (fz.buf[0] != 0x11 || fz.buf[MTU - 1] != 0x11) {
		fprintf(stderr, "FAIL: the FIRST packets' bytes did not land\n");
		fails++;
	}
	nanosleep(&idle, NULL);
	/* One more initiator: every half is idle, none quiet; it waits. */
	send_write(UR_DC_MAX_HALVES + 1, true, 0x22);
	if (fz.buf[0] != 0x11) {
		fprintf(stderr, "FAIL: a half in the middle of a WRITE was given away\n");
		fails++;
	}
	/* Each half ends its WRITE: the one looked at first must be free. */
	signal(SIGALRM, hung);
	alarm(20);
	for (uint32_t sqpn = 1; sqpn <= UR_DC_MAX_HALVES; sqpn++)
		send_write(sqpn, false, 0x33);
	alarm(0);
	if (fz.buf[MTU] != 0x33 || fz.buf[2 * MTU - 1] != 0x33) {
		fprintf(stderr, "FAIL: the LAST packets' bytes did not land\n");
		fails++;
	}
	printf("%s: %u halves in the middle of a WRITE, one more initiator refused, "
	       "every half took its LAST\n", fails ? "FAIL" : "ok", UR_DC_MAX_HALVES);
	return fails ? 1 : 0;
}
