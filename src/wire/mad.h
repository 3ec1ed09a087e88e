/* Management datagrams (IBA 13.4) as RoCEv2 carries them to QP1, and the
 * communication manager's messages in them (IBA 12.6): REQ, MRA, REJ, REP,
 * RTU, DREQ, DREP, and SIDR_REQ/SIDR_REP (IBA 12.11: a UD QP's number and
 * Q_Key, asked for by service ID).  Plus the header rdma_cm puts in a REQ's private data
 * (its IP addresses and port).
 *
 * A parsed message is a plain struct (host order); pack writes the 256-byte
 * MAD, parse checks the MAD header and the attribute before reading.  No
 * I/O here.
 */
#ifndef UROCE_WIRE_MAD_H
#define UROCE_WIRE_MAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/roce_hdr.h"

#define UR_MAD_BYTES		256
#define UR_MAD_HDR_BYTES	24
#define UR_GSI_QKEY		0x80010000u

#define UR_MAD_BASE_VERSION	1
#define UR_MAD_CLASS_CM		0x07
#define UR_MAD_CM_VERSION	2
#define UR_MAD_METHOD_SEND	0x03

enum ur_cm_attr {
	UR_CM_REQ = 0x0010,
	UR_CM_MRA = 0x0011,
	UR_CM_REJ = 0x0012,
	UR_CM_REP = 0x0013,
	UR_CM_RTU = 0x0014,
	UR_CM_DREQ = 0x0015,
	UR_CM_DREP = 0x0016,
	UR_CM_SIDR_REQ = 0x0017,
	UR_CM_SIDR_REP = 0x0018,
};

/* Room for private data in each message (IBA 12.6). */
#define UR_CM_REQ_PRIV	92
#define UR_CM_MRA_PRIV	222
#define UR_CM_REJ_PRIV	148
#define UR_CM_REP_PRIV	196
#define UR_CM_RTU_PRIV	224
#define UR_CM_DREQ_PRIV	220
#define UR_CM_DREP_PRIV	224
#define UR_CM_SIDR_REQ_PRIV 216
#define UR_CM_SIDR_REP_PRIV 136
#define UR_CM_PRIV_MAX	224

/* REJ reasons (IBA table 112) used here. */
enum ur_cm_rej_reason {
	UR_REJ_TIMEOUT = 1,
	UR_REJ_STALE_CONN = 10,
	UR_REJ_INVALID_SERVICE_ID = 8,
	UR_REJ_CONSUMER = 28,
};

/* SIDR_REP status (IBA table 122). */
enum ur_sidr_status {
	UR_SIDR_OK = 0,
	UR_SIDR_UNSUPPORTED = 1,      /* nobody serves the service ID */
	UR_SIDR_REJECT = 2,           /* the service turned the request away */
	UR_SIDR_NO_QP = 3,
};

/* Which message a REJ or MRA is about (IBA 12.6.7). */
enum ur_cm_msg_ref { UR_CM_REF_REQ = 0, UR_CM_REF_REP = 1, UR_CM_REF_OTHER = 2 };

/* Transport service types in a REQ. */
enum ur_cm_transport { UR_CM_RC = 0, UR_CM_UC = 1, UR_CM_XRC = 3 };

struct ur_cm_msg {
	uint16_t attr;               /* enum ur_cm_attr */
	uint64_t tid;                /* transaction id of the MAD */
	/* SIDR_REQ: its request ID is local_comm_id; SIDR_REP: the request
	 * ID it answers is remote_comm_id. */
	uint32_t local_comm_id, remote_comm_id;
	/* REQ, SIDR_REQ, SIDR_REP */
	uint64_t service_id;
	uint64_t ca_guid;            /* REQ, REP */
	uint32_t qkey;               /* REQ, REP, SIDR_REP */
	uint32_t qpn;                /* REQ, REP, SIDR_REP: the sender's QP; DREQ: the receiver's */
	uint8_t resp_res, init_depth;
	uint8_t transport;
	uint8_t remote_cm_timeout, local_cm_timeout;
	uint32_t psn;                /* REQ, REP: starting PSN */
	uint8_t retry_count, rnr_retry, max_cm_retries;
	bool srq, flow_control;
	uint16_t pkey;               /* REQ, SIDR_REQ */
	uint8_t mtu;                 /* enum ibv_mtu */
	uint8_t local_gid[16], remote_gid[16];
	uint32_t flow_label;
	uint8_t traffic_class, hop_limit, sl, ack_timeout;
	/* REP */
	uint8_t target_ack_delay;
	/* REJ, MRA */
	uint8_t msg_ref;             /* enum ur_cm_msg_ref */
	uint16_t reason;             /* REJ */
	uint8_t ari_len;
	uint8_t ari[72];
	uint8_t service_timeout;     /* MRA */
	uint8_t sidr_status;         /* SIDR_REP: enum ur_sidr_status */
	/* every message */
	uint8_t priv_len;            /* bytes the message has room for */
	uint8_t priv[UR_CM_PRIV_MAX];
};

/* Room for private data in a message of attribute attr, 0 if unknown. */
size_t ur_cm_priv_room(uint16_t attr);

/* Writes the 256-byte MAD for m (its attr, tid and fields).  priv_len may
 * be less than the room (the rest is zero); -EINVAL if more or attr
 * unknown. */
int ur_cm_pack(const struct ur_cm_msg *m, uint8_t mad[UR_MAD_BYTES]);
/* Reads a MAD of len bytes: 0, or -EINVAL (not a CM MAD we know, or
 * short).  priv_len is the whole room of the message. */
int ur_cm_parse(const uint8_t *mad, size_t len, struct ur_cm_msg *m);

/* How the host delivers a CM MAD: to whoever listens on a service ID (a
 * REQ or SIDR_REQ) or to whoever owns the comm ID it is addressed to. */
struct ur_cm_dest {
	bool by_service;
	uint64_t service_id;
	uint32_t comm_id;
};
/* From the MAD alone (no full parse): 0 or -EINVAL. */
int ur_cm_dest_of(const uint8_t *mad, size_t len, struct ur_cm_dest *d);

/* rdma_cm's header at the start of a REQ's private data (IP-based
 * service IDs): version 0, IP version, the active side's port, and both
 * addresses as 16 bytes (IPv4 in the last 4). */
#define UR_CMA_HDR_BYTES	36
#define UR_CMA_PS_TCP		0x0106
#define UR_CMA_PS_UDP		0x0111
#define UR_CMA_PS_IB		0x013f
#define UR_CMA_SID_BASE		0x0000000001000000ull

struct ur_cma_hdr {
	uint8_t ip_version;          /* 4 or 6 */
	uint16_t src_port;
	uint8_t src[16], dst[16];    /* IPv4: the address in bytes 12..15 */
};

uint64_t ur_cma_service_id(uint16_t ps, uint16_t port);
void ur_cma_hdr_pack(const struct ur_cma_hdr *h, uint8_t out[UR_CMA_HDR_BYTES]);
int ur_cma_hdr_parse(const uint8_t *in, size_t len, struct ur_cma_hdr *h);

#endif
