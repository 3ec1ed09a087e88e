/* Whether a registry slot's process still lives: its pid, and the start
 * time recorded with it, so that a pid the kernel handed to another
 * process since does not pass for the one that took the slot. */
#include "host/registry_priv.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

uint64_t ur_reg_proc_start_time(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The command name may contain spaces; fields resume after ')'. */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	/* After ") " come fields 3..: field 22 is the 20th of those. */
	p += 2;
	for (int field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (p)
		sscanf(p, "%llu", &start);
	return start;
}

bool ur_reg_slot_alive(const struct ur_reg_slot *s)
{
	pid_t pid = (pid_t)atomic_load(&s->pid);

	if (!pid)
		return false;
	if (kill(pid, 0) && errno == ESRCH)
		return false;
	return ur_reg_proc_start_time(pid) == s->start_time;
}
