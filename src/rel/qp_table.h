/* QP number -> QP, for this process's QPs: open addressing with linear
 * probing and backward-shift deletion; the stack's qps_lock guards it. */
#ifndef UROCE_REL_QP_TABLE_H
#define UROCE_REL_QP_TABLE_H

#include <stdint.h>

struct ur_qp;

struct ur_qp_table {
	uint32_t *keys;        /* 0: empty (QPN 0 is never allocated) */
	struct ur_qp **vals;
	uint32_t size;         /* power of two */
	uint32_t count;
};

int ur_qp_table_init(struct ur_qp_table *t);
void ur_qp_table_fini(struct ur_qp_table *t);
int ur_qp_table_insert(struct ur_qp_table *t, uint32_t qpn, struct ur_qp *qp);
void ur_qp_table_remove(struct ur_qp_table *t, uint32_t qpn);
struct ur_qp *ur_qp_table_find(const struct ur_qp_table *t, uint32_t qpn);

#endif
