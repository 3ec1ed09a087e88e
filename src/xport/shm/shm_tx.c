/* Sending by shared memory: resolving a path to a process of this host,
 * copying packets into our ring in its file, ringing its bell when its
 * engine thread sleeps, and waiting for room. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "host/netdev.h"
#include "host/registry.h"
#include "wire/gid.h"
#include "wire/roce_hdr.h"
#include "xport/shm/shm_priv.h"
#include "xport/shm/shm_ring.h"
#include "xport/capture.h"

/* The peers this thread wrote to since its last flush: their bells may
 * need ringing. */
static _Thread_local uint64_t written;
_Static_assert(UR_SHM_PEERS <= 64, "written is a 64-bit mask");

int ur_shm_resolve(struct ur_xport *x, const union ibv_gid *sgid, unsigned ifindex,
		   const union ibv_gid *dgid, uint32_t dqpn, struct ur_path *path)
{
	struct ur_shm *s = ur_shm_of(x);
	struct ur_shm_path *p = (struct ur_shm_path *)path->priv.bytes;
	struct ur_reg_owner o;
	int peer;

	(void)ifindex;
	/* Only a connected QP's peer is known now: an address handle's
	 * datagrams (dqpn 0 here) and the CM's QP1 go by UDP. */
	if (dqpn == 0 || dqpn == UR_GSI_QPN || ur_gid_is_multicast(dgid))
		return -ENOENT;
	if (ur_gid_is_v4mapped(sgid) != ur_gid_is_v4mapped(dgid) || !ur_gid_is_local_addr(dgid))
		return -ENOENT;
	if (ur_registry_lookup(s->reg, dqpn, &o))
		return -ENOENT;
	peer = ur_shm_peer_get(s, o.pid);
	if (peer < 0)
		return -ENOENT;
	p->pid = o.pid;
	p->peer = (uint32_t)peer;
	memcpy(p->sgid, sgid->raw, 16);
	memcpy(p->dgid, dgid->raw, 16);
	p->ipv6 = !ur_gid_is_v4mapped(dgid);
	return 0;
}

/* A packet that went into a peer's ring, to the capture as the wire would
 * carry it: IP and UDP ports made up from the processes (the source port
 * from our pid, 4791 to the peer), the ICRC computed. */
static void capture_sent(const struct ur_shm_path *p, const struct ur_path *path,
			 const struct ur_tx_pkt *pkt, pid_t peer_pid)
{
	static const uint8_t zeros[3];
	struct iovec iov[UR_TX_MAX_IOV + 2];
	struct ur_roce_ip ip = {
		.sport = (uint16_t)(0xc000 | (getpid() & 0x3fff)), .dport = UR_ROCE_UDP_PORT,
		.df = true,
	};
	int niov = 0;

	if (p->ipv6) {
		ip.family = AF_INET6;
		memcpy(&ip.v6.saddr, p->sgid, 16);
		memcpy(&ip.v6.daddr, p->dgid, 16);
	} else {
		ip.family = AF_INET;
		memcpy(&ip.v4.saddr, p->sgid + 12, 4);
		memcpy(&ip.v4.daddr, p->dgid + 12, 4);
	}
	iov[niov++] = (struct iovec){ (void *)pkt->hdr, pkt->hdr_len };
	memcpy(iov + niov, pkt->iov, (size_t)pkt->niov * sizeof(*iov));
	niov += pkt->niov;
	iov[niov++] = (struct iovec){ (void *)zeros, pkt->pad };
	ur_capture_roce(UR_CAP_TX, UR_CAP_VIA_SHM, peer_pid, &ip, path->traffic_class,
			path->hop_limit, pkt->placed, iov, niov,
			pkt->hdr_len + pkt->paylen + pkt->pad, false);
}

int ur_shm_send(struct ur_xport *x, const struct ur_path *path, const struct ur_tx_pkt *pkt)
{
	static const uint8_t zeros[3 + UR_ICRC_BYTES];
	struct ur_shm *s = ur_shm_of(x);
	const struct ur_shm_path *p = (const struct ur_shm_path *)path->priv.bytes;
	struct ur_shm_peer *peer = &s->peers[p->peer];
	struct iovec iov[UR_TX_MAX_IOV + 2];
	uint32_t len = pkt->hdr_len + pkt->paylen + pkt->pad + UR_ICRC_BYTES;
	struct ur_shm_rec rec = {
		.traffic_class = path->traffic_class,
		.hop_limit = path->hop_limit,
		.ipv6 = p->ipv6,
		.placed = pkt->placed,
	};
	int niov = 0, ret;

	memcpy(rec.sgid, p->sgid, 16);
	memcpy(rec.dgid, p->dgid, 16);
	iov[niov++] = (struct iovec){ (void *)pkt->hdr, pkt->hdr_len };
	memcpy(iov + niov, pkt->iov, (size_t)pkt->niov * sizeof(*iov));
	niov += pkt->niov;
	/* The pad, and the ICRC's room: nothing crossed a wire to check. */
	iov[niov++] = (struct iovec){ (void *)zeros, pkt->pad + UR_ICRC_BYTES };

	pthread_mutex_lock(&peer->lock);
	if (peer->dead || __atomic_load_n(&peer->pid, __ATOMIC_RELAXED) != p->pid) {
		ret = -ESRCH;
	} else {
		struct ur_shm_ring_ctl *c = &peer->f->ring[peer->ring];

		ret = ur_shm_ring_put(c, peer->f->data[peer->ring], &rec, iov, niov, len);
		if (ret == -EAGAIN)
			__atomic_store_n(&peer->blocked, true, __ATOMIC_RELAXED);
		else if (!ret && pkt->write_data)
			peer->write_tail = __atomic_load_n(&c->tail, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&peer->lock);
	if (!ret) {
		written |= 1ull << p->peer;
		UR_SHM_COUNT(s, sent_pkts, 1);
		if (ur_capture_on())
			capture_sent(p, path, pkt, p->pid);
	} else if (ret == -EAGAIN) {
		UR_SHM_COUNT(s, tx_eagain, 1);
	} else if (ret != -EFAULT) {   /* our own payload unreadable: the sender's error, not a loss */
		UR_SHM_COUNT(s, lost, 1);
	}
	return ret;
}

/* Rings the bell of each peer written to whose engine thread sleeps.  We
 * published the tail, then look at sleeping; the sleeper says so, then
 * looks at the tails (all sequentially consistent): one sees the other. */
int ur_shm_flush(struct ur_xport *x)
{
	struct ur_shm *s = ur_shm_of(x);
	uint64_t w = written;

	if (!w)
		return 0;
	written = 0;
	while (w) {
		struct ur_shm_peer *peer = &s->peers[__builtin_ctzll(w)];

		w &= w - 1;
		pthread_mutex_lock(&peer->lock);
		if (!peer->dead && peer->f && __atomic_load_n(&peer->f->sleeping, __ATOMIC_SEQ_CST))
			ur_shm_ring_bell(peer->bell_fd);
		pthread_mutex_unlock(&peer->lock);
	}
	return 0;
}

/* A peer whose ring was full is asked to ring our bell when it makes
 * room: whether there is room already (or the peer died, so that sends
 * fail for good and nobody need wait). */
static bool ask_room(struct ur_shm_peer *peer)
{
	struct ur_shm_ring_ctl *c;
	bool room = true;

	/* Most bells are for packets, not room: a peer none of our sends
	 * found full is passed over without its lock, which a long copy into
	 * it holds (shm_place.c).  One found full meanwhile asks itself
	 * (ur_shm_want_writable). */
	if (!__atomic_load_n(&peer->blocked, __ATOMIC_RELAXED))
		return false;
	pthread_mutex_lock(&peer->lock);
	if (!__atomic_load_n(&peer->blocked, __ATOMIC_RELAXED)) {
		room = false;
	} else if (!peer->dead && peer->f) {
		c = &peer->f->ring[peer->ring];
		/* Sequentially consistent, as the consumer's head: it moves
		 * head then looks at want_room, we the other way round. */
		__atomic_store_n(&c->want_room, 1, __ATOMIC_SEQ_CST);
		room = ur_shm_ring_has_room(c, UR_SHM_MAX_PKT);
	}
	pthread_mutex_unlock(&peer->lock);
	return room;
}

void ur_shm_room_check(struct ur_shm *s)
{
	bool any = false;

	for (unsigned i = 0; i < UR_SHM_PEERS; i++) {
		struct ur_shm_peer *peer = &s->peers[i];

		if (!__atomic_load_n(&peer->pid, __ATOMIC_ACQUIRE) || !ask_room(peer))
			continue;
		pthread_mutex_lock(&peer->lock);
		__atomic_store_n(&peer->blocked, false, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&peer->lock);
		any = true;
	}
	if (any && __atomic_load_n(&s->want, __ATOMIC_ACQUIRE))
		s->hooks.writable(s->hooks.arg);
}

void ur_shm_want_writable(struct ur_xport *x, bool waiting)
{
	struct ur_shm *s = ur_shm_of(x);

	__atomic_store_n(&s->want, waiting, __ATOMIC_RELEASE);
	if (!waiting)
		return;
	for (unsigned i = 0; i < UR_SHM_PEERS; i++) {
		struct ur_shm_peer *peer = &s->peers[i];

		/* Room came before we asked: our own bell says so, and
		 * writable runs from the reactor, not from under our caller. */
		if (__atomic_load_n(&peer->pid, __ATOMIC_ACQUIRE) && ask_room(peer)) {
			ur_shm_ring_bell(s->bell_fd);
			return;
		}
	}
}
