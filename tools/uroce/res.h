/* uroce res: the live objects of the host's uroce processes (rdma res show). */
#ifndef UROCE_TOOLS_RES_H
#define UROCE_TOOLS_RES_H

#include <stdbool.h>
#include <sys/types.h>

struct ur_res_field {
	char *key;
	char *val;
	bool detail;                /* shown with -d only */
};

/* One object: a line of a process's snapshot, with its owner. */
struct ur_res_obj {
	char kind[16];              /* dev, qp, cq, mr, cm_id */
	pid_t pid;
	char comm[32];
	int nfields;
	struct ur_res_field *fields;
};

struct ur_res_set {
	struct ur_res_obj *objs;
	int n, cap;
	int asked, answered, refused;
};

/* Asks every process serving the resource window in this network
 * namespace, waiting up to timeout_ms for their answers; objects are
 * appended to set.  0, or -errno when nothing could be asked. */
int ur_res_query(struct ur_res_set *set, int timeout_ms);
void ur_res_set_free(struct ur_res_set *set);

/* The field's value, or NULL. */
const char *ur_res_get(const struct ur_res_obj *o, const char *key);

#endif
