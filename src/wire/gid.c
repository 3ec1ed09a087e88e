/* GIDs as RoCE v2 uses them: IPv6 addresses, IPv4 ones mapped into
 * ::ffff:0:0/96. */
#include "wire/gid.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

bool ur_gid_is_v4mapped(const union ibv_gid *gid)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(gid->raw, prefix, sizeof(prefix));
}

bool ur_gid_is_zero(const union ibv_gid *gid)
{
	static const union ibv_gid zero;

	return !memcmp(gid, &zero, sizeof(zero));
}

bool ur_gid_is_link_local(const union ibv_gid *gid)
{
	return gid->raw[0] == 0xfe && (gid->raw[1] & 0xc0) == 0x80;
}

void ur_gid_from_v4(union ibv_gid *gid, struct in_addr a)
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], &a, 4);
}

/* fe80::/64 + modified EUI-64 of the MAC (U/L bit flipped, ff:fe inserted). */
void ur_gid_eui64(union ibv_gid *gid, const uint8_t mac[6])
{
	memset(gid, 0, sizeof(*gid));
	gid->raw[0] = 0xfe;
	gid->raw[1] = 0x80;
	gid->raw[8] = mac[0] ^ 2;
	gid->raw[9] = mac[1];
	gid->raw[10] = mac[2];
	gid->raw[11] = 0xff;
	gid->raw[12] = 0xfe;
	gid->raw[13] = mac[3];
	gid->raw[14] = mac[4];
	gid->raw[15] = mac[5];
}

const char *ur_gid_str(const union ibv_gid *gid, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid->raw, buf, len))
		snprintf(buf, len, "?");
	return buf;
}

bool ur_gid_is_multicast(const union ibv_gid *gid)
{
	if (ur_gid_is_v4mapped(gid))
		return (gid->raw[12] & 0xf0) == 0xe0;    /* 224.0.0.0/4 */
	return gid->raw[0] == 0xff;
}
