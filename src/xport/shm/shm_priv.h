/* Internals shared by the shared-memory transport's files.  They call one
 * way, from the top: shm_open.c (ops, our own file and doorbell,
 * housekeeping) -> shm_rx.c (our rings, our doorbell) -> shm_tx.c
 * (resolve, send, flush, room) -> shm_place.c (one copy into a peer) ->
 * shm_expose.c (our published regions and QPs, and how a peer reads
 * them) -> shm_peers.c (the files we send into, bells) -> shm_ring.c (one
 * ring). */
#ifndef UROCE_XPORT_SHM_SHM_PRIV_H
#define UROCE_XPORT_SHM_SHM_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/compiler.h"
#include "xport/shm/shm.h"
#include "xport/shm/shm_layout.h"

#define UR_SHM_PEERS 64                 /* processes we send to */

/* A path: which peer entry, for which process, and the addresses the
 * receiver is told. */
struct ur_shm_path {
	pid_t pid;
	uint32_t peer;                  /* index in ur_shm.peers */
	uint8_t sgid[16];
	uint8_t dgid[16];
	bool ipv6;
};
_Static_assert(sizeof(struct ur_shm_path) <= UR_PATH_PRIV_BYTES, "a shm path fits a path");

/* One of a peer's shared regions, mapped here: its memfd whole. */
struct ur_shm_map {
	uint64_t id;                    /* the slot's share_id when mapped; 0: none */
	uint8_t *base;
	uint64_t len;
};

/* A process we send to: its file, the ring we claimed there, its bell. */
struct ur_shm_peer {
	pthread_mutex_t lock;           /* producers of this process; dead, f, bell_fd */
	pid_t pid;                      /* 0: a free entry (under peers_lock) */
	bool dead;                      /* gone: what is sent is lost */
	bool blocked;                   /* a send found the ring full */
	bool place_refused;             /* the kernel refused a single copy into it */
	bool placed_once;               /* a single copy into it worked (logged) */
	bool map_refused;               /* its shared regions could not be mapped (logged) */
	bool mapped_once;               /* a memcpy into one of them worked (logged) */
	/* Its shared regions we mapped, by slot of its region table
	 * (allocated on first use; peer lock). */
	struct ur_shm_map *maps;
	/* Our ring's tail after the last WRITE bytes sent through it: a copy
	 * straight into the peer waits until it has taken them (in order). */
	uint64_t write_tail;
	struct ur_shm_file *f;
	unsigned ring;
	int bell_fd;                    /* its FIFO, write end */
};

struct ur_shm {
	struct ur_xport xport;
	struct ur_engine *engine;
	struct ur_registry *reg;        /* the process's view of the host registry: peers' owners */
	struct ur_xport_hooks hooks;
	uint64_t id;                    /* ours, written into the rings we claim */

	/* Ours: the file others send into, its FIFO (read end, watched). */
	struct ur_shm_file *own;
	char own_path[80], bell_path[80];
	int bell_fd;
	/* The bell of each of our rings' producers, opened when first rung. */
	int producer_bell[UR_SHM_RINGS];
	pid_t producer_bell_pid[UR_SHM_RINGS];

	pthread_mutex_t peers_lock;     /* entries' pid, creation */
	struct ur_shm_peer peers[UR_SHM_PEERS];
	bool want;                      /* the protocol waits for room */

	pthread_mutex_t expose_lock;    /* our file's region and QP tables */
	uint64_t place_min;             /* WRITEs this long or longer: one copy */

	struct ur_xport_stats stats;
};

#define UR_SHM_COUNT(s, field, n) __atomic_add_fetch(&(s)->stats.field, (n), __ATOMIC_RELAXED)

static inline struct ur_shm *ur_shm_of(struct ur_xport *x)
{
	return container_of(x, struct ur_shm, xport);
}

/* shm_tx.c */
int ur_shm_resolve(struct ur_xport *x, const union ibv_gid *sgid, unsigned ifindex,
		   const union ibv_gid *dgid, uint32_t dqpn, struct ur_path *path);
int ur_shm_send(struct ur_xport *x, const struct ur_path *path, const struct ur_tx_pkt *pkt);
int ur_shm_flush(struct ur_xport *x);
void ur_shm_want_writable(struct ur_xport *x, bool waiting);
/* Our bell rang: rings we wait on may have room. */
void ur_shm_room_check(struct ur_shm *s);

/* shm_place.c */
int ur_shm_place(struct ur_xport *x, const struct ur_path *path, uint32_t dqpn, uint32_t rkey,
		 uint64_t va, const struct iovec *iov, int niov, uint64_t len);

int ur_shm_fetch(struct ur_xport *x, const struct ur_path *path, uint32_t dqpn, uint32_t rkey,
		 uint64_t va, const struct iovec *iov, int niov, uint64_t len);

/* shm_expose.c */
int ur_shm_expose_region(struct ur_xport *x, const struct ur_xport_region *r);
void ur_shm_revoke_region(struct ur_xport *x, uint32_t rkey);
void ur_shm_expose_qp(struct ur_xport *x, uint32_t qpn, uint32_t pd, uint32_t access);
/* In a peer's file: the PD QP qpn checks keys against (0: not published)
 * and the remote access it grants; the slot of region rkey, or -ENOENT. */
uint32_t ur_shm_qp_pd(const struct ur_shm_file *f, uint32_t qpn, uint32_t *access);
int ur_shm_region_slot(const struct ur_shm_file *f, uint32_t rkey);

/* shm_peers.c */
/* A process's ring file (or, with bell, its doorbell FIFO) in /dev/shm. */
void ur_shm_file_name(char *buf, size_t len, pid_t pid, bool bell);
void ur_shm_peers_init(struct ur_shm *s);
/* The entry for pid, mapping its file and claiming a ring: its index, or
 * -errno (-ENOENT: it has no file). */
int ur_shm_peer_get(struct ur_shm *s, pid_t pid);
/* Tick: forget peers that died. */
void ur_shm_peers_reap(struct ur_shm *s);
void ur_shm_peers_close(struct ur_shm *s);
/* Peer lock held, its copying naming slot: where the memfd of the shared
 * region in slot is mapped here (mapped now if need be), or NULL (not
 * shared, or it cannot be mapped: the kernel copies). */
uint8_t *ur_shm_peer_region_map(struct ur_shm_peer *p, unsigned slot);
/* pid's bell, opened read-write (never a FIFO without a reader: no SIGPIPE): the fd or -errno. */
int ur_shm_open_bell(pid_t pid);
/* Writes a byte to a FIFO (a bell); a full FIFO has rung already. */
void ur_shm_ring_bell(int fd);

/* shm_rx.c */
bool ur_shm_poll(void *arg);
bool ur_shm_sleep(void *arg, bool going);
bool ur_shm_active(void *arg);
bool ur_shm_pending(void *arg);
bool ur_shm_rx_pending(struct ur_xport *x);
void ur_shm_doze(void *arg, bool dozing);
void ur_shm_on_bell(void *arg, uint32_t events);
/* Tick: free the rings of producers that died. */
void ur_shm_rx_reap(struct ur_shm *s);
void ur_shm_rx_close(struct ur_shm *s);

#endif
