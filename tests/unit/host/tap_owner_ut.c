/* The process behind a tap device (host/tap_owner.c): found by its open
 * tun file's fdinfo, in this network namespace only; nobody for an
 * interface that is no tap, or a tap nobody holds any more.  In a private
 * network namespace, a child process standing for qemu. */
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ut.h"
#include "ut_env.h"
#include "host/tap_owner.h"

static void test_fdinfo_names(void)
{
	UT_CHECK(ur_tap_fdinfo_names("pos:\t0\nflags:\t02\nmnt_id:\t25\nino:\t7\niff:\ttap0\n", "tap0"));
	UT_CHECK(ur_tap_fdinfo_names("pos:\t0\niff:\ttap0", "tap0"));
	UT_CHECK(!ur_tap_fdinfo_names("pos:\t0\niff:\ttap01\n", "tap0"));   /* another tap */
	UT_CHECK(!ur_tap_fdinfo_names("pos:\t0\niff:\ttap\n", "tap0"));
	UT_CHECK(!ur_tap_fdinfo_names("pos:\t0\nflags:\t02\n", "tap0"));   /* no tun file */
	UT_CHECK(!ur_tap_fdinfo_names("iff:\ttap0\n", "tap0"));            /* never the first line */
	UT_CHECK(!ur_tap_fdinfo_names("pos:\t0\niff:\t\n", ""));
}

/* A child that holds tap ifname open until killed: its pid, or 0 when this
 * kernel or user cannot make one. */
static pid_t tap_holder(const char *ifname)
{
	int p[2];
	pid_t pid;
	char ok = 0;

	if (pipe(p))
		return 0;
	pid = fork();
	if (pid == 0) {
		struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI };
		int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
		ok = fd >= 0 && !ioctl(fd, TUNSETIFF, &ifr);
		if (write(p[1], &ok, 1) != 1 || !ok)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	if (pid < 0 || read(p[0], &ok, 1) != 1 || !ok) {
		if (pid > 0)
			waitpid(pid, NULL, 0);
		pid = 0;
	}
	close(p[0]);
	return pid;
}

static void test_owner_found(void)
{
	pid_t child = tap_holder("urtap0");
	int status;

	if (!child) {
		printf("skip   test_owner_found: cannot make a tap here (/dev/net/tun)\n");
		return;
	}
	UT_EQ(ur_tap_owner("urtap0"), child);
	UT_EQ(ur_tap_owner("urtap0"), child);        /* from the cache, checked */
	UT_EQ(ur_tap_owner("lo"), 0);                /* not a tap */
	UT_EQ(ur_tap_owner("nosuch0"), 0);
	UT_EQ(ur_tap_owner(""), 0);
	kill(child, SIGKILL);
	UT_EQ(waitpid(child, &status, 0), child);
	UT_EQ(ur_tap_owner("urtap0"), 0);            /* gone with its holder */
}

int main(void)
{
	ut_env_init("ut0:lo");
	UT_RUN(test_fdinfo_names);
	UT_RUN(test_owner_found);
	return UT_DONE();
}
