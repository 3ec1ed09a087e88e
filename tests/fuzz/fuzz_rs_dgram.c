/* libFuzzer target: the two headers of datagram rsockets as they come from
 * the network (src/rsocket/dgram_wire.c).  The first byte picks the reader:
 * 0 a UDP side-channel message on an IPv4 socket, 1 on an IPv6 one, 2 a UD
 * payload's datagram header; the rest is the message.
 *
 * What a reader accepts, the writer writes again byte for byte (but the
 * UDP header's reserved byte and the QPN's unsent top byte; an IPv6 header
 * naming an IPv4-mapped address comes back as an IPv4 one), and a reader
 * never reads past the message (ASan). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include "rsocket/dgram_wire.h"

#define FUZZ_ASSERT(c) do { if (!(c)) abort(); } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int fuzz_dropped = -1;

static void udp(const uint8_t *msg, size_t len, sa_family_t family)
{
	struct sockaddr_storage from = { .ss_family = family };
	uint8_t again[RS_DS_UDP_V6_LEN];
	struct rs_ds_udp h;

	fuzz_dropped = rs_ds_udp_read(msg, len, family, &h) != 0;
	if (fuzz_dropped)
		return;
	FUZZ_ASSERT(h.hdr_len <= len && h.qpn <= 0xffffff);
	if (family == AF_INET6)
		memcpy(&((struct sockaddr_in6 *)&from)->sin6_addr, msg + 12, 16);
	else
		memcpy(&((struct sockaddr_in *)&from)->sin_addr, msg + 12, 4);
	if (family == AF_INET6 && IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&from)->sin6_addr)) {
		FUZZ_ASSERT(rs_ds_udp_write(again, h.op, h.qpn, (struct sockaddr *)&from) ==
			    RS_DS_UDP_V4_LEN && !memcmp(again + 12, msg + 24, 4));
		return;
	}
	FUZZ_ASSERT(rs_ds_udp_write(again, h.op, h.qpn, (struct sockaddr *)&from) == h.hdr_len);
	FUZZ_ASSERT(!memcmp(again, msg, 7) && again[7] == 0 && again[8] == 0 &&
		    !memcmp(again + 9, msg + 9, h.hdr_len - 9));
}

static void hdr(const uint8_t *msg, size_t len)
{
	struct sockaddr_storage src;
	uint8_t again[RS_DS_V6_LEN];
	socklen_t src_len;
	int hl = rs_ds_hdr_read(msg, len, &src, &src_len);

	fuzz_dropped = hl < 0;
	if (fuzz_dropped)
		return;
	FUZZ_ASSERT((size_t)hl <= len && src_len <= sizeof(src));
	if (src.ss_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&src)->sin6_addr)) {
		FUZZ_ASSERT(rs_ds_hdr_write(again, (struct sockaddr *)&src) == RS_DS_V4_LEN &&
			    !memcmp(again + 2, msg + 2, 2) && !memcmp(again + 4, msg + 20, 4));
		return;
	}
	FUZZ_ASSERT(rs_ds_hdr_write(again, (struct sockaddr *)&src) == (size_t)hl);
	FUZZ_ASSERT(!memcmp(again, msg, (size_t)hl));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	switch (data[0] % 3) {
	case 0:
		udp(data + 1, size - 1, AF_INET);
		break;
	case 1:
		udp(data + 1, size - 1, AF_INET6);
		break;
	default:
		hdr(data + 1, size - 1);
		break;
	}
	return 0;
}
