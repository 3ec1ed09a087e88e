#include "core/wq.h"

#include <errno.h>
#include <stdlib.h>

int ur_wq_init(struct ur_wq *q, uint32_t max, size_t slot_size)
{
	uint32_t size = 1;

	while (size < max)
		size <<= 1;
	q->buf = calloc(size, slot_size);
	if (!q->buf)
		return -ENOMEM;
	q->slot_size = slot_size;
	q->size = size;
	q->max = max;
	q->head = q->tail = 0;
	return 0;
}

void ur_wq_fini(struct ur_wq *q)
{
	free(q->buf);
	q->buf = NULL;
}

static int recv_wqe_fill(struct ur_recv_wqe *r, const struct ibv_recv_wr *wr, uint32_t max_sge)
{
	uint64_t len = 0;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge)
		return -EINVAL;
	r->wr_id = wr->wr_id;
	r->num_sge = (uint32_t)wr->num_sge;
	for (int i = 0; i < wr->num_sge; i++) {
		r->sge[i] = wr->sg_list[i];
		len += wr->sg_list[i].length;
	}
	r->length = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	return 0;
}

int ur_wq_post_recv(struct ur_wq *q, struct ibv_recv_wr *wr, uint32_t max_sge,
		    struct ibv_recv_wr **bad)
{
	int ret = 0;

	for (; wr; wr = wr->next) {
		if (ur_wq_full(q)) {
			ret = -ENOMEM;
			break;
		}
		ret = recv_wqe_fill(ur_wq_slot(q, q->tail), wr, max_sge);
		if (ret)
			break;
		q->tail++;
	}
	if (ret)
		*bad = wr;
	return ret;
}
