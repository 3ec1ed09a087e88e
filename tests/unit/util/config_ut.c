/* The configuration read once: each variable's default, its values, and
 * what counts as a bad one (ur_config_reread stands in for a new process). */
#include "ut.h"

#include <stdlib.h>
#include <string.h>

#include "util/config.h"

static const char *const vars[] = {
	"UROCE_LOG", "UROCE_COPY", "UROCE_CRC", "UROCE_ENGINE_PRIO", "UROCE_RX_THREADS",
	"UROCE_SPIN_US", "UROCE_SELECTIVE_RETRANSMIT", "UROCE_OOO", "UROCE_DEVICES",
	"UROCE_DEVICES_FILE", "UROCE_DEVICES_SKIP", "UROCE_VENDOR_PART_ID", "UROCE_SHM",
	"UROCE_SHM_SINGLE_COPY", "UROCE_SHM_PLACE_MIN", "UROCE_SHM_SHARE_MR", "UROCE_UDP_GRO",
	"UROCE_FAULTS", "UROCE_LOG_FILE",
};

static const struct ur_config *fresh(void)
{
	ur_config_reread();
	return ur_config();
}

static void clear(void)
{
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

static void test_defaults(void)
{
	const struct ur_config *c;

	clear();
	c = fresh();
	UT_EQ(c->log_level, -1);
	UT_CHECK(!c->copy_libc && c->crc == UR_CONFIG_CRC_BEST && !c->engine_idle);
	UT_EQ(c->rx_threads, 0);
	UT_EQ(c->spin_ns, 20000);
	UT_CHECK(c->selective && !c->ooo && c->udp_gro && c->shm_single_copy);
	UT_CHECK(!c->devices && !c->devices_skip && !c->has_vendor_part_id);
	UT_EQ(c->shm, -1);
	UT_EQ(c->shm_place_min, 16384);
	UT_EQ(c->shm_share_mr, UR_CONFIG_SHARE_HELD);
	UT_CHECK(!c->faults.set && !c->faults.valid);
	UT_CHECK(!c->log_file);
}

static void test_values(void)
{
	const struct ur_config *c;

	clear();
	setenv("UROCE_LOG", "DEBUG", 1);
	setenv("UROCE_RX_THREADS", "3", 1);
	setenv("UROCE_SPIN_US", "", 1);             /* set: strtoull's 0 */
	setenv("UROCE_SELECTIVE_RETRANSMIT", "0", 1);
	setenv("UROCE_OOO", "1", 1);
	setenv("UROCE_DEVICES", "a:lo", 1);
	setenv("UROCE_DEVICES_FILE", "/etc/d", 1);
	setenv("UROCE_LOG_FILE", "/tmp/u.%p", 1);
	setenv("UROCE_VENDOR_PART_ID", "0x10", 1);
	setenv("UROCE_SHM", "1", 1);
	setenv("UROCE_SHM_SHARE_MR", "1", 1);
	setenv("UROCE_CRC", "pclmul", 1);
	c = fresh();
	UT_EQ(c->log_level, 3);
	UT_EQ(c->rx_threads, 3);
	UT_EQ(c->spin_ns, 0);
	UT_CHECK(!c->selective && c->ooo);
	UT_CHECK(c->devices && !strcmp(c->devices, "a:lo"));
	UT_CHECK(!c->devices_file_err && !strcmp(c->devices_file, "/etc/d"));
	UT_CHECK(c->log_file && !strcmp(c->log_file, "/tmp/u.%p"));
	UT_CHECK(c->has_vendor_part_id);
	UT_EQ(c->vendor_part_id, 16);
	UT_EQ(c->shm, 1);
	UT_EQ(c->shm_share_mr, UR_CONFIG_SHARE_ANY);
	UT_EQ(c->crc, UR_CONFIG_CRC_PCLMUL);

	setenv("UROCE_SHM_SINGLE_COPY", "0", 1);    /* every region private too */
	setenv("UROCE_RX_THREADS", "9", 1);
	setenv("UROCE_LOG", "loud", 1);
	c = fresh();
	UT_EQ(c->shm_share_mr, UR_CONFIG_SHARE_NEVER);
	UT_EQ(c->rx_threads, -1);
	UT_CHECK(!strcmp(c->rx_threads_raw, "9"));
	UT_EQ(c->log_level, -1);
	clear();
}

static void test_faults(void)
{
	static const char *const bad[] = { "loss=2", "loss", "lost=0.1", "loss=0.1x", "seed=" };
	const struct ur_config *c;

	clear();
	setenv("UROCE_FAULTS", "loss=0.5, dup=0.25,seed=7", 1);
	c = fresh();
	UT_CHECK(c->faults.set && c->faults.valid);
	UT_CHECK(c->faults.loss == 0.5 && c->faults.dup == 0.25 && c->faults.reorder == 0);
	UT_EQ(c->faults.seed, 7);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("UROCE_FAULTS", bad[i], 1);
		c = fresh();
		UT_CHECK(c->faults.set && !c->faults.valid);
		UT_CHECK(!strcmp(c->faults.spec, bad[i]));
	}
	setenv("UROCE_FAULTS", "", 1);              /* empty: not set */
	UT_CHECK(!fresh()->faults.set);
	clear();
}

int main(void)
{
	UT_RUN(test_defaults);
	UT_RUN(test_values);
	UT_RUN(test_faults);
	return UT_DONE();
}
