/* By its own directory, not "util/config_path.h": the tool compiles this
 * file too, without the library's include path. */
#include "config_path.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

int ur_devices_file_path(char *buf, size_t len)
{
	const char *own = env("UROCE_DEVICES_FILE"), *xdg = env("XDG_CONFIG_HOME");
	const char *home = env("HOME");
	int n;

	if (own)
		n = snprintf(buf, len, "%s", own);
	else if (xdg)
		n = snprintf(buf, len, "%s/uroce/devices", xdg);
	else if (home)
		n = snprintf(buf, len, "%s/.config/uroce/devices", home);
	else
		return -ENOENT;
	return n >= 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}
