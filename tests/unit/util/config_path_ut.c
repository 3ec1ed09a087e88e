/* ur_devices_file_path: which variable wins, empty ones skipped, and the
 * two failures (nothing set, no room). */
#include "ut.h"

#include <errno.h>
#include <limits.h>

#include "util/config_path.h"

static void env(const char *own, const char *xdg, const char *home)
{
	const char *names[] = { "UROCE_DEVICES_FILE", "XDG_CONFIG_HOME", "HOME" };
	const char *values[] = { own, xdg, home };

	for (int i = 0; i < 3; i++) {
		if (values[i])
			setenv(names[i], values[i], 1);
		else
			unsetenv(names[i]);
	}
}

static void test_order(void)
{
	char p[PATH_MAX];

	env("/etc/own", "/xdg", "/home/u");
	UT_EQ(ur_devices_file_path(p, sizeof(p)), 0);
	UT_CHECK(!strcmp(p, "/etc/own"));

	env(NULL, "/xdg", "/home/u");
	UT_EQ(ur_devices_file_path(p, sizeof(p)), 0);
	UT_CHECK(!strcmp(p, "/xdg/uroce/devices"));

	env(NULL, NULL, "/home/u");
	UT_EQ(ur_devices_file_path(p, sizeof(p)), 0);
	UT_CHECK(!strcmp(p, "/home/u/.config/uroce/devices"));

	env("", "", "/home/u");                     /* empty counts as unset */
	UT_EQ(ur_devices_file_path(p, sizeof(p)), 0);
	UT_CHECK(!strcmp(p, "/home/u/.config/uroce/devices"));
}

static void test_failures(void)
{
	char p[32];

	env(NULL, NULL, NULL);
	UT_EQ(ur_devices_file_path(p, sizeof(p)), -ENOENT);
	env(NULL, "", "");
	UT_EQ(ur_devices_file_path(p, sizeof(p)), -ENOENT);

	env(NULL, NULL, "/home/a-rather-long-user-name");  /* 29 + 22 > 31 */
	UT_EQ(ur_devices_file_path(p, sizeof(p)), -ENAMETOOLONG);
	env(NULL, NULL, "/h");                      /* 2 + 22 fits */
	UT_EQ(ur_devices_file_path(p, sizeof(p)), 0);
	UT_CHECK(!strcmp(p, "/h/.config/uroce/devices"));
}

int main(void)
{
	UT_RUN(test_order);
	UT_RUN(test_failures);
	return UT_DONE();
}
