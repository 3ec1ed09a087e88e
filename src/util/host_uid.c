#include "util/host_uid.h"

#include <stdio.h>
#include <unistd.h>

/* Each line of uid_map: first uid inside, first uid outside, count. */
static uid_t map_out(uid_t uid)
{
	unsigned long in, out, count;
	FILE *f = fopen("/proc/self/uid_map", "re");
	uid_t ret = uid;

	if (!f)
		return uid;
	while (fscanf(f, "%lu %lu %lu", &in, &out, &count) == 3) {
		if (uid >= in && uid - in < count) {
			ret = (uid_t)(out + (uid - in));
			break;
		}
	}
	fclose(f);
	return ret;
}

uid_t ur_host_uid(void)
{
	/* Read once: a process does not change user namespace under uroce
	 * (setns into another user namespace needs a single thread). */
	static uid_t cached = (uid_t)-1;
	uid_t uid = __atomic_load_n(&cached, __ATOMIC_RELAXED);

	if (uid == (uid_t)-1) {
		uid = map_out(geteuid());
		__atomic_store_n(&cached, uid, __ATOMIC_RELAXED);
	}
	return uid;
}
