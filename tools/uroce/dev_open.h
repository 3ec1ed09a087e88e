/* Devices and GIDs for the uroce tool, on the public verbs API only: open a
 * device by name, read its GID table, and pick the GID index that reaches a
 * peer -- the choice users otherwise learn from "failed to modify QP to RTR". */
#ifndef UROCE_TOOLS_DEV_OPEN_H
#define UROCE_TOOLS_DEV_OPEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>

#define UR_GID_STRLEN 46 /* INET6_ADDRSTRLEN */

/* Opens the device called NAME (NULL: the first one). Prints why not on
 * stderr (no devices at all, or the names that exist) and returns NULL. */
struct ibv_context *ur_dev_open(const char *name);

/* One GID table entry with what a user needs to choose it. */
struct ur_gid_info {
	struct ibv_gid_entry e;
	char netdev[64];        /* interface name, "" when unknown */
	char ip[UR_GID_STRLEN]; /* the address the GID encodes, "" for IB GIDs */
	bool ipv4;              /* ip is an IPv4 address (::ffff:a.b.c.d GID) */
};

/* Reads the valid entries of PORT's GID table, at most MAX; returns how
 * many, or -errno. */
int ur_gid_table(struct ibv_context *ctx, uint8_t port, struct ur_gid_info *out, int max);

/* The GID index to use when nothing says better: the first RoCE v2 entry
 * holding an IPv4 address, then the first RoCE v2 entry, then 0. */
int ur_gid_default(struct ibv_context *ctx, uint8_t port);

/* The GID index of CTX/PORT whose address is the local source address the
 * kernel routes from towards PEER (a host name or address). Returns the index,
 * or -errno with WHY filled: the peer does not resolve, or the local address
 * is not in this device's table (then WHY names the device that has it). */
int ur_gid_for_peer(struct ibv_context *ctx, uint8_t port, const char *peer, char *why,
		    size_t whylen);

/* The local source address towards PEER, in IP form (v4 or v6 text). */
int ur_route_source(const char *peer, char *ip, size_t iplen);

/* Text forms: a GID as an IPv6 address ("::ffff:10.0.0.1", "fe80::..."). */
void ur_gid_to_str(const union ibv_gid *gid, char *buf, size_t len);
/* Parses an IPv6-form GID, or an IPv4 address as its ::ffff: GID. */
int ur_gid_parse(const char *text, union ibv_gid *gid);
/* The IP address a GID encodes (IPv4 for ::ffff:a.b.c.d); 0, or -EINVAL. */
int ur_gid_to_ip(const union ibv_gid *gid, char *buf, size_t len, bool *ipv4);

/* Name of a GID type as ibv_devinfo prints it. */
const char *ur_gid_type_str(uint32_t type);

#endif
