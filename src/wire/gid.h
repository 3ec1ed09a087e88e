/* GIDs as RoCE v2 uses them: a GID is the IP address a packet comes from
 * or goes to, IPv6 as it is and IPv4 mapped into ::ffff:0:0/96. */
#ifndef UROCE_WIRE_GID_H
#define UROCE_WIRE_GID_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

bool ur_gid_is_v4mapped(const union ibv_gid *gid);
bool ur_gid_is_zero(const union ibv_gid *gid);
bool ur_gid_is_link_local(const union ibv_gid *gid);
/* 224.0.0.0/4 mapped, or ff00::/8. */
bool ur_gid_is_multicast(const union ibv_gid *gid);
void ur_gid_from_v4(union ibv_gid *gid, struct in_addr a);
/* fe80::/64 with the modified EUI-64 of a MAC, as rxe's GID 0. */
void ur_gid_eui64(union ibv_gid *gid, const uint8_t mac[6]);
/* "::ffff:10.0.0.1" style text, as inet_ntop prints it. */
const char *ur_gid_str(const union ibv_gid *gid, char *buf, size_t len);

#endif
