/* The local messages of a shared XRC domain.
 *
 * A file-backed XRC domain is one domain for every process of the host
 * that opens the file on the same device.  When a request reaches an XRC
 * target QP of process A for an XRC SRQ that process B owns, A keeps the
 * transport (PSN, ACK, NAK) and hands the packet's payload to B for
 * placement with a DELIVER message; B takes the receive WQE, copies, and
 * completes on the SRQ's CQ, then answers with a REPLY.  A acknowledges the
 * PSN only when the REPLY says the bytes are placed (docs/design.md, XRC).
 *
 * Both travel as local messages of the transport (struct
 * ur_xport_ops.local_msg), which tells them from packets by its own
 * framing.  Same host, so fields are in host byte order.
 * Encoding and decoding are pure: tests/unit/rel/xrc_msg_ut.c.
 */
#ifndef UROCE_REL_XRC_MSG_H
#define UROCE_REL_XRC_MSG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/enum_name.h"

#define UR_XRC_MAGIC 0x75585243u     /* "uXRC" */
#define UR_XRC_VERSION 1
#define UR_XRC_DEVNAME 64            /* IBV_SYSFS_NAME_MAX */

enum ur_xrc_kind {
	UR_XRC_DELIVER = 1,          /* A -> B: place this payload */
	UR_XRC_REPLY = 2,            /* B -> A: what became of it */
};

/* DELIVER flags: where the packet sits in its message, what it carries. */
enum {
	UR_XRC_F_FIRST = 1 << 0,
	UR_XRC_F_LAST = 1 << 1,
	UR_XRC_F_IMM = 1 << 2,
	UR_XRC_F_SE = 1 << 3,
};

/* The values travel in a REPLY: add at the end only. */
#define UR_XRC_STATUS_LIST(X)					\
	/* placed (or placed before: a duplicate) */		\
	X(UR_XRC_OK, "ok")					\
	/* the SRQ has no receive WQE posted */			\
	X(UR_XRC_RNR, "rnr")					\
	/* no such SRQ in that domain, or out of sequence */	\
	X(UR_XRC_INVALID, "invalid")				\
	/* the receive buffer is too small */			\
	X(UR_XRC_LEN_ERR, "len_err")				\
	/* the receive buffer's lkey is invalid */		\
	X(UR_XRC_OP_ERR, "op_err")

UR_ENUM_DECLARE(ur_xrc_status, UR_XRC_STATUS_LIST, UR_XRC_STATUS_NR, ur_xrc_status_name);

/* One header for both kinds; DELIVER fields are zero in a REPLY. */
struct ur_xrc_msg {
	uint32_t magic;
	uint16_t version;
	uint16_t kind;
	int32_t src_pid;             /* the sender: where a REPLY goes */
	uint32_t tgt_qpn;            /* the XRC target QP (in A) */
	uint32_t srqn;               /* the XRC SRQ (in B) */
	uint32_t psn;                /* the request packet's PSN */
	uint32_t gen;                /* the target QP's incarnation (changes at RTR) */
	uint32_t status;             /* REPLY: enum ur_xrc_status */
	/* DELIVER */
	uint64_t xrcd_dev, xrcd_ino; /* the domain: the file's inode */
	char ibdev[UR_XRC_DEVNAME];  /* ... on this device */
	uint32_t src_qpn;            /* the initiator QP, for wc.src_qp */
	uint32_t flags;              /* UR_XRC_F_* */
	uint32_t imm;                /* network byte order, as in the packet */
	uint32_t paylen;             /* payload bytes following the header */
};
_Static_assert(sizeof(struct ur_xrc_msg) == 128, "XRC local message layout");
_Static_assert(offsetof(struct ur_xrc_msg, xrcd_dev) == 32 &&
	       offsetof(struct ur_xrc_msg, src_qpn) == 112, "XRC local message layout (docs/wire.md)");

/* Fills the fixed fields of a message of kind. */
void ur_xrc_msg_init(struct ur_xrc_msg *m, enum ur_xrc_kind kind, pid_t src_pid);
/* Checks a received datagram of len bytes and copies its header to *m;
 * *payload points into buf.  0, or -EINVAL (not one of ours, wrong
 * version, bad kind, status or length: the caller counts it malformed). */
int ur_xrc_msg_parse(const uint8_t *buf, size_t len, struct ur_xrc_msg *m,
		     const uint8_t **payload);

#endif
