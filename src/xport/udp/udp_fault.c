/* A fault injector on the receive path, for testing what RC promises over
 * a bad network (docs/reliability.md).  This kernel has no netem, and
 * nftables can drop but not reorder, duplicate or corrupt, so uroce does it
 * itself when asked:
 *
 *   UROCE_FAULTS="loss=0.05,reorder=0.05,dup=0.01,corrupt=0.001,seed=7"
 *
 * Each rate is a probability per received packet (RoCE packets only, from
 * the network or from another process of the host), applied just before
 * the ICRC check, so a corrupted packet is caught there as it would be off
 * a wire.  A reordered packet is held back and handed on after the next
 * one.  Setting it in both peers' environments faults both directions.
 * The spec is parsed with the rest of the configuration (util/config.c).
 * Each receive context has its own (its callbacks never run concurrently):
 * no lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/config.h"
#include "util/log.h"
#include "xport/udp/udp_priv.h"

struct ur_udp_fault {
	double loss, reorder, dup, corrupt;
	uint64_t rng;
	/* The packet held back to follow the next one. */
	bool held;
	size_t held_len;
	struct ur_roce_ip held_ip;
	uint8_t held_tclass, held_hop;
	uint8_t held_pkt[UR_UDP_BUF];
	uint8_t scratch[UR_UDP_BUF];  /* a corrupted copy */
};

/* xorshift64*: reproducible from the seed, cheap. */
static double next_unit(struct ur_udp_fault *f)
{
	f->rng ^= f->rng >> 12;
	f->rng ^= f->rng << 25;
	f->rng ^= f->rng >> 27;
	return (double)((f->rng * 0x2545F4914F6CDD1Dull) >> 11) / (double)(1ull << 53);
}

struct ur_udp_fault *ur_udp_fault_new(unsigned index)
{
	const struct ur_config_faults *spec = &ur_config()->faults;
	struct ur_udp_fault *f;

	if (!spec->set)
		return NULL;
	if (!spec->valid) {
		if (!index)
			ur_err(NULL, "UROCE_FAULTS=\"%s\": expected comma-separated loss=, reorder=, "
			       "dup=, corrupt= (probabilities 0..1) and seed=N; faults not injected",
			       spec->spec);
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		ur_err(NULL, "UROCE_FAULTS: no memory for the fault injector: faults not injected");
		return NULL;
	}
	f->loss = spec->loss;
	f->reorder = spec->reorder;
	f->dup = spec->dup;
	f->corrupt = spec->corrupt;
	f->rng = spec->seed ? spec->seed : (uint64_t)getpid() * 0x9E3779B97F4A7C15ull | 1;
	/* Context 0 keeps the sequence a seed gave before there were more. */
	f->rng += index * 0x9E3779B97F4A7C15ull;
	if (!f->rng)
		f->rng = 1;
	if (!index)
		ur_info(NULL, "injecting faults on received packets: loss %g, reorder %g, dup %g, "
			"corrupt %g (UROCE_FAULTS)", f->loss, f->reorder, f->dup, f->corrupt);
	return f;
}

/* Counted against the device the packet was going to, so that a test can
 * reconcile what was done with what the device saw. */
static void injected(struct ur_udp *u, enum ur_xport_fault what, const struct ur_roce_ip *ip)
{
	union ibv_gid sgid, dgid;

	ur_udp_ip_gids(ip, &sgid, &dgid);
	if (u->hooks.injected)
		u->hooks.injected(u->hooks.arg, what, &dgid);
}

/* A bit to flip, anywhere but in the BTH's FECN/BECN byte (byte 4): the
 * ICRC does not cover it, so a flip there would be neither caught nor
 * harmful, and every injected corruption must show as an ICRC error. */
static size_t corrupt_bit(struct ur_udp_fault *f, size_t len)
{
	size_t bit = (size_t)(next_unit(f) * (double)((len - (len > 4)) * 8));

	return len > 4 && bit >= 4 * 8 ? bit + 8 : bit;
}

static void hold(struct ur_udp_fault *f, const uint8_t *pkt, size_t len,
		 const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop)
{
	memcpy(f->held_pkt, pkt, len);
	f->held_len = len;
	f->held_ip = *ip;
	f->held_tclass = tclass;
	f->held_hop = hop;
	f->held = true;
}

void ur_udp_fault_rx(struct ur_udp *u, struct ur_udp_fault *f, const uint8_t *pkt, size_t len,
		     const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop)
{
	bool release = f->held;

	if (next_unit(f) < f->loss) {
		injected(u, UR_XPORT_FAULT_LOSS, ip);
		return;
	}
	if (!f->held && len <= sizeof(f->held_pkt) && next_unit(f) < f->reorder) {
		hold(f, pkt, len, ip, tclass, hop);
		injected(u, UR_XPORT_FAULT_REORDER, ip);
		return;
	}
	if (len && len <= sizeof(f->scratch) && next_unit(f) < f->corrupt) {
		size_t bit = corrupt_bit(f, len);

		memcpy(f->scratch, pkt, len);
		f->scratch[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		pkt = f->scratch;
		injected(u, UR_XPORT_FAULT_CORRUPT, ip);
	}
	ur_udp_deliver(u, pkt, len, ip, tclass, hop);
	if (next_unit(f) < f->dup) {
		injected(u, UR_XPORT_FAULT_DUP, ip);
		if (pkt == f->scratch)   /* a second corrupted delivery */
			injected(u, UR_XPORT_FAULT_CORRUPT, ip);
		ur_udp_deliver(u, pkt, len, ip, tclass, hop);
	}
	if (release) {
		f->held = false;
		ur_udp_deliver(u, f->held_pkt, f->held_len, &f->held_ip, f->held_tclass,
			       f->held_hop);
	}
}
