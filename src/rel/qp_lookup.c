/* Finding a QP by number and locking it: the one way the receive path,
 * the resource window and the CM's error hook reach a QP they hold no
 * reference to. */
#include "rel/stack.h"

#include "core/qp.h"

struct ur_qp *ur_stack_lock_qp(struct ur_stack *s, uint32_t qpn)
{
	struct ur_qp *qp;

	/* Found and locked under the table's lock: a QP being destroyed
	 * leaves the table first and then waits (quiesce) for the callback
	 * in progress and for its lock before it is freed. */
	pthread_rwlock_rdlock(&s->qps_lock);
	qp = ur_qp_table_find(&s->qps, qpn);
	if (qp)
		pthread_mutex_lock(&qp->lock);
	pthread_rwlock_unlock(&s->qps_lock);
	return qp;
}
