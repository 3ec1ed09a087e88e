/* The process's objects (core/process.h), made with the library. */
#include "core/process.h"

static struct ur_process process = {
	.devices = { .lock = PTHREAD_MUTEX_INITIALIZER },
	.xrcds = { .lock = PTHREAD_MUTEX_INITIALIZER, .all = UR_LIST_INIT(process.xrcds.all) },
};

struct ur_process *ur_process(void)
{
	return &process;
}
