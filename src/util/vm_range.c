#include "util/vm_range.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One line of /proc/self/maps: "start-end perms ...".  False if it is not
 * one. */
static bool parse_line(const char *s, const char *end, uint64_t *lo, uint64_t *hi,
		       bool *r, bool *w)
{
	char *p;

	*lo = strtoull(s, &p, 16);
	if (p >= end || *p != '-')
		return false;
	*hi = strtoull(p + 1, &p, 16);
	if (p + 3 >= end || *p != ' ')
		return false;
	*r = p[1] == 'r';
	*w = p[2] == 'w';
	return true;
}

bool ur_vm_range_ok(uint64_t addr, uint64_t len, bool write)
{
	char buf[8192];
	size_t have = 0;
	uint64_t cur = addr, want;
	bool ok = false, done = false;
	int fd;

	if (!len)
		return true;
	want = addr + len;
	if (want < addr)
		return false;          /* wraps */
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while (!done) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *s = buf, *nl;

		if (n <= 0)
			break;
		have += (size_t)n;
		buf[have] = '\0';
		/* The mappings come in address order: walk them from cur. */
		while (!done && (nl = memchr(s, '\n', have - (size_t)(s - buf)))) {
			uint64_t lo, hi;
			bool r, w;

			if (parse_line(s, nl, &lo, &hi, &r, &w) && hi > cur) {
				if (lo > cur || !r || (write && !w)) {
					done = true;       /* a hole, or not allowed */
				} else {
					cur = hi;
					ok = done = cur >= want;
				}
			}
			s = nl + 1;
		}
		have -= (size_t)(s - buf);
		memmove(buf, s, have);
		if (have == sizeof(buf) - 1)
			have = 0;                  /* a line longer than the buffer: skip */
	}
	close(fd);
	return ok;
}
