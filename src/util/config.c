/* The environment, read once (util/config.h says what each field means). */
#include "util/config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/config_path.h"

#define UR_CONFIG_RX_MAX 8              /* UR_ENGINE_MAX_RX, engine/engine.h */
#define UR_CONFIG_SPIN_NS 20000u
#define UR_CONFIG_PLACE_MIN 16384u

static struct ur_config config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

/* The value, or NULL when unset or empty. */
static const char *value(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static bool is(const char *name, const char *want)
{
	const char *v = getenv(name);

	return v && !strcmp(v, want);
}

/* A copy the environment cannot change under us; NULL for NULL. */
static const char *keep(const char *v)
{
	return v ? strdup(v) : NULL;
}

static int parse_log(const char *s)
{
	if (!s)
		return -1;
	if (!strcasecmp(s, "error") || !strcmp(s, "0"))
		return 0;
	if (!strcasecmp(s, "warn") || !strcmp(s, "1"))
		return 1;
	if (!strcasecmp(s, "info") || !strcmp(s, "2"))
		return 2;
	if (!strcasecmp(s, "debug") || !strcmp(s, "3"))
		return 3;
	return -1;
}

static int parse_rx(const char *v)
{
	char *end;
	long n;

	if (!v)
		return 0;
	n = strtol(v, &end, 10);
	return *end || n < 1 || n > UR_CONFIG_RX_MAX ? -1 : (int)n;
}

/* Comma- (or space-) separated key=value; false on anything else, or a
 * probability outside 0 .. 1.  A later key overrides an earlier one. */
static bool parse_faults(struct ur_config_faults *f, const char *spec)
{
	char *copy = strdup(spec), *save = NULL, *tok;
	bool ok = copy != NULL;

	for (tok = ok ? strtok_r(copy, ", ", &save) : NULL; tok && ok;
	     tok = strtok_r(NULL, ", ", &save)) {
		char *eq = strchr(tok, '='), *end;
		double v;

		if (!eq) {
			ok = false;
			break;
		}
		*eq = '\0';
		v = strtod(eq + 1, &end);
		if (*end || end == eq + 1)
			ok = false;
		else if (!strcmp(tok, "seed"))
			f->seed = (uint64_t)v ? (uint64_t)v : 1;
		else if (v < 0 || v > 1)
			ok = false;
		else if (!strcmp(tok, "loss"))
			f->loss = v;
		else if (!strcmp(tok, "reorder"))
			f->reorder = v;
		else if (!strcmp(tok, "dup"))
			f->dup = v;
		else if (!strcmp(tok, "corrupt"))
			f->corrupt = v;
		else
			ok = false;
	}
	free(copy);
	return ok;
}

static void config_read(void)
{
	struct ur_config *c = &config;
	const char *v;

	c->log_level = parse_log(value("UROCE_LOG"));
	c->log_file = keep(value("UROCE_LOG_FILE"));
	c->copy_libc = is("UROCE_COPY", "libc");
	c->crc = is("UROCE_CRC", "portable") ? UR_CONFIG_CRC_PORTABLE
		 : is("UROCE_CRC", "pclmul") ? UR_CONFIG_CRC_PCLMUL : UR_CONFIG_CRC_BEST;
	c->engine_idle = is("UROCE_ENGINE_PRIO", "idle");
	c->rx_threads_raw = keep(value("UROCE_RX_THREADS"));
	c->rx_threads = parse_rx(c->rx_threads_raw);
	v = getenv("UROCE_SPIN_US");
	c->spin_ns = v ? strtoull(v, NULL, 10) * 1000u : UR_CONFIG_SPIN_NS;
	c->selective = !is("UROCE_SELECTIVE_RETRANSMIT", "0");
	c->ooo = is("UROCE_OOO", "1");
	c->devices = keep(value("UROCE_DEVICES"));
	c->devices_file_err = ur_devices_file_path(c->devices_file, sizeof(c->devices_file));
	c->devices_skip = keep(getenv("UROCE_DEVICES_SKIP"));
	v = value("UROCE_VENDOR_PART_ID");
	c->has_vendor_part_id = v != NULL;
	c->vendor_part_id = v ? (uint32_t)strtoul(v, NULL, 0) : 0;
	c->shm = is("UROCE_SHM", "0") ? 0 : is("UROCE_SHM", "1") ? 1 : -1;
	c->shm_single_copy = !is("UROCE_SHM_SINGLE_COPY", "0");
	v = value("UROCE_SHM_PLACE_MIN");
	c->shm_place_min = v ? strtoull(v, NULL, 10) : UR_CONFIG_PLACE_MIN;
	c->shm_share_mr = is("UROCE_SHM_SHARE_MR", "0") || !c->shm_single_copy
			  ? UR_CONFIG_SHARE_NEVER
			  : is("UROCE_SHM_SHARE_MR", "1") ? UR_CONFIG_SHARE_ANY
							  : UR_CONFIG_SHARE_HELD;
	c->udp_gro = !is("UROCE_UDP_GRO", "0");
	c->faults.spec = keep(value("UROCE_FAULTS"));
	c->faults.set = c->faults.spec != NULL;
	c->faults.valid = c->faults.set && parse_faults(&c->faults, c->faults.spec);
}

const struct ur_config *ur_config(void)
{
	pthread_once(&config_once, config_read);
	return &config;
}

void ur_config_reread(void)
{
	ur_config();
	free((char *)config.rx_threads_raw);
	free((char *)config.devices);
	free((char *)config.devices_skip);
	free((char *)config.faults.spec);
	free((char *)config.log_file);
	memset(&config, 0, sizeof(config));
	config_read();
}
