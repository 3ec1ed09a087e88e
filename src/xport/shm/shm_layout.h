/* The shared-memory transport's file, as every process of the user sees it.
 *
 * Each process that receives by shared memory owns one file,
 * /dev/shm/uroce-<uid>-shm-<pid>-v<version> (mode 0600, the user's alone),
 * and a FIFO beside it, its doorbell.  The file holds one ring per sending
 * process: a sender claims a free ring (owner 0 -> its pid) and is its only
 * producer; the owner of the file is every ring's only consumer.  Offsets,
 * never pointers; a version in the name and the header, so that two
 * layouts never meet.
 *
 * Who writes what: the producer writes records and then the ring's tail
 * (release) and sets want_room when it waits for room; the consumer reads
 * records up to the tail (acquire), then writes head (release); the owner
 * alone writes sleeping and dozing and frees a ring whose producer died.
 *
 * The file also publishes the owner's regions and QPs, so that a producer
 * can copy a large WRITE straight into the owner's memory
 * (process_vm_writev) and send only its headers through the ring.
 */
#ifndef UROCE_XPORT_SHM_SHM_LAYOUT_H
#define UROCE_XPORT_SHM_SHM_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#define UR_SHM_MAGIC 0x75534d52u        /* "uSMR" */
#define UR_SHM_VERSION 3u
#define UR_SHM_RINGS 32u                /* sending processes per receiver */
#define UR_SHM_RING_BYTES (1u << 20)    /* a power of two */
#define UR_SHM_ALIGN 64u                /* records start on a cache line */
#define UR_SHM_MAX_PKT 8192u            /* BTH .. ICRC: MTU 4096 and headers, with room */
#define UR_SHM_REC_WRAP 0xffffffffu     /* "the rest of the ring is empty: go to 0" */
#define UR_SHM_REGIONS 1024u            /* regions a process exposes for one copy */
#define UR_SHM_QPS 4096u                /* QPs it exposes */
#define UR_SHM_PROBE 8u                 /* slots looked at from a key's own */

/* What precedes each packet in a ring. */
struct ur_shm_rec {
	uint32_t len;                   /* packet bytes (BTH .. ICRC), or UR_SHM_REC_WRAP */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t ipv6;
	uint8_t reserved;
	uint8_t sgid[16];
	uint8_t dgid[16];
	uint32_t placed;                /* payload bytes the producer placed itself */
	uint8_t pad[4];
};
_Static_assert(sizeof(struct ur_shm_rec) == 48, "a record header is 48 bytes");

/* A record's room in the ring: header and packet, to a cache line. */
static inline uint32_t ur_shm_rec_room(uint32_t len)
{
	return (uint32_t)((sizeof(struct ur_shm_rec) + len + UR_SHM_ALIGN - 1) & ~(UR_SHM_ALIGN - 1));
}

/* One ring's indices: free-running byte counts, each on its own line. */
struct ur_shm_ring_ctl {
	uint32_t owner;                 /* the producer's pid; 0: free */
	uint32_t reserved;
	uint64_t producer_id;           /* the producer's random id (a pid can be reused) */
	uint32_t copying;               /* producer: a region slot + 1 it copies into now */
	uint8_t pad0[44];
	uint64_t tail;                  /* producer: bytes written */
	uint32_t want_room;             /* producer waits: ring its bell when head moves */
	uint32_t reserved1;
	uint64_t head_seen;             /* producer: head when it last looked (its own line) */
	uint8_t pad1[40];
	uint64_t head;                  /* consumer: bytes read */
	uint8_t pad2[56];
};
_Static_assert(sizeof(struct ur_shm_ring_ctl) == 192, "three cache lines per ring");
_Static_assert(offsetof(struct ur_shm_ring_ctl, tail) == 64, "tail on its own line");
_Static_assert(offsetof(struct ur_shm_ring_ctl, head) == 128, "head on its own line");

/* A region the owner exposes for one copy (struct ur_xport_region).  The
 * owner fills it with rkey 0, then publishes rkey; it revokes by zeroing
 * rkey, then waits while a ring's copying names the slot.  A copier sets
 * copying, then reads rkey (both sequentially consistent): either it sees
 * the revocation or the owner sees it copying.
 *
 * A shared region (share_id not 0) lies in a memfd, the owner's fd
 * share_fd, mapped at share_base in the owner: a copier maps it once
 * (opening /proc/<owner>/fd/<share_fd> while its copying names the slot,
 * so the fd is still that memfd) and copies with memcpy.  share_id, never
 * reused by the owner, tells a copier whether its mapping is still the
 * region's. */
struct ur_shm_region {
	uint32_t rkey;                  /* 0: a free slot */
	uint32_t pd;
	uint32_t access;
	int32_t share_fd;
	uint64_t iova;
	uint64_t length;
	uint64_t host;                  /* in the owner's address space */
	uint64_t share_id;              /* 0: not shared, the kernel copies */
	uint64_t share_base;            /* where the memfd's byte 0 is, in the owner */
	uint64_t share_len;             /* its size */
};
_Static_assert(sizeof(struct ur_shm_region) == 64, "a region is 64 bytes");

/* A QP the owner exposes: the PD its remote keys must belong to, and the
 * remote access it grants (its qp_access_flags). */
struct ur_shm_qp {
	uint32_t qpn;                   /* 0: a free slot; written after the rest */
	uint32_t pd;
	uint32_t access;
	uint32_t reserved;
};

struct ur_shm_file {
	uint32_t magic;
	uint32_t version;
	uint64_t layout_size;           /* sizeof(struct ur_shm_file) */
	uint32_t pid;                   /* the consumer */
	uint32_t reserved;
	uint8_t pad0[40];
	uint32_t sleeping;              /* the consumer's engine thread sleeps: ring the bell */
	uint32_t dozing;                /* ... or naps: a small WRITE is better placed */
	uint8_t pad1[56];
	uint64_t active;                /* a bit per ring claimed */
	uint8_t pad2[56];
	struct ur_shm_ring_ctl ring[UR_SHM_RINGS];
	struct ur_shm_region region[UR_SHM_REGIONS];
	struct ur_shm_qp qp[UR_SHM_QPS];
	/* To a page, so that each ring's data starts on one. */
	uint8_t pad3[4096 - (192 + UR_SHM_RINGS * sizeof(struct ur_shm_ring_ctl) +
			     UR_SHM_REGIONS * sizeof(struct ur_shm_region) +
			     UR_SHM_QPS * sizeof(struct ur_shm_qp)) % 4096];
	uint8_t data[UR_SHM_RINGS][UR_SHM_RING_BYTES];
};
_Static_assert(offsetof(struct ur_shm_file, sleeping) == 64, "sleeping on its own line");
_Static_assert(offsetof(struct ur_shm_file, data) % 4096 == 0, "ring data page-aligned");
_Static_assert(UR_SHM_RINGS <= 64, "active is a 64-bit mask");
_Static_assert((UR_SHM_REGIONS & (UR_SHM_REGIONS - 1)) == 0 && (UR_SHM_QPS & (UR_SHM_QPS - 1)) == 0,
	       "tables a power of two");
_Static_assert((UR_SHM_RING_BYTES & (UR_SHM_RING_BYTES - 1)) == 0, "ring size a power of two");
_Static_assert(UR_SHM_MAX_PKT + 2 * UR_SHM_ALIGN < UR_SHM_RING_BYTES / 4, "records fit a ring");

#endif
