/* The process's configuration: every UROCE_* variable of the library,
 * read from the environment once, on first use, and parsed into typed
 * fields here, so that a reader takes a field rather than calling getenv
 * (and a setting cannot change under a running device).  Each field says
 * its variable, its values and its default; the user's side of the same
 * list is docs/man/uroce.1 and uroce-run.1 (ENVIRONMENT).  What a bad value
 * means is decided here; the message saying so stays with the reader, which
 * knows what it was about to do (the raw text is kept for it).
 *
 * Not here: rdma-core's own variables (SYSFS_PATH, VERBS_LOG_LEVEL,
 * VERBS_LOG_FILE), read where rdma-core reads them (verbs/), each once. */
#ifndef UROCE_UTIL_CONFIG_H
#define UROCE_UTIL_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

enum ur_config_crc {
	UR_CONFIG_CRC_BEST,             /* the fastest the CPU has */
	UR_CONFIG_CRC_PORTABLE,
	UR_CONFIG_CRC_PCLMUL,           /* when the CPU has it, else the best */
};

enum ur_config_share {
	UR_CONFIG_SHARE_HELD,           /* move where writes can be held */
	UR_CONFIG_SHARE_NEVER,
	UR_CONFIG_SHARE_ANY,
};

/* UROCE_FAULTS="loss=P,reorder=P,dup=P,corrupt=P,seed=N" (xport/udp/udp_fault.c). */
struct ur_config_faults {
	bool set;                       /* set and not empty: UDP only, no shm */
	bool valid;                     /* parsed; else no faults are injected */
	double loss, reorder, dup, corrupt;   /* probabilities 0 .. 1, default 0 */
	uint64_t seed;                  /* 0: none given (one from the pid) */
	const char *spec;               /* the text, for messages */
};

struct ur_config {
	/* UROCE_LOG: error|warn|info|debug (or 0..3); -1 when unset, empty
	 * or unknown: the level stays as it is (warn). */
	int log_level;
	/* UROCE_LOG_FILE: a file the log also goes to, every line with its
	 * time and pid, at UROCE_LOG's level (stderr then keeps only warnings
	 * and errors); "%p" in it is the pid.  NULL when unset or empty. */
	const char *log_file;
	/* UROCE_COPY=libc: medium copies by memcpy, not AVX2. */
	bool copy_libc;
	/* UROCE_CRC=portable|pclmul: the ICRC's CRC-32 engine; else the best. */
	enum ur_config_crc crc;
	/* UROCE_ENGINE_PRIO=idle: engine threads in SCHED_IDLE.  Off. */
	bool engine_idle;
	/* UROCE_RX_THREADS: receive contexts, 1 .. 8 (UR_ENGINE_MAX_RX);
	 * 0 when unset or empty (a count from the CPUs), -1 when anything
	 * else (one context, with a warning); rx_threads_raw is the text. */
	int rx_threads;
	const char *rx_threads_raw;
	/* UROCE_SPIN_US: how long an engine thread polls after work before
	 * it sleeps, in ns here; 20 us by default, strtoull's reading (so 0
	 * for garbage) when set. */
	uint64_t spin_ns;
	/* UROCE_SELECTIVE_RETRANSMIT=0: RC goes back N.  Selective by default. */
	bool selective;
	/* UROCE_OOO=1: RC and XRC tolerate reordering.  Off by default. */
	bool ooo;
	/* UROCE_DEVICES="netdev,name:netdev,...": the devices; NULL when
	 * unset or empty (then the devices file, then every interface). */
	const char *devices;
	/* The devices file: UROCE_DEVICES_FILE, else $XDG_CONFIG_HOME/uroce/devices,
	 * else $HOME/.config/uroce/devices (util/config_path.h); devices_file_err
	 * is 0, or why there is none (-ENOENT, -ENAMETOOLONG). */
	char devices_file[PATH_MAX];
	int devices_file_err;
	/* UROCE_DEVICES_SKIP="iface,...": interfaces that get no device; NULL
	 * when unset. */
	const char *devices_skip;
	/* UROCE_VENDOR_PART_ID (strtoul, any base): the part id devices report;
	 * has_vendor_part_id false when unset or empty (4115, core/limits.h). */
	bool has_vendor_part_id;
	uint32_t vendor_part_id;
	/* UROCE_SHM: 0 off, 1 on even under TSan, -1 unset or other (on,
	 * but off under TSan). */
	int shm;
	/* UROCE_SHM_SINGLE_COPY=0: WRITEs and READs through the shm rings,
	 * and every region private.  On by default. */
	bool shm_single_copy;
	/* UROCE_SHM_PLACE_MIN: the smallest WRITE or READ placed straight
	 * into the peer (strtoull); 16384 when unset or empty. */
	uint64_t shm_place_min;
	/* UROCE_SHM_SHARE_MR: 0 never moves a region into shared memory (nor
	 * does UROCE_SHM_SINGLE_COPY=0), 1 moves any, else where held. */
	enum ur_config_share shm_share_mr;
	/* UROCE_UDP_GRO=0: no UDP GRO on uroce's sockets.  On by default. */
	bool udp_gro;
	struct ur_config_faults faults;
};

/* The configuration, read on the first call (by any thread). */
const struct ur_config *ur_config(void);

/* Tests only, with no other thread using the configuration: reads the
 * environment again (engine_ut changes UROCE_RX_THREADS between calls). */
void ur_config_reread(void);

#endif
