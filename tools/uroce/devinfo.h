/* uroce devinfo: ibv_devinfo's report plus the port counters. */
#ifndef UROCE_TOOLS_DEVINFO_H
#define UROCE_TOOLS_DEVINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <infiniband/verbs.h>

/* Prints CTX as ibv_devinfo [-v] does (ONLY_PORT 0: all ports), with each
 * port's counters when COUNTERS. 0, or -1 after saying why on stderr. */
int ur_devinfo_print(struct ibv_context *ctx, int only_port, bool verbose, bool counters);

/* ibv_devinfo's name of a port state ("PORT_ACTIVE"). */
const char *ur_port_state_str(enum ibv_port_state s);

/* Prints PORT's hw_counters as "\t\t\tcounters:" lines. */
void ur_devinfo_print_counters(struct ibv_context *ctx, int port);

/* Exported by every libibverbs since IBVERBS_1.0 (ibv_devinfo reads board_id
 * with it) but declared only in the provider header, which Debian does not
 * ship: reads DIR/FILE of a device's sysfs, which uroce answers itself. */
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);

#endif
