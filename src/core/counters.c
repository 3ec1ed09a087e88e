#include "core/counters.h"

#include <string.h>

UR_ENUM_NAMES(UR_COUNTER_LIST, UR_CNT_NR, ur_counter_name);

int ur_counter_by_name(const char *name)
{
	for (int i = 0; i < UR_CNT_NR; i++)
		if (!strcmp(ur_counter_name[i], name))
			return i;
	return -1;
}
