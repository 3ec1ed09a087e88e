/* The capture tap (`uroce capture`): copies of the packets this process
 * sends and receives, handed to a capture process when one runs.
 *
 * Off, it costs one load of the shared switch per packet (ur_capture_on).
 * On, each packet is recorded once for its namespace, as a NIC's mirror
 * would show it: when it leaves a process (UDP, a local peer's unix
 * socket, shared memory) and when it arrives from the kernel's UDP (from
 * another host or namespace).  A packet from a process of this host
 * arrives through shared memory or a unix socket and is not recorded
 * again: its sending record names the receiving process (peer_pid).
 * Handing over never blocks: a record the capture has no room for is
 * dropped and counted in the switch file, which the tool reports.
 */
#ifndef UROCE_XPORT_CAPTURE_H
#define UROCE_XPORT_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "wire/icrc.h"
#include "xport/capture_proto.h"

/* Points at the switch file's word, or at a zero until it is mapped. */
extern const uint32_t *ur_capture_switch;

static inline bool ur_capture_on(void)
{
	const uint32_t *sw = __atomic_load_n(&ur_capture_switch, __ATOMIC_RELAXED);

	return __builtin_expect(__atomic_load_n(sw, __ATOMIC_RELAXED) != 0, 0);
}

/* Maps this user's switch file for this network namespace (creating it).
 * Without it capture stays off for this process: logged, never fatal. */
void ur_capture_attach(void);

/* Records one RoCE packet: iov holds its bytes from the BTH on, len in
 * all; with_icrc false: they end before the ICRC (shared memory carries
 * none), which is computed here as the wire would carry it. */
void ur_capture_roce(enum ur_cap_dir dir, enum ur_cap_via via, pid_t peer_pid,
		     const struct ur_roce_ip *ip, uint8_t tclass, uint8_t hop, uint32_t placed,
		     const struct iovec *iov, int niov, size_t len, bool with_icrc);

/* Records a local message sent to process to. */
void ur_capture_msg(pid_t to, const struct iovec *iov, int niov);

#endif
