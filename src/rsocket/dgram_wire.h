/* The two headers of datagram rsockets (rs_proto.h), read and written.
 * Readers take bytes from the network: each checks every length before it
 * reads, and anything that is not an rsocket header is refused. */
#ifndef UROCE_RSOCKET_DGRAM_WIRE_H
#define UROCE_RSOCKET_DGRAM_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "rsocket/rs_proto.h"

/* A UDP side-channel message, read. */
struct rs_ds_udp {
	uint8_t op;          /* RS_OP_DATA (bytes follow) or RS_OP_CTRL */
	uint32_t qpn;        /* the sender's UD QP */
	size_t hdr_len;      /* where the bytes start */
};

/* buf[0..len) as it came from an IPv4 (family AF_INET, an IPv4-mapped
 * source included) or IPv6 sender: 0 and *out, or -EINVAL (not an rsocket
 * message: wrong tag, version, length or op). */
int rs_ds_udp_read(const uint8_t *buf, size_t len, sa_family_t family, struct rs_ds_udp *out);
/* Writes the UDP header for our QP qpn sending from `from` (AF_INET or
 * AF_INET6; an IPv4-mapped address as IPv4) into buf (RS_DS_UDP_V6_LEN
 * bytes of room); its length. */
size_t rs_ds_udp_write(uint8_t *buf, uint8_t op, uint32_t qpn, const struct sockaddr *from);

/* The datagram header at buf[0..len) (a UD payload): its length, and the
 * sender's address in *src (*src_len set), or -EINVAL. */
int rs_ds_hdr_read(const uint8_t *buf, size_t len, struct sockaddr_storage *src,
		   socklen_t *src_len);
/* Writes the datagram header naming `from` (an IPv4-mapped address as
 * IPv4; RS_DS_V6_LEN bytes of room); its length. */
size_t rs_ds_hdr_write(uint8_t *buf, const struct sockaddr *from);

#endif
