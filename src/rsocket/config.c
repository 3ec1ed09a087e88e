/* The defaults an administrator sets for rsockets, as rdma-core reads them
 * (rsocket(7), "configuration files"): one integer per file under
 * /etc/rdma/rsocket, read once per process, each clamped as the socket
 * option it stands for is; a file missing or unreadable keeps uroce's own
 * default.  An application still overrides them with rsetsockopt. */
#include <pthread.h>
#include <stdio.h>

#include "core/limits.h"
#include "rsocket/rsocket.h"

#define RS_CONFIG_DIR "/etc/rdma/rsocket"
#define RS_MIN_MEM 1024u
#define RS_MAX_MEM (1u << 30)

static struct rs_config cfg;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* name's value if it holds one in [lo, hi]. */
static bool value(const char *name, unsigned long lo, unsigned long hi, uint32_t *out)
{
	char path[128];
	unsigned long v;
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), RS_CONFIG_DIR "/%s", name);
	f = fopen(path, "re");
	if (!f)
		return false;
	ok = fscanf(f, "%lu", &v) == 1 && v >= lo && v <= hi;
	fclose(f);
	if (ok)
		*out = (uint32_t)v;
	return ok;
}

static void load(void)
{
	uint32_t v;

	cfg = (struct rs_config){
		.rmem = RS_DEF_MEM, .wmem = RS_DEF_MEM,
		.sq_size = RS_DEF_QPSIZE, .rq_size = RS_DEF_QPSIZE,
		.sq_inline = RS_DEF_INLINE, .iomap_size = 0,
		.polling_ns = RS_SPIN_NS, .wake_ms = -1, .nap_ms = RS_NAP_MS,
	};
	if (value("mem_default", RS_MIN_MEM, RS_MAX_MEM, &v))
		cfg.rmem = v;
	if (value("wmem_default", RS_MIN_MEM, RS_MAX_MEM, &v))
		cfg.wmem = v;
	if (value("sqsize_default", RS_QP_MIN_SIZE, RS_QP_MAX_SIZE, &v))
		cfg.sq_size = (uint16_t)v;
	if (value("rqsize_default", RS_QP_MIN_SIZE, RS_QP_MAX_SIZE, &v))
		cfg.rq_size = (uint16_t)v;
	if (value("inline_default", 0, UR_MAX_INLINE, &v))
		cfg.sq_inline = (uint16_t)v;
	if (value("iomap_size", 0, 0x7f00, &v))
		cfg.iomap_size = (uint16_t)rs_scale_to_value(rs_value_to_scale(v));
	if (value("polling_time", 0, 10000000, &v))
		cfg.polling_ns = v * 1000;
	if (value("wake_up_interval", 1, 3600000, &v)) {
		cfg.wake_ms = (int)v;
		if (cfg.wake_ms < cfg.nap_ms)
			cfg.nap_ms = cfg.wake_ms;
	}
}

const struct rs_config *rs_config(void)
{
	pthread_once(&once, load);
	return &cfg;
}

void rs_config_sizes(struct rsock *rs)
{
	const struct rs_config *c = rs_config();

	rs->rbuf_size = c->rmem;
	rs->sbuf_size = c->wmem;
	rs->sq_size = c->sq_size;
	rs->rq_size = c->rq_size;
	rs->sq_inline = c->sq_inline;
}
