/* The resource window's protocol: how `uroce res` asks a process of this
 * host for its live objects (docs/design.md, "The resource window").
 *
 * Each process with a stack binds a unix datagram socket in the abstract
 * namespace, "\0" UR_RES_SOCK_PREFIX "<pid>" (".<n>" added when a process
 * of another pid namespace has that name), so it is per network namespace,
 * like the host registry, and lists in /proc/net/unix.  A querier sends a
 * struct ur_res_msg of kind UR_RES_QUERY from a bound socket; the process
 * answers with a UR_RES_ANSWER whose status is 0 and which carries, as
 * SCM_RIGHTS, a memfd holding the snapshot, or a negative errno and no fd
 * (EBUSY: a snapshot is being taken, ask again).  The kernel attaches both
 * sides' credentials (SO_PASSCRED): only the process's own user and root
 * are answered, and the querier learns the pid as its own namespace sees it.
 *
 * The snapshot is text, one object a line:
 *
 *     KIND key=value key=value ...
 *
 * KIND is dev, qp, cq, mr or cm_id, or busy ("busy what=cm_id": those
 * were left out); values have no spaces; a key written with a leading '+'
 * is a detail (`uroce res -d`).  The tool adds pid and
 * comm.  Pure: shared with tools/uroce, same host so host byte order. */
#ifndef UROCE_REL_RES_PROTO_H
#define UROCE_REL_RES_PROTO_H

#include <stdint.h>

#define UR_RES_SOCK_PREFIX "uroce-res."
#define UR_RES_MAGIC 0x75524553u      /* "uRES" */
#define UR_RES_VERSION 1u

enum ur_res_kind {
	UR_RES_QUERY = 1,
	UR_RES_ANSWER = 2,
};

struct ur_res_msg {
	uint32_t magic;
	uint16_t version;
	uint16_t kind;               /* enum ur_res_kind */
	int32_t status;              /* ANSWER: 0 (fd attached) or -errno */
	uint32_t len;                /* ANSWER: bytes of the snapshot */
};

_Static_assert(sizeof(struct ur_res_msg) == 16, "ur_res_msg is a wire format");

#endif
