/* QP number -> QP, for this process's QPs: open addressing with linear
 * probing and backward-shift deletion.  The stack's qps_lock guards every
 * change and the readers that hold it; a packet's reader holds no lock
 * (ur_qp_table_find_racing): the table's sequence count tells it to look
 * again when a change overlapped its look, and slots outgrown stay
 * allocated until the table goes, as a reader may still be in them. */
#ifndef UROCE_REL_QP_TABLE_H
#define UROCE_REL_QP_TABLE_H

#include <stdint.h>

struct ur_qp;

struct ur_qp_slots {
	uint32_t size;                  /* power of two */
	uint32_t *keys;                 /* 0: empty (QPN 0 is never allocated) */
	struct ur_qp **vals;
	struct ur_qp_slots *outgrown;   /* the smaller slots before these */
};

struct ur_qp_table {
	struct ur_qp_slots *slots;
	uint32_t count;
	unsigned seq;                   /* odd while a change is under way */
};

int ur_qp_table_init(struct ur_qp_table *t);
void ur_qp_table_fini(struct ur_qp_table *t);
int ur_qp_table_insert(struct ur_qp_table *t, uint32_t qpn, struct ur_qp *qp);
void ur_qp_table_remove(struct ur_qp_table *t, uint32_t qpn);
/* With qps_lock held (either way). */
struct ur_qp *ur_qp_table_find(const struct ur_qp_table *t, uint32_t qpn);
/* Without it, while changes may run: what the table held at one moment.
 * The QP found may be leaving; the caller must know it is not freed
 * before it is done (a reactor callback: destroy quiesces). */
struct ur_qp *ur_qp_table_find_racing(const struct ur_qp_table *t, uint32_t qpn);

#endif
