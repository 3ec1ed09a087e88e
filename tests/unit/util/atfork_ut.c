/* The one fork handler: prepare hooks in slot order, parent and child
 * hooks in the reverse order, an empty hook skipped, a slot filled once;
 * the fork generation, one more in each child, and seen by its hooks. */
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
static unsigned hook_saw;          /* the generation a child hook sees */
static void q1_child(void) { note('B'); hook_saw = ur_fork_generation(); }
static void q2(void) { note('C'); }
static void other(void) { note('x'); }


static void test_order(void)
{
	static const struct ur_atfork_hooks h0 = { p0, q0, q0 }, h1 = { NULL, q1, q1_child };
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

/* Exit status 0 when the child's generation and what its hooks saw are
 * one more than its parent's. */
static int child_sees(unsigned parent_gen)
{
	return ur_fork_generation() == parent_gen + 1 && hook_saw == parent_gen + 1 ? 0 : 1;
}

static void reap_ok(pid_t pid)
{
	int status = 0;

	UT_CHECK(pid > 0);
	UT_EQ(waitpid(pid, &status, 0), pid);
	UT_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void test_generation(void)
{
	unsigned g = ur_fork_generation();
	pid_t pid;

	/* test_order filled the slots: the mover's child hook notes what it sees. */
	UT_CHECK(g >= 1);
	UT_EQ(ur_fork_generation(), g);   /* stable without a fork */
	pid = fork();
	if (!pid) {
		pid_t grandchild;
		int status = 0;

		if (child_sees(g))
			_exit(1);
		grandchild = fork();
		if (!grandchild)
			_exit(child_sees(g + 1));
		if (grandchild < 0 || waitpid(grandchild, &status, 0) != grandchild ||
		    !WIFEXITED(status) || WEXITSTATUS(status))
			_exit(2);
		_exit(ur_fork_generation() == g + 1 ? 0 : 3);   /* its own child's left it */
	}
	reap_ok(pid);
	UT_EQ(ur_fork_generation(), g);   /* the parent's stays */
}

int main(void)
{
	UT_RUN(test_order);
	UT_RUN(test_generation);
	return UT_DONE();
}
