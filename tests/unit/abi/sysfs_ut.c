/* sysfs helpers: ibv_get_sysfs_path's environment handling (each case in a
 * fresh child, since the path is computed once per process), and
 * ibv_read_sysfs_file over a temporary directory and through the device
 * hook, which this test supplies in place of the library's weak default. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ut.h"

#include <infiniband/verbs.h>

#include "core/device_sysfs.h"

const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);

/* --- the device hook -------------------------------------------------- */

#define UROCE_DIR "/uroce-test/class/infiniband/uroce0"

static int hook_calls;
static const char *hook_content = "UROCE-0001\n";
static int hook_ret;            /* if non-zero: returned as is */
static char tmpdir[] = "/tmp/uroce_sysfs_ut.XXXXXX";

int ur_device_sysfs_read(const char *dir, const char *file, char *buf,
			 size_t size)
{
	size_t len = strlen(hook_content);

	hook_calls++;
	if (strcmp(dir, UROCE_DIR) && strcmp(dir, tmpdir))
		return -ENOENT;
	if (hook_ret)
		return hook_ret;
	if (strcmp(file, "board_id"))
		return -ENOENT;
	if (len > size)
		len = size;
	memcpy(buf, hook_content, len);
	return (int)len;
}

/* --- ibv_get_sysfs_path ----------------------------------------------- */

/* In a child: set or clear SYSFS_PATH, then compare the first result. */
static void check_path(const char *env, const char *want)
{
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		const char *got;

		if (env)
			setenv("SYSFS_PATH", env, 1);
		else
			unsetenv("SYSFS_PATH");
		got = ibv_get_sysfs_path();
		if (!got || strcmp(got, want)) {
			fprintf(stderr, "SYSFS_PATH=%s: got \"%s\", want \"%s\"\n",
				env ? env : "(unset)", got ? got : "(null)", want);
			_exit(1);
		}
		/* computed once: later changes are not seen */
		setenv("SYSFS_PATH", "/elsewhere", 1);
		_exit(ibv_get_sysfs_path() == got ? 0 : 2);
	}
	UT_CHECK(pid > 0);
	UT_EQ(waitpid(pid, &status, 0), pid);
	UT_CHECK(WIFEXITED(status));
	UT_EQ(WEXITSTATUS(status), 0);
}

static void test_sysfs_path(void)
{
	char longpath[IBV_SYSFS_PATH_MAX + 40];

	check_path(NULL, "/sys");
	check_path("/fake/sys", "/fake/sys");
	check_path("/fake/sys/", "/fake/sys");
	check_path("/fake/sys///", "/fake/sys");
	check_path("/", "");
	check_path("", "");
	check_path("relative//x", "relative//x");

	/* at most IBV_SYSFS_PATH_MAX characters are taken */
	memset(longpath, 'a', sizeof(longpath) - 1);
	longpath[0] = '/';
	longpath[sizeof(longpath) - 1] = '\0';
	longpath[IBV_SYSFS_PATH_MAX] = '\0';
	{
		char env[sizeof(longpath)];

		memcpy(env, longpath, sizeof(env));
		env[IBV_SYSFS_PATH_MAX] = 'b';  /* beyond the limit */
		check_path(env, longpath);
	}
}

/* --- ibv_read_sysfs_file ---------------------------------------------- */

static void put(const char *file, const char *content)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, file);
	f = fopen(path, "w");
	UT_CHECK(f != NULL);
	if (!f)
		return;
	fputs(content, f);
	fclose(f);
}

static void test_read_file(void)
{
	char buf[8];

	put("node_type", "1: CA\n");
	put("no_newline", "abc");
	put("empty", "");
	put("exact", "1234567\n");      /* 8 bytes, fits without the newline */
	put("full", "12345678");        /* 8 bytes, no room for the NUL */
	put("two_lines", "ab\ncd\n");

	memset(buf, 'x', sizeof(buf));
	UT_EQ(ibv_read_sysfs_file(tmpdir, "node_type", buf, sizeof(buf)), 5);
	UT_CHECK(!strcmp(buf, "1: CA"));

	memset(buf, 'x', sizeof(buf));
	UT_EQ(ibv_read_sysfs_file(tmpdir, "no_newline", buf, sizeof(buf)), 3);
	UT_CHECK(!strcmp(buf, "abc"));

	memset(buf, 'x', sizeof(buf));
	UT_EQ(ibv_read_sysfs_file(tmpdir, "empty", buf, sizeof(buf)), 0);
	UT_CHECK(!strcmp(buf, ""));

	UT_EQ(ibv_read_sysfs_file(tmpdir, "exact", buf, sizeof(buf)), 7);
	UT_CHECK(!strcmp(buf, "1234567"));

	errno = 0;
	UT_EQ(ibv_read_sysfs_file(tmpdir, "full", buf, sizeof(buf)), -1);
	UT_EQ(errno, EOVERFLOW);

	/* only the trailing newline goes */
	UT_EQ(ibv_read_sysfs_file(tmpdir, "two_lines", buf, sizeof(buf)), 5);
	UT_CHECK(!strcmp(buf, "ab\ncd"));

	/* truncated by the buffer, last byte a newline: rdma-core's rule */
	UT_EQ(ibv_read_sysfs_file(tmpdir, "two_lines", buf, 3), 2);
	UT_CHECK(!strcmp(buf, "ab"));

	errno = 0;
	UT_EQ(ibv_read_sysfs_file(tmpdir, "missing", buf, sizeof(buf)), -1);
	UT_EQ(errno, ENOENT);

	errno = 0;
	UT_EQ(ibv_read_sysfs_file(NULL, "x", buf, sizeof(buf)), -1);
	UT_EQ(errno, EINVAL);
}

static void test_hook(void)
{
	char buf[32];

	/* a uroce directory: served by the hook, no file exists */
	hook_calls = 0;
	UT_EQ(ibv_read_sysfs_file(UROCE_DIR, "board_id", buf, sizeof(buf)), 10);
	UT_CHECK(!strcmp(buf, "UROCE-0001"));
	UT_EQ(hook_calls, 1);

	/* the hook is asked first, even when a real file exists */
	put("board_id", "FROM-DISK\n");
	UT_EQ(ibv_read_sysfs_file(tmpdir, "board_id", buf, sizeof(buf)), 10);
	UT_CHECK(!strcmp(buf, "UROCE-0001"));

	/* -ENOENT from the hook: the filesystem answers */
	UT_EQ(ibv_read_sysfs_file(tmpdir, "node_type", buf, sizeof(buf)), 5);
	UT_CHECK(!strcmp(buf, "1: CA"));
	errno = 0;
	UT_EQ(ibv_read_sysfs_file(UROCE_DIR, "nothing", buf, sizeof(buf)), -1);
	UT_EQ(errno, ENOENT);

	/* another -errno: that error, no fallback */
	hook_ret = -EACCES;
	errno = 0;
	UT_EQ(ibv_read_sysfs_file(tmpdir, "board_id", buf, sizeof(buf)), -1);
	UT_EQ(errno, EACCES);
	hook_ret = 0;

	/* hook content without newline, and filling the buffer exactly */
	hook_content = "0x1234";
	UT_EQ(ibv_read_sysfs_file(UROCE_DIR, "board_id", buf, sizeof(buf)), 6);
	UT_CHECK(!strcmp(buf, "0x1234"));
	errno = 0;
	UT_EQ(ibv_read_sysfs_file(UROCE_DIR, "board_id", buf, 6), -1);
	UT_EQ(errno, EOVERFLOW);

	/* a hook claiming more than the buffer holds is an error */
	hook_ret = 64;
	errno = 0;
	UT_EQ(ibv_read_sysfs_file(UROCE_DIR, "board_id", buf, 16), -1);
	UT_EQ(errno, EIO);
	hook_ret = 0;
}

static void cleanup(void)
{
	static const char *const files[] = {
		"node_type", "no_newline", "empty", "exact", "full",
		"two_lines", "board_id",
	};
	char path[256];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmpdir, files[i]);
		unlink(path);
	}
	rmdir(tmpdir);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	UT_RUN(test_sysfs_path);
	UT_RUN(test_read_file);
	UT_RUN(test_hook);
	cleanup();
	return UT_DONE();
}
