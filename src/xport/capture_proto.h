/* `uroce capture`: what the library and the capture tool share.
 *
 * One small file per user and network namespace in /dev/shm holds the
 * switch: every process maps it when its transports open and, per packet,
 * loads one word of it.  While a capture runs the word is set, and each
 * process connects (once per capture session) to the abstract unix
 * seqpacket socket the tool listens on (abstract names belong to the
 * network namespace, so both sides meet only there) and sends it one
 * record per packet: the header below, then the RoCE bytes from the BTH
 * through the ICRC (or a local message's bytes).  The tool adds the IP and
 * UDP headers from the record's addresses and writes pcapng.
 *
 * Same host, same build: host byte order, no compatibility beyond the
 * version.  Both names carry the user as the machine sees it
 * (util/host_uid.h), so that a process in a user namespace of the user's
 * own and a capture outside it meet.  Pure definitions: the tool compiles
 * this header in as it is.
 */
#ifndef UROCE_XPORT_CAPTURE_PROTO_H
#define UROCE_XPORT_CAPTURE_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define UR_CAP_MAGIC 0x75434150u     /* "uCAP" */
#define UR_CAP_VERSION 1u

/* The switch file.  Written by the tool (on, session); dropped is added to
 * by the processes. */
struct ur_cap_shared {
	uint32_t magic;
	uint32_t version;
	uint32_t on;                 /* nonzero while a capture listens */
	uint32_t session;            /* new for every capture: processes reconnect */
	uint64_t dropped;            /* records a process could not hand over */
	uint8_t reserved[40];
};
_Static_assert(sizeof(struct ur_cap_shared) == 64, "capture switch layout");
_Static_assert(offsetof(struct ur_cap_shared, dropped) == 16, "capture switch layout");

enum ur_cap_kind {
	UR_CAP_ROCE = 1,             /* a RoCE packet, BTH .. ICRC */
	UR_CAP_MSG = 2,              /* a local message between two processes */
};

enum ur_cap_dir {
	UR_CAP_TX = 1,               /* sent by pid */
	UR_CAP_RX = 2,               /* received by pid */
};

/* How the packet travelled. */
enum ur_cap_via {
	UR_CAP_VIA_UDP = 1,          /* a UDP socket: the wire, or loopback */
	UR_CAP_VIA_UNIX = 2,         /* a local peer's unix socket */
	UR_CAP_VIA_SHM = 3,          /* a ring in shared memory */
};

struct ur_cap_rec {
	uint32_t magic;
	uint8_t version;
	uint8_t kind;                /* enum ur_cap_kind */
	uint8_t dir;                 /* enum ur_cap_dir */
	uint8_t via;                 /* enum ur_cap_via */
	int32_t pid;                 /* the process that sent or received it */
	int32_t peer_pid;            /* the process at the other end, when of this host; 0 */
	uint64_t time_ns;            /* CLOCK_REALTIME */
	uint8_t family;              /* AF_INET or AF_INET6 */
	uint8_t tclass;
	uint8_t hop_limit;
	uint8_t reserved0;
	uint16_t sport, dport;       /* UDP ports */
	uint16_t ip_id;              /* IPv4 identification */
	uint16_t reserved1;
	uint8_t saddr[16], daddr[16]; /* IPv4 in the first 4 bytes */
	uint32_t placed;             /* payload copied straight into the peer, not in the bytes */
	uint32_t len;                /* bytes after this header */
	uint32_t reserved2;
};
_Static_assert(sizeof(struct ur_cap_rec) == 80, "capture record layout");

/* Largest record: the header and a packet of the biggest MTU with room. */
#define UR_CAP_REC_MAX (sizeof(struct ur_cap_rec) + 65536)

/* The switch file of user uid (ur_host_uid) in this network namespace. */
static inline int ur_cap_shared_path(char *buf, size_t len, unsigned uid)
{
	struct stat st;
	int n;

	if (stat("/proc/self/ns/net", &st))
		st.st_ino = 0;
	n = snprintf(buf, len, "/dev/shm/uroce-%u-net%lu.capture", uid, (unsigned long)st.st_ino);
	return n > 0 && (size_t)n < len ? 0 : -1;
}

/* The tool's socket: abstract, so one per network namespace and user. */
static inline socklen_t ur_cap_sock_addr(struct sockaddr_un *sun, unsigned uid)
{
	int n;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	n = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1, "uroce-capture-%u", uid);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

#endif
