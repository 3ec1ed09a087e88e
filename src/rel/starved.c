#include "rel/starved.h"

#include "core/device.h"
#include "core/qp.h"
#include "host/registry.h"
#include "host/tap_owner.h"
#include "rel/rel_priv.h"
#include "util/log.h"
#include "util/proc_sched.h"

#define UR_STARVE_PEERS 4
/* A look at a peer this young serves every QP that asks (a look reads
 * /proc files; util/proc_sched.h). */
#define UR_STARVE_LOOK_REUSE_NS (2u * 1000 * 1000)

bool ur_starved_judge(uint64_t span, uint64_t ran, bool runnable_before, bool runnable_now)
{
	return span && runnable_before && runnable_now && ran < span / 4;
}

/* Where pid was last seen, or -1. */
static int seen_at(const struct ur_comp_state *c, pid_t pid)
{
	for (int i = 0; i < UR_STARVE_PEERS; i++)
		if (c->starve_pid[i] == pid)
			return i;
	return -1;
}

bool ur_runs_judge(uint64_t span, uint64_t ran)
{
	return span && ran >= span / 16;
}

/* The verdict of the look at one process against the one before. */
static enum ur_peer_cpu judge(const struct ur_comp_state *c, int k, const struct ur_sched_look *l)
{
	uint64_t span, ran;

	if (k < 0 || !c->starve_at[k] || l->at <= c->starve_at[k])
		return UR_PEER_CPU_UNKNOWN;
	span = l->at - c->starve_at[k];
	ran = l->ran - c->starve_ran[k];
	if (ur_starved_judge(span, ran, c->starve_runnable[k], l->runnable))
		return UR_PEER_CPU_STARVED;
	return ur_runs_judge(span, ran) ? UR_PEER_CPU_RUNS : UR_PEER_CPU_STILL;
}

enum ur_peer_cpu ur_peer_cpu_look(struct ur_qp *qp, uint64_t now, uint64_t qpt)
{
	struct ur_comp_state *c = &qp->comp;
	pid_t pids[UR_STARVE_PEERS], seen[UR_STARVE_PEERS] = { 0 };
	struct ur_sched_look looks[UR_STARVE_PEERS] = { 0 };
	/* Owners of the number where the peer's address is (a number may be
	 * in use in several namespaces): any kept off the CPU may be the
	 * silence. */
	int n = ur_registry_host_owners(qp->attr.dest_qp_num, &qp->attr.ah_attr.grh.dgid, pids,
					UR_STARVE_PEERS);
	enum ur_peer_cpu most = UR_PEER_CPU_UNKNOWN;

	/* None: the peer may be a guest of this host behind the device's
	 * tap, served by its emulator's process (host/tap_owner.h). */
	if (n <= 0) {
		pids[0] = ur_tap_owner(qp->ctx->dev->netdev_name);
		n = pids[0] > 0;
	}

	for (int i = 0; i < n; i++) {
		struct ur_sched_look *l = &looks[i];
		enum ur_peer_cpu v;

		/* Judged from the looks' own times: one taken for another QP a
		 * moment ago serves this one too. */
		if (ur_proc_sched_recent(pids[i], now, UR_STARVE_LOOK_REUSE_NS, l))
			continue;
		seen[i] = pids[i];
		v = judge(c, seen_at(c, pids[i]), l);
		/* Starved above all (it holds the retry back), then runs. */
		if (v == UR_PEER_CPU_STARVED || (v == UR_PEER_CPU_RUNS && most != UR_PEER_CPU_STARVED) ||
		    (v == UR_PEER_CPU_STILL && most == UR_PEER_CPU_UNKNOWN))
			most = v;
	}
	for (int i = 0; i < UR_STARVE_PEERS; i++) {
		c->starve_pid[i] = seen[i];
		c->starve_ran[i] = looks[i].ran;
		c->starve_runnable[i] = looks[i].runnable > 0;
		c->starve_at[i] = looks[i].at;
	}
	if (most != UR_PEER_CPU_STARVED)
		return most;
	if (!c->starved_ns)
		c->starved_ns = now;
	if (now - c->starved_ns >= UR_MAX_STARVED_WAIT * qpt)
		return UR_PEER_CPU_UNKNOWN;
	ur_dbg(ur_qp_dev(qp), "QP 0x%06x: the peer waits for a CPU: the retry does not count",
	       ur_qp_num(qp));
	return UR_PEER_CPU_STARVED;
}
