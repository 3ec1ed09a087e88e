/* The datagram rsocket headers (rs_proto.h) on the wire. */
#include <errno.h>
#include <string.h>
#include <netinet/in.h>

#include "rsocket/dgram_wire.h"

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

int rs_ds_udp_read(const uint8_t *buf, size_t len, sa_family_t family, struct rs_ds_udp *out)
{
	size_t want;

	if (len < RS_DS_UDP_V4_LEN || get32(buf) != RS_DS_UDP_TAG)
		return -EINVAL;
	/* The version names the sender's address family, which is the
	 * socket's: rdma-core checks it against the datagram's source. */
	if (buf[4] == 4 && family == AF_INET)
		want = RS_DS_UDP_V4_LEN;
	else if (buf[4] == 6 && family == AF_INET6)
		want = RS_DS_UDP_V6_LEN;
	else
		return -EINVAL;
	if (buf[6] != want || len < want || (buf[5] != RS_OP_DATA && buf[5] != RS_OP_CTRL))
		return -EINVAL;
	out->op = buf[5];
	out->qpn = get32(buf + 8) & 0xffffff;
	out->hdr_len = want;
	return 0;
}

/* An IPv4-mapped IPv6 address (a dual-stack socket's view of an IPv4
 * peer) goes on the wire as the IPv4 address it is: the peer's socket may
 * be IPv4 only. */
static const uint8_t *mapped_v4(const struct sockaddr *a)
{
	const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a;

	if (a->sa_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&s->sin6_addr))
		return NULL;
	return s->sin6_addr.s6_addr + 12;
}

size_t rs_ds_udp_write(uint8_t *buf, uint8_t op, uint32_t qpn, const struct sockaddr *from)
{
	const uint8_t *v4 = mapped_v4(from);
	bool v6 = from->sa_family == AF_INET6 && !v4;

	put32(buf, RS_DS_UDP_TAG);
	buf[4] = v6 ? 6 : 4;
	buf[5] = op;
	buf[6] = v6 ? RS_DS_UDP_V6_LEN : RS_DS_UDP_V4_LEN;
	buf[7] = 0;
	put32(buf + 8, qpn & 0xffffff);
	if (v6)
		memcpy(buf + 12, &((const struct sockaddr_in6 *)from)->sin6_addr, 16);
	else
		memcpy(buf + 12, v4 ? v4 : (const uint8_t *)&((const struct sockaddr_in *)from)->sin_addr, 4);
	return buf[6];
}

int rs_ds_hdr_read(const uint8_t *buf, size_t len, struct sockaddr_storage *src,
		   socklen_t *src_len)
{
	memset(src, 0, sizeof(*src));
	if (len >= RS_DS_V4_LEN && buf[0] == 4 && buf[1] == RS_DS_V4_LEN) {
		struct sockaddr_in *s = (struct sockaddr_in *)src;

		s->sin_family = AF_INET;
		memcpy(&s->sin_port, buf + 2, 2);
		memcpy(&s->sin_addr, buf + 4, 4);
		*src_len = sizeof(*s);
		return RS_DS_V4_LEN;
	}
	if (len >= RS_DS_V6_LEN && buf[0] == 6 && buf[1] == RS_DS_V6_LEN) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)src;

		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_port, buf + 2, 2);
		memcpy(&s->sin6_flowinfo, buf + 4, 4);
		memcpy(&s->sin6_addr, buf + 8, 16);
		*src_len = sizeof(*s);
		return RS_DS_V6_LEN;
	}
	return -EINVAL;
}

size_t rs_ds_hdr_write(uint8_t *buf, const struct sockaddr *from)
{
	const uint8_t *v4 = mapped_v4(from);

	if (v4) {
		buf[0] = 4;
		buf[1] = RS_DS_V4_LEN;
		memcpy(buf + 2, &((const struct sockaddr_in6 *)from)->sin6_port, 2);
		memcpy(buf + 4, v4, 4);
		return RS_DS_V4_LEN;
	}
	if (from->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)from;

		buf[0] = 6;
		buf[1] = RS_DS_V6_LEN;
		memcpy(buf + 2, &s->sin6_port, 2);
		memcpy(buf + 4, &s->sin6_flowinfo, 4);
		memcpy(buf + 8, &s->sin6_addr, 16);
		return RS_DS_V6_LEN;
	}
	const struct sockaddr_in *s = (const struct sockaddr_in *)from;

	buf[0] = 4;
	buf[1] = RS_DS_V4_LEN;
	memcpy(buf + 2, &s->sin_port, 2);
	memcpy(buf + 4, &s->sin_addr, 4);
	return RS_DS_V4_LEN;
}
