/* The one fork handler: prepare hooks in slot order, parent and child
 * hooks in the reverse order, an empty hook skipped, a slot filled once. */
#include "ut.h"

#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/atfork.h"

static char trail[32];

static void note(char c)
{
	size_t n = strlen(trail);

	if (n + 1 < sizeof(trail))
		trail[n] = c;
}

static void p0(void) { note('a'); }
static void p2(void) { note('c'); }
static void q0(void) { note('A'); }
static void q1(void) { note('B'); }
static void q2(void) { note('C'); }
static void other(void) { note('x'); }

static void test_order(void)
{
	static const struct ur_atfork_hooks h0 = { p0, q0, q0 }, h1 = { NULL, q1, q1 };
	static const struct ur_atfork_hooks h2 = { p2, q2, q2 }, again = { other, other, other };
	int status = 0;
	pid_t pid;

	ur_atfork_register(UR_ATFORK_VM_SHARE, &h2);   /* registered out of order */
	ur_atfork_register(UR_ATFORK_STACK, &h0);
	ur_atfork_register(UR_ATFORK_SHARE_MOVER, &h1);
	ur_atfork_register(UR_ATFORK_STACK, &again);   /* ignored: the slot is taken */
	memset(trail, 0, sizeof(trail));
	pid = fork();
	if (!pid)
		_exit(strcmp(trail, "acCBA") ? 1 : 0);
	UT_CHECK(pid > 0);
	UT_CHECK(!strcmp(trail, "acCBA"));
	UT_EQ(waitpid(pid, &status, 0), pid);
	UT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int main(void)
{
	UT_RUN(test_order);
	return UT_DONE();
}
