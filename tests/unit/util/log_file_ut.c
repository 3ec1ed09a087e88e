/* The log's file (UROCE_LOG_FILE): "%p" in its name, every line with its
 * time and pid at UROCE_LOG's level, stderr keeping only warnings and
 * errors then; a file that cannot be opened said on stderr, where the log
 * then goes.  Each case runs in a child (the log is set up once a
 * process), its stderr in a file the parent reads. */
#include "ut.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/config.h"
#include "util/log.h"
#include "util/log_file.h"

static char dir[] = "/tmp/uroce-log-ut.XXXXXX";

static void test_path(void)
{
	char out[32];

	UT_EQ(ur_log_path(out, sizeof(out), "/x/a.%p.log", 4242), 0);
	UT_CHECK(!strcmp(out, "/x/a.4242.log"));
	UT_EQ(ur_log_path(out, sizeof(out), "%p-%p", 7), 0);
	UT_CHECK(!strcmp(out, "7-7"));
	UT_EQ(ur_log_path(out, sizeof(out), "100%%p", 7), 0);
	UT_CHECK(!strcmp(out, "100%p"));
	UT_EQ(ur_log_path(out, sizeof(out), "plain", 7), 0);
	UT_CHECK(!strcmp(out, "plain"));
	UT_EQ(ur_log_path(out, sizeof(out), "a%", 7), -EINVAL);
	UT_EQ(ur_log_path(out, sizeof(out), "a%d", 7), -EINVAL);
	UT_EQ(ur_log_path(out, 6, "abcde", 7), 0);          /* just fits */
	UT_EQ(ur_log_path(out, 5, "abcde", 7), -ENAMETOOLONG);
	UT_EQ(ur_log_path(out, 6, "abc%p", 123), -ENAMETOOLONG);
}

/* The whole of a file, or "" (static buffer). */
static const char *slurp(const char *path)
{
	static char buf[8192];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd < 0 ? 0 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static bool matches(const char *text, const char *pattern)
{
	regex_t re;
	bool m;

	if (regcomp(&re, pattern, REG_EXTENDED | REG_NEWLINE | REG_NOSUB))
		return false;
	m = !regexec(&re, text, 0, NULL, 0);
	regfree(&re);
	return m;
}

/* In a child, with UROCE_LOG=level and UROCE_LOG_FILE=file (NULL: unset)
 * and stderr to err: an info and a warning line, then (forked again) an
 * info line of its child's.  Returns the first child's pid. */
static pid_t log_in_child(const char *level, const char *file, const char *err)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		pid_t kid;

		dup2(fd, 2);
		setenv("UROCE_LOG", level, 1);
		if (file)
			setenv("UROCE_LOG_FILE", file, 1);
		else
			unsetenv("UROCE_LOG_FILE");
		ur_config_reread();
		ur_log_init();
		ur_info("uroce9", "an info line %d", 1);
		ur_warn("uroce9", "a warning line %d", 2);
		kid = fork();
		if (kid == 0) {
			ur_info(NULL, "the child's line");
			_exit(0);
		}
		waitpid(kid, NULL, 0);
		_exit(0);
	}
	UT_CHECK(pid > 0);
	waitpid(pid, NULL, 0);
	return pid;
}

static void test_file_has_all_stderr_only_warnings(void)
{
	char file[PATH_MAX], err[PATH_MAX], pat[256], first[PATH_MAX];
	const char *text;
	pid_t pid;

	snprintf(file, sizeof(file), "%s/run.%%p.log", dir);
	snprintf(err, sizeof(err), "%s/stderr.1", dir);
	pid = log_in_child("info", file, err);
	snprintf(first, sizeof(first), "%s/run.%d.log", dir, (int)pid);
	text = slurp(first);
	snprintf(pat, sizeof(pat),
		 "^[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3} %d uroce info: uroce9: "
		 "log_in_child: an info line 1$", (int)pid);
	UT_CHECK(matches(text, pat));
	snprintf(pat, sizeof(pat), "^[0-9:.]+ %d uroce warning: uroce9: log_in_child: "
		 "a warning line 2$", (int)pid);
	UT_CHECK(matches(text, pat));
	/* The forked child writes to its parent's file, with its own pid. */
	UT_CHECK(matches(text, "^[0-9:.]+ [0-9]+ uroce info: log_in_child: the child's line$"));
	snprintf(pat, sizeof(pat), "^[0-9:.]+ %d uroce info: log_in_child: the child's", (int)pid);
	UT_CHECK(!matches(text, pat));
	text = slurp(err);
	UT_CHECK(matches(text, "^uroce warning: uroce9: log_in_child: a warning line 2$"));
	UT_CHECK(!strstr(text, "info line"));
	UT_CHECK(!strstr(text, "child's line"));
	if (ut_failures)
		fprintf(stderr, "file:\n%s\nstderr:\n%s\n", slurp(first), text);
}

static void test_no_file_stderr_has_the_level(void)
{
	char err[PATH_MAX];
	const char *text;

	snprintf(err, sizeof(err), "%s/stderr.2", dir);
	log_in_child("info", NULL, err);
	text = slurp(err);
	UT_CHECK(matches(text, "^uroce info: uroce9: log_in_child: an info line 1$"));
	UT_CHECK(matches(text, "^uroce warning: uroce9: log_in_child: a warning line 2$"));
}

static void test_unopenable_file_said(void)
{
	char err[PATH_MAX];
	const char *text;

	snprintf(err, sizeof(err), "%s/stderr.3", dir);
	log_in_child("info", "/nonexistent-uroce-dir/log", err);
	text = slurp(err);
	UT_CHECK(matches(text, "^uroce warning: cannot open UROCE_LOG_FILE=/nonexistent-uroce-dir/"
			       "log \\(No such file or directory\\): the log goes to stderr$"));
	UT_CHECK(matches(text, "^uroce info: uroce9: log_in_child: an info line 1$"));
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	UT_RUN(test_path);
	UT_RUN(test_file_has_all_stderr_only_warnings);
	UT_RUN(test_no_file_stderr_has_the_level);
	UT_RUN(test_unopenable_file_said);
	if (!getenv("UT_KEEP")) {
		char cmd[PATH_MAX + 16];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", dir);
	}
	return UT_DONE();
}
