/* rsockets by number: the number is a file descriptor the rsocket owns, so
 * a table indexed by it, grown on demand, finds them in O(1). */
#include <errno.h>
#include <stdlib.h>

#include "rsocket/rsocket.h"

static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct rsock **table;
static int table_size;

int rs_table_add(struct rsock *rs)
{
	int ret = 0;

	if (rs->fd < 0)
		return -EBADF;
	pthread_rwlock_wrlock(&table_lock);
	if (rs->fd >= table_size) {
		int n = table_size ? table_size : 1024;
		struct rsock **t;

		while (n <= rs->fd)
			n *= 2;
		t = realloc(table, (size_t)n * sizeof(*t));
		if (!t) {
			ret = -ENOMEM;
			goto out;
		}
		for (int i = table_size; i < n; i++)
			t[i] = NULL;
		table = t;
		table_size = n;
	}
	table[rs->fd] = rs;
out:
	pthread_rwlock_unlock(&table_lock);
	return ret;
}

struct rsock *rs_table_get(int fd)
{
	struct rsock *rs = NULL;

	pthread_rwlock_rdlock(&table_lock);
	if (fd >= 0 && fd < table_size)
		rs = table[fd];
	pthread_rwlock_unlock(&table_lock);
	return rs;
}

void rs_table_del(int fd)
{
	pthread_rwlock_wrlock(&table_lock);
	if (fd >= 0 && fd < table_size)
		table[fd] = NULL;
	pthread_rwlock_unlock(&table_lock);
}

void rs_table_each(void (*fn)(struct rsock *rs))
{
	pthread_rwlock_rdlock(&table_lock);
	for (int i = 0; i < table_size; i++)
		if (table[i])
			fn(table[i]);
	pthread_rwlock_unlock(&table_lock);
}

void rs_table_with(int fd, void (*fn)(struct rsock *rs))
{
	pthread_rwlock_rdlock(&table_lock);
	if (fd >= 0 && fd < table_size && table[fd])
		fn(table[fd]);
	pthread_rwlock_unlock(&table_lock);
}
