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
